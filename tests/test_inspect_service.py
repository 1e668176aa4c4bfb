"""The inspection room (issue 26): catalog, pages, a recall explained, a memory's history and
provenance, and edits through the tools' own steps, on InMemoryStore, SQLite and embedded Qdrant."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryRecord, RecallConfig, TokenBudgets, memory_index
from langmem_plugin.core.record import exchange_link
from langmem_plugin.errors import (
    CompartmentError,
    ConfigurationError,
    InvalidRecordError,
    MemoryNotFoundError,
    ReadOnlyError,
    ScopeError,
)
from langmem_plugin.stores import CheckpointerStore
from langmem_plugin.surfaces.inspector import Inspector
from langmem_plugin.testing import FakeEmbeddings

USER = ("memories", "user", "sam")
SAM = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
KIM = {"configurable": {"user_id": "kim", "thread_id": "t2"}}
STORES = ["inmemory", "sqlite", "qdrant"]


def _index() -> dict[str, Any]:
    return dict(memory_index(FakeEmbeddings()))  # dense and BM25, as Memory() has them


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


def _exchanges(memory: Memory) -> None:
    memory.import_history(
        [
            ("user", "My dog is called Rex"),
            ("assistant", "Noted."),
            ("user", "I live in Lisbon"),
            ("assistant", "Lovely city."),
            ("user", "I drink green tea every morning"),
            ("assistant", "Good habit."),
        ],
        SAM,
    )
    memory.import_history([("user", "Kim's secret: the vault code is 4711"), ("assistant", "Ok.")], KIM)


def _put(store: BaseStore, key: str, content: str, **fields: Any) -> None:
    store.put(USER, key, MemoryRecord(content=content, **fields).to_value(), index=["content"])


@pytest.mark.parametrize("kind", STORES)
def test_catalog_pages_and_filters_read_what_each_store_holds(kind: str, tmp_path: Path) -> None:
    with _store(kind, tmp_path) as store, Memory(store) as memory:
        _exchanges(memory)
        _put(store, "f1", "Sam prefers window seats", kind="preference", category="travel")
        inspector = memory.inspector()
        catalog = inspector.catalog()
        assert catalog.users == ["kim", "sam"]
        assert catalog.threads == ["t1", "t2"]
        assert catalog.compartments["user"] == ["kim", "sam"]

        everything = inspector.page(user_id="sam", limit=500)
        assert len(everything.rows) == 4
        assert not everything.more
        assert not any("vault" in row.content for row in everything.rows)  # kim's stays kim's
        first = inspector.page(user_id="sam", limit=2)
        rest = inspector.page(user_id="sam", offset=2, limit=2)
        assert first.more
        assert not rest.more
        assert {r.id for r in first.rows} | {r.id for r in rest.rows} == {r.id for r in everything.rows}

        assert [r.id for r in inspector.page(user_id="sam", kind="preference").rows] == ["f1"]
        assert [r.id for r in inspector.page(user_id="sam", category="travel").rows] == ["f1"]
        found = inspector.page(user_id="sam", contains="LISBON")
        assert [r.content.splitlines()[0] for r in found.rows] == ["User: I live in Lisbon"]
        assert found.filters == {"contains": "LISBON"}
        store.put(
            ("memories", "session", "t1"), "s1", MemoryRecord(content="We are planning a trip").to_value()
        )
        session = inspector.page("session", thread_id="t1")
        assert [(r.id, r.compartment) for r in session.rows] == [("s1", "session")]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"limit": 0}, ConfigurationError),
        ({"limit": 501}, ConfigurationError),
        ({"offset": -1}, ConfigurationError),
        ({"limit": True}, ConfigurationError),
        ({"kind": 3}, ConfigurationError),
        ({"user_id": None}, ScopeError),
        ({"user_id": "sam\x00"}, ScopeError),
        ({"user_id": "sam", "compartment": "nowhere"}, CompartmentError),
    ],
)
def test_a_page_that_cannot_be_read_is_a_typed_error(
    arguments: dict[str, Any], error: type[Exception]
) -> None:
    inspector = Inspector(InMemoryStore())
    arguments = {"user_id": "sam", **arguments}
    with pytest.raises(error):
        inspector.page(**arguments)


def test_explain_names_every_outcome_and_writes_nothing() -> None:
    store = InMemoryStore(index=_index())  # type: ignore[arg-type]
    _put(store, "a", "the dog is called Rex", priority=9)
    _put(store, "b", "the dog is called Rex")  # the same text: a duplicate of a
    _put(store, "c", "the dog was called Max", metadata={"invalid_at": "2025-01-01T00:00:00+00:00"})
    _put(store, "d", "the dog likes long walks by the river in the evening " * 3)
    _put(store, "e", "the dog sleeps in a basket")
    config = RecallConfig(min_relevance=None, max_items=2, budgets=TokenBudgets(memories=120))
    inspector = Inspector(store, recall=config)
    before = {i.key: i.value for i in store.search(USER, limit=50)}

    recall = inspector.explain("what is the dog called?", user_id="sam")
    outcomes = {c.id: c.outcome for c in recall.considered}
    assert outcomes["a"] == "injected"
    assert outcomes["b"] == "duplicate"
    assert outcomes["c"] == "superseded"
    assert set(outcomes.values()) >= {"injected", "duplicate", "superseded"}
    assert {"over budget", "max items"} & set(outcomes.values())
    injected = [c for c in recall.considered if c.outcome == "injected"]
    assert [c.id for c in injected] == [item.id for item in recall.items]
    assert all(c.tokens and c.rank for c in injected)
    assert [c.rank for c in recall.considered if c.rank] == sorted(
        c.rank for c in recall.considered if c.rank
    )
    assert "the dog is called Rex" in recall.prompt
    after = {i.key: i.value for i in store.search(USER, limit=50)}
    assert after == before  # no access counted, nothing written
    assert not store.list_namespaces(prefix=("memory_meta",))

    strict = Inspector(store, recall=RecallConfig(min_relevance=0.99))
    far = strict.explain("quantum chromodynamics lecture notes", user_id="sam")
    assert {c.outcome for c in far.considered} == {"below threshold"}
    assert not far.items


@pytest.mark.parametrize("kind", ["sqlite", "qdrant"])
def test_explain_shows_both_signals_and_the_lifts_on_a_hybrid_store(kind: str, tmp_path: Path) -> None:
    with _store(kind, tmp_path) as store, Memory(store) as memory:
        _exchanges(memory)
        recall = memory.inspector().explain("what is my dog called?", user_id="sam", thread_id="t1")
        top = recall.considered[0]
        assert top.outcome == "injected"
        assert "Rex" in top.content
        assert top.dense is not None
        assert top.lexical is not None
        assert {name for name, _ in top.lifts} <= {"neighbours", "group"}
        assert top.as_dict()["lifts"] == dict(top.lifts)


@pytest.mark.parametrize("kind", STORES)
def test_a_memory_shows_its_history_and_the_exchange_it_came_from(kind: str, tmp_path: Path) -> None:
    with _store(kind, tmp_path) as store, Memory(store) as memory:
        _exchanges(memory)
        episode = next(r for r in memory.inspector().page(user_id="sam").rows if "Rex" in r.content)
        _put(store, "rex", "Sam's dog is Rex", sources=[exchange_link("t1", episode.id)])
        reader = memory.inspector()
        with pytest.raises(ReadOnlyError, match="--allow-writes"):
            reader.edit("rex", user_id="sam", content="Sam's dog is Max")
        with pytest.raises(ReadOnlyError):
            reader.forget("rex", user_id="sam")

        writer = memory.inspector(writable=True)
        writer.edit("rex", user_id="sam", thread_id="t1", content="Sam's dog is Max", priority=8)
        detail = reader.show("rex", user_id="sam", thread_id="t1")
        assert detail.row.content == "Sam's dog is Max"
        assert detail.row.priority == 8
        assert [(e.action, e.source, e.old, e.new) for e in detail.history] == [
            ("UPDATE", "inspector", "Sam's dog is Rex", "Sam's dog is Max")
        ]
        assert [(x.link, x.thread_id) for x in detail.exchanges] == [(f"t1/{episode.id}", "t1")]
        assert "My dog is called Rex" in (detail.exchanges[0].text or "")
        assert detail.as_dict()["history"][0]["source"] == "inspector"

        with pytest.raises(InvalidRecordError):
            writer.edit("rex", user_id="sam", priority=99)
        with pytest.raises(ConfigurationError, match="cannot be edited"):
            writer.edit("rex", user_id="sam", access_count=0)
        assert reader.show("rex", user_id="sam").row.priority == 8  # nothing written

        writer.forget("rex", user_id="sam", thread_id="t1")
        with pytest.raises(MemoryNotFoundError):
            reader.show("rex", user_id="sam")
        assert not any("Rex" in r.content for r in reader.page(user_id="sam").rows)  # its exchange too
        with pytest.raises(MemoryNotFoundError):
            reader.show(episode.id, user_id="sam")


def test_notebook_views_escape_stored_text() -> None:
    store = InMemoryStore(index=_index())  # type: ignore[arg-type]
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    _put(store, "h", hostile)
    inspector = Inspector(store, recall=RecallConfig(min_relevance=None))
    views = [
        inspector.page(user_id="sam")._repr_html_(),
        inspector.show("h", user_id="sam")._repr_html_(),
        inspector.explain("script alert", user_id="sam")._repr_html_(),
    ]
    for view in views:
        assert "<script>" not in view
        assert "<img" not in view
        assert "&lt;script&gt;" in view


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=st.text(min_size=0, max_size=12))
def test_no_user_id_reads_another_users_memory(user: str) -> None:
    store = InMemoryStore()
    _put(store, "s", "Sam's memory")
    store.put(("memories", "user", "kim"), "k", MemoryRecord(content="Kim's memory").to_value())
    inspector = Inspector(store)
    try:
        page = inspector.page(user_id=user)
    except (ScopeError, ConfigurationError):
        return
    expected = {"sam": ["s"], "kim": ["k"]}.get(user, [])
    assert [row.id for row in page.rows] == expected
