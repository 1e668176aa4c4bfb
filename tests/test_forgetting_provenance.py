"""Issue 24: provenance written at save time, forget reaching the exchanges, superseded exchanges,
forget by content, bad input, on InMemoryStore, CheckpointerStore (SQLite) and QdrantStore."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryRecord, MemoryState, RecallConfig
from langmem_plugin.core.record import exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.validity import is_current
from langmem_plugin.stores import CheckpointerStore, export_jsonl, import_jsonl
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

USER = ("memories", "user", "sam")
SAM = {"configurable": {"user_id": "sam", "thread_id": "t1"}}


def _index() -> dict[str, Any]:
    return {"dims": 256, "embed": FakeEmbeddings(), "fields": ["content"]}


@contextlib.contextmanager
def _store(kind: str, folder: Path) -> Iterator[BaseStore]:
    if kind == "inmemory":
        yield InMemoryStore(index=_index())  # type: ignore[arg-type]
    elif kind == "sqlite":
        with CheckpointerStore.from_sqlite(folder / "memory.sqlite", index=_index()) as store:
            yield store
    else:
        from langmem_plugin.stores import QdrantStore

        with QdrantStore(folder / "qdrant", index=_index()) as qdrant:
            yield qdrant


STORES = ["inmemory", "sqlite", "qdrant"]


class Agent:
    """A real graph (recall, model, ToolNode, remember) whose model is scripted turn by turn."""

    def __init__(self, store: BaseStore) -> None:
        self.memory = Memory(store, recall=RecallConfig(min_relevance=None), tools="full")
        self.model = ScriptedChatModel([])
        builder = StateGraph(MemoryState)
        self.memory.add_to(builder, self.model)
        self.graph = builder.compile(checkpointer=InMemorySaver(), store=store)

    def say(self, text: str, *replies: Any, thread: str = "t1", user: str = "sam") -> dict[str, Any]:
        self.model.script.extend(replies)
        config = {"configurable": {"user_id": user, "thread_id": thread}}
        out: dict[str, Any] = self.graph.invoke({"messages": [HumanMessage(text)]}, config)
        return out

    def recalled(self, text: str, *, thread: str = "t9") -> str:
        prompt = self.memory.recall(
            [HumanMessage(text)], {"configurable": {"user_id": "sam", "thread_id": thread}}
        )
        return prompt.prompt


def _items(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, MemoryRecord]:
    found = store.search(namespace, limit=1000)
    return {i.key: MemoryRecord.from_value(i.value) for i in found if tuple(i.namespace) == namespace}


def _last_tool(out: dict[str, Any]) -> ToolMessage:
    messages: list[BaseMessage] = out["messages"]
    return next(m for m in reversed(messages) if isinstance(m, ToolMessage))


def _saved_id(out: dict[str, Any]) -> str:
    return str(_last_tool(out).content).split()[2]


def _marathon(agent: Agent) -> tuple[str, str]:
    """Thread 1: the statement, saved by the tool; returns the memory id and the exchange key."""
    out = agent.say(
        "I love spicy food, and I'm training for a half marathon in May.",
        tool_call("save_memory", content="Sam is training for a half marathon in May"),
        "Noted!",
    )
    memory_id = _saved_id(out)
    episode = out["memory_context"]["stored"]["episode"]
    return memory_id, episode


@pytest.mark.parametrize("kind", STORES)
def test_a_saved_memory_and_its_exchange_link_both_ways_and_forget_removes_both(
    kind: str, tmp_path: Path
) -> None:
    with _store(kind, tmp_path) as store:
        agent = Agent(store)
        memory_id, episode = _marathon(agent)
        agent.say("Rainy day here.", "Indeed.", thread="t2")
        held = _items(store, USER)
        assert held[memory_id].sources == [exchange_link("t1", episode)]
        assert held[episode].derived == [memory_id]
        assert "half marathon" in agent.recalled("what am I training for? half marathon")

        out = agent.say(
            "Forget the half marathon, I dropped it.",
            tool_call("delete_memory", id=memory_id),
            "Done.",
            thread="t3",
        )
        assert _last_tool(out).artifact["langmem_plugin_memories"] == {
            "action": "forgotten",
            "ids": [memory_id],
        }
        assert out["memory_context"]["stored"] is None  # the exchange that forgot is not kept either
        held = _items(store, USER)
        assert memory_id not in held
        assert episode not in held
        assert not any("marathon" in r.content.lower() for r in held.values())
        for thread in ("t1", "t2", "t3", "t4"):
            assert "marathon" not in agent.recalled("half marathon training in May", thread=thread).lower()
        entries = agent.memory.history(memory_id, SAM)
        assert [(e.action, e.source, e.old, e.new) for e in entries][-1] == (
            "DELETE",
            "tool:delete_memory",
            None,
            None,
        )
        assert all(e.old is None and e.new is None for e in entries)  # who and when, not the text
        assert "marathon" not in json.dumps([e.as_dict() for e in entries]).lower()


@pytest.mark.parametrize("kind", STORES)
def test_an_update_supersedes_the_exchange_that_stated_the_old_value(kind: str, tmp_path: Path) -> None:
    with _store(kind, tmp_path) as store:
        agent = Agent(store)
        out = agent.say("I'm vegetarian.", tool_call("save_memory", content="Sam is vegetarian"), "Noted.")
        memory_id, old = _saved_id(out), out["memory_context"]["stored"]["episode"]
        out = agent.say(
            "I eat fish again.",
            tool_call("update_memory", id=memory_id, content="Sam is pescatarian"),
            "Updated.",
            thread="t2",
        )
        new = out["memory_context"]["stored"]["episode"]
        held = _items(store, USER)
        assert not is_current(held[old])
        assert held[old].metadata["superseded_by"] == memory_id
        assert is_current(held[new])
        assert held[new].derived == [memory_id]
        assert held[memory_id].sources == [exchange_link("t1", old), exchange_link("t2", new)]
        prompt = agent.recalled("am I vegetarian? what do I eat")
        assert "I'm vegetarian" not in prompt
        assert "pescatarian" in prompt


@pytest.mark.parametrize("kind", STORES)
def test_forget_by_content_removes_every_matching_memory_and_exchange_and_reports_them(
    kind: str, tmp_path: Path
) -> None:
    with _store(kind, tmp_path) as store:
        agent = Agent(store)
        memory_id, _episode = _marathon(agent)
        agent.say("My half marathon pace is 5:30 per km.", "Nice pace!", thread="t2")  # nothing saved
        agent.say("I like green tea.", tool_call("save_memory", content="Sam likes green tea"), "Noted.")
        out = agent.say(
            "Forget everything about the half marathon.",
            tool_call("forget_memories", query="everything about the half marathon"),
            "Forgotten.",
            thread="t3",
        )
        answer = str(_last_tool(out).content)
        assert answer.startswith("Forgot 1 memories and 2 past exchanges")
        assert memory_id in answer
        held = _items(store, USER)
        assert not any("marathon" in r.content.lower() for r in held.values())
        assert any(r.content == "Sam likes green tea" for r in held.values())  # the rest untouched
        assert "marathon" not in agent.recalled("half marathon pace", thread="t2").lower()


@pytest.mark.parametrize(
    "call",
    [
        tool_call("delete_memory", id="0123456789ab"),  # unknown
        tool_call("forget_memories", query=""),
        tool_call("forget_memories", query="   "),
        tool_call("forget_memories", query="everything about the"),
        tool_call("forget_memories", query="marathon " * 200),
    ],
)
def test_bad_forget_calls_answer_an_error_and_remove_nothing(call: Any) -> None:
    store = InMemoryStore(index=_index())  # type: ignore[arg-type]
    agent = Agent(store)
    _marathon(agent)
    before = _items(store, USER)
    out = agent.say("forget it", call, "Sorry.", thread="t2")
    message = _last_tool(out)
    assert message.status == "error"
    assert str(message.content).startswith("Error:")
    after = _items(store, USER)
    assert {k: after.get(k) for k in before} == before  # nothing removed (the new exchange is added)


def test_forgetting_another_users_memory_by_its_id_is_an_unknown_id_and_removes_nothing() -> None:
    store = InMemoryStore(index=_index())  # type: ignore[arg-type]
    agent = Agent(store)
    memory_id, _ = _marathon(agent)
    before = _items(store, USER)
    out = agent.say("forget it", tool_call("delete_memory", id=memory_id), "Hm.", user="mallory")
    assert _last_tool(out).status == "error"
    assert "no memory has the id" in str(_last_tool(out).content)
    assert _items(store, USER) == before  # sam's memory untouched


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=700))
def test_a_hostile_forget_query_never_removes_what_it_does_not_name(query: str) -> None:
    from langmem_plugin.errors import InvalidFilterError
    from langmem_plugin.services import MemoryLayout, execute
    from langmem_plugin.services.upkeep import forget_matching_steps

    store = InMemoryStore()
    scope = Scope(user_id="sam")
    store.put(USER, "m1", MemoryRecord(content="Sam likes green tea").to_value())
    try:
        forgotten = execute(store, forget_matching_steps(scope, MemoryLayout(), query))
    except InvalidFilterError:
        assert store.get(USER, "m1") is not None
        return
    if forgotten.memories:
        assert forgotten.ids == ["m1"]
    else:
        assert store.get(USER, "m1") is not None


def test_provenance_survives_export_and_import(tmp_path: Path) -> None:
    store = InMemoryStore(index=_index())  # type: ignore[arg-type]
    agent = Agent(store)
    memory_id, episode = _marathon(agent)
    path = tmp_path / "memory.jsonl"
    export_jsonl(store, path)
    with _store("sqlite", tmp_path) as other:
        import_jsonl(other, path)
        held = _items(other, USER)
        assert held[memory_id].sources == [exchange_link("t1", episode)]
        assert held[episode].derived == [memory_id]
