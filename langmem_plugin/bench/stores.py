"""``langmem-plugin bench stores``: QdrantStore beside the stores a LangGraph user would otherwise pick.

Measured in one run, on this machine, with the *same precomputed vectors* for
every store (a lookup table stands in for the embedder, so the store is
measured, not the model):

- QdrantStore, embedded (Qdrant Edge in this process, on a temporary directory),
  as it comes: it builds its HNSW index every 10,000 written points, and the
  bench calls ``optimize()`` after the load to index the rest; optionally
  (``qdrant-embedded-optimized``) with ``options={"optimize_every": None}``: a bulk load
  without builds, then one ``optimize()``;
- QdrantStore over qdrant-client's local mode (``QdrantStore(":memory:")``);
- LangGraph's InMemoryStore;
- ``langgraph-store-qdrant`` 0.1.0 on qdrant-client's local mode (it needs a
  server ≥ 1.16 otherwise; no server can be installed here);
- LangGraph's SqliteStore on ``pysqlite3-binary`` (its vector search needs
  SQLite extension loading, which this Python's sqlite3 lacks).

The data: ``size`` items in one namespace, ``("bench", "target")``, among 99
other namespaces of 10 items each. Every search targets that namespace. The
vectors are clustered, as sentence embeddings are (2,000 topics; each text near
its topic, each query near one text), not uniform noise, on which no
approximate index finds neighbours. The metrics: batched put throughput
(batches of 500; for the embedded store it includes the automatic index
builds), the index build time (seconds spent in builds during the load plus the
final ``optimize()``), get p50, filtered search (``{"kind": "fact"}``, no query)
p50/p95, vector search p50/p95 and its recall@10 against exact cosine
neighbours (computed with numpy over the same vectors), hybrid search (dense +
BM25, fused in the engine; QdrantStore only) p50/p95, recall's search (the
default ``HybridRetriever``: the store's dense and BM25 candidate lists, fused by
score; on InMemoryStore its own search as the dense list) p50/p95, reopen time (close, open,
first get) and disk usage (allocated blocks), then ratios of each peer to the
embedded QdrantStore. For the embedded rows the note also gives the engine's
ceiling: the rate at which Qdrant Edge alone (the ``qdrant_edge`` package, none
of our code) takes the same items laid out as the store lays them out (the
vector, BM25 terms, namespace, key, value and timestamps; the
``qdrant_edge.Point`` conversion and the update, into a fresh shard configured
as the store's), measured on the first 20,000 items of the load, and the vector search right after the reopen,
while the store's payload cache is still empty. Peers that scan in Python are given a time budget per
metric rather than a fixed number of calls, and are skipped above
``slow_peer_max`` items. The peers come with ``pip install 'langmem-plugin[bench]'``.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.bench.core import sample_sentences
from langmem_plugin.bench.report import format_table, percentile
from langmem_plugin.errors import ConfigurationError, MissingDependencyError
from langmem_plugin.services.recall import HybridRetriever

__all__ = ["OPTIMIZED", "PEERS", "StoreRow", "StoresBenchResult", "check_peers", "run_stores_bench"]

DIMS = 384
TARGET = ("bench", "target")
PEERS = ("qdrant-embedded", "qdrant-memory", "inmemory", "langgraph-store-qdrant", "sqlite")
#: Not measured by default: the embedded store loaded without automatic builds, then one ``optimize()``.
OPTIMIZED = "qdrant-embedded-optimized"
_EMBEDDED = ("qdrant-embedded", OPTIMIZED)
_SLOW = {"qdrant-memory", "langgraph-store-qdrant"}


class _Precomputed(Embeddings):
    """The same vectors for every store: a lookup table of texts (documents and queries).

    A query is found by its ``"query N:"`` label too, so the one recall embeds without its
    background words gets the query's vector.
    """

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.by_label = {t.split(":", 1)[0]: v for t, v in vectors.items() if t.startswith("query ")}
        self.dims = DIMS

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        found = self.vectors.get(text)
        return found if found is not None else self.by_label[text.split(":", 1)[0]]


@dataclass
class StoreRow:
    """One store's numbers (seconds; None: not measured or not supported)."""

    name: str
    put_per_s: float | None = None
    get_p50: float | None = None
    filtered: tuple[float, float] | None = None
    vector: tuple[float, float] | None = None
    recall: float | None = None
    hybrid: tuple[float, float] | None = None
    fused: tuple[float, float] | None = None
    index_s: float | None = None
    reopen_s: float | None = None
    disk_bytes: int | None = None
    note: str = ""


