"""Sub-agents: a subgraph shares the parent's stored results (same layout) or is isolated (its own)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, MemoryState
from langmem_plugin.services.context.results import ResultsConfig, result_id
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

PAGE = "Findings\n\n" + "\n".join(f"Line {i}: the sub-agent found fact {i}." for i in range(300))
CONFIG: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return PAGE


def _memory(store: InMemoryStore, layout: MemoryLayout | None = None) -> Memory:
    return Memory(
        store, embeddings=FakeEmbeddings(), layout=layout, context=ContextConfig(results=ResultsConfig())
    )


@pytest.mark.parametrize("isolated", [False, True], ids=["shared", "isolated"])
def test_a_sub_agent_shares_or_isolates_its_results(isolated: bool) -> None:
    store = InMemoryStore()
    parent = _memory(store)
    child_layout = MemoryLayout(namespaces={"results": ("memories", "results", "{thread_id}", "researcher")})
    child = _memory(store, child_layout if isolated else None)

    fetch = tool_call("fetch_page", url="https://example.org")
    rid = result_id(fetch.tool_calls[0]["id"])
    child_model = ScriptedChatModel([fetch, "The page lists 300 facts."])
    child_builder = StateGraph(MemoryState)
    child.add_to(child_builder, child_model, tools=[fetch_page])
    researcher = child_builder.compile()

    def delegate(state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        report = researcher.invoke({"messages": [HumanMessage("Research example.org")]}, config)
        return {"messages": [HumanMessage(f"Researcher: {report['messages'][-1].content} (result {rid})")]}

    parent_model = ScriptedChatModel(
        [tool_call("retrieve_result", id=rid, transform="first_n", n=3), "Done."]
    )
    builder = StateGraph(MemoryState)
    builder.add_node("delegate", delegate)
    parent.add_to(builder, parent_model, connect=False)
    builder.add_edge(START, "delegate")
    builder.add_edge("delegate", "recall")
    builder.add_edge("remember", END)
    out = builder.compile(checkpointer=InMemorySaver(), store=store).invoke(
        {"messages": [HumanMessage("Find facts.")]}, CONFIG
    )

    answer = next(m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "retrieve_result")
    if isolated:
        assert str(answer.content).startswith("Error: no stored result")
        assert store.search(("memories", "results", "t1", "researcher"))
    else:
        assert "Line 0: the sub-agent found fact 0." in str(answer.content)
    # the parent's state holds only its own decisions; the sub-agent's stayed in its own state
    assert "tool_results" not in out or all(e["tool"] != "fetch_page" for e in out["tool_results"].values())
