"""The lean default toolset: what every surface binds, the destructive tools one argument away, the
typed error for a name that is no tool, and schemas that say only what the model needs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState, count_tokens, create_memory_tools
from langmem_plugin.bench.tools import langmem_tools, schema_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.surfaces import ToolsConfig
from langmem_plugin.surfaces.nodes import ModelNode
from langmem_plugin.surfaces.tools import (
    DESTRUCTIVE_TOOL_NAMES,
    LEAN_TOOL_NAMES,
    MEMORY_TOOL_NAMES,
    tool_names,
)
from langmem_plugin.testing import ScriptedChatModel, tool_call

SAM: RunnableConfig = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
LEAN = list(LEAN_TOOL_NAMES)


def _memory(**keywords: Any) -> Memory:
    return Memory(InMemoryStore(), **keywords)


def _bound(tools: Any) -> list[str]:
    """The tool names a chat model is sent, as ChatOpenAI.bind_tools sends them."""
    model = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test")  # type: ignore[arg-type]
    return [s["function"]["name"] for s in model.bind_tools(tools).kwargs["tools"]]  # type: ignore[attr-defined]


def _nodes(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, Any]:
    return {name: spec.runnable for name, spec in builder.nodes.items()}


# -- what the surfaces bind ------------------------------------------------------------------------


def test_memory_tools_and_the_factory_default_to_the_lean_set() -> None:
    with _memory() as memory:
        assert [t.name for t in memory.tools] == LEAN
        assert _bound(memory.tools) == LEAN
    assert [t.name for t in create_memory_tools()] == LEAN
    assert not set(DESTRUCTIVE_TOOL_NAMES) & set(LEAN)
    assert set(LEAN) < set(MEMORY_TOOL_NAMES)


def test_add_to_binds_the_lean_set_to_the_model_and_the_tool_node() -> None:
    with _memory() as memory:
        builder = StateGraph(MemoryState)
        memory.add_to(builder, ChatOpenAI(model="gpt-4o-mini", api_key="sk-test"))  # type: ignore[arg-type]
        nodes = _nodes(builder)
        (model_node,) = [n for n in nodes.values() if isinstance(n, ModelNode)]
        sent = [s["function"]["name"] for s in model_node.model.kwargs["tools"]]  # type: ignore[attr-defined]
        assert sent == LEAN
        (tool_node,) = [n for n in nodes.values() if isinstance(n, ToolNode)]
        assert list(tool_node.tools_by_name) == LEAN
        node = memory.model_node(ChatOpenAI(model="gpt-4o-mini", api_key="sk-test"))  # type: ignore[arg-type]
        assert [s["function"]["name"] for s in node.model.kwargs["tools"]] == LEAN  # type: ignore[attr-defined]


def test_create_agent_with_memory_tools_and_the_middleware_binds_the_lean_set() -> None:
    from langchain.agents import create_agent

    with _memory() as memory:
        middleware = memory.middleware()
        assert middleware.tools == []  # the middleware adds no tool of its own
        agent = create_agent(
            ChatOpenAI(model="gpt-4o-mini", api_key="sk-test"),  # type: ignore[arg-type]
            tools=memory.tools,
            middleware=[middleware],
            store=memory.store,
        )
        assert sorted(agent.nodes["tools"].bound.tools_by_name) == sorted(LEAN)  # type: ignore[attr-defined]


def test_a_destructive_call_to_a_lean_agent_is_refused_and_deletes_nothing() -> None:
    with _memory() as memory:
        model = ScriptedChatModel(
            [
                tool_call("save_memory", content="Sam is vegetarian"),
                tool_call("clear_memory", compartment="user", all=True),
                tool_call("forget_memories", query="vegetarian"),
                "I cannot clear your memory.",
            ]
        )
        builder = StateGraph(MemoryState)
        memory.add_to(builder, model)
        graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
        out = graph.invoke({"messages": [HumanMessage("Forget everything about me.")]}, SAM)
        answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert [m.status for m in answers] == ["success", "error", "error"]
        for refused in answers[1:]:
            assert "not a valid tool" in str(refused.content)
        kept = memory.store.search(("memories", "user", "sam"), filter={"kind": "fact"})
        assert [item.value["content"] for item in kept] == ["Sam is vegetarian"]


# -- opting in -------------------------------------------------------------------------------------


def test_the_full_set_is_one_argument_away() -> None:
    with _memory(tools="full") as memory:
        assert [t.name for t in memory.tools] == [*MEMORY_TOOL_NAMES, "add_run_note"]
    assert [t.name for t in create_memory_tools(include="full")] == list(MEMORY_TOOL_NAMES)


def test_opting_in_adds_destructive_tools_to_the_lean_set() -> None:
    with _memory(tools=["lean", "clear_memory"]) as memory:
        assert [t.name for t in memory.tools] == [*LEAN, "clear_memory"]
    config = ToolsConfig(include=("lean", *DESTRUCTIVE_TOOL_NAMES), names={"clear_memory": "wipe"})
    with _memory(tools=config) as memory:
        assert [t.name for t in memory.tools] == [*LEAN, "wipe", "forget_memories"]
    tools = create_memory_tools(include=["lean", "forget_memories", "save_memory"])
    assert [t.name for t in tools] == [*LEAN, "forget_memories"]  # each tool once, in order
    assert [t.name for t in create_memory_tools(include="search_memory")] == ["search_memory"]
    assert tool_names(()) == ()


def test_an_opted_in_clear_memory_clears() -> None:
    with _memory(tools=["lean", "clear_memory"]) as memory:
        tools = {t.name: t for t in memory.tools}
        tools["save_memory"].invoke({"content": "Sam is vegetarian", "category": "food"}, SAM)
        answer = tools["clear_memory"].invoke({"compartment": "user", "category": "food"}, SAM)
        assert answer.startswith("Removed 1 memories")
        assert tools["search_memory"].invoke({"query": "vegetarian"}, SAM) == "No memories found."


# -- the typed error ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (lambda: _memory(tools=["lean", "forget_memory"]), "Memory(tools=...)"),
        (lambda: _memory(tools="everything"), "Memory(tools=...)"),
        (lambda: ToolsConfig(include=("forget_memory",)), "Memory(tools=...)"),
        (lambda: create_memory_tools(include=["forget_memory"]), "create_memory_tools(include=...)"),
        (lambda: create_memory_tools(names={"forget_memory": "x"}), "create_memory_tools(names=...)"),
        (
            lambda: create_memory_tools(descriptions={"forget_memory": "x"}),
            "create_memory_tools(descriptions=...)",
        ),
    ],
)
def test_an_unknown_tool_name_is_a_typed_error_naming_it_and_the_fix(make: Any, where: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        make()
    message = str(raised.value)
    assert message.startswith(f"{where}: unknown memory tool ")
    assert "'forget_memory'" in message or "'everything'" in message
    assert "'lean' (save_memory, search_memory, get_memory, update_memory, delete_memory)" in message
    assert "Fix: name tools and sets from these, e.g. ['lean', 'clear_memory']" in message


def test_a_near_miss_is_suggested_and_a_non_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="Did you mean 'get_memory' or 'forget_memories'"):
        create_memory_tools(include=["forget_memory"])
    with pytest.raises(ConfigurationError, match="int 3 is not a tool's name"):
        _memory(tools=["lean", 3])
    with pytest.raises(ConfigurationError, match="takes a set's name"):
        create_memory_tools(include=7)  # type: ignore[arg-type]


# -- the schemas the model reads ------------------------------------------------------------------


def test_schemas_say_only_what_the_model_needs_and_validate_as_before() -> None:
    with _memory(tools="full") as memory:
        tools = {t.name: t for t in memory.tools}
        for name in MEMORY_TOOL_NAMES:
            text = json.dumps(convert_to_openai_tool(tools[name]))
            assert '"null"' not in text, name
            assert 'additionalProperties": false' not in text, name
            assert "title" not in text, name
        save = convert_to_openai_tool(tools["save_memory"])["function"]["parameters"]
        assert save["required"] == ["content"]
        assert save["properties"]["compartment"]["description"] == (
            "'user' (all conversations; default) or 'session' (this one)."
        )
        # a null the model sends for an optional argument is still taken as leaving it out
        saved = tools["save_memory"].invoke({"content": "Sam runs", "category": None, "tags": None}, SAM)
        assert saved.startswith("Saved memory")
        refused = tools["search_memory"].invoke({"query": "runs", "user_id": "bob"}, SAM)
        assert refused.startswith("Error: invalid arguments: unknown argument(s) 'user_id'")


def test_the_compartments_the_tools_may_write_are_what_save_memory_says() -> None:
    (save,) = create_memory_tools(
        include="save_memory", compartments=["session", "knowledge"], default_compartment="knowledge"
    )
    said = convert_to_openai_tool(save)["function"]["parameters"]["properties"]["compartment"]
    assert said["description"] == "'session' (this one) or 'knowledge' (the agent's documents; default)."


def test_schema_tokens_are_counted_as_openai_is_sent_them_and_the_lean_set_costs_less() -> None:
    with _memory() as lean, _memory(tools="full") as full:
        lean_tokens = sum(schema_tokens(t, model="gpt-4o-mini") for t in lean.tools)
        full_tokens = sum(schema_tokens(t, model="gpt-4o-mini") for t in full.tools)
    theirs = sum(schema_tokens(t, model="gpt-4o-mini") for t in langmem_tools())
    assert schema_tokens(lean.tools[0], model="gpt-4o-mini") == count_tokens(
        json.dumps(convert_to_openai_tool(lean.tools[0])), model="gpt-4o-mini"
    )
    assert theirs > 0
    assert lean_tokens < full_tokens
