"""The run of ``bench stores``: load each store, time every metric, reopen it.

:func:`run_stores_bench` is what ``langmem-plugin bench stores`` calls; what it measures is
described in :mod:`langmem_plugin.bench.stores`.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langmem_plugin.bench.report import percentile
from langmem_plugin.bench.stores.ceiling import engine_ceiling
from langmem_plugin.bench.stores.data import TARGET, StoresData, make_data
from langmem_plugin.bench.stores.peers import EMBEDDED, PEERS, SLOW, check_peers, open_peer
from langmem_plugin.bench.stores.results import StoreRow, StoresBenchResult

__all__ = ["run_stores_bench"]


def _timed(
    func: Callable[[Any], object], args: list[Any], budget_s: float, results: list[Any] | None = None
) -> tuple[float, float]:
    """p50 and p95 of calls, stopping early once ``budget_s`` is spent (at least 3 calls).

    ``results``, when given, receives each call's result.
    """
    samples: list[float] = []
    spent = 0.0
    for arg in args:
        start = time.perf_counter()
        out = func(arg)
        took = time.perf_counter() - start
        if results is not None:
            results.append(out)
        samples.append(took)
        spent += took
        if spent > budget_s and len(samples) >= 3:
            break
    return percentile(samples, 50), percentile(samples, 95)


@contextmanager
def _workdir(base: Path | None) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="langmem-bench-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _measure(name: str, data: StoresData, budget_s: float, base: Path | None) -> StoreRow:
    row = StoreRow(name)
    with _workdir(base) as workdir:
        peer = open_peer(name, data, workdir)
        store = peer.store
        start = time.perf_counter()
        longest = 0.0  # the longest automatic build (one pause of a write)
        for i in range(0, len(data.puts), 500):
            before = float(getattr(store, "optimize_seconds", 0.0))
            store.batch(data.puts[i : i + 500])
            longest = max(longest, float(getattr(store, "optimize_seconds", 0.0)) - before)
        took = time.perf_counter() - start
        row.put_per_s = len(data.puts) / took
        if name in EMBEDDED:
            during = float(getattr(store, "optimize_seconds", 0.0))
            start = time.perf_counter()
            getattr(store, "optimize")()  # noqa: B009 — BaseStore has no optimize()
            final = time.perf_counter() - start
            row.index_s = float(getattr(store, "optimize_seconds", 0.0))
            row.note = f"optimize() {final:.1f} s"
            if during:
                writes_only = len(data.puts) / (took - during)
                row.note += (
                    f"; puts/s includes {during:.1f} s of automatic builds (longest {longest:.1f} s),"
                    f" without: {writes_only:,.0f}/s"
                )
            rate, convert_us, update_us = engine_ceiling(data, workdir)
            row.note += (
                f"; engine ceiling: {rate:,.0f} points/s (Qdrant Edge alone: conversion {convert_us:.0f} µs"
                f" + update {update_us:.0f} µs per point)"
            )
        rng = random.Random(3)
        keys = [rng.choice(data.keys) for _ in range(200)]
        row.get_p50 = _timed(lambda k: store.get(TARGET, k), keys, budget_s)[0]
        row.filtered = _timed(
            lambda _: store.search(TARGET, filter={"kind": "fact"}, limit=10), list(range(100)), budget_s
        )
        if peer.vector is not None:
            found: list[Any] = []
            row.vector = _timed(peer.vector, data.queries, budget_s, found)
            hits = [
                len({item.key for item in items} & data.exact(q))
                for items, q in zip(found, data.queries[: len(found)], strict=True)
            ]
            row.recall = sum(hits) / (10 * len(hits))
        if peer.hybrid is not None:
            row.hybrid = _timed(peer.hybrid, data.queries, budget_s)
        if peer.fused is not None:
            row.fused = _timed(peer.fused, data.queries, budget_s)
        peer.close()
        if peer.reopen is not None:
            start = time.perf_counter()
            reopened = peer.reopen()
            reopened.get(TARGET, data.keys[0])
            row.reopen_s = time.perf_counter() - start
            if peer.disk is not None:
                row.disk_bytes = peer.disk()
            if name in EMBEDDED:  # the payload cache starts empty: every hit is read from the engine once
                dense = getattr(reopened, "with_search")(mode="dense")  # noqa: B009 — ours only
                cold = _timed(lambda q: dense.search(TARGET, query=q, limit=10), data.queries, budget_s)
                p50, p95 = cold[0] * 1000, cold[1] * 1000
                row.note += f"; after reopen (empty cache) vector p50/p95 {p50:.2f} / {p95:.2f} ms"
            close = getattr(reopened, "close", None)
            if callable(close):
                close()
            else:
                peer.close()
    return row


def run_stores_bench(
    *,
    size: int = 10_000,
    others: int = 990,
    queries: int = 100,
    peers: tuple[str, ...] = PEERS,
    budget_s: float = 5.0,
    slow_peer_max: int = 20_000,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> StoresBenchResult:
    """Load ``size`` items into each peer and measure it (see the module docstring).

    Args:
        size: items in the searched namespace.
        others: items in the 99 other namespaces (together).
        queries: distinct query texts (each with its own precomputed vector).
        peers: which stores, from :data:`PEERS`.
        budget_s: seconds a slow peer may spend per metric before it stops early.
        slow_peer_max: skip the peers that scan in Python above this size.
        workdir: where the temporary stores go (default: the system's temp dir).
        progress: called with a line as each store finishes.

    Raises:
        ConfigurationError: an unknown peer.
        MissingDependencyError: a peer's package is missing (before anything is measured).
    """
    check_peers(peers)
    data = make_data(size, queries, others=others)
    result = StoresBenchResult(size, others)
    for name in peers:
        if name in SLOW and size > slow_peer_max:
            result.rows.append(StoreRow(name, note=f"skipped: scans in Python (> {slow_peer_max:,} items)"))
            continue
        row = _measure(name, data, budget_s, workdir)
        result.rows.append(row)
        if progress is not None:
            progress(f"  {name}: done")
    return result
