"""Forgetting: one memory, a whole user (exactly, against a second user with the same data), a cap."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState, RememberConfig
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.validity import invalidated
from langmem_plugin.services import Compartment, MemoryLayout, execute, save_steps
from langmem_plugin.services.context.window import adelete_idle_threads, delete_idle_threads
from langmem_plugin.services.operations import INDEX_FIELDS
from langmem_plugin.services.upkeep.consolidation import ConsolidationConfig, consolidate
from langmem_plugin.services.upkeep.extraction import Candidate
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel

THREADS = {"alice": ["a1", "a2"], "bob": ["b1", "b2"]}


def _snapshot(store: BaseStore) -> dict[tuple[tuple[str, ...], str], dict[str, Any]]:
    out = {}
    for namespace in store.list_namespaces(limit=1000):
        for item in store.search(namespace, limit=1000):
            if tuple(item.namespace) == namespace:
                out[(namespace, item.key)] = item.value
    return out


def _populate(memory: Memory, user: str, threads: list[str]) -> None:
    """The same data for every user: episodes, a fact, a session note, tool results, history."""
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Noted."] * len(threads)))
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    layout = memory.layout
    for thread in threads:
        config = {"configurable": {"user_id": user, "thread_id": thread}}
        graph.invoke({"messages": [HumanMessage("I like green tea")]}, config)
        scope = Scope(user_id=user, thread_id=thread)
        execute(
            memory.store,
            save_steps(scope, layout, "Plan: book flights", compartment="session", kind="summary"),
        )
        namespace = layout.namespace(Compartment.RESULTS, scope)
        memory.store.put(namespace, "r1", {"content": "weather: sunny"}, index=False)
    scope = Scope(user_id=user)
    execute(memory.store, save_steps(scope, layout, "The user prefers green tea"))
    doomed = execute(memory.store, save_steps(scope, layout, "A typo memory"))
    memory.forget(doomed.id, {"configurable": {"user_id": user}})


def _belongs_to(key: tuple[tuple[str, ...], str], user: str) -> bool:
    namespace = key[0]
    return namespace[-1] == user or namespace[-1] in THREADS[user]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_forget_user_removes_everything_of_theirs_and_nothing_of_anyone_else(mode: str) -> None:
    memory = Memory(embeddings=FakeEmbeddings(), remember=RememberConfig(compartments=("session", "user")))
    for user, threads in THREADS.items():
        _populate(memory, user, threads)
    before = _snapshot(memory.store)
    alice = {k for k in before if _belongs_to(k, "alice")}
    bob = {k: v for k, v in before.items() if _belongs_to(k, "bob")}
    assert len(alice) == len(bob) > 0  # the same data
    assert set(before) == alice | set(bob)

    report = memory.forget_user("alice") if mode == "sync" else await memory.aforget_user("alice")

    after = _snapshot(memory.store)
    assert after == bob  # bob's data is untouched, value for value; nothing of alice's is left
    assert report.total == len(alice)
    assert sorted(report.threads) == ["a1", "a2"]
    assert report.shared_threads == []
    assert report.counts == {
        "user": 3,  # two episodes and one fact (the typo memory was forgotten before)
        "history": 1,  # the forget of the typo memory
        "session": 4,  # per thread: the episode and the archived summary
        "tool_results": 2,
        "thread_index": 2,
    }
    assert report.kinds == {"episode": 4, "fact": 1, "summary": 2}


def test_a_thread_shared_with_another_user_is_kept_and_reported() -> None:
    memory = Memory(embeddings=FakeEmbeddings())
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Hi.", "Hello."]))
    graph = builder.compile(store=memory.store)
    for user in ("alice", "bob"):
        graph.invoke(
            {"messages": [HumanMessage(f"hi, {user} here")]},
            {"configurable": {"user_id": user, "thread_id": "shared"}},
        )
    report = memory.forget_user("alice")
    assert report.shared_threads == ["shared"]
    assert report.threads == []
    assert report.counts["user"] == 1  # alice's own exchange, kept in her memory
    assert memory.store.search(("memories", "user", "alice")) == []
    (bobs,) = memory.store.search(("memories", "user", "bob"))  # bob's exchange in the same thread
    assert bobs.value["metadata"]["thread_id"] == "shared"
    assert memory.store.search(("memory_meta", "threads", "bob"))


def test_forget_one_memory_is_recorded_in_history() -> None:
    memory = Memory(embeddings=FakeEmbeddings())
    config = {"configurable": {"user_id": "alice"}}
    saved = execute(memory.store, save_steps(Scope(user_id="alice"), memory.layout, "Lives in Oslo"))
    forgotten = memory.forget(saved.id, config)
    assert forgotten.record.content == "Lives in Oslo"
    assert memory.store.get(("memories", "user", "alice"), saved.id) is None
    (entry,) = memory.history(saved.id, config)
    assert (entry.action, entry.old, entry.new, entry.source) == ("DELETE", None, None, "forget")  # no text


def test_a_cap_evicts_the_least_valuable_first_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
    layout, scope = MemoryLayout(), Scope(user_id="alice")
    old = execute(store, save_steps(scope, layout, "Drives a red car", priority=9))
    low = execute(store, save_steps(scope, layout, "Once visited Rome", priority=2))
    high = execute(store, save_steps(scope, layout, "Is allergic to peanuts", priority=10))
    gone = invalidated(old.record, by=None, reason="sold the car")
    store.put(old.namespace, old.id, gone.to_value(), index=INDEX_FIELDS)
    config = ConsolidationConfig(max_memories=3)
    decider = ScriptedChatModel([])  # no near matches: no decision call

    with caplog.at_level(logging.INFO, logger="langmem_plugin.services.upkeep.forgetting"):
        first = consolidate(store, scope, [Candidate("Plays the cello")], model=decider, config=config)
        second = consolidate(store, scope, [Candidate("Works as a nurse")], model=decider, config=config)
    assert first.evicted == [old.id]  # superseded first, despite its priority
    assert second.evicted == [low.id]  # then the lowest priority
    assert first.counts()["evicted"] == 1
    kept = {i.value["content"] for i in store.search(("memories", "user", "alice"))}
    assert kept == {"Is allergic to peanuts", "Plays the cello", "Works as a nurse"}
    assert high.id in {i.key for i in store.search(("memories", "user", "alice"))}
    assert next(r.getMessage() for r in caplog.records if "evicted" in r.getMessage()).startswith(
        "memory cap 3"
    )
    history = {
        i.value["memory_id"]: i.value["action"]
        for i in store.search(("memory_meta", "history", "alice"), limit=50)
        if i.value["action"] == "EVICT"
    }
    assert history == {old.id: "EVICT", low.id: "EVICT"}


def test_a_user_who_comes_back_after_forget_user_is_indexed_again() -> None:
    memory = Memory(embeddings=FakeEmbeddings())
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Hi.", "Hi again."]))
    graph = builder.compile(store=memory.store)
    config = {"configurable": {"user_id": "alice", "thread_id": "t1"}}
    graph.invoke({"messages": [HumanMessage("hello")]}, config)
    assert memory.forget_user("alice").threads == ["t1"]
    graph.invoke({"messages": [HumanMessage("hello again")]}, config)
    again = memory.forget_user("alice")
    assert again.threads == ["t1"]
    assert again.counts["user"] == 1  # the new episode, in alice's memory


def _graph_on(memory: Memory, saver: InMemorySaver, replies: list[str]) -> Any:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(replies))
    return builder.compile(checkpointer=saver, store=memory.store)


# tool results per user and thread: a template the thread id alone cannot fill
PER_USER_RESULTS = MemoryLayout(namespaces={"results": ("tool_results", "{user_id}", "{thread_id}")})


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_delete_idle_threads_removes_session_results_and_index_of_those_threads_only(mode: str) -> None:
    thread_only = RememberConfig(compartments=("session",))  # type: ignore[arg-type]
    memory = Memory(embeddings=FakeEmbeddings(), layout=PER_USER_RESULTS, remember=thread_only)
    idle_saver, busy_saver = InMemorySaver(), InMemorySaver()
    for saver, thread in ((idle_saver, "old"), (busy_saver, "busy")):
        config = {"configurable": {"user_id": "alice", "thread_id": thread}}
        _graph_on(memory, saver, ["Noted."]).invoke({"messages": [HumanMessage("I like tea")]}, config)
        scope = Scope(user_id="alice", thread_id=thread)
        memory.store.put(memory.layout.namespace(Compartment.RESULTS, scope), "r1", {"content": "sunny"})
    before = _snapshot(memory.store)
    assert memory.store.search(("tool_results", "alice", "old"))
    assert memory.store.get(("memory_meta", "threads", "alice"), "old") is not None

    future = datetime.now(UTC) + timedelta(days=10)
    if mode == "sync":
        deleted = delete_idle_threads(
            idle_saver, timedelta(days=1), now=future, store=memory.store, layout=memory.layout
        )
    else:
        deleted = await adelete_idle_threads(
            idle_saver, timedelta(days=1), now=future, store=memory.store, layout=memory.layout
        )

    assert deleted == ["old"]
    after = _snapshot(memory.store)
    gone = set(before) - set(after)
    assert gone == {
        key
        for key in before
        if key[0] in {("memories", "session", "old"), ("tool_results", "alice", "old")}
        or key == (("memory_meta", "threads", "alice"), "old")
    }
    assert {k[0] for k in gone} == {
        ("memories", "session", "old"),
        ("tool_results", "alice", "old"),
        ("memory_meta", "threads", "alice"),
    }
    assert all(after[k] == before[k] for k in after)  # the busy thread and the user memory are untouched
    assert memory.forget_user("alice").threads == ["busy"]  # the index no longer lists the idle thread


def test_forget_user_clears_tool_results_where_the_layout_puts_them() -> None:
    memory = Memory(embeddings=FakeEmbeddings(), layout=PER_USER_RESULTS)
    for user in ("alice", "bob"):
        config = {"configurable": {"user_id": user, "thread_id": f"{user}-t"}}
        _graph_on(memory, InMemorySaver(), ["Hi."]).invoke({"messages": [HumanMessage("hi")]}, config)
        scope = Scope(user_id=user, thread_id=f"{user}-t")
        memory.store.put(memory.layout.namespace(Compartment.RESULTS, scope), "r1", {"content": "42"})
    report = memory.forget_user("alice")
    assert report.counts["tool_results"] == 1
    assert memory.store.search(("tool_results", "alice")) == []
    assert len(memory.store.search(("tool_results", "bob", "bob-t"))) == 1
