"""The embedded engine: Qdrant Edge (``qdrant-edge-py``) in this process, on a local directory.

Layout of ``path``: ``.lock`` (see :mod:`._lock`), ``store.json`` (the
format and what decides what is stored: the dense dimension, the embedded
``fields`` and the ``lexical_fields``; reopening with other values is a
:class:`~langmem_plugin.errors.StoreConfigMismatchError`) and ``shard/``
(Qdrant Edge's files: WAL, segments, indexes). Every update is in the WAL
before it returns; ``durable=True`` also fsyncs (``flush``) after each write
batch, which only a power loss needs.

Dense vectors (format 2): an item with one indexed text — the common case —
has a plain vector ``dense``; an item with several texts has the multivector
``dense_multi`` (MaxSim, the best of its texts). A dense query searches
``dense`` alone while the store holds no multi-text item, and otherwise both,
merged by the engine with a ``max`` formula, so the score is always the best
text's cosine, as in LangGraph's stores. Keeping the common case on a plain
vector halves the HNSW build (measured: 9.3 s vs 16.7 s for 10k points here),
and int8 scalar quantization halves it again (4.6 s) with exact rescoring.
A format-1 directory (one multivector ``dense`` per point, written by earlier
versions) is refused with a :class:`~langmem_plugin.errors.StoreConfigMismatchError`
that says how to move its items over (export with the version that wrote it,
import here).

HNSW: Edge builds indexes only when asked (``optimize``), holding the GIL, so
the engine asks in bounded steps: once ``optimize_every`` points were written
since the last build (default 10,000), the next write runs Edge's optimizers
with segments capped at 20,000 points, so a step indexes the new points and
merges nothing bigger than the cap: a pause bounded by that (measured here
loading 100k items on a loaded 2-core machine: ten builds of 2.0 to 5.6 s,
each leaving its points as a segment of their own), never a rebuild of the
whole store; uncapped, the merges grew with the store (4, 9, 11 s at 10k,
20k, 30k). Searching many segments costs more (raw engine at 100k: 0.6 ms
over one segment, 1.0 ms over three, 1.5 ms over five, 1.8 ms over eight), so
:meth:`EdgeEngine.optimize` (the store's ``optimize()``) is the full
compaction: it reopens the shard with the cap lifted and merges everything
into one indexed segment (26 to 31 s at 100k items here).

Edge is synchronous; the async path runs each call in the default executor.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from langchain_core.runnables.config import run_in_executor

from langmem_plugin.errors import (
    ConfigurationError,
    LangMemPluginError,
    StoreConfigMismatchError,
    StoreError,
)
from langmem_plugin.stores.qdrant._cache import CACHE_ITEMS, PayloadCache, entry_of, uuid_key
from langmem_plugin.stores.qdrant._calls import (
    Delete,
    EngineCall,
    Facet,
    Fused,
    Hit,
    Nearest,
    OrderBy,
    PointData,
    Query,
    Retrieve,
    Scroll,
    SetPayload,
    Upsert,
)
from langmem_plugin.stores.qdrant._config import OPTIMIZE_EVERY
from langmem_plugin.stores.qdrant._filters import Filter, Match, MatchAny, Range
from langmem_plugin.stores.qdrant._layout import (
    DENSE,
    DENSE_MULTI,
    FORMAT,
    SPARSE,
    FilterIndexType,
    dense_layout,
)
from langmem_plugin.stores.qdrant._lock import PathLock

__all__ = ["EdgeEngine"]

# HNSW: Qdrant's m; ef_construct 64 rather than 100 (build ≈ 1.5x faster; recall@10 measured 0.93-0.95
# on clustered vectors at 10k-100k); full_scan_threshold (KB) as Qdrant's default.
_HNSW_M, _HNSW_EF_CONSTRUCT, _FULL_SCAN_KB = 16, 64, 10_000
# A segment gets an HNSW graph above this many points (the optimizer's threshold is in KB of vectors),
# and automatic builds merge segments up to _SEGMENT_POINTS (the bound on one pause).
_INDEX_MIN_POINTS = 1_000
_SEGMENT_POINTS = 20_000
_UNCAPPED_KB = 1 << 40


class _ReadWriteLock:
    """Many engine calls at once, or one reopening of the shard (the full :meth:`EdgeEngine.optimize`)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._readers:
                self._cond.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


