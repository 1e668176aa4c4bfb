"""Memory tools in a real StateGraph + ToolNode: scope from config only, errors the model can act on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore

from langmem_plugin import create_memory_tools
from langmem_plugin.errors import CompartmentError, ConfigurationError, ScopeError
from langmem_plugin.services import MemoryLayout, execute, save_steps, search_steps
from langmem_plugin.surfaces.tools import MEMORY_TOOL_NAMES

ALICE = {"configurable": {"user_id": "alice", "thread_id": "ta"}}
BOB_NS = ("memories", "user", "bob")


def _calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"name": n, "args": a, "id": f"c{i}", "type": "tool_call"} for i, (n, a) in enumerate(calls)
        ],
    )


def _tool_graph(tools: list[Any], store: InMemoryStore | None) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def _results(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_tools_bind_to_a_chat_model_as_they_are() -> None:
    tools = create_memory_tools(include="full")
    assert [t.name for t in tools] == list(MEMORY_TOOL_NAMES)
    bound = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test").bind_tools(tools)  # type: ignore[arg-type]
    schemas = bound.kwargs["tools"]  # type: ignore[attr-defined]
    assert [s["function"]["name"] for s in schemas] == list(MEMORY_TOOL_NAMES)
    save = convert_to_openai_tool(tools[0])["function"]["parameters"]["properties"]
    assert set(save) == {"content", "category", "tags", "metadata", "priority", "compartment"}
    for tool in tools:  # nothing in any schema names a user, a thread or a namespace
        props = convert_to_openai_tool(tool)["function"]["parameters"].get("properties", {})
        assert not {"user_id", "thread_id", "namespace", "config"} & set(props)


def test_factory_is_configurable() -> None:
    tools = create_memory_tools(
        include=["save_memory", "search_memory"],
        names={"save_memory": "note_down"},
        descriptions={"search_memory": "Look things up."},
        instructions="Never store passwords.",
        compartments=["session"],
        default_compartment="session",
    )
    assert [t.name for t in tools] == ["note_down", "search_memory"]
    assert tools[1].description == "Look things up.\nNever store passwords."
    with pytest.raises(ConfigurationError, match="unknown memory tool"):
        create_memory_tools(include=["forget_everything"])
    with pytest.raises(CompartmentError, match="not available here"):
        create_memory_tools(compartments=["session"], default_compartment="user")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tools_in_a_tool_node_use_the_graphs_store(mode: str, store: InMemoryStore) -> None:
    graph = _tool_graph(create_memory_tools(include="full"), store)
    save = _calls(("save_memory", {"content": "Prefers green tea", "category": "preferences/drinks"}))
    inputs = {"messages": [save]}
    out = graph.invoke(inputs, ALICE) if mode == "sync" else await graph.ainvoke(inputs, ALICE)
    (result,) = _results(out)
    assert result.status == "success"
    assert result.content.startswith("Saved memory ")
    memory_id = result.content.split()[2]
    assert store.get(("memories", "user", "alice"), memory_id) is not None

    find = _calls(("search_memory", {"query": "tea"}), ("list_categories", {}))
    config = {"configurable": {"user_id": "alice", "thread_id": "tb"}}
    out = (
        graph.invoke({"messages": [find]}, config)
        if mode == "sync"
        else await graph.ainvoke({"messages": [find]}, config)
    )
    search, categories = _results(out)
    assert json.loads(search.content)[0] == {
        "id": memory_id,
        "content": "Prefers green tea",
        "category": "preferences/drinks",
        "score": json.loads(search.content)[0]["score"],
    }
    assert json.loads(categories.content) == {"preferences": 1, "preferences/drinks": 1}


def test_model_fixable_errors_come_back_as_tool_errors(store: InMemoryStore) -> None:
    graph = _tool_graph(create_memory_tools(store=store, include="full"), None)
    bad = _calls(
        ("save_memory", {"content": ""}),
        ("save_memory", {"content": "x", "category": "a//b"}),
        ("get_memory", {"id": "does-not-exist"}),
        ("search_memory", {"since": "yesterday-ish"}),
        ("save_memory", {"content": "x", "compartment": "knowledge"}),
        ("update_memory", {"id": "abc"}),
        ("save_memory", {"content": "x", "priority": "very high"}),
    )
    results = _results(graph.invoke({"messages": [bad]}, ALICE))
    assert [r.status for r in results] == ["error"] * 7
    texts = [r.content for r in results]
    assert "content: must not be empty" in texts[0]
    assert "category: must be a path" in texts[1]
    assert "no memory has the id 'does-not-exist'" in texts[2]
    assert "since must be an ISO 8601 date" in texts[3]
    assert "'knowledge' is not available here" in texts[4]
    assert "needs at least one field to change" in texts[5]
    assert "priority" in texts[6]
    assert store.search(("memories",)) == []


def test_configuration_errors_propagate(store: InMemoryStore) -> None:
    graph = _tool_graph(create_memory_tools(store=store, include="full"), None)
    with pytest.raises(ScopeError, match="user_id"):
        graph.invoke(
            {"messages": [_calls(("save_memory", {"content": "x"}))]}, {"configurable": {"thread_id": "t"}}
        )
    no_store = _tool_graph(create_memory_tools(include="full"), None)
    with pytest.raises(ConfigurationError, match="has no store"):
        no_store.invoke({"messages": [_calls(("list_categories", {}))]}, ALICE)


def test_no_tool_argument_reaches_another_users_memory(store: InMemoryStore) -> None:
    layout = MemoryLayout()
    from langmem_plugin.core.scope import Scope

    bob = Scope(user_id="bob", thread_id="tbob")
    secret = execute(store, save_steps(bob, layout, "bob's bank PIN is 1234", category="secrets"))
    graph = _tool_graph(create_memory_tools(store=store, include="full"), None)
    attack = _calls(
        ("save_memory", {"content": "planted", "user_id": "bob", "namespace": list(BOB_NS), "config": ALICE}),
        ("search_memory", {"query": "bank PIN", "user_id": "bob", "category": "../bob"}),
        ("search_memory", {"query": "bank PIN", "namespace": ["memories", "user", "bob"]}),
        ("get_memory", {"id": secret.id}),
        ("get_memory", {"id": f"../bob/{secret.id}"}),
        ("update_memory", {"id": secret.id, "content": "hacked"}),
        ("delete_memory", {"id": secret.id}),
        ("list_categories", {"user_id": "bob"}),
    )
    results = _results(graph.invoke({"messages": [attack]}, ALICE))
    saved, search1, search2, get1, get2, update, delete, categories = results
    # an argument a tool does not take is refused by name, and the call does nothing
    for result, argument in ((saved, "'user_id'"), (search1, "'user_id'"), (search2, "'namespace'")):
        assert result.status == "error"
        assert argument in result.content
        assert "Nothing was done" in result.content
    assert categories.status == "error"
    assert "list_categories takes no arguments" in categories.content
    for result in (search1, search2):
        assert "1234" not in result.content
    for result in (get1, get2, update, delete):
        assert result.status == "error"
        assert "1234" not in result.content
    assert "secrets" not in categories.content
    # bob's memory is intact and alone; nothing was planted anywhere
    bobs = execute(store, search_steps(bob, layout, track_access=False))
    assert [(m.id, m.record.content) for m in bobs] == [(secret.id, "bob's bank PIN is 1234")]
    assert store.search(("memories", "user", "alice")) == []
    clear = _calls(
        ("clear_memory", {"compartment": "user", "all": True, "user_id": "bob", "namespace": list(BOB_NS)})
    )
    cleared = _results(graph.invoke({"messages": [clear]}, ALICE))[-1]
    assert cleared.status == "error"
    assert "'user_id', 'namespace'" in cleared.content
    assert "1234" not in cleared.content
    assert len(execute(store, search_steps(bob, layout, track_access=False))) == 1
