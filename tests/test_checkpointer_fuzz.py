"""Differential fuzz: thousands of random ops, in random batches, on CheckpointerStore and InMemoryStore.

The reference is LangGraph's InMemoryStore. The intended differences (docs/store-contract.md)
are compared accordingly, not hidden:

- ``created_at`` is kept on update (InMemoryStore resets it): timestamps are not compared;
- no phantom namespaces: ours are compared with the namespaces that hold items in
  the reference, not with the reference's ``list_namespaces`` (which lists a namespace
  after a ``get`` of a missing key or after its last delete);
- search without a query is newest first (InMemoryStore: insertion order): results
  are compared as sets, and ours are checked against our own ordering rule;
- with a query, scores are compared (float32 vs float64, to 1e-4), order by our rule;
- a put with ``index=False`` drops the item's old vectors (InMemoryStore keeps them and
  goes on scoring the old text): such items must be unscored in ours;
- filters use only what both define the same way (values always present, numbers
  compared with numbers): the reference raises or casts on the rest.

Every few batches our store is reopened from its checkpointer (the log is folded
again) and must be identical; the newest version in each touched item's history
must be its current value.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, MatchCondition, Op, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings

WORDS = ["tea", "coffee", "alps", "hiking", "tax", "deadline", "cat", "luna", "pottery", "budget"]
NAMESPACES = [("u", "1"), ("u", "2"), ("u", "1", "docs"), ("v",), ("w", "x")]
KEYS = [f"k{i}" for i in range(12)]


def _index() -> dict[str, Any]:
    return {"dims": 48, "embed": FakeEmbeddings(dims=48), "fields": ["text"]}


def _value(rng: random.Random) -> dict[str, Any]:
    # a unique word per value: InMemoryStore fails ("Number of embeddings ... does not match")
    # when two puts of one batch have the same text
    return {
        "text": " ".join(rng.choices(WORDS, k=rng.randint(1, 4))) + f" u{rng.getrandbits(40)}",
        "n": rng.randint(0, 9),
        "kind": rng.choice(["fact", "todo", "episode"]),
        "meta": {"lang": rng.choice(["en", "fr"])},
    }


def _filter(rng: random.Random) -> dict[str, Any] | None:
    choice = rng.randint(0, 6)
    if choice == 0:
        return None
    if choice == 1:
        return {"kind": rng.choice(["fact", "todo", "episode"])}
    if choice == 2:
        return {"n": {"$gte": rng.randint(0, 9)}}
    if choice == 3:
        return {"n": {"$gt": rng.randint(0, 5), "$lte": rng.randint(4, 9)}}
    if choice == 4:
        return {"kind": {"$ne": "fact"}, "n": {"$lt": rng.randint(1, 9)}}
    if choice == 5:
        return {"meta": {"lang": rng.choice(["en", "fr"])}}
    return {"n": rng.randint(0, 9)}


def _op(rng: random.Random) -> Op:
    roll = rng.random()
    ns, key = rng.choice(NAMESPACES), rng.choice(KEYS)
    if roll < 0.40:
        return PutOp(ns, key, _value(rng), index=rng.choice([None, None, None, False]))
    if roll < 0.55:
        return PutOp(ns, key, None)
    if roll < 0.70:
        return GetOp(ns, key)
    if roll < 0.92:
        prefix = rng.choice([(), ("u",), ("u", "1"), ("v",), ("w",)])
        query = " ".join(rng.choices(WORDS, k=2)) if rng.random() < 0.4 else None
        return SearchOp(prefix, _filter(rng), 100, 0, query)
    conditions = rng.choice([(), (MatchCondition("prefix", ("u",)),), (MatchCondition("suffix", ("docs",)),)])
    return ListNamespacesOp(match_conditions=conditions, max_depth=rng.choice([None, 1, 2]), limit=100)


def _live_namespaces(store: BaseStore) -> set[tuple[str, ...]]:
    return {i.namespace for i in store.search((), limit=10_000)}


def _compare(
    ops: list[Op],
    ours: list[Any],
    theirs: list[Any],
    live: set[tuple[str, ...]],
    unindexed: set[tuple[tuple[str, ...], str]],
) -> None:
    """Compare one batch's results.

    ``live``: the reference's non-empty namespaces before the batch; ``unindexed``: items
    whose latest put (before the batch) had ``index=False``.
    """
    for op, a, b in zip(ops, ours, theirs, strict=True):
        if isinstance(op, GetOp):
            assert (a.value if a else None) == (b.value if b else None), op
        elif isinstance(op, SearchOp):
            assert {(i.namespace, i.key): i.value for i in a} == {(i.namespace, i.key): i.value for i in b}, (
                op
            )
            if op.query:
                scores = {(i.namespace, i.key): i.score for i in b}
                for item in a:
                    expected = scores[(item.namespace, item.key)]
                    if (tuple(item.namespace), item.key) in unindexed:
                        assert item.score is None, op
                        continue
                    assert (item.score is None) == (expected is None), op
                    if expected is not None:
                        assert item.score == pytest.approx(expected, abs=1e-4), op
                order = [
                    (0 if i.score is not None else 1, -(i.score or 0.0), -i.updated_at.timestamp()) for i in a
                ]
            else:
                order = [(0, 0.0, -i.updated_at.timestamp()) for i in a]
            assert [o[:2] for o in order] == sorted(o[:2] for o in order), op
        elif isinstance(op, ListNamespacesOp):
            expected = sorted(
                {
                    ns[: op.max_depth] if op.max_depth else ns
                    for ns in live
                    if all(
                        (ns[: len(c.path)] == c.path)
                        if c.match_type == "prefix"
                        else (ns[-len(c.path) :] == c.path)
                        for c in op.match_conditions or ()
                    )
                }
            )
            assert a == expected, op
        else:
            assert a is None


def _run(seed: int, saver: BaseCheckpointSaver[Any], batches: int) -> int:
    rng = random.Random(seed)
    ours = CheckpointerStore(saver, index=_index())  # type: ignore[arg-type]
    reference = InMemoryStore(index=_index())  # type: ignore[arg-type]
    total = 0
    touched: set[tuple[tuple[str, ...], str]] = set()
    unindexed: set[tuple[tuple[str, ...], str]] = set()
    for b in range(batches):
        ops = [_op(rng) for _ in range(rng.randint(1, 12))]
        total += len(ops)
        live = _live_namespaces(reference)
        _compare(ops, ours.batch(ops), reference.batch(ops), live, unindexed)
        for op in ops:
            if isinstance(op, PutOp):
                if op.value is not None and op.index is False:
                    unindexed.add((tuple(op.namespace), op.key))
                else:
                    unindexed.discard((tuple(op.namespace), op.key))
        touched.update((tuple(op.namespace), op.key) for op in ops if isinstance(op, PutOp))
        if b % 10 == 9:  # pagination is stable: walking pages gives the whole result once
            prefix = rng.choice([(), ("u",)])
            query = rng.choice([None, "tea alps"])
            filter = _filter(rng)
            whole = [
                (i.namespace, i.key) for i in ours.search(prefix, query=query, filter=filter, limit=1000)
            ]
            pages = [
                (i.namespace, i.key)
                for offset in range(0, len(whole) + 7, 7)
                for i in ours.search(prefix, query=query, filter=filter, limit=7, offset=offset)
            ]
            assert pages == whole
        if b % 25 == 24:
            ours = CheckpointerStore(saver, index=_index())  # type: ignore[arg-type]
            assert _snapshot(ours) == _snapshot(reference)
    assert _snapshot(ours) == _snapshot(reference)
    assert ours.list_namespaces(limit=1000) == sorted(_live_namespaces(reference))
    for ns, key in sorted(touched):
        history = ours.history(ns, key)
        current = ours.get(ns, key)
        if history:
            assert history[-1].value == (current.value if current else None), (ns, key)
        else:
            assert current is None
    return total


def _snapshot(store: BaseStore) -> dict[tuple[tuple[str, ...], str], Any]:
    return {(i.namespace, i.key): i.value for i in store.search((), limit=10_000)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzz_against_inmemorystore_over_inmemorysaver(seed: int) -> None:
    assert _run(seed, InMemorySaver(), batches=300) > 1800


def test_fuzz_against_inmemorystore_over_a_sqlite_file(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "fuzz.sqlite", check_same_thread=False)
    try:
        assert _run(4, SqliteSaver(conn), batches=150) > 900
    finally:
        conn.close()
