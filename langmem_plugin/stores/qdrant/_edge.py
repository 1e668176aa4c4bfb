"""The embedded engine: Qdrant Edge (``qdrant-edge-py``) in this process, on a local directory.

Layout of ``path``: ``.lock`` (see :mod:`._lock`), ``store.json`` (the
format and the dense dimension the store was created with) and ``shard/``
(Qdrant Edge's files: WAL, segments, indexes). Every update is in the WAL
before it returns; ``durable=True`` also fsyncs (``flush``) after each write
batch, which only a power loss needs.

Edge is synchronous; the async path runs each call in the default executor.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import qdrant_edge as qe
from langchain_core.runnables.config import run_in_executor

from langmem_plugin.errors import ConfigurationError, LangMemPluginError, StoreError
from langmem_plugin.stores.qdrant._lock import PathLock
from langmem_plugin.stores.qdrant._plan import (
    DENSE,
    SPARSE,
    Delete,
    EngineCall,
    Facet,
    Filter,
    FilterIndexType,
    Fused,
    Hit,
    Match,
    MatchAny,
    Nearest,
    OrderBy,
    PointData,
    Query,
    Range,
    Retrieve,
    Scroll,
    SetPayload,
    Upsert,
)

__all__ = ["FORMAT", "EdgeEngine"]

#: The on-disk format of ``store.json`` / the point layout (bumped by a migration).
FORMAT = 1


def _condition(c: Match | MatchAny | Range) -> qe.FieldCondition:
    if isinstance(c, Match):
        return qe.FieldCondition(c.key, match=qe.MatchValue(c.value))
    if isinstance(c, MatchAny):
        return qe.FieldCondition(c.key, match=qe.MatchAny(list(c.values)))
    return qe.FieldCondition(c.key, range=qe.RangeFloat(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))


def _filter(f: Filter) -> qe.Filter | None:
    return qe.Filter(must=[_condition(c) for c in f.must]) if f.must else None


def _vector(n: Nearest) -> Any:
    if n.using == SPARSE:
        assert not isinstance(n.vector, list)
        return qe.Query.Nearest(qe.SparseVector(list(n.vector.indices), list(n.vector.values)), using=SPARSE)
    assert isinstance(n.vector, list)
    return qe.Query.Nearest(n.vector, using=DENSE)


def _fusion(rank: Fused) -> Any:
    if rank.fusion == "dbsf":
        return qe.Fusion.Dbsf()
    return qe.Fusion.Rrf(k=rank.k)


def _point(p: PointData) -> qe.Point:
    vector: dict[str, Any] = {}
    if p.dense:
        vector[DENSE] = p.dense
    if p.sparse is not None:
        vector[SPARSE] = qe.SparseVector(list(p.sparse.indices), list(p.sparse.values))
    return qe.Point(p.id, vector, p.payload)


class EdgeEngine:
    """Qdrant Edge on ``path``: opens (creating when new) under an exclusive lock.

    Args:
        path: the store directory.
        dims: the dense dimension (None: no dense vector, lexical search only).
        durable: fsync after every write batch.
    """

    def __init__(
        self,
        path: Path,
        *,
        dims: int | None,
        durable: bool = False,
        filter_indexes: tuple[tuple[str, FilterIndexType], ...] = (),
    ) -> None:
        self.path = path
        self.dims = dims
        self.durable = durable
        self.filter_indexes = filter_indexes
        self._lock = PathLock(path)
        self._shard: qe.EdgeShard | None = None
        self._guard = threading.RLock()

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
            except BaseException:
                self._lock.release()
                raise

    def _load_or_create(self) -> qe.EdgeShard:
        meta_path = self.path / "store.json"
        shard_dir = self.path / "shard"
        if meta_path.exists():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta.get("format") != FORMAT:
                raise ConfigurationError(
                    f"the store at {self.path} has format {meta.get('format')!r}; this version reads "
                    f"format {FORMAT}. Fix: export it with the version that wrote it and import it here."
                )
            if meta.get("dims") != self.dims:
                raise ConfigurationError(
                    f"the store at {self.path} was created with dense dims={meta.get('dims')!r} but is "
                    f"opened with dims={self.dims!r} (from the IndexConfig; None: no index). Fix: open it "
                    "with the same IndexConfig, or export it and import it into a new store."
                )
            try:
                return qe.EdgeShard.load(str(shard_dir))
            except Exception as exc:  # the engine's own error types
                raise StoreError(f"could not open the Qdrant Edge shard at {shard_dir}: {exc}") from exc
        vectors = (
            {
                DENSE: qe.EdgeVectorParams(
                    size=self.dims,
                    distance=qe.Distance.Cosine,
                    multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
                )
            }
            if self.dims is not None
            else None
        )
        config = qe.EdgeConfig(
            vectors=vectors, sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
        )
        try:
            shard = qe.EdgeShard.create(str(shard_dir), config)
            for name, schema in (
                ("ns_prefix", qe.KeywordIndexParams(is_tenant=True)),
                # No payload-aware HNSW links for the others: they would multiply the build time.
                ("ns", qe.KeywordIndexParams(enable_hnsw=False)),
                ("updated_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
                ("expires_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
                ("indexed", qe.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False)),
            ):
                shard.update(qe.UpdateOperation.create_field_index(name, schema))
            shard.flush()
        except Exception as exc:
            raise StoreError(f"could not create a Qdrant Edge shard at {shard_dir}: {exc}") from exc
        meta_path.write_text(json.dumps({"format": FORMAT, "dims": self.dims}), encoding="utf-8")
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
            records = shard.retrieve(list(call.ids), with_payload=True, with_vector=False)
            return [Hit(str(r.id), r.payload or {}) for r in records]
        if isinstance(call, Upsert):
            shard.update(qe.UpdateOperation.upsert_points([_point(p) for p in call.points]))
            self._written(shard)
            return None
        if isinstance(call, Delete):
            shard.update(qe.UpdateOperation.delete_points(list(call.ids)))
            self._written(shard)
            return None
        if isinstance(call, SetPayload):
            shard.update(qe.UpdateOperation.set_payload(list(call.ids), call.payload))
            return None
        if isinstance(call, Scroll):
            request = qe.ScrollRequest(
                offset=call.offset,
                limit=call.limit,
                filter=_filter(call.filter),
                with_payload=call.with_payload,
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

    def _query(self, shard: qe.EdgeShard, call: Query) -> list[Hit]:
        flt = _filter(call.filter)
        rank = call.rank
        if isinstance(rank, OrderBy):
            request = qe.QueryRequest(
                limit=call.limit,
                query=qe.OrderBy(rank.key, qe.Direction.Desc),
                filter=flt,
                with_payload=True,
            )
            return [Hit(str(p.id), p.payload or {}) for p in shard.query(request)]
        if isinstance(rank, Nearest):
            request = qe.QueryRequest(
                limit=call.limit,
                query=_vector(rank),
                filter=flt,
                score_threshold=rank.score_threshold,
                with_payload=True,
            )
        else:
            assert isinstance(rank, Fused)
            prefetches = [
                qe.Prefetch(
                    limit=rank.prefetch_limit, query=_vector(n), filter=flt, score_threshold=n.score_threshold
                )
                for n in rank.parts
            ]
            request = qe.QueryRequest(
                limit=call.limit,
                prefetches=prefetches,
                query=_fusion(rank),
                with_payload=True,
            )
        return [Hit(str(p.id), p.payload or {}, float(p.score)) for p in shard.query(request)]

    def _written(self, shard: qe.EdgeShard) -> None:
        if self.durable:
            shard.flush()

    def optimize(self) -> bool:
        """Build the HNSW and payload indexes of what was written (blocking); True if anything changed."""
        with self._guard:
            return bool(self._require().optimize())

    def count(self) -> int:
        """How many points the shard holds (expired ones included until swept)."""
        return int(self._require().info().points_count)

    def close(self) -> None:
        """Flush, close the shard and release the lock (idempotent)."""
        with self._guard:
            shard, self._shard = self._shard, None
            try:
                if shard is not None:
                    shard.flush()
                    shard.close()
            finally:
                self._lock.release()
