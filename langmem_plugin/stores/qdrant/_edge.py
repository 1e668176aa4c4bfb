"""The embedded engine: Qdrant Edge (``qdrant-edge-py``) in this process, on a local directory.

Layout of ``path``: ``.lock`` (see :mod:`._lock`), ``store.json`` (the
format and what decides what is stored: the dense dimension, the embedded
``fields`` and the ``lexical_fields``; reopening with other values is a
:class:`~langmem_plugin.errors.StoreConfigMismatchError`; and the ``embedder``
that made the vectors, recorded and checked as :mod:`langmem_plugin.stores._embedder`
says: another known one is an :class:`~langmem_plugin.errors.EmbedderMismatchError`) and ``shard/``
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

The engine is split by what it touches: the directory's files (``store.json``, loading and
creating the shard) are :mod:`._directory`'s, the reads through the payload cache
:mod:`._edge_reads`'s, a batch's journal :mod:`._journal`'s, the scrub :mod:`._scrub`'s and
free space :mod:`._space`'s; this module opens, writes, builds and closes.
"""

from __future__ import annotations

import ctypes
import functools
import json
import logging
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
    LangMemPluginError,
    StoreError,
    StoreFileError,
)
from langmem_plugin.stores.qdrant._cache import (
    CACHE_BYTES,
    PayloadCache,
    entry_of,
    uuid_key,
)
from langmem_plugin.stores.qdrant._calls import (
    Count,
    Delete,
    EngineCall,
    Facet,
    Hit,
    PointData,
    Query,
    QueryBatch,
    Retrieve,
    Scroll,
    SetPayload,
    SetPayloads,
    Upsert,
    WriteCall,
    Writes,
)
from langmem_plugin.stores.qdrant._config import OPTIMIZE_EVERY
from langmem_plugin.stores.qdrant._directory import (
    check_meta,
    create_shard,
    load_shard,
    undo_cut_creation,
    write_meta,
)
from langmem_plugin.stores.qdrant._edge_reads import EdgeReads
from langmem_plugin.stores.qdrant._edge_requests import (
    CORE_INDEXES,
    FILTER_INDEX_SCHEMAS,
    edge_filter,
    edge_point,
    payload_read,
    shard_config,
)
from langmem_plugin.stores.qdrant._journal import engine_updates, read_journal, remove_journal, write_journal
from langmem_plugin.stores.qdrant._layout import DENSE_MULTI, FORMAT, FilterIndexType
from langmem_plugin.stores.qdrant._lock import PathLock, ReadWriteLock
from langmem_plugin.stores.qdrant._meta import read_meta
from langmem_plugin.stores.qdrant._scrub import Scrubbed, build, finish, mark_ready
from langmem_plugin.stores.qdrant._space import (
    RESERVE,
    free_bytes,
    full,
    is_full,
    require,
    shard_bytes,
    write_needs,
)

__all__ = ["EdgeEngine", "trim_heap"]

