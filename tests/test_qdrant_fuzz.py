"""Differential fuzz: thousands of random batches on QdrantStore and on LangGraph's InMemoryStore.

Both stores get the same batches (puts, deletes, gets, searches with and
without a query, namespace listings, several ops per batch). InMemoryStore is
the oracle for what is stored and what matches; the differences we intend
(docs/store-contract.md) are applied to its answers before comparing:

1. ``created_at`` is kept on update: checked against a model of first-write times.
2. No phantom namespaces: InMemoryStore lists a namespace after a get of a
   missing key or after its last delete; those are dropped from its listing.
3. Order without a query: InMemoryStore returns insertion order; we return newest
   ``updated_at`` first, ties by namespace then key — its full answer is re-sorted
   so, then paginated.
4. With a query, scores must agree (cosine, max over the item's texts — MaxSim
   in Qdrant); ties may come in any order, so pages are compared as
   (key, score) multisets over the full answer, and our pages must tile our full answer.
5. Items without a vector (``index=False``): InMemoryStore appends them only when
   a page is short and ignores the offset for them; we list them after the scored
   items, newest first, paginated like the rest.
6. An item put again with ``index=False`` keeps its previous vector in
   InMemoryStore (a stale vector: it is still scored); ours has none. The model
   knows which items are unindexed, and their InMemoryStore scores are ignored.

Not a difference but a workaround: InMemoryStore fails ("Number of embeddings
does not match") on a batch that puts one text twice, so every text here ends
with a unique token.

Filters are drawn from the subset where InMemoryStore's semantics are ours
(every item has an integer ``n`` and a string ``kind``): equality, lists,
subsets, ``$eq $ne $gt $gte $lt $lte``.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.stores.qdrant._cache import CACHE_BYTES
from langmem_plugin.testing import FakeEmbeddings
from tests.store_contract import FakeClock

NAMESPACES = [("a",), ("a", "x"), ("a", "y"), ("b",), ("b", "x", "z"), ("c", "x")]
PREFIXES = [(), ("a",), ("a", "x"), ("b",), ("b", "x"), ("c",), ("zz",)]
KEYS = [f"k{i}" for i in range(6)]
WORDS = ["tea", "green", "tax", "april", "hiking", "alps", "cat", "luna", "bread", "violin"]
FILTERS: list[dict[str, Any] | None] = [
    None,
    None,
    {"kind": "fact"},
    {"kind": {"$eq": "episode"}},
    {"n": 2},
    {"n": {"$gt": 2}},
    {"n": {"$gte": 1, "$lt": 4}},
    {"n": {"$ne": 3}},
    {"n": {"$lte": 0}},
    {"tags": ["x", "y"]},
    {"meta": {"lang": "en"}},
    {"kind": "fact", "n": {"$gt": 1}},
]


_serial = iter(range(10**9))


def _value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {
        "text": " ".join(rng.choices(WORDS, k=rng.randint(1, 4))) + f" w{next(_serial)}",
        "n": rng.randint(0, 5),
        "kind": rng.choice(["fact", "episode"]),
    }
    if rng.random() < 0.4:
        value["tags"] = rng.choice([["x", "y"], ["x"], []])
    if rng.random() < 0.4:
        value["meta"] = {"lang": rng.choice(["en", "fr"]), "src": "chat"}
    return value


def _op(rng: random.Random) -> Op:
    roll = rng.random()
    ns, key = rng.choice(NAMESPACES), rng.choice(KEYS)
    if roll < 0.45:
        index: Any = False if rng.random() < 0.1 else None
        return PutOp(ns, key, _value(rng), index=index)
    if roll < 0.55:
        return PutOp(ns, key, None)
    if roll < 0.7:
        return GetOp(ns, key)
    if roll < 0.92:
        query = " ".join(rng.choices(WORDS, k=rng.randint(1, 2))) if rng.random() < 0.35 else None
        return SearchOp(
            rng.choice(PREFIXES), rng.choice(FILTERS), rng.randint(1, 8), rng.randint(0, 6), query
        )
    conditions: list[MatchCondition] = []
    if rng.random() < 0.4:
        conditions.append(MatchCondition("prefix", rng.choice([("a",), ("*", "x"), ("b", "*"), ("a", "x")])))
    if rng.random() < 0.3:
        conditions.append(MatchCondition("suffix", rng.choice([("x",), ("z",), ("*",)])))
    depth = rng.choice([None, None, 1, 2])
    return ListNamespacesOp(tuple(conditions) or None, depth, rng.randint(1, 10), rng.randint(0, 3))


def _full(op: Op) -> Op:
    """What InMemoryStore is asked instead: the whole answer, to apply our ordering and paging to."""
    if isinstance(op, SearchOp):
        return SearchOp(op.namespace_prefix, op.filter, 10**6, 0, op.query)
    if isinstance(op, ListNamespacesOp):
        return ListNamespacesOp(op.match_conditions, None, 10**6, 0)
    return op


class Model:
    """Our timestamps: created_at kept on update, updated_at = the batch's time."""

    def __init__(self) -> None:
        self.times: dict[tuple[tuple[str, ...], str], tuple[datetime, datetime]] = {}
        self.unindexed: set[tuple[tuple[str, ...], str]] = set()

    def apply(self, ops: list[Op], now: datetime) -> None:
        final: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                final[(op.namespace, op.key)] = op
        for key, op in final.items():
            self.unindexed.discard(key)
            if op.index is False and op.value is not None:
                self.unindexed.add(key)
            if op.value is None:
                self.times.pop(key, None)
            else:
                created = self.times[key][0] if key in self.times else now
                self.times[key] = (created, now)

    def live_namespaces(self) -> set[tuple[str, ...]]:
        return {ns for ns, _ in self.times}