@dataclass
class StoresBenchResult:
    """Every number of one size."""

    size: int
    others: int = 990
    rows: list[StoreRow] = field(default_factory=list)

    def table(self) -> str:
        """The measurements, then each peer's ratio to the embedded QdrantStore."""

        def ms(x: float | None) -> str:
            return "—" if x is None else f"{x * 1000:.2f}"

        def pair(x: tuple[float, float] | None) -> str:
            return "—" if x is None else f"{x[0] * 1000:.2f} / {x[1] * 1000:.2f}"

        rows = [
            [
                r.name,
                f"{r.put_per_s:,.0f}" if r.put_per_s else "—",
                "—" if r.index_s is None else f"{r.index_s:.1f}",
                ms(r.get_p50),
                pair(r.filtered),
                pair(r.vector),
                "—" if r.recall is None else f"{r.recall:.3f}",
                pair(r.hybrid),
                pair(r.fused),
                "—" if r.reopen_s is None else f"{r.reopen_s:.2f}",
                "—" if r.disk_bytes is None else f"{r.disk_bytes / 2**20:.1f}",
                r.note,
            ]
            for r in self.rows
        ]
        headers = [
            "store",
            "puts/s",
            "index build s",
            "get p50 ms",
            "filtered p50/p95 ms",
            "vector p50/p95 ms",
            "recall@10",
            "hybrid p50/p95 ms",
            "recall search p50/p95 ms",
            "reopen s",
            "disk MiB",
            "note",
        ]
        out = [
            f"{self.size:,} items in {TARGET}, {self.others:,} more in 99 other namespaces",
            format_table(headers, rows),
        ]
        ours = next((r for r in self.rows if r.name == "qdrant-embedded" and r.put_per_s), None)
        if ours is not None:
            ratio_rows = []
            for r in self.rows:
                if r is ours or not r.put_per_s:
                    continue
                ratio_rows.append(
                    [
                        r.name,
                        _ratio(r.put_per_s and 1 / r.put_per_s, ours.put_per_s and 1 / ours.put_per_s),
                        _ratio(r.get_p50, ours.get_p50),
                        _ratio(r.filtered and r.filtered[0], ours.filtered and ours.filtered[0]),
                        _ratio(r.vector and r.vector[0], ours.vector and ours.vector[0]),
                    ]
                )
            out += [
                "",
                "how many times faster the embedded QdrantStore is (peer time / ours; p50)",
                format_table(["peer", "puts", "get", "filtered search", "vector search"], ratio_rows),
            ]
        return "\n".join(out)


def _ratio(theirs: float | None, ours: float | None) -> str:
    if not theirs or not ours:
        return "—"
    value = theirs / ours
    return f"{value:.1f}x" if value >= 1 else f"{value:.2g}x"


# ---------------------------------------------------------------------- data


@dataclass
class _Data:
    puts: list[PutOp]
    queries: list[str]
    keys: list[str]
    embeddings: _Precomputed
    target: np.ndarray  # the target namespace's vectors, in the order of ``keys``

    def exact(self, query: str, k: int = 10) -> set[str]:
        """The keys of the ``k`` nearest target items by cosine (the vectors are unit length)."""
        scores = self.target @ np.asarray(self.embeddings.vectors[query], dtype=np.float32)
        return {self.keys[i] for i in np.argpartition(-scores, k)[:k]}


