"""``langmem-plugin bench checkpointer``: CheckpointerStore(SqliteSaver) beside SqliteStore and InMemoryStore.

In one run, with the same items and the same precomputed vectors for every
store (the embedder is a function returning cached vectors, so the stores are
measured, not the embedder):

- batched put throughput (loading ``items`` items in batches of 100, each batch
  into one of 20 namespaces; CheckpointerStore writes one checkpoint — one
  SQLite commit — per namespace a batch touches);
- single put p50 (new keys, one ``put`` each: one durable write each);
- get p50; filtered search p50 (``kind`` equality + ``priority >= 5`` over the
  whole corpus, limit 10); vector search p50 (query, limit 10);
- reopen time (a new store object on the same file, until the first get
  returns: for CheckpointerStore this folds the log and rebuilds its indexes);
- disk size (the database file with its WAL).

CheckpointerStore is measured twice: A over ``SqliteSaver(conn)`` as LangGraph
configures it (WAL, ``synchronous=FULL``: an fsync per commit) and B through
``CheckpointerStore.from_sqlite`` (WAL, ``synchronous=NORMAL``: survives a
process crash, not a power loss). SqliteStore runs with its defaults.

``--scale 10000,100000`` is ``bench scale --stores checkpointer`` (:mod:`.scale`):
the store as it grows, through ``Memory`` — the in-process indexes are what limit
it: vector search is exact (one matrix product), and opening folds the whole log.

SqliteStore's vector search needs a SQLite that loads extensions:
``pip install 'langmem-plugin[bench]'`` (``pysqlite3-binary``).
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.bench.core import sample_sentences
from langmem_plugin.bench.report import Timer, format_table, percentile
from langmem_plugin.errors import MissingDependencyError
from langmem_plugin.testing import FakeEmbeddings

__all__ = ["CheckpointerBenchResult", "StoreNumbers", "run_checkpointer_bench"]

_KINDS = ["fact", "episode", "preference", "document"]


@dataclass
class StoreNumbers:
    """What one store measured (times in seconds)."""

    name: str
    batch_items_per_s: float = 0.0
    put_p50: float = 0.0
    get_p50: float = 0.0
    filter_p50: float = 0.0
    vector_p50: float = 0.0
    reopen_s: float | None = None
    disk_bytes: int | None = None


@dataclass
class CheckpointerBenchResult:
    """Every number of the checkpointer benchmark."""

    items: int
    dims: int
    stores: list[StoreNumbers] = field(default_factory=list)

    def table(self) -> str:
        ours, normal, sqlite_store, memory = self.stores

        def ms(x: float) -> str:
            return f"{x * 1000:.3f} ms"

        def vs(a: float | None, b: float | None, *, higher_is_better: bool = False) -> str:
            if not a or not b:
                return "n/a"
            return f"{(a / b) if higher_is_better else (b / a):.2f}x"

        rows: list[list[object]] = []
        measures: list[tuple[str, Callable[[StoreNumbers], Any], Callable[[Any], str], bool]] = [
            ("batched put (100/batch)", lambda s: s.batch_items_per_s, lambda v: f"{v:,.0f} items/s", True),
            ("single put p50", lambda s: s.put_p50, ms, False),
            ("get p50", lambda s: s.get_p50, ms, False),
            ("filtered search p50", lambda s: s.filter_p50, ms, False),
            ("vector search p50", lambda s: s.vector_p50, ms, False),
            ("reopen (to first get)", lambda s: s.reopen_s, lambda v: "n/a" if v is None else ms(v), False),
            (
                "disk size",
                lambda s: s.disk_bytes,
                lambda v: "n/a" if v is None else f"{v / 1e6:.1f} MB",
                False,
            ),
        ]
        for label, get, fmt, higher in measures:
            a, n, b, c = get(ours), get(normal), get(sqlite_store), get(memory)
            rows.append(
                [
                    label,
                    fmt(a),
                    fmt(n),
                    fmt(b),
                    fmt(c),
                    vs(a, b, higher_is_better=higher),
                    vs(n, b, higher_is_better=higher),
                ]
            )
        headers = ["measure", ours.name, normal.name, sqlite_store.name, memory.name, "A vs SqliteStore"]
        return (
            f"{self.items:,} items, {self.dims}-dim precomputed vectors; "
            "'vs SqliteStore' > 1x means CheckpointerStore is faster (or smaller)\n"
            + format_table([*headers, "B vs SqliteStore"], rows)
        )


def _disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def run_checkpointer_bench(
    *, items: int = 10_000, dims: int = 384, samples: int = 200, workdir: str | None = None
) -> CheckpointerBenchResult:
    """Run the benchmark and return its numbers (files go in a temporary directory)."""
    try:
        import pysqlite3  # type: ignore[import-not-found, import-untyped, unused-ignore]
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.store.sqlite import SqliteStore
    except ImportError as exc:
        raise MissingDependencyError(
            f"the checkpointer benchmark needs {exc.name}. Fix: pip install 'langmem-plugin[bench]'."
        ) from exc
    from langgraph.store.memory import InMemoryStore

    from langmem_plugin.stores.checkpointer import CheckpointerStore

    rng = random.Random(11)
    texts = sample_sentences(items + samples, seed=5)
    queries = sample_sentences(samples, seed=6)
    fake = FakeEmbeddings(dims=dims)
    cache = dict(zip(texts + queries, fake.embed_documents(texts + queries), strict=True))

    def embed(batch: Sequence[str]) -> list[list[float]]:
        return [cache[t] for t in batch]

    index: dict[str, Any] = {"dims": dims, "embed": embed, "fields": ["text"], "text_fields": ["text"]}

    def value(i: int) -> dict[str, Any]:
        return {"text": texts[i], "kind": _KINDS[i % len(_KINDS)], "priority": i % 10, "source": "bench"}

    def ns(i: int) -> tuple[str, ...]:  # 20 users; a batch of 100 fills one user's namespace
        return ("bench", f"user{(i // 100) % 20}")

    result = CheckpointerBenchResult(items=items, dims=dims)
    tmp = tempfile.TemporaryDirectory(dir=workdir)
    root = Path(tmp.name)

    def measure(
        name: str,
        store: BaseStore,
        reopen: Callable[[], tuple[BaseStore, Callable[[], None]]] | None,
        path: Path | None,
        vector_samples: int = samples,
    ) -> StoreNumbers:
        numbers = StoreNumbers(name)
        with Timer() as load:
            for start in range(0, items, 100):
                store.batch([PutOp(ns(i), f"k{i}", value(i)) for i in range(start, min(items, start + 100))])
        numbers.batch_items_per_s = items / load.seconds
        puts = []
        for j in range(samples):
            i = items + j
            begin = time.perf_counter()
            store.put(ns(i), f"k{i}", value(i))
            puts.append(time.perf_counter() - begin)
        numbers.put_p50 = percentile(puts, 50)
        keys = [rng.randrange(items) for _ in range(samples)]
        gets = []
        for i in keys:
            begin = time.perf_counter()
            found = store.get(ns(i), f"k{i}")
            gets.append(time.perf_counter() - begin)
            assert found is not None
        numbers.get_p50 = percentile(gets, 50)
        filters = []
        for j in range(samples):
            begin = time.perf_counter()
            hits = store.search(("bench",), filter={"kind": _KINDS[j % 4], "priority": {"$gte": 5}}, limit=10)
            filters.append(time.perf_counter() - begin)
            assert len(hits) == 10
        numbers.filter_p50 = percentile(filters, 50)
        vectors = []
        for q in queries[:vector_samples]:
            begin = time.perf_counter()
            hits = store.search(("bench",), query=q, limit=10)
            vectors.append(time.perf_counter() - begin)
            assert hits
            assert hits[0].score is not None
        numbers.vector_p50 = percentile(vectors, 50)
        if reopen is not None:
            begin = time.perf_counter()
            again, close = reopen()
            assert again.get(ns(0), "k0") is not None
            numbers.reopen_s = time.perf_counter() - begin
            close()
        if path is not None:
            numbers.disk_bytes = _disk(path)
        return numbers

    # CheckpointerStore over SqliteSaver
    ours_path = root / "checkpointer.sqlite"
    conn = sqlite3.connect(ours_path, check_same_thread=False)
    ours = CheckpointerStore(SqliteSaver(conn), index=index)  # type: ignore[arg-type]

    def reopen_ours() -> tuple[BaseStore, Callable[[], None]]:
        c = sqlite3.connect(ours_path, check_same_thread=False)
        return CheckpointerStore(SqliteSaver(c), index=index), c.close  # type: ignore[arg-type]

    result.stores.append(measure("A: CheckpointerStore(SqliteSaver)", ours, reopen_ours, ours_path))
    conn.close()

    # the same through from_sqlite: WAL with synchronous=NORMAL (no fsync per commit)
    normal_path = root / "normal.sqlite"
    with CheckpointerStore.from_sqlite(normal_path, index=index) as normal:  # type: ignore[arg-type]

        def reopen_normal() -> tuple[BaseStore, Callable[[], None]]:
            opened = CheckpointerStore.from_sqlite(normal_path, index=index)  # type: ignore[arg-type]

            def close() -> None:
                opened.__exit__(None, None, None)

            return opened.__enter__(), close

        result.stores.append(measure("B: CheckpointerStore.from_sqlite", normal, reopen_normal, normal_path))

    # SqliteStore (langgraph-checkpoint-sqlite) with sqlite-vec
    theirs_path = root / "sqlitestore.sqlite"

    def open_theirs() -> tuple[Any, Any]:
        c = pysqlite3.connect(str(theirs_path), check_same_thread=False, isolation_level=None)
        s = SqliteStore(c, index=index)  # type: ignore[arg-type]
        s.setup()
        return s, c

    theirs, theirs_conn = open_theirs()

    def reopen_theirs() -> tuple[BaseStore, Callable[[], None]]:
        s, c = open_theirs()
        return s, c.close

    result.stores.append(measure("SqliteStore", theirs, reopen_theirs, theirs_path))
    theirs_conn.close()

    # InMemoryStore scores every item in Python (about a second a query at 10k): fewer vector samples
    memory = InMemoryStore(index=index)  # type: ignore[arg-type]
    result.stores.append(measure("InMemoryStore", memory, None, None, vector_samples=max(5, samples // 20)))
    tmp.cleanup()
    return result