# Reads take the whole payload: leaving out the filter-only fields with PayloadSelector.Exclude measured
# slower (0.81 vs 0.67 ms for 11 hits, interleaved A/B), and an Include list no faster.
_READ = True

# Dense searches rescore with the original vectors: int8 alone left scores off by up to 0.005.
_EXACT_SCORES = qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True))

_MAX = qe.Expression.Max([qe.Expression.Variable("$score[0]"), qe.Expression.Variable("$score[1]")])
_BEST_TEXT = qe.Formula(_MAX, defaults={"$score[0]": -2.0, "$score[1]": -2.0})


def _condition(c: Match | MatchAny | Range) -> qe.FieldCondition:
    if isinstance(c, Match):
        return qe.FieldCondition(c.key, match=qe.MatchValue(c.value))
    if isinstance(c, MatchAny):
        return qe.FieldCondition(c.key, match=qe.MatchAny(list(c.values)))
    return qe.FieldCondition(c.key, range=qe.RangeFloat(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))


def _filter(f: Filter) -> qe.Filter | None:
    return qe.Filter(must=[_condition(c) for c in f.must]) if f.must else None


def _sparse_query(n: Nearest) -> Any:
    assert not isinstance(n.vector, list)
    return qe.Query.Nearest(qe.SparseVector(list(n.vector.indices), list(n.vector.values)), using=SPARSE)


def _key_of(point_id: Any) -> int:
    """The cache key of an id the engine returned (a ``uuid.UUID``: our ids are UUIDs)."""
    return point_id.int if isinstance(point_id, uuid.UUID) else uuid_key(str(point_id))


def _fusion(rank: Fused) -> Any:
    if rank.fusion == "dbsf":
        return qe.Fusion.Dbsf()
    return qe.Fusion.Rrf(k=rank.k)


