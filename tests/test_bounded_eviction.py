"""Issue 39, item 1: a write that must evict reads what the eviction decides by, not every value.

A user at the compartment's limit evicts on every few writes. The store lists the namespace
with what the bound's eviction reads of each value (``kind`` and ``created_at``: a payload
selector on the engine's scroll) and reads whole only the few it would choose. What is
evicted, and in which order, is what the choice from whole values was before:

- the listing of a full namespace carries no content, on both Qdrant engines (the embedded
  engine and qdrant-client's ``":memory:"``), and the chosen items are the only ones read whole;
- the choice equals the one the full-value eviction made (its code is kept here as the
  reference) for any mix of episodes, other memories and values that are no valid record —
  on embedded Qdrant, on CheckpointerStore over SQLite and on PostgresMemoryStore (a real
  Postgres, ``tests/postgres_server.py``), whose listing selects ``value -> 'kind'`` and
  ``value -> 'created_at'`` alone, in the write's transaction;
- :func:`~langmem_plugin.core.bounded.room_steps` equals :func:`~langmem_plugin.core.bounded.room`
  for any order and any admission rule.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, Item, PutOp

from langmem_plugin.core.bounded import Bound, BoundedWrite, OrderedEviction, overflow, room, room_steps
from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.steps import run_steps
from langmem_plugin.errors import ConfigurationError, InvalidRecordError, MemoryLimitError
from langmem_plugin.services import Compartment, CompartmentLimits, MemoryLayout
from langmem_plugin.services.limits import bound_of
from langmem_plugin.stores import CheckpointerStore, QdrantStore
from langmem_plugin.stores.qdrant._calls import Retrieve, Scroll
from tests.memory_fixtures import record_engine_calls
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)
from tests.test_postgres_contract import fresh_database

NS = ("memories", "user", "sam")
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _old_oldest_episodes(limit: int) -> Any:
    """The eviction as it was before it could choose from two fields: every value read whole."""

    def evict(items: Sequence[Item], over: int) -> list[str]:
        episodes: list[tuple[MemoryRecord, str]] = []
        for item in items:
            try:
                record = MemoryRecord.from_value(item.value)
            except InvalidRecordError:
                continue
            if record.kind is MemoryKind.EPISODE:
                episodes.append((record, item.key))
        episodes.sort(key=lambda pair: (pair[0].created_at, pair[1]))
        if len(episodes) < over:
            return []
        return [key for _, key in episodes[: over + limit // 20]]

    return evict


def _bound(limit: int, namespace: tuple[str, ...] = NS) -> Bound:
    bound = bound_of(
        MemoryLayout(limits={"user": CompartmentLimits(max_items=limit)}), Compartment.USER, namespace
    )
    assert bound is not None
    return bound


def _listed(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    return [i for i in store.search(namespace, limit=1000) if tuple(i.namespace) == namespace]


def _episode(n: int, **fields: Any) -> dict[str, Any]:
    record = MemoryRecord(
        content=f"exchange {n}: " + "a long assistant answer " * 40,
        kind=MemoryKind.EPISODE,
        created_at=T0 + timedelta(minutes=n),
        metadata={"context": "the question before it " * 20},
    )
    return {**record.to_value(), **fields}


def _fact(n: int) -> dict[str, Any]:
    return MemoryRecord(content=f"fact {n}", created_at=T0 + timedelta(minutes=n)).to_value()


# --------------------------------------------------------------------------- what the store reads


@pytest.fixture(params=["embedded", "memory"])
def qdrant(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QdrantStore]:
    where = str(tmp_path / "q") if request.param == "embedded" else ":memory:"
    with QdrantStore(where) as store:
        yield store


def test_a_full_namespace_is_listed_by_kind_and_time_and_only_the_chosen_are_read_whole(
    qdrant: QdrantStore,
) -> None:
    # 40 episodes written newest first (their keys' order is not their age), 20 facts, a broken record
    puts = [PutOp(NS, f"e{n:02d}", _episode(39 - n), index=False) for n in range(40)]
    puts += [PutOp(NS, f"f{n:02d}", _fact(n), index=False) for n in range(20)]
    puts.append(PutOp(NS, "broken", _episode(-5, content=""), index=False))  # the oldest, but no record
    qdrant.batch(puts)
    whole = _listed(qdrant, NS)
    calls: list[tuple[Any, Any]] = []
    execute = qdrant._engine.execute

    def recorded(call: Any) -> Any:
        result = execute(call)
        calls.append((call, result))
        return result

    qdrant._engine.execute = recorded  # type: ignore[method-assign]
    bound = _bound(60)  # 61 items and 2 more: 3 too many, and 60 // 20 = 3 more for the next writes
    write = BoundedWrite((PutOp(NS, "new1", _fact(100)), PutOp(NS, "new2", _fact(101))), (bound,))
    evicted = [op.key for op in qdrant.write_bounded(write)]

    assert evicted == [f"e{n:02d}" for n in (39, 38, 37, 36, 35, 34)]  # the six oldest episodes
    assert evicted == [op.key for op in room(write, _bound(60), whole, 3)]
    assert evicted == _old_oldest_episodes(60)([i for i in whole], 3)
    scrolls = [(c, r) for c, r in calls if isinstance(c, Scroll)]
    assert scrolls
    for call, (hits, _) in scrolls:
        assert call.with_payload == (
            "key",
            "ns",
            "created_us",
            "updated_us",
            "value.kind",
            "value.created_at",
        )
        for hit in hits:
            assert set(hit.payload["value"]) <= {"kind", "created_at"}  # no content, no metadata
    assert sum(len(hits) for _, (hits, _) in scrolls) == 61
    reads = [(c, r) for c, r in calls if isinstance(c, Retrieve) and c.with_payload == ("value",)]
    # the chosen alone are read whole: the six oldest, then (the broken one passed over) the next
    assert [len(call.ids) for call, _ in reads] == [6, 1]
    contents = {h.payload["value"]["content"].split(":")[0] for _, hits in reads for h in hits}
    assert contents == {f"exchange {n}" for n in range(6)} | {""}
    assert {i.key for i in _listed(qdrant, NS)} == {i.key for i in whole} - set(evicted) | {"new1", "new2"}


def test_an_invalid_record_among_the_oldest_is_read_whole_then_passed_over(qdrant: QdrantStore) -> None:
    # the two oldest "episodes" are no valid record: the choice reads them whole, drops them, chooses again
    qdrant.batch(
        [
            PutOp(NS, "a-no-content", _episode(0, content=""), index=False),
            PutOp(NS, "b-bad-priority", _episode(1, priority=11), index=False),
            *(PutOp(NS, f"e{n}", _episode(n), index=False) for n in range(2, 6)),
        ]
    )
    calls = record_engine_calls(qdrant)
    write = BoundedWrite((PutOp(NS, "new", _fact(9)),), (_bound(6),))
    assert [op.key for op in qdrant.write_bounded(write)] == ["e2"]
    reads = [c.ids for c in calls if isinstance(c, Retrieve) and c.with_payload == ("value",)]
    assert [len(ids) for ids in reads] == [1, 1, 1]  # a-no-content, then b-bad-priority, then e2
    with pytest.raises(MemoryLimitError):  # four episodes cannot make room for five new memories
        qdrant.write_bounded(
            BoundedWrite(tuple(PutOp(NS, f"n{i}", _fact(i)) for i in range(5)), (_bound(6),))
        )


def test_an_episode_without_a_time_goes_after_every_dated_one(qdrant: QdrantStore) -> None:
    _undated_last(qdrant, NS)


def _undated_last(store: BaseStore, ns: tuple[str, ...]) -> None:
    # none of this package's writers writes one; the record reads it as written now
    undated = _episode(0)
    del undated["created_at"]
    store.batch([PutOp(ns, "a-undated", undated, index=False)])
    store.batch([PutOp(ns, f"e{n}", _episode(n), index=False) for n in (1, 2)])
    whole = _listed(store, ns)
    write = BoundedWrite((PutOp(ns, "x", _fact(9)), PutOp(ns, "y", _fact(9))), (_bound(3, ns),))
    assert _old_oldest_episodes(3)(whole, 2) == ["e1", "e2"]
    assert [op.key for op in store.write_bounded(write)] == ["e1", "e2"]  # type: ignore[attr-defined]
    write = BoundedWrite((PutOp(ns, "z", _fact(9)),), (_bound(3, ns),))
    assert [op.key for op in store.write_bounded(write)] == ["a-undated"]  # type: ignore[attr-defined]


def test_ordered_eviction_names_only_top_level_fields() -> None:
    with pytest.raises(ConfigurationError, match=r"'value\.kind'"):
        OrderedEviction(fields=("value.kind",), rank=lambda v: 0, admits=lambda v: True)
    with pytest.raises(ConfigurationError, match="extra"):
        OrderedEviction(fields=("kind",), rank=lambda v: 0, admits=lambda v: True, extra=-1)


# --------------------------------------------------------------------------- the same choice as before

OFFSETS = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
# few instants, so that ties (broken by key) and one instant written in several offsets are common
INSTANTS = st.builds(lambda m: T0 + timedelta(minutes=m), st.integers(0, 6))
STAMPS = st.builds(lambda t, tz: t.astimezone(tz).isoformat(), INSTANTS, st.sampled_from(OFFSETS))
NOT_STAMPS = st.sampled_from(
    ["2026-03-01T00:01:00", "yesterday", "", 0, 1.5, None, True, ["2026-03-01T00:00:00+00:00"], {"at": "x"}]
)
NOT_KINDS = st.sampled_from(["fact", "EPISODE", "episode ", "", None, 1, ["episode"], {"kind": "episode"}])


@st.composite
def values(draw: st.DrawFn) -> dict[str, Any]:
    """A value in a user namespace: a valid record (an episode or not), an "episode" that is no valid
    record, or something else entirely."""
    shape = draw(st.sampled_from(["episode", "record", "broken episode", "odd"]))
    at = draw(STAMPS)
    if shape == "episode":  # valid (every writer of this package writes created_at)
        return {"content": "an exchange " * draw(st.integers(1, 30)), "kind": "episode", "created_at": at}
    if shape == "record":
        kind = draw(st.sampled_from([k.value for k in MemoryKind if k is not MemoryKind.EPISODE]))
        return {"content": "a memory", "kind": kind, "created_at": at}
    if shape == "broken episode":
        fields: list[dict[str, Any]] = [
            {"content": ""},
            {"content": 5},
            {"priority": 0},
            {"bogus": 1},
            {"created_at": None},
            {},
        ]
        broken = draw(st.sampled_from(fields) | st.builds(lambda at: {"created_at": at}, NOT_STAMPS))
        value = {"content": "an exchange", "kind": "episode", "created_at": at, **broken}
        if not broken:
            del value["created_at"]  # undated and without content: no record
            value["content"] = " "
        return value
    return {"content": "odd", "kind": draw(NOT_KINDS), "created_at": draw(STAMPS | NOT_STAMPS)}


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[PutOp], int]:
    """Values held, the write (new memories, and puts or deletes of held keys), and the limit."""
    held = draw(st.lists(values(), min_size=1, max_size=45))
    keys = [f"k{n:02d}" for n in range(len(held))]
    touched = draw(st.lists(st.sampled_from(keys), max_size=3, unique=True))
    ops = [PutOp(NS, key, None if draw(st.booleans()) else _fact(50)) for key in touched]
    ops += [PutOp(NS, f"new{n}", draw(values())) for n in range(draw(st.integers(1, 4)))]
    limit = draw(st.integers(1, len(held) + 3))
    return held, ops, limit


def _choice(
    store: BaseStore, namespace: tuple[str, ...], write: BoundedWrite, limit: int, evict: Any
) -> list[str] | None:
    """What ``evict`` chooses from whole values for ``write`` (None: the write is refused)."""
    bound = Bound(namespace, limit, refuse=_bound(limit).refuse, evict=evict)
    items = _listed(store, namespace)
    over = overflow(write, bound, count=len(items), present={i.key for i in items})
    try:
        return [op.key for op in room(write, bound, items, over)]
    except MemoryLimitError:
        return None


NUMBERS = itertools.count()


def _same_choice(store: BaseStore, case: tuple[list[dict[str, Any]], list[PutOp], int]) -> None:
    held, ops, limit = case
    namespace = (*NS, f"n{next(NUMBERS)}")  # a namespace of its own for each example
    store.batch([PutOp(namespace, f"k{n:02d}", value, index=False) for n, value in enumerate(held)])
    ops = [op._replace(namespace=namespace, index=False) for op in ops]
    write = BoundedWrite(tuple(ops), (_bound(limit, namespace),))
    before = {i.key for i in _listed(store, namespace)}
    expected = _choice(store, namespace, write, limit, _old_oldest_episodes(limit))
    # what another store (PostgresStore, any BaseStore through the services) chooses from whole values
    assert _choice(store, namespace, write, limit, _bound(limit).evict) == expected
    if expected is None:
        with pytest.raises(MemoryLimitError):
            store.write_bounded(write)  # type: ignore[attr-defined]
        assert {i.key for i in _listed(store, namespace)} == before  # nothing written
        return
    evicted = [op.key for op in store.write_bounded(write)]  # type: ignore[attr-defined]
    assert evicted == expected
    assert len(_listed(store, namespace)) <= limit


@pytest.fixture(scope="module")
def stores() -> Iterator[dict[str, BaseStore]]:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        yield {
            "qdrant": stack.enter_context(QdrantStore(Path(tmp) / "q")),
            "checkpointer": stack.enter_context(CheckpointerStore.from_sqlite(Path(tmp) / "c.db")),
        }


@pytest.mark.parametrize("kind", ["qdrant", "checkpointer"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_the_choice_from_kind_and_time_is_the_choice_from_whole_values(
    stores: dict[str, BaseStore], kind: str, case: tuple[list[dict[str, Any]], list[PutOp], int]
) -> None:
    _same_choice(stores[kind], case)


@pytest.fixture(scope="module")
def postgres(pgvector_url: str) -> Iterator[BaseStore]:  # noqa: F811
    from langmem_plugin.stores.postgres import PostgresMemoryStore

    with PostgresMemoryStore.from_conn_string(fresh_database(pgvector_url), setup=True) as store:
        yield store


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_the_choice_from_kind_and_time_is_the_choice_from_whole_values_on_postgres(
    postgres: BaseStore, case: tuple[list[dict[str, Any]], list[PutOp], int]
) -> None:
    _same_choice(postgres, case)


def test_an_episode_without_a_time_goes_after_every_dated_one_on_postgres(postgres: BaseStore) -> None:
    _undated_last(postgres, (*NS, "undated"))  # a field the value lacks is not listed as null


class _Recorded:
    """A real psycopg cursor that keeps each statement and the rows it returned."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur
        self.calls: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []

    def execute(self, query: str, params: dict[str, Any], **kwargs: Any) -> None:
        self.cur.execute(query, params, **kwargs)
        self.calls.append((query, params, []))

    def fetchall(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.cur.fetchall()
        self.calls[-1][2].extend(rows)
        return rows


def test_postgres_lists_a_full_namespace_by_kind_and_time_and_reads_only_the_chosen_whole(
    postgres: BaseStore,
) -> None:
    from psycopg.rows import dict_row

    from langmem_plugin.stores.postgres._bounded import make_room

    namespace = (*NS, "listed")
    puts = [PutOp(namespace, f"e{n:02d}", _episode(39 - n), index=False) for n in range(40)]
    puts += [PutOp(namespace, f"f{n:02d}", _fact(n), index=False) for n in range(20)]
    puts.append(PutOp(namespace, "broken", _episode(-5, content=""), index=False))  # oldest, no record
    undated = _episode(-9, created_at=None)  # a null time is no time: never an episode to evict
    puts.append(PutOp(namespace, "null-time", undated, index=False))
    postgres.batch(puts)
    whole = _listed(postgres, namespace)
    bound = _bound(61, namespace)  # 62 items and 2 more: 3 too many, and 61 // 20 = 3 more
    write = BoundedWrite((PutOp(namespace, "n1", _fact(100)), PutOp(namespace, "n2", _fact(101))), (bound,))
    with postgres._connection() as conn, conn.transaction():  # type: ignore[attr-defined]
        cur = _Recorded(conn.cursor(row_factory=dict_row))
        evicted = [op.key for op in make_room(cur, write, bound, datetime.now(UTC))]
    assert evicted == [f"e{n:02d}" for n in (39, 38, 37, 36, 35, 34)]  # the six oldest episodes
    assert evicted == _old_oldest_episodes(61)(whole, 3)
    listing, *reads = cur.calls
    assert len(listing[2]) == 62
    for row in listing[2]:
        assert set(row["value"]) == {"kind", "created_at"}  # no content, no metadata
    assert next(r for r in listing[2] if r["key"] == "null-time")["value"]["created_at"] is None
    # the chosen alone are read whole: the six oldest, then (the broken one passed over) the next
    assert [len(params["keys"]) for _, params, _ in reads] == [6, 1]
    assert {r["value"]["content"].split(":")[0] for _, _, rows in reads for r in rows} == {
        f"exchange {n}" for n in range(6)
    } | {""}
    assert {i.key for i in _listed(postgres, namespace)} == {i.key for i in whole}  # make_room writes nothing
    assert [op.key for op in postgres.write_bounded(write)] == evicted  # type: ignore[attr-defined]
    assert {i.key for i in _listed(postgres, namespace)} == {i.key for i in whole} - set(evicted) | {
        "n1",
        "n2",
    }


# --------------------------------------------------------------------------- room_steps is room


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.integers(0, 5) | st.none(), st.booleans(), st.integers(0, 3)), min_size=0, max_size=25
    ),
    touched=st.sets(st.integers(0, 30), max_size=4),
    over=st.integers(-1, 12),
    extra=st.integers(0, 4),
)
def test_room_steps_chooses_what_room_chooses_from_whole_values(
    items: list[tuple[int | None, bool, int]], touched: set[int], over: int, extra: int
) -> None:
    # a value's rank is its "r" (None: never chosen); "ok" is read only from the whole value
    def rank(value: Any) -> Any:
        return value.get("r")

    def admits(value: Any) -> bool:
        return bool(value["ok"]) and value.get("r") is not None

    order = OrderedEviction(fields=("r",), rank=rank, admits=admits, extra=extra)
    bound = Bound(
        ("n",), 10, refuse=lambda count, adding: MemoryLimitError(f"{count} + {adding}"), evict=order
    )
    whole = [
        Item(
            value={"r": r, "ok": ok, "pad": pad}, key=f"k{n}", namespace=("n",), created_at=T0, updated_at=T0
        )
        for n, (r, ok, pad) in enumerate(items)
    ]
    listed = [
        Item(value={"r": i.value["r"]}, key=i.key, namespace=("n",), created_at=T0, updated_at=T0)
        for i in whole
    ]
    values = {i.key: i.value for i in whole}
    asked: list[tuple[str, ...]] = []

    def answer(keys: tuple[str, ...]) -> dict[str, Any]:
        asked.append(keys)
        return {k: values[k] for k in keys}

    write = BoundedWrite(tuple(PutOp(("n",), f"k{n}", {"r": 0}) for n in sorted(touched)), (bound,))
    try:
        expected: list[PutOp] | Exception = room(write, bound, whole, over)
    except MemoryLimitError as exc:
        expected = exc
    try:
        got: list[PutOp] | Exception = run_steps(room_steps(write, bound, listed, over), answer)
    except MemoryLimitError as exc:
        got = exc
    assert str(got) == str(expected)
    read = [key for keys in asked for key in keys]
    assert len(read) == len(set(read))  # no item is read whole twice
