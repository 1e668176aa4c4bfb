"""Agents (issue 38 item 1): who runs comes from the run, and each compartment's rule holds.

Real graphs: a compiled subgraph as a node, a ``create_agent`` run inside another agent's tool,
``memory.agent(name)`` surfaces in a ToolNode; the chat models are scripted.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore

from langmem_plugin import AgentRules, Memory, MemoryLayout, MemoryState
from langmem_plugin.core.scope import Scope, resolve_scope
from langmem_plugin.errors import AgentAccessError, ConfigurationError, ScopeError
from langmem_plugin.services.agents import Sharing
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

CONFIG: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}


def _memory(store: InMemoryStore, **kwargs: Any) -> Memory:
    return Memory(store, embeddings=FakeEmbeddings(), tools="full", **kwargs)


# -- the rules ------------------------------------------------------------------------------------


def test_defaults_follow_the_design_and_the_root_always_shares() -> None:
    rules = AgentRules()
    assert {
        c: rules.rule(c, "w").value for c in ("user", "session", "results", "knowledge")
    } == dict.fromkeys(("user", "session", "results", "knowledge"), "shared")
    assert rules.rule("run", "w") is rules.rule("plan", "w") is Sharing.ISOLATED
    assert rules.rule("run", None) is Sharing.SHARED
    assert rules.rule("run", "w", subagent=False) is Sharing.SHARED


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"user": "private"}, ConfigurationError, "'private'"),
        ({"agents": {"w": {"memories": "shared"}}}, ConfigurationError, "'memories'"),
        ({"agents": {"w": {"user": "open"}}}, ConfigurationError, "'open'"),
        ({"agents": {"a.b": {"user": "shared"}}}, ScopeError, "'.'"),
        ({"agents": {"": {"user": "shared"}}}, ScopeError, "empty"),
        ({"agents": ["w"]}, ConfigurationError, "list"),
    ],
)
def test_a_bad_rule_is_refused_naming_the_value(
    kwargs: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=None) as raised:
        AgentRules(**kwargs)
    assert names in str(raised.value)


def test_an_isolated_sub_agent_has_its_own_namespaces_beside_everyone_elses() -> None:
    layout = MemoryLayout(agents=AgentRules(user="isolated", session="isolated", results="isolated"))
    worker = Scope(user_id="u1", thread_id="t1", agent="w", subagent=True)
    root = Scope(user_id="u1", thread_id="t1")
    assert layout.namespace("user", worker) == ("memories", "agent", "w", "user", "u1")
    assert layout.namespace("session", worker) == ("memories", "agent", "w", "session", "t1")
    assert layout.namespace("results", worker) == ("memories", "agent", "w", "results", "t1")
    assert layout.namespace("user", root) == ("memories", "user", "u1")
    # the same agent name at the top of the graph is the root: shared
    assert layout.namespace("user", Scope(user_id="u1", agent="w")) == ("memories", "user", "u1")
    # a sub-agent's own never sits inside another compartment (a prefix search would reach it)
    own = layout.namespace("user", worker)
    for other in ("user", "session", "results", "knowledge"):
        shared = layout.namespace(other, root)
        assert own[: len(shared)] != shared


def test_knowledge_shared_is_the_root_agents_and_isolated_is_the_sub_agents() -> None:
    worker = Scope(agent="w", subagent=True, root_agent="support")
    assert MemoryLayout().namespace("knowledge", worker) == ("memories", "agent", "support", "knowledge")
    isolated = MemoryLayout(agents=AgentRules(knowledge="isolated"))
    assert isolated.namespace("knowledge", worker) == ("memories", "agent", "w", "knowledge")
    assert MemoryLayout().namespace("knowledge", Scope(agent="w", subagent=True)) == (
        "memories",
        "agent",
        "assistant",
        "knowledge",
    )


def test_a_template_that_meets_a_sub_agents_own_is_refused_where_a_rule_gives_one() -> None:
    clash = {"session": ("memories", "agent", "{agent}", "user", "{thread_id}")}
    MemoryLayout(namespaces=clash)  # no sub-agent has its own user memory: nothing to meet
    with pytest.raises(ConfigurationError, match="sub-agent's own"):
        MemoryLayout(namespaces=clash, agents=AgentRules(agents={"w": {"user": "isolated"}}))
    custom = MemoryLayout(namespaces={"results": ("tool_results", "{user_id}", "{thread_id}")})
    with pytest.raises(ConfigurationError, match="sub-agent's own"):
        dataclasses.replace(custom, agents=custom.agents.with_agent("w", {"results": "isolated"}))


def test_a_write_to_a_read_only_compartment_raises_the_typed_error() -> None:
    layout = MemoryLayout(agents=AgentRules(agents={"auditor": {"user": "read_only"}}))
    auditor = Scope(user_id="u1", agent="auditor", subagent=True)
    assert layout.namespace("user", auditor) == ("memories", "user", "u1")  # it reads the shared one
    with pytest.raises(AgentAccessError, match="read-only to the agent 'auditor'") as raised:
        layout.namespace("user", auditor, write=True)
    assert (raised.value.agent, raised.value.compartment) == ("auditor", "user")
    assert layout.writable("user", Scope(user_id="u1", agent="other", subagent=True))


# -- who runs, from the run -----------------------------------------------------------------------


def test_a_compiled_subgraph_runs_as_a_sub_agent_named_by_its_node() -> None:
    seen: dict[str, Scope] = {}

    def probe(name: str) -> Any:
        def node(state: MemoryState) -> dict[str, Any]:
            seen[name] = resolve_scope()
            return {}

        return node

    inner = StateGraph(MemoryState)
    inner.add_node("inner", probe("inner"))
    inner.add_edge(START, "inner")
    outer = StateGraph(MemoryState)
    outer.add_node("top", probe("top"))
    outer.add_node("writer", inner.compile())
    outer.add_edge(START, "top")
    outer.add_edge("top", "writer")
    outer.compile().invoke({"messages": []}, {"configurable": {"user_id": "u1", "agent": "support"}})

    assert (seen["top"].agent, seen["top"].subagent) == ("support", False)
    assert (seen["inner"].agent, seen["inner"].subagent, seen["inner"].root_agent) == (
        "writer",
        True,
        "support",
    )
    assert seen["inner"].user_id == "u1"


def test_an_agent_run_inside_another_agents_tool_is_named_by_create_agent() -> None:
    seen: list[Scope] = []

    class Probe(AgentMiddleware):
        def before_model(self, state: Any, runtime: Any) -> None:
            seen.append(resolve_scope())

    child = create_agent(ScriptedChatModel(["found it"]), tools=[], middleware=[Probe()], name="researcher")

    @tool
    def ask_researcher(question: str) -> str:
        """Ask the researcher."""
        return str(child.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content)

    parent = create_agent(
        ScriptedChatModel([tool_call("ask_researcher", question="where?"), "done"]),
        tools=[ask_researcher],
        middleware=[Probe()],
        name="supervisor",
    )
    parent.invoke({"messages": [HumanMessage("go")]}, CONFIG)

    root, sub, root_again = seen
    assert (root.agent, root.subagent) == (None, False)  # create_agent's name does not rename the root
    assert (sub.agent, sub.subagent) == ("researcher", True)
    assert (root_again.agent, root_again.subagent) == (None, False)


def test_a_node_name_an_id_cannot_hold_is_encoded_one_to_one() -> None:
    one = resolve_scope({"configurable": {"checkpoint_ns": "a.b:1|x:2"}})
    two = resolve_scope({"configurable": {"checkpoint_ns": "a%2Eb:1|x:2"}})
    assert one.agent == "a%2Eb"
    assert two.agent == "a%252Eb"


def test_a_create_agent_name_that_cannot_be_an_id_raises_scope_error() -> None:
    with pytest.raises(ScopeError, match=r"'\.'"):
        resolve_scope(
            {"configurable": {"checkpoint_ns": "tools:1|m:2"}, "metadata": {"lc_agent_name": "a.b"}}
        )


def test_memory_agent_refuses_a_name_that_cannot_be_an_id() -> None:
    memory = _memory(InMemoryStore())
    with pytest.raises(ScopeError):
        memory.agent("bad\nname")
    with pytest.raises(ConfigurationError, match="'wide'"):
        memory.agent("w", user="wide")


# -- the rules on real surfaces ---------------------------------------------------------------------


def _tool_graph(memory: Memory, store: InMemoryStore) -> Any:
    builder = StateGraph(MemoryState)
    builder.add_node("tools", ToolNode(memory.tools))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(store=store)


def _call(graph: Any, name: str, **args: Any) -> str:
    out = graph.invoke({"messages": [tool_call(name, **args)]}, CONFIG)
    answer = out["messages"][-1]
    assert isinstance(answer, ToolMessage)
    return str(answer.content)


def test_a_read_only_sub_agent_reads_the_users_memory_and_its_tools_change_nothing() -> None:
    store = InMemoryStore()
    memory = _memory(store)
    root = _tool_graph(memory, store)
    assert "saved" in _call(root, "save_memory", content="Ada prefers tea").lower()
    (item,) = store.search(("memories", "user", "u1"))

    auditor = _tool_graph(memory.agent("auditor", user="read_only"), store)
    assert "Ada prefers tea" in _call(auditor, "search_memory", query="tea")
    before = store.search(("memories",), limit=100)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("save_memory", {"content": "Ada hates tea"}),
        ("update_memory", {"id": item.key, "content": "Ada hates tea"}),
        ("delete_memory", {"id": item.key}),
        ("clear_memory", {"compartment": "user", "all": True}),
        ("forget_memories", {"query": "tea"}),
    ]
    for name, args in calls:
        answer = _call(auditor, name, **args)
        assert answer.startswith("Error:"), (name, answer)
        assert "read-only to the agent 'auditor'" in answer, (name, answer)
    after = store.search(("memories",), limit=100)
    assert [(i.namespace, i.key, i.value) for i in after] == [(i.namespace, i.key, i.value) for i in before]


def test_an_isolated_sub_agent_keeps_what_it_saves_from_everyone_else() -> None:
    store = InMemoryStore()
    memory = _memory(store, agents=AgentRules(user="isolated"))
    scout = memory.agent("scout")
    _call(_tool_graph(scout, store), "save_memory", content="The vendor's API key rotates on Fridays")
    assert [i.namespace for i in store.search(("memories",), limit=10)] == [
        ("memories", "agent", "scout", "user", "u1")
    ]
    assert "rotates on Fridays" in _call(_tool_graph(scout, store), "search_memory", query="API key")
    for other in (memory, memory.agent("writer")):
        assert "rotates on Fridays" not in _call(_tool_graph(other, store), "search_memory", query="API key")
    # recall, as every surface does it
    assert "rotates on Fridays" in scout.recall("When does the API key rotate?", CONFIG).prompt
    assert "rotates on Fridays" not in memory.recall("When does the API key rotate?", CONFIG).prompt


def test_a_read_only_sub_agents_turns_leave_no_episode() -> None:
    store = InMemoryStore()
    memory = _memory(store)
    auditor = memory.agent("auditor", user="read_only")

    def run(agent_memory: Memory, text: str) -> None:
        builder = StateGraph(MemoryState)
        agent_memory.add_to(builder, ScriptedChatModel([f"Noted: {text}"]))
        builder.compile(checkpointer=InMemorySaver(), store=store).invoke(
            {"messages": [HumanMessage(text)]}, CONFIG
        )

    run(memory, "I live in Lyon")
    run(auditor, "I moved to Paris")
    contents = [i.value["content"] for i in store.search(("memories", "user", "u1"), limit=20)]
    assert any("Lyon" in c for c in contents)
    assert not any("Paris" in c for c in contents)
    assert not store.search(("memories", "agent"), limit=20)


def test_a_sub_agents_documents_go_where_its_knowledge_rule_says() -> None:
    store = InMemoryStore()
    memory = _memory(store, agents=AgentRules(agents={"legal": {"knowledge": "isolated"}}))
    memory.agent("legal").add_documents(["Contracts renew every March."])
    memory.agent("sales").add_documents(["The price list changes in May."])
    assert store.search(("memories", "agent", "legal", "knowledge"))
    assert store.search(("memories", "agent", "assistant", "knowledge"))
    assert "renew every March" in memory.agent("legal").recall("When do contracts renew?", CONFIG).prompt
    assert "renew every March" not in memory.recall("When do contracts renew?", CONFIG).prompt
    assert (
        "price list"
        in memory.agent("legal", knowledge="shared").recall("When does the price list change?", CONFIG).prompt
    )