class EdgeEngine:
    """Qdrant Edge on ``path``: opens (creating when new) under an exclusive lock.

    Args:
        path: the store directory.
        dims: the dense dimension (None: no dense vector, lexical search only).
        durable: fsync after every write batch.
        filter_indexes: payload indexes for value keys.
        fields: the IndexConfig's ``fields`` (recorded in ``store.json``; None: the whole value).
        lexical_fields: the ``lexical_fields`` (recorded; None: the embedded texts).
        optimize_every: build the HNSW index once this many points were written since the last
            build (None: only when :meth:`optimize` is called).
        cache_items: how many points' payloads to keep in process (:mod:`._cache`; 0: none).
    """

    def __init__(
        self,
        path: Path,
        *,
        dims: int | None,
        durable: bool = False,
        filter_indexes: tuple[tuple[str, FilterIndexType], ...] = (),
        fields: tuple[str, ...] | None = None,
        lexical_fields: tuple[str, ...] | None = None,
        optimize_every: int | None = OPTIMIZE_EVERY,
        cache_items: int = CACHE_ITEMS,
    ) -> None:
        self.path = path
        self.dims = dims
        self.durable = durable
        self.filter_indexes = filter_indexes
        self.fields = fields
        self.lexical_fields = lexical_fields
        self.optimize_every = optimize_every
        #: Seconds spent building indexes (automatic and explicit) since this engine was created.
        self.optimize_seconds = 0.0
        self._lock = PathLock(path)
        self._shard: qe.EdgeShard | None = None
        self._guard = threading.RLock()
        self._has_multi = False
        self._pending = 0
        self._rw = _ReadWriteLock()
        #: Payloads of the points written or read lately: searches read ids and scores only.
        self.cache = PayloadCache(cache_items)

    @property
    def is_open(self) -> bool:
        return self._shard is not None

    def open(self) -> None:
        """Lock the path, then load the shard (or create it, with its payload indexes)."""
        with self._guard:
            if self._shard is not None:
                return
            self._lock.acquire()
            try:
                self._shard = self._load_or_create()
                self._ensure_filter_indexes(self._shard)
                if self.dims is not None:
                    has_multi = qe.CountRequest(
                        exact=True, filter=qe.Filter(must=[qe.HasVectorCondition(DENSE_MULTI)])
                    )
                    self._has_multi = self._shard.count(has_multi) > 0
            except BaseException:
                if self._shard is not None:
                    self._shard.close()
                    self._shard = None
                self._lock.release()
                raise

    def _meta(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "dims": self.dims,
            "fields": list(self.fields) if self.fields is not None else None,
            "lexical_fields": list(self.lexical_fields) if self.lexical_fields is not None else None,
            "pending": self._pending,
        }

    def _write_meta(self) -> None:
        meta_path = self.path / "store.json"
        tmp = meta_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self._meta()), encoding="utf-8")
        os.replace(tmp, meta_path)

    def _check_meta(self, meta: dict[str, Any]) -> None:
        if meta.get("format") == 1:
            raise StoreConfigMismatchError(
                f"the store at {self.path} is in format 1 (one multivector per item, written by an "
                f"earlier langmem-plugin); this version reads format {FORMAT} only. Fix: with the "
                "version that wrote it, export it (export_jsonl), then import the file into a new store "
                "here (import_jsonl): every item keeps its timestamps and TTL and is re-indexed."
            )
        if meta.get("format") != FORMAT:
            raise ConfigurationError(
                f"the store at {self.path} has format {meta.get('format')!r}; this version reads "
                f"format {FORMAT}. Fix: export it with the version that wrote it and import it here."
            )
        given = {"dims": self.dims, "fields": self.fields, "lexical_fields": self.lexical_fields}
        for name, now in given.items():
            if name not in meta:  # a store.json written before this key was recorded: take this open's
                continue
            then = meta[name]
            then = tuple(then) if isinstance(then, list) else then
            if then != now:
                shown_then = list(then) if isinstance(then, tuple) else then
                shown_now = list(now) if isinstance(now, tuple) else now
                raise StoreConfigMismatchError(
                    f"the store at {self.path} was written with index {name}={shown_then!r} but is opened "
                    f"with {name}={shown_now!r} (None: not set). Its vectors were computed from the first: "
                    f"fix: open it with index {name}={shown_then!r}, or export it (export_jsonl) and import "
                    "it into a new store with the new index config, which re-indexes every item."
                )

    def _config(self, *, compact: bool = False) -> qe.EdgeConfig:
        vectors = None
        if self.dims is not None:
            vectors = {
                DENSE: qe.EdgeVectorParams(size=self.dims, distance=qe.Distance.Cosine),
                DENSE_MULTI: qe.EdgeVectorParams(
                    size=self.dims,
                    distance=qe.Distance.Cosine,
                    multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
                ),
            }
        point_kb = (self.dims or 1) * 4 / 1024
        optimizers = qe.EdgeOptimizersConfig(
            indexing_threshold=max(1, int(_INDEX_MIN_POINTS * point_kb)),
            max_segment_size=_UNCAPPED_KB if compact else max(1, int(_SEGMENT_POINTS * point_kb)),
            default_segment_number=1 if compact else None,
        )
        return qe.EdgeConfig(
            vectors=vectors,
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            hnsw_config=qe.HnswIndexConfig(
                m=_HNSW_M, ef_construct=_HNSW_EF_CONSTRUCT, full_scan_threshold=_FULL_SCAN_KB
            ),
            quantization_config=qe.ScalarQuantizationConfig(qe.ScalarType.Int8, always_ram=True),
            optimizers=optimizers,
        )

    def _load(self, *, compact: bool = False) -> qe.EdgeShard:
        """Load the shard with this engine's optimizer settings (``compact``: uncapped)."""
        shard_dir = self.path / "shard"
        try:
            return qe.EdgeShard.load(str(shard_dir), self._config(compact=compact))
        except Exception as exc:  # the engine's own error types
            raise StoreError(f"could not open the Qdrant Edge shard at {shard_dir}: {exc}") from exc

    def _load_or_create(self) -> qe.EdgeShard:
        meta_path = self.path / "store.json"
        shard_dir = self.path / "shard"
        if meta_path.exists():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            self._check_meta(meta)
            self._pending = int(meta.get("pending", 0))
            shard = self._load()
            if set(meta) != set(self._meta()):  # an older store.json: record what it lacked
                self._write_meta()
            return shard
        try:
            shard = qe.EdgeShard.create(str(shard_dir), self._config())
            for name, schema in (
                # Tenant-aware (points stored by namespace) without per-value HNSW subgraphs: the
                # namespace filter matches most points of a big namespace, where the main graph works.
                ("ns_prefix", qe.KeywordIndexParams(is_tenant=True, enable_hnsw=False)),
                ("ns", qe.KeywordIndexParams(enable_hnsw=False)),
                ("updated_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
                ("expires_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
                ("indexed", qe.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False)),
            ):
                shard.update(qe.UpdateOperation.create_field_index(name, schema))
            shard.flush()
        except Exception as exc:
            raise StoreError(f"could not create a Qdrant Edge shard at {shard_dir}: {exc}") from exc
        self._write_meta()
        return shard

    def _ensure_filter_indexes(self, shard: qe.EdgeShard) -> None:
        existing = set(shard.info().payload_schema)
        schemas: dict[str, qe.KeywordIndexParams | qe.IntegerIndexParams | qe.FloatIndexParams] = {
            "keyword": qe.KeywordIndexParams(enable_hnsw=False),
            "integer": qe.IntegerIndexParams(lookup=True, range=True, enable_hnsw=False),
            "float": qe.FloatIndexParams(enable_hnsw=False),
        }
        try:
            for name, kind in self.filter_indexes:
                if name not in existing:
                    shard.update(qe.UpdateOperation.create_field_index(name, schemas[kind]))
        except Exception as exc:
            raise StoreError(f"could not create the payload indexes {self.filter_indexes}: {exc}") from exc

    def _require(self) -> qe.EdgeShard:
        if self._shard is None:
            raise StoreError(f"the store at {self.path} is closed. Fix: open a new QdrantStore.")
        return self._shard

    def execute(self, call: EngineCall) -> Any:
        """Carry out one call (the single place Edge's exceptions are translated)."""
        with self._rw.read():
            shard = self._require()
            try:
                return self._execute(shard, call)
            except LangMemPluginError:
                raise
            except Exception as exc:
                raise StoreError(f"Qdrant Edge failed on {type(call).__name__}: {exc}") from exc

    async def aexecute(self, call: EngineCall) -> Any:
        return await run_in_executor(None, self.execute, call)

    def _execute(self, shard: qe.EdgeShard, call: EngineCall) -> Any:
        if isinstance(call, Query):
            return self._query(shard, call)
        if isinstance(call, Retrieve):
            return self._retrieve(shard, call.ids)
        if isinstance(call, Upsert):
            with self._dropped_on_error(p.id for p in call.points):
                shard.update(qe.UpdateOperation.upsert_points([self._point(p) for p in call.points]))
                self.cache.written((uuid_key(p.id), entry_of(p.id, p.payload)) for p in call.points)
            self._written(shard)
            self._pending += len(call.points)
            if self.optimize_every is not None and self._pending >= self.optimize_every:
                self._build(shard)
            return None
        if isinstance(call, Delete):
            with self._dropped_on_error(call.ids):
                shard.update(qe.UpdateOperation.delete_points(list(call.ids)))
                self.cache.dropped(uuid_key(i) for i in call.ids)
            self._written(shard)
            return None
        if isinstance(call, SetPayload):
            with self._dropped_on_error(call.ids):
                shard.update(qe.UpdateOperation.set_payload(list(call.ids), call.payload))
                self.cache.updated((uuid_key(i) for i in call.ids), call.payload)
            return None
        if isinstance(call, Scroll):
            request = qe.ScrollRequest(
                offset=call.offset,
                limit=call.limit,
                filter=_filter(call.filter),
                with_payload=_READ if call.with_payload else False,
            )
            records, next_offset = shard.scroll(request)
            hits = [Hit(str(r.id), r.payload or {}) for r in records]
            return hits, str(next_offset) if next_offset is not None else None
        if isinstance(call, Facet):
            response = shard.facet(
                qe.FacetRequest(call.key, limit=call.limit, exact=True, filter=_filter(call.filter))
            )
            return [str(hit.value) for hit in response.hits]
        raise AssertionError(call)

    @contextmanager
    def _dropped_on_error(self, ids: Iterable[str]) -> Iterator[None]:
        """A write that failed may have landed in part: its points leave the cache."""
        try:
            yield
        except BaseException:
            self.cache.dropped(uuid_key(i) for i in ids)
            raise

    def _retrieve(self, shard: qe.EdgeShard, ids: Sequence[str]) -> list[Hit]:
        """The points of ``ids`` that exist, from the cache or else the engine (in no set order)."""
        if not self.cache.enabled:
            records = shard.retrieve(list(ids), with_payload=_READ, with_vector=False)
            return [Hit(str(r.id), r.payload or {}) for r in records]
        entries, generation = self.cache.lookup(uuid_key(i) for i in ids)
        hits = [Hit(e.id, e.payload()) for e in entries if e is not None]
        missing = [i for i, e in zip(ids, entries, strict=True) if e is None]
        if missing:
            hits += self._read(shard, missing, generation).values()
        return hits

    def _read(self, shard: qe.EdgeShard, ids: list[Any], generation: int) -> dict[int, Hit]:
        """Read points with their payloads from the engine and offer them to the cache."""
        records = shard.retrieve(ids, with_payload=True, with_vector=False)
        read = {_key_of(r.id): Hit(str(r.id), r.payload or {}) for r in records}
        self.cache.fill(generation, ((key, entry_of(h.id, h.payload)) for key, h in read.items()))
        return read

    def _keep(self, hits: list[Hit], generation: int) -> None:
        """Offer the cache what a query read with its payloads (and count which it already held)."""
        keys = [uuid_key(h.id) for h in hits]
        entries, _ = self.cache.lookup(keys)
        fresh = [
            (k, entry_of(h.id, h.payload)) for k, h, e in zip(keys, hits, entries, strict=True) if e is None
        ]
        if fresh:
            self.cache.fill(generation, fresh)

    def _hydrate(self, shard: qe.EdgeShard, points: list[Any], *, scored: bool) -> list[Hit]:
        """Hits for points a query returned without payloads, in the query's order.

        A point deleted between the query and the read of its payload is left out.
        """
        keys = [_key_of(p.id) for p in points]
        entries, generation = self.cache.lookup(keys)
        missing = [p.id for p, e in zip(points, entries, strict=True) if e is None]
        read = self._read(shard, missing, generation) if missing else {}
        hits: list[Hit] = []
        for p, key, e in zip(points, keys, entries, strict=True):
            score = float(p.score) if scored else None
            if e is not None:
                hits.append(Hit(e.id, e.payload(), score))
            elif (h := read.get(key)) is not None:
                hits.append(Hit(h.id, h.payload, score))
        return hits

    def _point(self, p: PointData) -> qe.Point:
        vector = dense_layout(p.dense)
        if DENSE_MULTI in vector:
            self._has_multi = True
        if p.sparse is not None:
            vector[SPARSE] = qe.SparseVector(list(p.sparse.indices), list(p.sparse.values))
        # A uuid.UUID converts ≈ 10 µs faster than its string (the binding tries an integer first).
        return qe.Point(uuid.UUID(p.id), vector, p.payload)

    def _dense_parts(self, n: Nearest, limit: int, flt: qe.Filter | None) -> list[qe.Prefetch] | None:
        """The two searches of a dense query while the store holds multi-text items, else None.

        Single-text items have the plain vector, multi-text items the MaxSim multivector; the
        caller fuses the two with :data:`_BEST_TEXT` (the better score; the missing one is -2).
        """
        if n.using == SPARSE or not self._has_multi:
            return None
        assert isinstance(n.vector, list)
        return [
            qe.Prefetch(
                limit=limit,
                query=qe.Query.Nearest(n.vector[0], using=DENSE),
                filter=flt,
                params=_EXACT_SCORES,
            ),
            qe.Prefetch(
                limit=limit,
                query=qe.Query.Nearest(n.vector, using=DENSE_MULTI),
                filter=flt,
                params=_EXACT_SCORES,
            ),
        ]

    def _one_search(self, n: Nearest) -> Any:
        """The engine query of a :class:`Nearest` that is one search."""
        if n.using == SPARSE:
            return _sparse_query(n)
        assert isinstance(n.vector, list)
        return qe.Query.Nearest(n.vector[0], using=DENSE)

    def _ranking(self, n: Nearest, limit: int, flt: qe.Filter | None) -> dict[str, Any]:
        """What a query or a prefetch needs to rank by ``n`` (the two take the same arguments)."""
        parts = self._dense_parts(n, limit, flt)
        if parts is not None:
            return {
                "limit": limit,
                "prefetches": parts,
                "query": _BEST_TEXT,
                "score_threshold": n.score_threshold,
            }
        return {
            "limit": limit,
            "query": self._one_search(n),
            "filter": flt,
            "score_threshold": n.score_threshold,
            "params": _EXACT_SCORES if n.using != SPARSE else None,
        }

    def _query(self, shard: qe.EdgeShard, call: Query) -> list[Hit]:
        flt = _filter(call.filter)
        rank = call.rank
        ids_only = self.cache.enabled and self.cache.warm
        generation = self.cache.generation  # before the engine reads any payload
        read: Any = False if ids_only else _READ
        if isinstance(rank, OrderBy):
            request = qe.QueryRequest(
                limit=call.limit,
                query=qe.OrderBy(rank.key, qe.Direction.Desc),
                filter=flt,
                with_payload=read,
            )
        elif isinstance(rank, Nearest):
            request = qe.QueryRequest(**self._ranking(rank, call.limit, flt), with_payload=read)
        else:
            assert isinstance(rank, Fused)
            prefetches = [qe.Prefetch(**self._ranking(n, rank.prefetch_limit, flt)) for n in rank.parts]
            request = qe.QueryRequest(
                limit=call.limit,
                prefetches=prefetches,
                query=_fusion(rank),
                with_payload=read,
            )
        points = shard.query(request)
        scored = not isinstance(rank, OrderBy)
        if ids_only:
            return self._hydrate(shard, points, scored=scored)
        hits = [Hit(str(p.id), p.payload or {}, float(p.score) if scored else None) for p in points]
        if self.cache.enabled:
            self._keep(hits, generation)
        return hits

    def _written(self, shard: qe.EdgeShard) -> None:
        if self.durable:
            shard.flush()

    def _build(self, shard: qe.EdgeShard) -> bool:
        """Run Edge's optimizers with the shard's settings (capped segments): a bounded pause."""
        start = time.perf_counter()
        try:
            changed = bool(shard.optimize())
        finally:
            self.optimize_seconds += time.perf_counter() - start
        self._pending = 0
        self._write_meta()
        return changed

    def optimize(self) -> bool:
        """Index everything and merge it into one segment (blocking); True if anything changed.

        Reopens the shard with the segment cap lifted, optimizes, and reopens it
        with the usual settings; other calls wait meanwhile.
        """
        with self._guard, self._rw.write():
            shard = self._require()
            shard.flush()
            shard.close()
            self._shard = None
            try:
                self._shard = self._load(compact=True)
                return self._build(self._shard)
            finally:
                if self._shard is not None:
                    self._shard.flush()
                    self._shard.close()
                self._shard = self._load()

    def count(self) -> int:
        """How many points the shard holds (expired ones included until swept)."""
        return int(self._require().info().points_count)

    def describe(self) -> str:
        return f"path={str(self.path)!r}"

    def close(self) -> None:
        """Flush, close the shard and release the lock (idempotent)."""
        with self._guard:
            shard, self._shard = self._shard, None
            self.cache.clear()
            try:
                if shard is not None:
                    shard.flush()
                    shard.close()
                    self._write_meta()
            finally:
                self._lock.release()

    async def aclose(self) -> None:
        """:meth:`close` (a flush: brief, so it runs on the loop, as a sync ``close()`` would)."""
        self.close()
