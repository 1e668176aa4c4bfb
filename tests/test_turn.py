"""One turn service, every surface: the node, the middleware and the callback handler do the same thing."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig
from langmem_plugin.core.scope import Scope, resolve_scope
from langmem_plugin.services.remember.episodes import RememberConfig
from langmem_plugin.services.turn import MemoryTurn, StateKeys
from langmem_plugin.surfaces import Memory, MemoryState
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

CONFIG = {"configurable": {"user_id": "u1", "thread_id": "t1"}}


def _memory() -> Memory:
    return Memory(embeddings=FakeEmbeddings())


def _episodes(memory: Memory) -> list[tuple[str, str]]:
    return sorted((i.key, i.value["content"]) for i in memory.store.search(("memories", "user", "u1")))


def _through_nodes(memory: Memory) -> None:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel([tool_call("search_memory", query="tea"), "Green tea."]))
    builder.compile(store=memory.store, checkpointer=InMemorySaver()).invoke(
        {"messages": [HumanMessage("Which tea?", id="h1")]}, CONFIG
    )


def _through_middleware(memory: Memory) -> None:
    from langchain.agents import create_agent

    model = ScriptedChatModel([tool_call("search_memory", query="tea"), "Green tea."])
    agent = create_agent(model, tools=memory.tools, middleware=[memory.middleware()], store=memory.store)
    agent.invoke({"messages": [HumanMessage("Which tea?", id="h1")]}, CONFIG)


def _through_callback(memory: Memory) -> None:
    model = ScriptedChatModel(["Green tea."])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    builder.compile().invoke(
        {"messages": [HumanMessage("Which tea?", id="h1")]},
        {**CONFIG, "callbacks": [memory.callback_handler()]},
    )


def test_every_surface_writes_the_same_episode_through_the_turn() -> None:
    found = {}
    for name, run in (("nodes", _through_nodes), ("middleware", _through_middleware)):
        memory = _memory()
        run(memory)
        found[name] = [content for _, content in _episodes(memory)]
    memory = _memory()
    _through_callback(memory)
    found["callback"] = [content for _, content in _episodes(memory)]
    assert (
        found["nodes"]
        == found["middleware"]
        == ["User: Which tea?\nAssistant: Green tea.\nTools: search_memory"]
    )
    assert found["callback"] == ["User: Which tea?\nAssistant: Green tea."]  # a callback sees no tool loop


def test_after_model_waits_for_the_answer_unless_the_run_ends_there() -> None:
    turn, store = MemoryTurn(), InMemoryStore()
    scope = Scope(user_id="u1", thread_id="t1")
    calling = {"messages": [HumanMessage("hi"), tool_call("search_memory", query="x")], "run_memory": ["n"]}
    assert turn.after_model(calling, scope, store) is None
    ended = turn.after_model(calling, scope, store, final=True)
    assert ended == {"run_memory": [], "memory_context": {"stored": None}}
    answered = {"messages": [HumanMessage("hi"), AIMessage("hello")]}
    update = turn.after_model(answered, scope, store)
    assert update is not None
    assert update["memory_context"]["stored"]["compartments"] == ["user"]
    assert store.search(("memories", "user", "u1"))


async def test_sync_and_async_halves_give_the_same_state_updates() -> None:
    keys = StateKeys(messages="chat", memory_prompt="mp", memory_context="mc", run_memory="notes")
    turn = MemoryTurn(
        context=ContextConfig(keys=keys), remember=RememberConfig(compartments=("session", "user"))
    )
    scope = Scope(user_id="u1", thread_id="t1")
    exchange = {"chat": [HumanMessage("I like oolong", id="a"), AIMessage("Noted.", id="b")]}
    sync_store, async_store = InMemoryStore(), InMemoryStore()
    assert turn.after_model(exchange, scope, sync_store) == await turn.aafter_model(
        exchange, scope, async_store
    )
    question = {"chat": [HumanMessage("what do I like?")], "notes": ["checking"]}
    before = turn.before_model(question, scope, sync_store)
    assert before == await turn.abefore_model(question, scope, async_store)
    assert "I like oolong" in before["mp"]
    assert "checking" not in before["mp"]  # the run's notes are rendered from state at each call
    assert "checking" in (turn.system_prompt({**question, **before}) or "")
    assert [m.type for m in turn.model_messages({**question, **before}, instructions="Be brief.")] == [
        "system",
        "human",
    ]


def test_one_scope_resolver_merges_callback_metadata_under_the_config() -> None:
    scope = resolve_scope(
        {"configurable": {"user_id": "from-config"}}, metadata={"user_id": "meta", "thread_id": "t-meta"}
    )
    assert (scope.user_id, scope.thread_id) == ("from-config", "t-meta")
    assert resolve_scope({}) == Scope()


@pytest.mark.parametrize("module", ["nodes", "middleware", "callbacks", "tools"])
def test_adapters_are_thin(module: str) -> None:
    """An adapter holds no memory logic: no store steps, no recall or episode code of its own."""
    import importlib
    import inspect

    source = inspect.getsource(importlib.import_module(f"langmem_plugin.surfaces.{module}"))
    for word in ("recall_steps", "remember_steps", "episode_from_messages", "execute(", "run_steps"):
        if module == "tools" and word == "execute(":
            continue  # a tool runs one memory operation; it has no turn
        assert word not in source, f"surfaces/{module}.py uses {word}: put it in the turn service"