logger = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (None where the C library has none: musl, macOS, Windows)."""
    return getattr(ctypes.CDLL(None), "malloc_trim", None) if os.name == "posix" else None


def trim_heap() -> bool:
    """Give the memory an index build freed back to the system; whether the C library could.

    An index build allocates and frees much memory inside the engine; glibc keeps what was freed
    in its arenas, counted in the process's RSS, until ``malloc_trim`` returns it (docs/scale.md
    has what it gives). A no-op where the C library has no ``malloc_trim``.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


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
        cache_bytes: how many bytes the payloads kept in process may take (:mod:`._cache`; 0: none).
        embedder: the ``embedder_id`` of the store's embedder (None: unknown, or no index).
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
        cache_bytes: int = CACHE_BYTES,
        embedder: str | None = None,
    ) -> None:
        self.path = path
        self.embedder = embedder
        #: The embedder ``store.json`` names (None: none recorded yet).
        self.recorded_embedder: str | None = None
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
        self._pending = 0
        self._next_build = 0  # after a build put off: the pending count at which to try again
        self._rw = ReadWriteLock()
        self._batches = threading.RLock()  # one journaled batch at a time
        self._unfinished = False  # a journaled batch failed part-way in this process: finish it first
        #: Payloads of the points written or read lately: searches read ids and scores only.
        self.cache = PayloadCache(cache_bytes)
        self.reads = EdgeReads(self.cache)

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
                finish(self.path)  # a scrub a killed process left part-done
                self._shard = self._load_or_create()
                self._ensure_filter_indexes(self._shard)
                self._finish_journal(self._shard)  # a batch a killed process left part-done
                if self.dims is not None:
                    has_multi = qe.CountRequest(
                        exact=True, filter=qe.Filter(must=[qe.HasVectorCondition(DENSE_MULTI)])
                    )
                    self.reads.has_multi = self._shard.count(has_multi) > 0
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
            "embedder": self.recorded_embedder,
            "pending": self._pending,
        }

    def _write_meta(self, directory: Path | None = None) -> None:
        """Write ``store.json`` whole (:func:`._directory.write_meta`; into ``directory``)."""
        write_meta(self.path, self._meta(), directory)

    def _saved_meta(self) -> None:
        """:meth:`_write_meta` after a write the engine applied: a failure is logged, not raised
        (the write is not undone by it); ``store.json`` is written again at the next build or close."""
        try:
            self._write_meta()
        except StoreError as exc:
            logger.warning(
                "the store at %s could not record its settings (tried again later): %s", self.path, exc
            )

    def _load(self, *, compact: bool = False) -> qe.EdgeShard:
        """Load the shard (:func:`._directory.load_shard`; ``compact``: segments uncapped)."""
        return load_shard(self.path, self.dims, compact=compact)

    def _load_or_create(self) -> qe.EdgeShard:
        meta_path = self.path / "store.json"
        shard_dir = self.path / "shard"
        undo_cut_creation(self.path)
        expected = {**self._meta(), "embedder": self.embedder, "pending": 0}
        if meta_path.exists() or meta_path.is_symlink():
            meta = read_meta(meta_path, expected)
            given = {"dims": self.dims, "fields": self.fields, "lexical_fields": self.lexical_fields}
            self.recorded_embedder = check_meta(self.path, meta, given, self.embedder)
            self._pending = meta["pending"]
            shard = self._load()
            if set(meta) != set(self._meta()):  # an older store.json: record what it lacked
                self._write_meta()
            return shard
        if shard_dir.exists():
            raise StoreFileError(
                f"{meta_path} is missing, but {shard_dir} is there: the store's settings were removed. "
                f"Fix: restore {meta_path.name} from a backup of the store, or, if it was written with the "
                f"index config it is opened with now, write this into {meta_path}: {json.dumps(expected)}",
                path=str(meta_path),
            )
        self.recorded_embedder = self.embedder
        return create_shard(self.path, self.dims, self._write_meta)

    def _ensure_filter_indexes(self, shard: qe.EdgeShard) -> None:
        existing = set(shard.info().payload_schema)
        try:
            for name, kind in self.filter_indexes:
                if name not in existing:
                    shard.update(qe.UpdateOperation.create_field_index(name, FILTER_INDEX_SCHEMAS[kind]))
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
            self._room_for(call)
            try:
                if self._unfinished:
                    self._finish_journal(shard)
                return self._execute(shard, call)
            except LangMemPluginError:
                raise
            except Exception as exc:
                raise StoreError(f"Qdrant Edge failed on {type(call).__name__}: {exc}") from exc

    def _room_for(self, call: EngineCall) -> None:
        """Before a write: refuse it (:class:`StoreFullError`) unless the file system has room for it
        (:mod:`._space`), so the engine never meets a full disk inside a mapped file (SIGBUS). A read
        asks the file system nothing (a search spent more on the statvfs than on its Python)."""
        room = write_needs(call, self.path)
        if room is not None and room[0] > room[1]:
            needed, free = room
            raise full(self.path, free=free, needed=needed, doing=f"apply a write ({type(call).__name__})")

    async def aexecute(self, call: EngineCall) -> Any:
        return await run_in_executor(None, self.execute, call)

    def _execute(self, shard: qe.EdgeShard, call: EngineCall) -> Any:
        if isinstance(call, Writes):
            self._apply(shard, call.calls)
            return None
        if isinstance(call, Query):
            return self.reads.query(shard, call)
        if isinstance(call, QueryBatch):  # in process: no round trip to save
            return [self.reads.query(shard, q) for q in call.queries]
        if isinstance(call, Retrieve):
            return self.reads.retrieve(shard, call.ids, call.with_payload)
        if isinstance(call, Upsert):
            with self._dropped_on_error(p.id for p in call.points):
                shard.update(qe.UpdateOperation.upsert_points([self._point(p) for p in call.points]))
                self.cache.written((uuid_key(p.id), entry_of(p.id, p.payload)) for p in call.points)
            self._written(shard)
            self._record_embedder(call.points)
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
        if isinstance(call, SetPayloads):  # in process: what changed, per point or shared
            with self._dropped_on_error(pid for pid, _ in call.updates):
                shared: dict[str, tuple[list[str], dict[str, Any]]] = {}
                for n, (pid, payload) in enumerate(call.updates):
                    change = call.changes[n] if n < len(call.changes) else None
                    if change is None:
                        shard.update(qe.UpdateOperation.set_payload([pid], payload))
                        continue
                    value, other = change
                    if value:  # merged into the stored value: its other keys stay as they are
                        shard.update(qe.UpdateOperation.set_payload([pid], value, key="value"))
                    if other:  # the same timestamps for a whole batch: one update for its points
                        group = json.dumps(other, sort_keys=True, default=str)
                        shared.setdefault(group, ([], other))[0].append(pid)
                for ids, other in shared.values():
                    shard.update(qe.UpdateOperation.set_payload(list[int | uuid.UUID | str](ids), other))
                for pid, payload in call.updates:
                    self.cache.updated([uuid_key(pid)], payload)
            return None
        if isinstance(call, Scroll):
            request = qe.ScrollRequest(
                offset=call.offset,
                limit=call.limit,
                filter=edge_filter(call.filter),
                with_payload=payload_read(call.with_payload),
            )
            records, next_offset = shard.scroll(request)
            hits = [Hit(str(r.id), r.payload or {}) for r in records]
            return hits, str(next_offset) if next_offset is not None else None
        if isinstance(call, Facet):
            response = shard.facet(
                qe.FacetRequest(call.key, limit=call.limit, exact=True, filter=edge_filter(call.filter))
            )
            return [str(hit.value) for hit in response.hits]
        if isinstance(call, Count):
            return int(shard.count(qe.CountRequest(exact=call.exact, filter=edge_filter(call.filter))))
        raise AssertionError(call)

    def _apply(self, shard: qe.EdgeShard, calls: Sequence[WriteCall]) -> None:
        """Apply a batch's writes whole: journaled first when they are more than one engine update
        (:mod:`._journal`). One that fails part-way is tried again at once; failing again, it is
        finished by the next call on the store (which raises until it is) or by the next open."""
        if engine_updates(calls) <= 1:
            for call in calls:
                self._execute(shard, call)
            return
        with self._batches:
            write_journal(self.path, calls, durable=self.durable)
            try:
                for call in calls:
                    self._execute(shard, call)
            except BaseException:
                self._unfinished = True
                self._finish_journal(shard)  # raises again if the engine still fails
                return
            remove_journal(self.path)

    def _finish_journal(self, shard: qe.EdgeShard) -> None:
        """Apply again every call of the journal left in the directory, then remove it."""
        with self._batches:
            calls = read_journal(self.path)
            if calls is not None:
                for call in calls:
                    self._execute(shard, call)
                remove_journal(self.path)
            self._unfinished = False

    @contextmanager
    def _dropped_on_error(self, ids: Iterable[str]) -> Iterator[None]:
        """A write that failed may have landed in part: its points leave the cache."""
        try:
            yield
        except BaseException:
            self.cache.dropped(uuid_key(i) for i in ids)
            raise

    def _point(self, p: PointData) -> qe.Point:
        if p.dense is not None and len(p.dense) > 1:
            self.reads.has_multi = True
        return edge_point(p)

    def _record_embedder(self, points: Sequence[PointData]) -> None:
        """With the first vectors written into a store that names no embedder, name this one."""
        if self.recorded_embedder is not None or self.embedder is None or not any(p.dense for p in points):
            return
        with self._guard:
            if self.recorded_embedder is None:
                self.recorded_embedder = self.embedder
                self._saved_meta()  # after the write: a failure is logged, the write stands

    def _written(self, shard: qe.EdgeShard) -> None:
        """After a write the engine applied (it is in the WAL): with ``durable``, fsync it. A failed
        fsync is logged, not raised: the write is applied and seen, and the next write or the close
        flushes again (a close that cannot flush raises)."""
        if not self.durable:
            return
        try:
            shard.flush()
        except Exception as exc:  # the engine's own error types
            logger.warning(
                "the store at %s could not fsync a write it applied (tried again later): %s", self.path, exc
            )

    def _build(self, shard: qe.EdgeShard) -> bool:
        """After a write: build the index (:meth:`_optimizers`). Never raises: the write is applied,
        and a build that cannot run now (too little room, an engine error) is logged and tried
        again once a tenth of ``optimize_every`` more points were written."""
        if self._pending < self._next_build:
            return False
        try:
            return self._optimizers(shard)
        except StoreError as exc:
            self._next_build = self._pending + max(1, (self.optimize_every or 10) // 10)
            logger.warning("the store at %s put off building its index: %s", self.path, exc)
            return False

    def _optimizers(self, shard: qe.EdgeShard) -> bool:
        """Run Edge's optimizers with the shard's settings (capped segments): a bounded pause.

        Raises:
            StoreFullError: too little room (checked first: the optimizer writes new segments beside
                the old ones, which go only when the shard is closed; or the engine's own check).
            StoreError: the engine failed.
        """
        needed = RESERVE + 2 * shard_bytes(self.path / "shard")[0]
        require(self.path, needed, "build the search index")
        start = time.perf_counter()
        try:
            changed = bool(shard.optimize())
        except Exception as exc:  # the engine's own error types
            if is_full(exc):
                raise full(
                    self.path, free=free_bytes(self.path), needed=needed, doing="build the search index"
                ) from exc
            raise StoreError(
                f"Qdrant Edge failed to build the index of the store at {self.path}: {exc}"
            ) from exc
        finally:
            self.optimize_seconds += time.perf_counter() - start
            trim_heap()
        self._pending = 0
        self._next_build = 0
        self._saved_meta()
        return changed

    def optimize(self) -> bool:
        """Index everything and merge it into one segment (blocking); True if anything changed.

        Reopens the shard with the segment cap lifted, optimizes, and reopens it
        with the usual settings; other calls wait meanwhile.
        """
        with self._guard, self._rw.write():
            shard = self._require()
            require(self.path, RESERVE + 2 * shard_bytes(self.path / "shard")[0], "compact the store")
            shard.flush()
            shard.close()
            self._shard = None
            try:
                self._shard = self._load(compact=True)
                return self._optimizers(self._shard)
            finally:
                if self._shard is not None:
                    self._shard.flush()
                    self._shard.close()
                self._shard = self._load()

    def scrub(self) -> Scrubbed:
        """Rewrite the shard without what was deleted, and zero the old files (:mod:`._scrub`).

        Blocking, like :meth:`optimize`: other calls wait meanwhile. A failure before the new
        shard is whole leaves the old one open as it was; after, the new one is opened.
        """
        with self._guard, self._rw.write():
            shard = self._require()
            require(self.path, RESERVE + 2 * shard_bytes(self.path / "shard")[0], "scrub the store")
            start = time.perf_counter()
            indexes = [*CORE_INDEXES, *((name, FILTER_INDEX_SCHEMAS[k]) for name, k in self.filter_indexes)]
            points = build(shard, self.path, shard_config(self.dims), indexes)
            shard.flush()
            shard.close()
            self._shard = None
            try:
                mark_ready(self.path)
                wiped = finish(self.path)
            finally:
                self._shard = self._load()
            trim_heap()
            self._pending = 0
            self._write_meta()
            return Scrubbed(points, time.perf_counter() - start, wiped)

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
                    try:
                        shard.flush()
                    finally:
                        shard.close()
                    self._saved_meta()  # bookkeeping only: logged if it fails
            except Exception as exc:  # the engine's own error types
                raise StoreError(
                    f"the store at {self.path} could not flush while closing: {exc}. Every acknowledged "
                    "write is in its WAL and is replayed when the store is next opened."
                ) from exc
            finally:
                self._lock.release()

    async def aclose(self) -> None:
        """:meth:`close` (a flush: brief, so it runs on the loop, as a sync ``close()`` would)."""
        self.close()
