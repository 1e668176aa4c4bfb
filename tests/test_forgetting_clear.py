"""``clear_memory`` reaches the exchanges of what it clears; ``Memory.forget_about`` forgets by content."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState, RecallConfig
from langmem_plugin.core.record import artifact_memories
from langmem_plugin.errors import InvalidFilterError
from langmem_plugin.services.intents import INTENTS
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
USER = ("memories", "user", "sam")


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"user_id": "sam", "thread_id": thread}}


class _Recording(InMemoryStore):
    """An InMemoryStore that keeps every batch of writes it ran, in order."""

    def __init__(self) -> None:
        super().__init__(index=INDEX)
        self.writes: list[list[PutOp]] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        puts = [op for op in ops if isinstance(op, PutOp)]
        if puts:
            self.writes.append(puts)
        return super().batch(ops)


def _texts(memory: Memory) -> list[str]:
    return [str(i.value["content"]) for i in memory.store.search(USER, limit=100)]


def _said_and_saved(memory: Memory, script: list[Any]) -> Any:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(script))
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    graph.invoke({"messages": [HumanMessage("My knee surgery is on June 3rd.")]}, _config("t1"))
    graph.invoke({"messages": [HumanMessage("I like green tea.")]}, _config("t1"))
    return graph


def test_clear_memory_removes_the_exchanges_of_what_it_clears_first_and_says_so() -> None:
    store = _Recording()
    memory = Memory(store, recall=RecallConfig(min_relevance=None), tools="full")
    graph = _said_and_saved(
        memory,
        [
            tool_call("save_memory", content="Sam has knee surgery on June 3rd", category="health"),
            "Noted.",
            tool_call("save_memory", content="Sam likes green tea", category="food"),
            "Noted.",
            tool_call("clear_memory", compartment="user", category="health"),
            "Cleared.",
        ],
    )
    assert any("knee surgery is on June" in t for t in _texts(memory))
    store.writes.clear()

    out = graph.invoke({"messages": [HumanMessage("Clear my health memories.")]}, _config("t2"))

    answer = next(m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "clear_memory")
    assert "Removed 1 memories from user memory and 1 past exchanges they came from" in str(answer.content)
    texts = _texts(memory)
    assert not [t for t in texts if "knee" in t.lower()]  # the memory and the exchange that said it
    assert "Sam likes green tea" in texts
    assert any("I like green tea" in t for t in texts)  # the other exchange stays
    assert not [t for t in texts if "health memories" in t]  # the clearing exchange is not kept
    # the clear's one batch (the last write removes the intent of its purge, once that is done)
    (batch,) = [b for b in store.writes if any(op.value is None and op.namespace != INTENTS for op in b)]
    deleted = [op.key for op in batch if op.value is None]
    action, ids = artifact_memories(answer.artifact) or ("", [])
    assert action == "forgotten"
    assert len(ids) == 2
    assert deleted[-1] == ids[0]  # the exchange went first, in the clear's one batch
    recalled = memory.recall([HumanMessage("when is the knee surgery?")], _config("t3")).prompt
    assert "knee" not in recalled.lower()
    # the history says who cleared it and when, never what it said (as forget's)
    entries = memory.history(ids[0], _config("t3"))
    assert [e.action for e in entries] == ["ADD", "DELETE"]
    assert entries[-1].source == "tool:clear_memory"
    # nor anything else the store keeps: the next exchange's copy of its beginning is stripped too
    # (written live, an exchange does not know the next one: it is found by its link back)
    kept = [i.value for ns in store.list_namespaces() for i in store.search(ns, limit=1000)]
    assert any("history" in str(v) or "ADD" in str(v) for v in kept)
    assert not [v for v in kept if "knee" in str(v).lower()]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_forget_about_forgets_every_memory_and_exchange_that_matches(mode: str) -> None:
    memory = Memory(InMemoryStore(index=INDEX), recall=RecallConfig(min_relevance=None))
    _said_and_saved(
        memory,
        [
            tool_call("save_memory", content="Sam has knee surgery on June 3rd"),
            "Noted.",
            tool_call("save_memory", content="Sam likes green tea"),
            "Noted.",
        ],
    )
    config = _config("t9")
    forgotten = (
        memory.forget_about("knee surgery", config)
        if mode == "sync"
        else await memory.aforget_about("knee surgery", config)
    )
    assert len(forgotten.memories) == 1
    assert len(forgotten.exchanges) == 1
    texts = _texts(memory)
    assert not [t for t in texts if "knee" in t.lower()]
    assert "Sam likes green tea" in texts
    (entry,) = [e for e in memory.history(forgotten.ids[0], config) if e.action == "DELETE"]
    assert (entry.source, entry.old, entry.new) == ("forget", None, None)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.one_of(st.just(""), st.just("   "), st.just("everything about the"), st.text(min_size=501)))
def test_a_bad_forget_about_query_raises_and_removes_nothing(query: str) -> None:
    memory = Memory(InMemoryStore(index=INDEX))
    memory.store.put(USER, "m1", {"content": "Sam likes green tea", "kind": "fact"})
    with pytest.raises(InvalidFilterError, match="Nothing was removed"):
        memory.forget_about(query, _config("t1"))
    assert _texts(memory) == ["Sam likes green tea"]
