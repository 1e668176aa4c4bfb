"""Importing a conversation history: the same episodes remember writes, batched, idempotent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, RememberConfig
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, ScopeError
from langmem_plugin.services import MemoryLayout, execute
from langmem_plugin.services.remember.episodes import (
    episode_text_steps,
    remember_steps,
)
from langmem_plugin.services.remember.exchanges import episode_from_messages
from langmem_plugin.services.remember.history_import import (
    aimport_history,
    history_episodes,
    import_history,
    parse_time,
)
from langmem_plugin.testing import FakeEmbeddings

OLD = {"configurable": {"thread_id": "t-old", "user_id": "u1"}}
NEW = {"configurable": {"thread_id": "t-new", "user_id": "u1"}}
SESSION_NS = ("memories", "session", "t-old")
USER_NS = ("memories", "user", "u1")


class CountingStore(InMemoryStore):
    """An InMemoryStore that counts its batches and the puts in each."""

    def __init__(self) -> None:
        super().__init__(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
        self.put_batches: list[int] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        puts = sum(isinstance(op, PutOp) and op.value is not None for op in ops)
        if puts:
            self.put_batches.append(puts)
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


def _sessions() -> list[dict[str, Any]]:
    return [
        {
            "date": "2024-03-01T09:00:00",
            "messages": [
                {"role": "user", "content": "Hi! I just moved to Porto for a new job."},
                {"role": "assistant", "content": "Welcome to Porto! What kind of job is it?"},
                {"role": "user", "content": "I am a marine biologist at the aquarium."},
                {"role": "assistant", "content": "That sounds fascinating."},
            ],
        },
        {
            "date": "1:56 pm on 8 May, 2024",
            "messages": [
                HumanMessage("Every morning I drink green tea with jasmine, never coffee."),
                AIMessage("Green tea with jasmine is a lovely morning ritual."),
            ],
        },
        {
            "date": "2024-06-10",
            "messages": [
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "My sister Ines visits next week."},
                {"role": "assistant", "content": "Enjoy the visit with Ines!"},
            ],
        },
    ]


def _memory(store: InMemoryStore | None = None) -> Memory:
    return Memory(
        store if store is not None else CountingStore(),
        remember=RememberConfig(compartments=("session", "user")),
    )


def test_imported_history_is_recalled_in_a_new_thread() -> None:
    memory = _memory()
    report = memory.import_history(_sessions(), OLD)
    assert (report.turns, report.written, report.skipped, report.failed) == (4, 8, 0, 0)
    assert report.seconds > 0
    assert report.turns_per_second > 0
    assert "4 turns" in str(report)
    recall = memory.recall([HumanMessage("What tea do I drink in the morning?")], NEW)
    assert "green tea with jasmine" in recall.prompt.lower()
    recall = memory.recall([HumanMessage("Who is visiting me next week?")], NEW)
    assert "Ines" in recall.prompt


def test_replaying_the_import_writes_nothing_new() -> None:
    store = CountingStore()
    memory = _memory(store)
    memory.import_history(_sessions(), OLD)
    before = {(i.namespace, i.key): i.value for i in store.search(("memories",), limit=1000)}
    writes = len(store.put_batches)
    again = memory.import_history(_sessions(), OLD)
    assert (again.turns, again.written, again.skipped) == (4, 0, 8)
    after = {(i.namespace, i.key): i.value for i in store.search(("memories",), limit=1000)}
    assert after == before
    assert len(store.put_batches) == writes + 1  # the thread index only


def test_episode_fields_from_the_history() -> None:
    store = CountingStore()
    _memory(store).import_history(_sessions(), OLD)
    episodes = sorted(
        (i.value for i in store.search(SESSION_NS, limit=100)),
        key=lambda v: int(v["metadata"]["position"]),
    )
    assert [v["metadata"]["position"] for v in episodes] == ["0", "1", "2", "3"]
    keys = {v["metadata"]["position"]: k for k, v in _keyed(store).items()}
    first, second, third, last = (v["metadata"] for v in episodes)
    assert "previous" not in first
    assert first["next"] == keys["1"]
    assert second["previous"] == keys["0"]
    assert second["next"] == keys["2"]
    assert second["neighbours"] == f"{keys['0']} {keys['2']}"
    assert "next" not in last
    assert first["session"] == "2024-03-01T09:00:00"
    assert third["session"] == "1:56 pm on 8 May, 2024"
    assert third["time"].startswith("2024-05-08T13:56")
    assert episodes[2]["created_at"].startswith("2024-05-08T13:56")
    assert third["context"].startswith("User: I am a marine biologist")
    assert first["speaker"] == "user"
    assert first["role"] == "exchange"
    assert first["thread_id"] == "t-old"
    assert first["message_ids"] == "1.1 1.2"
    assert third["part_1"].startswith("User: Every morning I drink green tea")


def _keyed(store: InMemoryStore) -> dict[str, dict[str, Any]]:
    return {i.key: i.value for i in store.search(SESSION_NS, limit=10_000)}


def test_import_writes_what_remember_writes() -> None:
    """An exchange imported and the same exchange remembered live are the same record."""
    messages = [
        HumanMessage("hi", id="h0"),
        AIMessage("hello", id="a0"),
        HumanMessage("I like green tea.", id="h1"),
        AIMessage("Noted: green tea.", id="a1"),
    ]
    scope = Scope(user_id="u1", thread_id="t-old")
    live, imported = CountingStore(), CountingStore()
    layout = MemoryLayout()
    episode = episode_from_messages(messages)
    assert episode is not None
    execute(live, remember_steps(scope, layout, episode))
    import_history(imported, messages, scope, layout=layout)
    key = episode.key(scope)
    user_ns = ("memories", "user", "u1")  # the scope names a user: user memory, live and imported
    a, b = live.get(user_ns, key), imported.get(user_ns, key)
    assert a is not None
    assert b is not None
    ignore = {"time"}
    assert {k: v for k, v in a.value["metadata"].items() if k not in ignore} == {
        k: v for k, v in b.value["metadata"].items() if k not in ignore and k != "next"
    }
    assert a.value["content"] == b.value["content"]
    assert a.value["kind"] == b.value["kind"]
    assert a.value["category"] == b.value["category"]


def test_long_imported_answers_become_passages_and_are_rebuilt() -> None:
    answer = " ".join(f"Paragraph {n} explains the tides of the harbour in detail." for n in range(2000))
    history = [{"role": "user", "content": "Explain the tides."}, {"role": "assistant", "content": answer}]
    store = CountingStore()
    report = import_history(store, history, Scope(thread_id="t-old"), progress=True)
    assert report.passages > 100
    (key,) = [k for k in _keyed(store) if "-p" not in k]
    text = execute(store, episode_text_steps(SESSION_NS, key))
    assert text == f"User: Explain the tides.\nAssistant: {answer}"
    hits = store.search(SESSION_NS, query="Paragraph 1500 explains the tides", limit=5)
    assert any("Paragraph 1500 " in h.value["content"] for h in hits)


def test_import_batches_the_writes() -> None:
    history = [
        {"role": r, "content": f"{'question' if r == 'user' else 'answer'} number {n} about topic {n}"}
        for n in range(100)
        for r in ("user", "assistant")
    ]
    store = CountingStore()
    report = import_history(store, history, Scope(user_id="u1", thread_id="t-old"), batch_size=50)
    assert report.written == 100
    assert len(store.put_batches) <= 3  # two batches of 50 episodes, and the thread index
    assert max(store.put_batches) >= 50


def test_a_conversation_between_people_per_message() -> None:
    history = [
        {
            "date": "2023-05-08",
            "messages": [
                {
                    "role": "user",
                    "name": "Caroline",
                    "content": "I went to a support group yesterday.",
                    "id": "D1:1",
                },
                {"role": "Melanie", "content": "That is great, how was it?", "id": "D1:2"},
                {"role": "user", "name": "Caroline", "content": "Thanks!", "id": "D1:3"},
            ],
        },
        {
            "date": "2023-05-25",
            "messages": [{"role": "user", "name": "Caroline", "content": "Thanks!", "id": "D2:1"}],
        },
    ]
    episodes = history_episodes(history, per="message")
    assert [(e.speaker, e.message_ids) for e in episodes] == [
        ("Caroline", ("D1:1",)),
        ("Melanie", ("D1:2",)),
        ("Caroline", ("D1:3",)),
        ("Caroline", ("D2:1",)),
    ]
    store = CountingStore()
    report = import_history(store, history, Scope(thread_id="t-old"), per="message")
    assert report.written == 4  # the same words said twice are two episodes
    contents = sorted(v["content"] for v in _keyed(store).values())
    assert contents[0] == "Caroline: I went to a support group yesterday."
    speakers = {v["metadata"]["message_ids"]: v["metadata"]["speaker"] for v in _keyed(store).values()}
    assert speakers["D1:2"] == "Melanie"


def test_async_import_is_the_same_as_sync() -> None:
    sync_store, async_store = CountingStore(), CountingStore()
    report = _memory(sync_store).import_history(_sessions(), OLD)
    areport = asyncio.run(_memory(async_store).aimport_history(_sessions(), OLD))
    assert (areport.turns, areport.written, areport.passages) == (
        report.turns,
        report.written,
        report.passages,
    )

    def values(store: InMemoryStore) -> dict[str, Any]:
        return {
            i.key: {k: v for k, v in i.value.items() if k not in ("created_at", "updated_at")}
            | {"metadata": {k: v for k, v in i.value["metadata"].items() if k != "time"}}
            for i in store.search(USER_NS, limit=100)
        }

    assert values(sync_store) == values(async_store)
    again = asyncio.run(
        aimport_history(async_store, _sessions(), Scope(user_id="u1", thread_id="t-old"), per="exchange")
    )
    assert again.written == 0


def test_bad_histories_are_told() -> None:
    store = CountingStore()
    with pytest.raises(ScopeError):
        import_history(store, [{"role": "user", "content": "hi"}], Scope(user_id="u1"))
    with pytest.raises(ConfigurationError):
        import_history(store, [{"messages": []}, {"role": "user", "content": "x"}], Scope(thread_id="t"))
    with pytest.raises(ConfigurationError):
        import_history(store, ["just a string"], Scope(thread_id="t"))  # type: ignore[list-item]
    with pytest.raises(ConfigurationError):
        import_history(store, [], Scope(thread_id="t"), batch_size=0)
    assert import_history(store, [], Scope(thread_id="t")).turns == 0


def test_parse_time() -> None:
    assert parse_time("not a date") is None
    assert parse_time(None) is None
    assert parse_time("2024-01-02").isoformat() == "2024-01-02T00:00:00+00:00"  # type: ignore[union-attr]


def test_a_history_larger_than_the_compartment_reports_what_made_room() -> None:
    from langmem_plugin.services import CompartmentLimits

    history = [
        {"role": r, "content": f"{'question' if r == 'user' else 'answer'} {n}"}
        for n in range(12)
        for r in ("user", "assistant")
    ]
    layout = MemoryLayout(limits={"session": CompartmentLimits(max_items=10)})
    store = CountingStore()
    report = import_history(store, history, Scope(thread_id="t-old"), layout=layout, batch_size=4)
    assert report.written == 12
    assert report.evicted == 2
    assert len(store.search(SESSION_NS, limit=100)) == 10