def _check(
    op: Op, ours: Any, theirs: Any, model: Model, live: set[tuple[str, ...]], full_ours: Any, where: str
) -> None:
    if isinstance(op, PutOp):
        assert ours is None, where
    elif isinstance(op, GetOp):
        if theirs is None:
            assert ours is None, where
        else:
            assert ours is not None, where
            assert ours.value == theirs.value, where
            assert (ours.created_at, ours.updated_at) == model.times[(op.namespace, op.key)], where
    elif isinstance(op, ListNamespacesOp):
        namespaces = {ns for ns in theirs if ns in live}  # difference 2: no phantoms
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        assert ours == sorted(namespaces)[op.offset : op.offset + op.limit], where
    elif isinstance(op, SearchOp) and op.query is None:
        for item in theirs:  # difference 1: timestamps from the model
            assert (item.namespace, item.key) in {(ns, k) for ns, k in model.times}, where

        def order(item: Item) -> tuple[float, tuple[str, ...], str]:
            updated = model.times[(tuple(item.namespace), item.key)][1]
            return (-updated.timestamp(), tuple(item.namespace), item.key)

        page = sorted(theirs, key=order)[op.offset : op.offset + op.limit]
        assert [(i.namespace, i.key, i.value) for i in ours] == [
            (i.namespace, i.key, i.value) for i in page
        ], where
        assert all(i.score is None for i in ours), where
    elif isinstance(op, SearchOp):
        # difference 4 and 5: compare the full answers as multisets, then our paging
        assert full_ours is not None

        def unscored(item: Item) -> bool:
            return (
                getattr(item, "score", None) is None or (tuple(item.namespace), item.key) in model.unindexed
            )

        scored_theirs = Counter(
            (tuple(i.namespace), i.key, round(i.score, 3)) for i in theirs if not unscored(i)
        )
        scored_ours = Counter(
            (tuple(i.namespace), i.key, round(i.score, 3)) for i in full_ours if i.score is not None
        )
        assert scored_ours == scored_theirs, where
        unscored_theirs = {(tuple(i.namespace), i.key) for i in theirs if unscored(i)}
        unscored_ours = [(tuple(i.namespace), i.key) for i in full_ours if i.score is None]
        assert set(unscored_ours) == unscored_theirs, where
        scores = [i.score for i in full_ours if i.score is not None]
        assert scores == sorted(scores, reverse=True), where
        assert all(i.score is None for i in full_ours[len(scores) :]), where
        page = [(i.namespace, i.key) for i in full_ours][op.offset : op.offset + op.limit]
        assert [(i.namespace, i.key) for i in ours] == page, where


def _run(store: QdrantStore, clock: FakeClock, seed: int, batches: int) -> None:
    rng = random.Random(seed)
    reference = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]})
    model = Model()
    for number in range(batches):
        ops = [_op(rng) for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.7:
            clock.advance(seconds=0.001)  # else the same instant: ties on updated_at
        # prune InMemoryStore's phantom namespaces left by earlier gets and deletes
        for ns in [ns for ns, items in reference._data.items() if not items]:
            del reference._data[ns]
        live = model.live_namespaces()
        # for query searches, our own full answer (same pre-batch state) to check paging against
        extra = [
            SearchOp(op.namespace_prefix, op.filter, 1000, 0, op.query)
            for op in ops
            if isinstance(op, SearchOp) and op.query
        ]
        ours_all = store.batch([*ops, *extra])
        ours, ours_full = ours_all[: len(ops)], iter(ours_all[len(ops) :])
        theirs = reference.batch([_full(op) for op in ops])
        for i, op in enumerate(ops):  # every read sees the state before the batch's writes
            full = next(ours_full) if isinstance(op, SearchOp) and op.query else None
            _check(op, ours[i], theirs[i], model, live, full, f"seed {seed} batch {number} op {i}: {op}")
        model.apply(ops, clock.now)


# The payload cache as it comes (every item fits), off, and tiny (most reads miss, entries are evicted).
@pytest.mark.parametrize(("seed", "cache_bytes"), [(1, CACHE_BYTES), (2, 0), (3, 3_000)])
def test_embedded_store_agrees_with_in_memory_store(tmp_path: Path, seed: int, cache_bytes: int) -> None:
    clock = FakeClock()
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    with QdrantStore(
        tmp_path / "s",
        index=index,  # type: ignore[arg-type]
        search={"mode": "dense"},
        options={"clock": clock, "cache_bytes": cache_bytes},
    ) as store:
        _run(store, clock, seed, batches=700)


def test_memory_engine_agrees_with_in_memory_store() -> None:
    clock = FakeClock()
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
    with QdrantStore(":memory:", index=index, search={"mode": "dense"}, options={"clock": clock}) as store:  # type: ignore[arg-type]
        _run(store, clock, 4, batches=300)
