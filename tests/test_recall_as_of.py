"""``Memory.recall(..., as_of=...)``: recall as it would have been at a time (evaluations, backfills).

Recency is measured from ``as_of`` instead of now, and what was written after it is not seen;
``as_of=None`` is the recall of now. Real components: ``Memory()``'s default store (embedded
Qdrant, dense + BM25) with FakeEmbeddings, histories written by ``import_history``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, RecallConfig
from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.core.validity import invalidated
from langmem_plugin.errors import InvalidTimeError
from langmem_plugin.testing import FakeEmbeddings

OLD = {"configurable": {"thread_id": "t-2023", "user_id": "u1"}}
NEW = {"configurable": {"thread_id": "t-new", "user_id": "u1"}}
USER_NS = ("memories", "user", "u1")
TRIPS = [  # one session a season, each about a hike
    ("2023-01-15T10:00", "In January I went hiking in the Alps near Chamonix."),
    ("2023/04/02 (Sun) 10:00", "In April I went hiking on the cliffs of Madeira."),
    ("1:00 pm on 10 July, 2023", "In July I went hiking in the Dolomites with my brother."),
    ("October 20, 2023", "In October I went hiking up Mount Olympus in Greece."),
]
PLACES = ["Chamonix", "Madeira", "Dolomites", "Olympus"]
QUESTION = "Where did I go hiking?"


def _history() -> list[dict[str, Any]]:
    return [
        {
            "date": when,
            "id": f"trip-{n}",
            "messages": [
                {"role": "user", "content": text},
                {"role": "assistant", "content": "That sounds like a wonderful hike!"},
            ],
        }
        for n, (when, text) in enumerate(TRIPS)
    ]


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory(embeddings=FakeEmbeddings()) as made:
        made.import_history(_history(), OLD)
        yield made


def _seen(recall: Any) -> set[str]:
    """The places in what recall injected or considered."""
    texts = [recall.prompt, *(c.content for c in recall.considered)]
    return {p for p in PLACES if any(p in t for t in texts)}


def test_recall_as_of_sees_nothing_written_after_it(memory: Memory) -> None:
    assert _seen(memory.recall(QUESTION, NEW)) == set(PLACES)
    mid = memory.recall(QUESTION, NEW, as_of=datetime(2023, 6, 1, tzinfo=UTC))
    assert _seen(mid) == {"Chamonix", "Madeira"}
    assert "Madeira" in mid.prompt
    assert _seen(memory.recall(QUESTION, NEW, as_of="2023/04/02 (Sun) 10:00")) == {"Chamonix", "Madeira"}
    assert _seen(memory.recall(QUESTION, NEW, as_of="2023-04-02T09:59")) == {"Chamonix"}
    assert _seen(memory.recall(QUESTION, NEW, as_of=date(2023, 1, 1))) == set()


def test_as_of_takes_what_a_session_date_takes(memory: Memory) -> None:
    naive = memory.recall(QUESTION, NEW, as_of=datetime(2023, 8, 1))  # naive: UTC
    epoch = memory.recall(QUESTION, NEW, as_of=datetime(2023, 8, 1, tzinfo=UTC).timestamp())
    text = memory.recall(QUESTION, NEW, as_of="August 1, 2023")
    assert _seen(naive) == _seen(epoch) == _seen(text) == {"Chamonix", "Madeira", "Dolomites"}


def test_recency_is_measured_from_as_of() -> None:
    only_recency = RecallConfig(w_relevance=0.0, w_priority=0.0, w_recency=1.0, recency_half_life_days=30)
    with Memory(embeddings=FakeEmbeddings(), recall=only_recency) as memory:
        memory.import_history(_history(), OLD)
        # 30 days after April's trip: its recency is one half; January's is 2 ** -(107 / 30)
        then = memory.recall(QUESTION, NEW, as_of="2023-05-02T10:00:00Z")
        scores = {p: i.score for i in then.items for p in PLACES if p in i.content}
        assert scores == {"Madeira": 0.5, "Chamonix": pytest.approx(2 ** -(107 / 30), abs=1e-4)}
        assert [p for i in then.items for p in PLACES if p in i.content] == ["Madeira", "Chamonix"]
        now = memory.recall(QUESTION, NEW)  # as_of=None: from now, years later
        assert all(i.score < 0.01 for i in now.items)
        assert {p for i in now.items for p in PLACES if p in i.content} == set(PLACES)


def test_a_fact_superseded_after_as_of_was_still_true_then() -> None:
    store = InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
    memory = Memory(store, recall=RecallConfig(retrieval=None, min_relevance=None))
    old = MemoryRecord(
        content="Sam lives in Porto",
        kind="fact",
        created_at=datetime(2023, 2, 1, tzinfo=UTC),
        updated_at=datetime(2023, 2, 1, tzinfo=UTC),
    )
    gone = invalidated(old, by="m2", at=datetime(2023, 9, 1, tzinfo=UTC)).model_copy(
        update={"updated_at": datetime(2023, 9, 1, tzinfo=UTC)}
    )
    new = MemoryRecord(
        content="Sam lives in Lisbon",
        kind="fact",
        created_at=datetime(2023, 9, 1, tzinfo=UTC),
        updated_at=datetime(2023, 9, 1, tzinfo=UTC),
    )
    store.put(USER_NS, "m1", gone.to_value())
    store.put(USER_NS, "m2", new.to_value())
    then = memory.recall("Where does Sam live?", NEW, as_of="2023-06-01")
    assert "Porto" in then.prompt
    assert "Lisbon" not in then.prompt
    now = memory.recall("Where does Sam live?", NEW)
    assert "Lisbon" in now.prompt
    assert "Porto" not in now.prompt


def test_arecall_takes_as_of_too(memory: Memory) -> None:
    mid = asyncio.run(memory.arecall(QUESTION, NEW, as_of="2023-06-01"))
    assert _seen(mid) == {"Chamonix", "Madeira"}


@pytest.mark.parametrize(
    ("as_of", "problem"),
    [
        ("sometime next week", "as_of is not a datetime, a date or text in a known format"),
        ("05/06/2023", "reads both month-first"),
        ("", "is blank"),
        (True, "not a datetime, a date, text or epoch seconds"),
        (1685577600000, "milliseconds? divide by 1000"),
        ([2023, 6, 1], "not a datetime, a date, text or epoch seconds"),
    ],
)
def test_an_as_of_that_is_not_a_time_is_refused(memory: Memory, as_of: Any, problem: str) -> None:
    with pytest.raises(InvalidTimeError) as info:
        memory.recall(QUESTION, NEW, as_of=as_of)
    assert str(info.value).startswith("recall: as_of "), str(info.value)
    assert problem in str(info.value)
    assert "Fix: " in str(info.value)