def _data(size: int, queries: int, seed: int = 11, topics: int = 2000, others: int = 990) -> _Data:
    rng = np.random.default_rng(seed)
    texts = sample_sentences(size + others, seed=seed)
    picked = random.Random(seed).sample(range(len(texts)), queries)
    query_texts = [f"query {i}: {texts[j]}" for i, j in enumerate(picked)]
    # Clustered like sentence embeddings: each text near one of `topics` directions (cosine ≈ 0.85),
    # each query near the text it was drawn from.
    centres = rng.standard_normal((topics, DIMS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((len(texts), DIMS)).astype(np.float32)
    vectors = centres[rng.integers(0, topics, len(texts))] + 0.6 * noise / np.sqrt(DIMS)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    nudged = vectors[picked] + 0.5 * rng.standard_normal((queries, DIMS)).astype(np.float32) / np.sqrt(DIMS)
    nudged /= np.linalg.norm(nudged, axis=1, keepdims=True)
    table = {t: vectors[i].tolist() for i, t in enumerate(texts)}
    table.update({t: nudged[i].tolist() for i, t in enumerate(query_texts)})
    puts: list[PutOp] = []
    keys: list[str] = []
    for i, text in enumerate(texts):
        ns = TARGET if i < size else ("bench", f"other{i % 99}")
        key = f"m{i:07d}"
        if i < size:
            keys.append(key)
        puts.append(PutOp(ns, key, {"text": text, "kind": "fact" if i % 4 == 0 else "episode", "n": i % 10}))
    random.Random(seed).shuffle(puts)
    return _Data(puts, query_texts, keys, _Precomputed(table), vectors[:size])


def _index(data: _Data) -> dict[str, Any]:
    return {"dims": DIMS, "embed": data.embeddings, "fields": ["text"], "text_fields": ["text"]}


# ---------------------------------------------------------------------- peers


@dataclass
class _Peer:
    """How to open (and reopen) one store."""

    store: BaseStore
    reopen: Callable[[], BaseStore] | None = None
    close: Callable[[], None] = lambda: None
    disk: Callable[[], int] | None = None
    vector: Callable[[str], list[Any]] | None = None
    hybrid: Callable[[str], list[Any]] | None = None
    fused: Callable[[str], list[Any]] | None = None


def _disk_usage(paths: Iterable[Path]) -> int:
    """Bytes on disk (allocated blocks: Qdrant preallocates sparse files, whose apparent size is larger)."""
    return sum(p.stat().st_blocks * 512 for p in paths if p.is_file())


def _open_peer(name: str, data: _Data, workdir: Path) -> _Peer:
    index = _index(data)
    if name in ("qdrant-embedded", "qdrant-memory", OPTIMIZED):
        from langmem_plugin.stores.qdrant import QdrantOptions, QdrantStore

        path = workdir / "qdrant"
        options: QdrantOptions = {"optimize_every": None} if name == OPTIMIZED else {}
        qs = QdrantStore(":memory:" if name == "qdrant-memory" else path, index=index, options=options)  # type: ignore[arg-type]
        dense = qs.with_search(mode="dense")
        peer = _Peer(
            qs,
            close=qs.close,
            vector=lambda q: dense.search(TARGET, query=q, limit=10),
            hybrid=lambda q: qs.search(TARGET, query=q, limit=10),
            fused=lambda q: HybridRetriever(qs).search(TARGET, q, limit=10),
        )
        if name != "qdrant-memory":
            peer.reopen = lambda: QdrantStore(path, index=index, options=options)  # type: ignore[arg-type]
            peer.disk = lambda: _disk_usage(path.rglob("*"))
        return peer
    if name == "inmemory":
        from langgraph.store.memory import InMemoryStore

        mem = InMemoryStore(index=index)  # type: ignore[arg-type]
        return _Peer(
            mem,
            vector=lambda q: mem.search(TARGET, query=q, limit=10),
            fused=lambda q: HybridRetriever(mem).search(TARGET, q, limit=10),
        )
    if name == "langgraph-store-qdrant":
        from langgraph.store.qdrant import QdrantStore as AnchorStore
        from qdrant_client import QdrantClient

        client = QdrantClient(location=":memory:")
        anchor = AnchorStore(client, index={"dims": DIMS, "embed": data.embeddings, "fields": ["text"]})
        anchor.setup()
        return _Peer(
            anchor, close=client.close, vector=lambda q: list(anchor.search(TARGET, query=q, limit=10))
        )
    if name == "sqlite":
        import pysqlite3
        from langgraph.store.sqlite import SqliteStore

        path = workdir / "store.sqlite"

        def connect() -> Any:
            conn = pysqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            store = SqliteStore(conn, index=index)  # type: ignore[arg-type]
            store.setup()
            holder["conn"] = conn
            return store

        holder: dict[str, Any] = {}
        sqlite = connect()
        return _Peer(
            sqlite,
            reopen=connect,
            close=lambda: holder["conn"].close(),
            disk=lambda: _disk_usage(workdir.glob("store.sqlite*")),
            vector=lambda q: sqlite.search(TARGET, query=q, limit=10),
        )
    raise ConfigurationError(f"unknown peer {name!r}; choose from {', '.join((*PEERS, OPTIMIZED))}")


#: The modules each peer needs beyond the package's own dependencies (the ``bench`` extra has them).
_NEEDS: dict[str, tuple[str, ...]] = {
    "langgraph-store-qdrant": ("langgraph.store.qdrant", "qdrant_client"),
    "sqlite": ("pysqlite3", "langgraph.store.sqlite"),
}


def check_peers(peers: Iterable[str]) -> None:
    """Fail before any measuring when a peer is unknown or its package is missing.

    Raises:
        ConfigurationError: an unknown peer (the message lists the known ones).
        MissingDependencyError: a peer's package is not installed (the message has the ``pip`` line).
    """
    import importlib

    known = (*PEERS, OPTIMIZED)
    for name in peers:
        if name not in known:
            raise ConfigurationError(f"unknown peer {name!r}; choose from {', '.join(known)}")
        for module in _NEEDS.get(name, ()):
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise MissingDependencyError(
                    f"the stores benchmark's peer {name!r} needs {exc.name or module}. Fix: pip install "
                    f"'langmem-plugin[bench]', or leave it out of --peers."
                ) from exc


# ---------------------------------------------------------------------- timing


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


_CEILING_POINTS = 20_000


@dataclass
class _RawPoint:
    """One point as the engine takes it, before conversion: id, vectors and payload."""

    id: uuid.UUID
    dense: list[float]
    sparse: tuple[list[int], list[float]] | None
    payload: dict[str, Any]


def _ns_token(labels: tuple[str, ...]) -> str:
    return json.dumps(list(labels), ensure_ascii=False, separators=(",", ":"))


def _raw_points(data: _Data, n: int) -> list[_RawPoint]:
    """The first ``n`` points of the load, laid out as an embedded store lays them out.

    A point has the item's vector (``dense``), its text's BM25 terms (``bm25``) and a
    payload with the namespace, its prefixes, the key, the value and the timestamps.
    """
    from langmem_plugin.core.lexical import BM25Encoder

    encoder = BM25Encoder()
    now_us = int(time.time() * 1e6)
    points: list[_RawPoint] = []
    for op in data.puts[:n]:
        value = dict(op.value or {})
        ns = tuple(op.namespace)
        text = str(value.get("text", ""))
        terms = encoder.encode_document(text)
        payload = {
            "ns": _ns_token(ns),
            "ns_prefix": [_ns_token(ns[:i]) for i in range(1, len(ns) + 1)],
            "key": op.key,
            "value": value,
            "created_us": now_us,
            "updated_us": now_us,
            "expires_us": None,
            "ttl": None,
            "indexed": 1,
        }
        sparse = (list(terms.indices), list(terms.values)) if terms.indices else None
        point_id = uuid.uuid5(uuid.NAMESPACE_URL, json.dumps([list(ns), op.key]))
        points.append(_RawPoint(point_id, data.embeddings.vectors[text], sparse, payload))
    return points


def _ceiling_shard(path: Path) -> Any:
    """A fresh Qdrant Edge shard configured as an embedded QdrantStore's: cosine dense vectors with
    int8 quantization and HNSW (m 16, ef_construct 64), BM25 terms with IDF, the payload indexes of
    namespace and time; no index builds while loading."""
    import qdrant_edge as qe

    config = qe.EdgeConfig(
        vectors={"dense": qe.EdgeVectorParams(size=DIMS, distance=qe.Distance.Cosine)},
        sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=64, full_scan_threshold=10_000),
        quantization_config=qe.ScalarQuantizationConfig(qe.ScalarType.Int8, always_ram=True),
    )
    shard = qe.EdgeShard.create(str(path), config)
    for name, schema in (
        ("ns_prefix", qe.KeywordIndexParams(is_tenant=True, enable_hnsw=False)),
        ("ns", qe.KeywordIndexParams(enable_hnsw=False)),
        ("updated_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
        ("expires_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
        ("indexed", qe.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False)),
    ):
        shard.update(qe.UpdateOperation.create_field_index(name, schema))
    return shard


def _engine_ceiling(data: _Data, workdir: Path) -> tuple[float, float, float]:
    """Points/s of Qdrant Edge alone on the load's first points, and µs per point of conversion
    (``qdrant_edge.Point``) and of the update, in batches of 500 as the bench writes them."""
    import qdrant_edge as qe

    points = _raw_points(data, _CEILING_POINTS)
    shard = _ceiling_shard(workdir / "ceiling")
    convert = update = 0.0
    try:
        for i in range(0, len(points), 500):
            start = time.perf_counter()
            batch = []
            for p in points[i : i + 500]:
                vectors: dict[str, Any] = {"dense": p.dense}
                if p.sparse is not None:
                    vectors["bm25"] = qe.SparseVector(*p.sparse)
                batch.append(qe.Point(p.id, vectors, p.payload))
            middle = time.perf_counter()
            shard.update(qe.UpdateOperation.upsert_points(batch))
            convert += middle - start
            update += time.perf_counter() - middle
    finally:
        shard.close()
    n = max(len(points), 1)
    return n / (convert + update), convert / n * 1e6, update / n * 1e6


def _measure(name: str, data: _Data, budget_s: float, base: Path | None) -> StoreRow:
    row = StoreRow(name)
    with _workdir(base) as workdir:
        peer = _open_peer(name, data, workdir)
        store = peer.store
        start = time.perf_counter()
        longest = 0.0  # the longest automatic build (one pause of a write)
        for i in range(0, len(data.puts), 500):
            before = float(getattr(store, "optimize_seconds", 0.0))
            store.batch(data.puts[i : i + 500])
            longest = max(longest, float(getattr(store, "optimize_seconds", 0.0)) - before)
        took = time.perf_counter() - start
        row.put_per_s = len(data.puts) / took
        if name in _EMBEDDED:
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
            rate, convert_us, update_us = _engine_ceiling(data, workdir)
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
            if name in _EMBEDDED:  # the payload cache starts empty: every hit is read from the engine once
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
    data = _data(size, queries, others=others)
    result = StoresBenchResult(size, others)
    for name in peers:
        if name in _SLOW and size > slow_peer_max:
            result.rows.append(StoreRow(name, note=f"skipped: scans in Python (> {slow_peer_max:,} items)"))
            continue
        row = _measure(name, data, budget_s, workdir)
        result.rows.append(row)
        if progress is not None:
            progress(f"  {name}: done")
    return result
