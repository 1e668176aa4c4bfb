"""CheckpointerStore: a LangGraph ``BaseStore`` whose data lives in a checkpointer you already run.

Durable, cross-thread memory without another service: give it the
``InMemorySaver``, ``SqliteSaver`` / ``AsyncSqliteSaver`` or ``PostgresSaver``
your graphs use, and every item gets a full, auditable history.

The mapping onto checkpoints
----------------------------
- **a namespace ↔ a reserved thread** ``langmem_plugin.store:<name>:["users","u1"]``
  (checkpoint namespace ``""``); a registry thread ``langmem_plugin.store:<name>:registry``
  lists the namespace threads, so opening never scans your graphs' threads;
- **a write ↔ one checkpoint per namespace it touches**, holding *only the
  items it changed*: item key ↔ channel, the item's new version ↔ the
  channel's value, the checkpoint id ↔ the channel's version. A thread is
  therefore a log of deltas, and a put costs O(items changed), never
  O(namespace): ``InMemorySaver`` and ``PostgresSaver`` store one blob per
  changed channel version, and ``SqliteSaver`` — which serialises whole
  checkpoints — serialises just the changed items, because the checkpoint
  holds nothing else. (Mapping keys onto channels of *one growing* checkpoint
  would make every SqliteSaver put rewrite the whole namespace.)
- a channel value is a small record: ``{"op": "put", "value": <JSON text>,
  "created_at", "updated_at", "expires_at", "ttl", "index", "vectors": <float32
  bytes>}``, ``{"op": "delete", "at", "reason"}`` or a TTL refresh
  ``{"op": "refresh", "of": <checkpoint id>, "expires_at"}``. Vectors are stored,
  so reopening never re-embeds (unless the index configuration changed).

On first use the store reads the registry and each namespace thread, folds the
log in checkpoint-id order and builds its in-process indexes; reads are then
served from memory and each write updates them once the checkpointer has
acknowledged it. A write returns only after the checkpointer's ``put`` has
returned, so with ``SqliteSaver`` (which commits each checkpoint) a SIGKILL
loses no acknowledged write. A batch that touches several namespaces writes one
checkpoint (one commit) per namespace; it is not atomic across them.

One process writes a given store: its in-process indexes do not follow writes
made by another process to the same checkpointer until that store is reopened
(several stores can share one saver, each under its own ``name``).

History: :meth:`CheckpointerStore.history` lists every version of an item
(``value=None`` for a deletion), :meth:`~CheckpointerStore.restore` writes an old
version back, :meth:`~CheckpointerStore.rollback` does it for a whole namespace,
:meth:`~CheckpointerStore.namespace_at` shows a namespace as it was
at a past time (TTL refreshes by reads are not part of that timeline: an item
counts as expired at the expiry its version was written with).

Search
------
Filters follow the store contract (``langmem_plugin.stores._common``). With a
query: ``"semantic"`` (cosine over the ``IndexConfig`` embeddings, the default
when ``index`` is given), ``"lexical"`` (BM25, the default without ``index``:
over every string of the value) or ``"hybrid"`` (reciprocal-rank fusion of
both) — ``index={"mode": ...}``. Items that have no score (``index=False`` on
put, or no shared term for BM25) come after the scored ones with
``score=None``. The indexes are in process: exact (brute-force) vector search
over a numpy matrix and an inverted BM25 index, rebuilt by folding the whole
log on open. Measured on 2 cores (``langmem-plugin bench checkpointer --scale``):
at 10k items a vector search takes ≈ 1.5 ms, a filtered one ≈ 0.3 ms, and
reopening ≈ 0.5 s; at 100k, 150 MB of 384-dim vectors, ≈ 20-80 ms per vector
search and ≈ 20 s to reopen. Sensible up to a few tens of thousands of items per
store; beyond that, use a vector engine (QdrantStore).

>>> from langgraph.checkpoint.memory import InMemorySaver
>>> store = CheckpointerStore(InMemorySaver())
>>> store.put(("users", "u1"), "tea", {"text": "likes green tea"})
>>> store.put(("users", "u1"), "tea", {"text": "prefers black tea now"})
>>> [v.value for v in store.history(("users", "u1"), "tea")]
[{'text': 'likes green tea'}, {'text': 'prefers black tea now'}]
>>> store.search(("users",), query="black tea")[0].key
'tea'
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import itertools
import json
import os
import re
import sqlite3
import threading
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings

from langmem_plugin.core.embeddings import resolve_embeddings
from langmem_plugin.errors import BlockingCallError, ConfigurationError, MissingDependencyError, StoreError
from langmem_plugin.stores._ckpt_state import (
    Entry,
    Mode,
    StoreState,
    decode_vectors,
    encode_vectors,
    namespace_thread,
    parse_time,
    registry_thread,
)
from langmem_plugin.stores._common import (
    Clock,
    TTLSettings,
    TTLSweeper,
    apply_list_namespaces,
    compile_filter,
    expiry,
    final_puts,
    utc_clock,
    validate_namespace,
    validate_op,
    validate_value,
)

__all__ = ["CheckpointerIndexConfig", "CheckpointerStore", "ItemVersion"]

T = TypeVar("T")


class CheckpointerIndexConfig(IndexConfig, total=False):
    """``IndexConfig`` plus the search mode of a :class:`CheckpointerStore`."""

    mode: Mode
    """``"semantic"`` (default with ``embed``), ``"lexical"`` (BM25 over ``fields``) or ``"hybrid"``."""


@dataclass(frozen=True)
class ItemVersion:
    """One version of an item, from :meth:`CheckpointerStore.history`.

    Attributes:
        namespace: the item's namespace.
        key: the item's key.
        version: 1 for the first version, then 2, 3, ... (deletions count).
        value: the value written, or None when this version is a deletion.
        timestamp: when it was written (the item's ``updated_at``) or deleted.
        reason: ``"put"``, ``"delete"``, ``"expired"`` (a TTL sweep) or ``"restore"``.
        checkpoint_id: the checkpoint that holds it.
    """

    namespace: tuple[str, ...]
    key: str
    version: int
    value: dict[str, Any] | None
    timestamp: datetime
    reason: str
    checkpoint_id: str


# --------------------------------------------------------------------------- I/O requests


@dataclass(frozen=True, slots=True)
class _Put:
    config: RunnableConfig
    checkpoint: Any
    metadata: Any
    versions: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _List:
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class _Get:
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class _Embed:
    texts: list[str]


@dataclass(frozen=True, slots=True)
class _EmbedQuery:
    text: str


_Request = _Put | _List | _Get | _Embed | _EmbedQuery
_Steps = Generator[_Request, Any, T]


@dataclass(slots=True)
class _Write:
    """One record to write: the channel ``key`` of namespace ``namespace``'s next checkpoint."""

    namespace: tuple[str, ...]
    key: str
    record: dict[str, Any]
    vectors: np.ndarray | None = None
    value: dict[str, Any] | None = None  # a put's value, already a private copy


_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_REFRESH_FRACTION = 0.01  # a read refreshes an expiry only when it moves by at least 1% of the TTL


class CheckpointerStore(BaseStore):
    """A ``BaseStore`` kept in a LangGraph checkpointer, with history (see the module docstring).

    Args:
        checkpointer: any ``BaseCheckpointSaver`` — ``InMemorySaver``, ``SqliteSaver``,
            ``AsyncSqliteSaver``, ``PostgresSaver``... The store never deletes its
            threads; it shares the saver with your graphs safely (reserved thread ids).
        index: ``IndexConfig`` (``dims``, ``embed``: an ``Embeddings``, a function or a
            ``"provider:model"`` string, ``fields``) plus an optional ``mode``. None:
            lexical (BM25) search over every string of a value.
        ttl: ``TTLConfig`` (minutes). Expired items are never returned; ``sweep_ttl()``
            writes their deletion, and runs every ``sweep_interval_minutes`` once the
            store is set up.
        clock: returns the current time (timezone-aware UTC); for tests.
        name: the store's name among the saver's threads (several stores can share a saver).

    Values are JSON objects of at most 1 MiB of JSON (``MAX_VALUE_BYTES``); anything else is an
    ``InvalidValueError`` and nothing is written. Constructing does no I/O; the log is read on
    :meth:`setup` / :meth:`asetup` or the first call.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        checkpointer: BaseCheckpointSaver[Any],
        *,
        index: CheckpointerIndexConfig | IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Clock | None = None,
        name: str = "store",
    ) -> None:
        if not isinstance(checkpointer, BaseCheckpointSaver):
            raise ConfigurationError(
                f"CheckpointerStore needs a LangGraph checkpointer (BaseCheckpointSaver), got "
                f"{type(checkpointer).__name__}. Fix: pass e.g. InMemorySaver() or SqliteSaver(conn)."
            )
        if not _NAME.match(name):
            raise ConfigurationError(f"store name {name!r} must match [A-Za-z0-9_.-]+")
        self.checkpointer = checkpointer
        self.name = name
        self.index_config = cast(IndexConfig | None, dict(index) if index else None)
        self.ttl_config = ttl
        self._ttl = TTLSettings.from_config(ttl)
        self._clock: Clock = clock or utc_clock
        mode, dims, fields = self._index_settings(index)
        self._mode: Mode = mode
        self._dims = dims
        self._fields = fields
        self._embeddings: Embeddings | None = (
            _embeddings(index["embed"]) if index and mode != "lexical" else None
        )
        self._state: StoreState | None = None
        self._lock = threading.Lock()
        self._async_native: bool | None = None
        self._sweeper: TTLSweeper | None = None

    @property
    def search_mode(self) -> Mode:
        """How ``search(query=...)`` ranks: ``"semantic"`` (cosine), ``"lexical"`` (BM25) or ``"hybrid"``."""
        return self._mode

    @staticmethod
    def _index_settings(index: Any) -> tuple[Mode, int | None, list[str] | None]:
        if not index:
            return "lexical", None, None
        mode = index.get("mode", "semantic" if "embed" in index else "lexical")
        if mode not in ("semantic", "lexical", "hybrid"):
            raise ConfigurationError(f"index mode {mode!r} is not one of 'semantic', 'lexical', 'hybrid'")
        fields = index.get("fields")
        if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) for f in fields)):
            raise ConfigurationError(f"index fields must be a list of field paths, got {fields!r}")
        if mode == "lexical":
            return mode, None, list(fields) if fields else None
        dims = index.get("dims")
        if "embed" not in index or not isinstance(dims, int) or dims <= 0:
            raise ConfigurationError(
                f"index mode {mode!r} needs 'embed' and a positive int 'dims', got {dict(index)!r}. "
                "Fix: e.g. {'dims': 384, 'embed': MiniLMEmbeddings()}, or {'mode': 'lexical'}."
            )
        return mode, dims, list(fields) if fields else None

    # ------------------------------------------------------------------ lifecycle

    def setup(self) -> None:
        """Read the log and build the indexes now (otherwise the first call does); start the sweeper."""
        self._run(self._load())

    async def asetup(self) -> None:
        """Async :meth:`setup`."""
        await self._arun(self._load())

    def start_ttl_sweeper(self) -> None:
        """Start the TTL sweeper thread when ``sweep_interval_minutes`` is configured."""
        interval = self._ttl.sweep_interval_minutes
        with self._lock:
            if interval is None or self._sweeper is not None:
                return
            self._sweeper = TTLSweeper(self.sweep_ttl, interval, name=f"langmem-ckpt-sweeper-{self.name}")
        self._sweeper.start()

    def close(self) -> None:
        """Stop the sweeper. The checkpointer is yours: it is not closed."""
        if self._sweeper is not None:
            self._sweeper.stop()
            self._sweeper = None

    def __enter__(self) -> CheckpointerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    @contextmanager
    def from_sqlite(
        cls,
        path: str | os.PathLike[str],
        *,
        index: CheckpointerIndexConfig | IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        name: str = "store",
    ) -> Iterator[CheckpointerStore]:
        """A store in a SQLite file through a ``SqliteSaver`` it opens and closes (a context manager).

        Args:
            path: the database file (created when missing). Your graphs may use the same
                file through their own ``SqliteSaver``.
            synchronous: SQLite's ``synchronous`` in WAL mode. ``"NORMAL"`` (default): a write
                that returned survives a crash or SIGKILL of the process; only a power loss or
                an OS crash may lose the last ones. ``"FULL"``: an fsync per write (a few ms
                more) survives those too.

        Raises:
            MissingDependencyError: ``langgraph-checkpoint-sqlite`` is not installed.

        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with CheckpointerStore.from_sqlite(pathlib.Path(tmp) / "memory.db") as store:
        ...         store.put(("users", "u1"), "k", {"text": "hello"})
        ...     with CheckpointerStore.from_sqlite(pathlib.Path(tmp) / "memory.db") as store:
        ...         store.get(("users", "u1"), "k").value
        {'text': 'hello'}
        """
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ImportError as exc:
            raise MissingDependencyError(
                "CheckpointerStore.from_sqlite needs langgraph-checkpoint-sqlite. "
                "Fix: pip install 'langmem-plugin[sqlite]'."
            ) from exc
        if synchronous not in ("NORMAL", "FULL"):
            raise ConfigurationError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            with cls(SqliteSaver(conn), index=index, ttl=ttl, name=name) as store:
                yield store
        finally:
            conn.close()

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` (results in op order; reads see the state before the batch's writes)."""
        return self._run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (native with async savers; sync-only savers run in an executor)."""
        return await self._arun(self._batch(list(ops)))

    def sweep_ttl(self) -> int:
        """Delete expired items (a ``"expired"`` deletion in their history); returns how many."""
        return self._run(self._sweep())

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        return await self._arun(self._sweep())

    # ------------------------------------------------------------------ history

    def history(self, namespace: tuple[str, ...], key: str) -> list[ItemVersion]:
        """Every version of an item, oldest first (``value=None`` for a deletion). Empty if never written."""
        return self._run(self._history(namespace, key))

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[ItemVersion]:
        """Async :meth:`history`."""
        return await self._arun(self._history(namespace, key))

    def restore(self, namespace: tuple[str, ...], key: str, version: int) -> Item | None:
        """Write version ``version`` of an item back as its newest version.

        Returns the item as now stored (None when that version was a deletion).

        Raises:
            ConfigurationError: ``version`` is not one of the item's versions.
        """
        return self._run(self._restore(namespace, key, version))

    async def arestore(self, namespace: tuple[str, ...], key: str, version: int) -> Item | None:
        """Async :meth:`restore`."""
        return await self._arun(self._restore(namespace, key, version))

    def rollback(self, namespace: tuple[str, ...], when: datetime) -> int:
        """Make ``namespace`` what it was at ``when``; returns how many items changed.

        Items changed since get their old value back, items deleted since come back, items
        created since are deleted — each change a new ``"restore"`` version in its history.
        """
        return self._run(self._rollback(namespace, when))

    async def arollback(self, namespace: tuple[str, ...], when: datetime) -> int:
        """Async :meth:`rollback`."""
        return await self._arun(self._rollback(namespace, when))

    def namespace_at(self, namespace: tuple[str, ...], when: datetime) -> list[Item]:
        """The items of ``namespace`` as they were at ``when`` (by key), as of each item's timestamps."""
        return self._run(self._namespace_at(namespace, when))

    async def anamespace_at(self, namespace: tuple[str, ...], when: datetime) -> list[Item]:
        """Async :meth:`namespace_at`."""
        return await self._arun(self._namespace_at(namespace, when))

    # ------------------------------------------------------------------ the logic (sans I/O)

    def _load(self) -> _Steps[None]:
        if self._state is not None:
            return
        state = StoreState(mode=self._mode, dims=self._dims, fields=self._fields)
        registry = yield _List(self._config(registry_thread(self.name)))
        namespaces: set[tuple[str, ...]] = set()
        for saved in cast(list[CheckpointTuple], registry):
            for labels in saved.checkpoint["channel_values"].values():
                namespaces.add(tuple(labels))
        state.begin_load()
        for namespace in sorted(namespaces):
            thread = namespace_thread(self.name, namespace)
            saved_list = cast(list[CheckpointTuple], (yield _List(self._config(thread))))
            saved_list.sort(key=lambda t: t.checkpoint["id"])
            with _gc_paused():  # folding creates many small objects: the collector only slows it down
                for saved in saved_list:
                    self._fold(state, namespace, saved)
            if saved_list:
                state.heads[thread] = saved_list[-1].checkpoint["id"]
            state.registered.add(namespace)
        with _gc_paused():
            missing = state.finish_load()
        if missing:  # written without (or with other) embeddings: embed once now
            texts = [state.texts_for(e.value, e.index) for e in missing]
            flat = yield _Embed([t for group in texts for t in group])
            vectors = np.asarray(flat, dtype=np.float32)
            bounds = np.cumsum([0] + [len(group) for group in texts])
            assert state.vectors is not None
            state.vectors.set_many(
                [e.slot for e in missing],
                [vectors[a:b] for a, b in itertools.pairwise(bounds)],
            )
        with self._lock:
            if self._state is None:
                self._state = state
        self.start_ttl_sweeper()

    def _fold(self, state: StoreState, namespace: tuple[str, ...], saved: CheckpointTuple) -> None:
        cid = saved.checkpoint["id"]
        vectors_ok = state.vectors is not None
        for key, record in saved.checkpoint["channel_values"].items():
            vectors = None
            # vectors made with other dims or fields are not reused: finish_load embeds again
            if (
                vectors_ok
                and record["op"] == "put"
                and record.get("dims") == self._dims
                and record.get("fields") == state.fields_for(record.get("index"))
            ):
                assert self._dims is not None
                vectors = decode_vectors(record.get("vectors"), self._dims)
            state.apply(namespace, key, cid, record, vectors)

    def _batch(self, ops: list[Op]) -> _Steps[list[Result]]:
        puts: list[tuple[int, PutOp]] = []
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                validate_namespace(op.namespace)
                if op.value is not None:
                    puts.append((i, op._replace(value=validate_value(op.value))))
                else:
                    puts.append((i, op))
            else:
                validate_op(op)
        yield from self._load()
        state = self._require_state()
        winners = [op for _, op in sorted(final_puts(puts).values(), key=lambda t: t[0])]
        # embeddings first (no lock held during I/O)
        texts = [state.texts_for(op.value, op.index) if op.value is not None else [] for op in winners]
        flat = [t for group in texts for t in group]
        doc_vectors = np.asarray((yield _Embed(flat)), dtype=np.float32) if flat else None
        query_vectors: dict[int, np.ndarray] = {}
        if state.vectors is not None:
            for i, op in enumerate(ops):
                if isinstance(op, SearchOp) and op.query:
                    query_vectors[i] = np.asarray((yield _EmbedQuery(op.query)), dtype=np.float32)
        with self._lock:
            now = self._clock()
            results, refreshes = self._read(state, ops, query_vectors, now)
            writes: list[_Write] = []
            start = 0
            put_keys = set()
            for op, group in zip(winners, texts, strict=True):
                vectors = None
                if doc_vectors is not None and group:
                    vectors = doc_vectors[start : start + len(group)]
                    start += len(group)
                write = self._plan_put(state, op, vectors, now)
                put_keys.add((tuple(op.namespace), op.key))
                if write is not None:
                    writes.append(write)
            writes.extend(w for w in refreshes if (w.namespace, w.key) not in put_keys)
        yield from self._write(state, writes)
        return results

    def _read(
        self, state: StoreState, ops: list[Op], query_vectors: dict[int, np.ndarray], now: datetime
    ) -> tuple[list[Result], list[_Write]]:
        results: list[Result] = []
        refresh: dict[tuple[tuple[str, ...], str], Entry] = {}
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                entry = state.live(tuple(op.namespace), op.key, now)
                results.append(entry.item() if entry is not None else None)
                if entry is not None and self._ttl.refresh(op.refresh_ttl):
                    refresh[(entry.namespace, entry.key)] = entry
            elif isinstance(op, SearchOp):
                page = state.search(
                    tuple(op.namespace_prefix),
                    compile_filter(op.filter) if op.filter else None,
                    op.query,
                    query_vectors.get(i),
                    limit=op.limit,
                    offset=op.offset,
                    now=now,
                )
                results.append([e.search_item(score) for e, score in page])
                if self._ttl.refresh(op.refresh_ttl):
                    for e, _ in page:
                        refresh[(e.namespace, e.key)] = e
            elif isinstance(op, ListNamespacesOp):
                results.append(apply_list_namespaces(state.live_namespaces(now), op))
            else:
                results.append(None)
        writes = []
        for entry in refresh.values():
            if entry.ttl is None or entry.expires_at is None:
                continue
            new_expiry = expiry(now, entry.ttl)
            assert new_expiry is not None
            if (new_expiry - entry.expires_at).total_seconds() < entry.ttl * 60 * _REFRESH_FRACTION:
                continue
            writes.append(
                _Write(
                    entry.namespace,
                    entry.key,
                    {"op": "refresh", "of": entry.checkpoint_id, "expires_at": new_expiry.isoformat()},
                )
            )
        return results, writes

    def _plan_put(
        self,
        state: StoreState,
        op: PutOp,
        vectors: np.ndarray | None,
        now: datetime,
        *,
        reason: str | None = None,
    ) -> _Write | None:
        namespace = tuple(op.namespace)
        if op.value is None:
            if state.present(namespace, op.key) is None:
                return None  # deleting what is not there writes nothing (no phantom history)
            return _Write(
                namespace, op.key, {"op": "delete", "at": now.isoformat(), "reason": reason or "delete"}
            )
        previous = state.live(namespace, op.key, now)
        created = previous.created_at if previous is not None else now
        expires = expiry(now, op.ttl)
        record: dict[str, Any] = {
            "op": "put",
            "value": json.dumps(op.value, ensure_ascii=False, allow_nan=False),
            "created_at": created.isoformat(),
            "updated_at": now.isoformat(),
            "expires_at": expires.isoformat() if expires else None,
            "ttl": op.ttl,
            "index": op.index if op.index is False else (list(op.index) if op.index else None),
            "reason": reason or "put",
        }
        if vectors is not None:
            record["vectors"] = encode_vectors(vectors)
            record["dims"] = self._dims
            record["fields"] = state.fields_for(record["index"])
        return _Write(namespace, op.key, record, vectors, cast(dict[str, Any], op.value))

    def _write(self, state: StoreState, writes: list[_Write]) -> _Steps[None]:
        """Write one checkpoint per namespace (registering new namespaces first), applying each once written.

        Each checkpoint is applied to memory as soon as the saver acknowledges it, so
        a failure part-way leaves memory agreeing with what was written.
        """
        if not writes:
            return
        by_namespace: dict[tuple[str, ...], list[_Write]] = {}
        for w in writes:
            by_namespace.setdefault(w.namespace, []).append(w)
        steps: list[tuple[_Put, list[tuple[Any, ...]]]] = []
        with self._lock:
            new = [ns for ns in by_namespace if ns not in state.registered]
            now_text = self._clock().isoformat()
            if new:
                registry = registry_thread(self.name)
                channels = {namespace_thread(self.name, ns): list(ns) for ns in new}
                steps.append((self._checkpoint(state, registry, channels, now_text), []))
                state.registered.update(new)
            for namespace, group in by_namespace.items():
                thread = namespace_thread(self.name, namespace)
                put = self._checkpoint(state, thread, {w.key: w.record for w in group}, now_text)
                cid = put.checkpoint["id"]
                steps.append((put, [(namespace, w.key, cid, w.record, w.vectors, w.value) for w in group]))
        written = 0
        try:
            for request, applied in steps:
                yield request
                written += 1
                with self._lock:
                    state.apply_many(applied)
        except BaseException:
            if new and written == 0:  # the registry checkpoint itself failed
                with self._lock:
                    state.registered.difference_update(new)
            raise

    def _checkpoint(self, state: StoreState, thread: str, channels: dict[str, Any], ts: str) -> _Put:
        cid = str(uuid6(clock_seq=0))
        checkpoint = empty_checkpoint()
        checkpoint["id"] = cid
        checkpoint["ts"] = ts
        checkpoint["channel_values"] = channels
        checkpoint["channel_versions"] = dict.fromkeys(channels, cid)
        checkpoint["updated_channels"] = list(channels)
        config = self._config(thread)
        parent = state.heads.get(thread)
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent
        state.heads[thread] = cid
        metadata = {
            "source": "update",
            "step": -1,
            "parents": {},
            "writer": "langmem_plugin.CheckpointerStore",
        }
        return _Put(config, checkpoint, metadata, dict.fromkeys(channels, cid))

    @staticmethod
    def _config(thread: str, checkpoint_id: str | None = None) -> RunnableConfig:
        configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
        if checkpoint_id is not None:
            configurable["checkpoint_id"] = checkpoint_id
        return {"configurable": configurable}

    def _sweep(self) -> _Steps[int]:
        yield from self._load()
        state = self._require_state()
        with self._lock:
            now = self._clock()
            writes = [
                _Write(e.namespace, e.key, {"op": "delete", "at": now.isoformat(), "reason": "expired"})
                for entries in state.items.values()
                for e in entries.values()
                if e.expired(now)
            ]
        yield from self._write(state, writes)
        return len(writes)

    def _fetch(self, namespace: tuple[str, ...], checkpoint_id: str) -> _Steps[dict[str, Any]]:
        saved = yield _Get(self._config(namespace_thread(self.name, namespace), checkpoint_id))
        if saved is None:
            raise StoreError(
                f"checkpoint {checkpoint_id} of namespace {namespace!r} is missing from the checkpointer "
                "(was its thread deleted?)"
            )
        return cast(dict[str, Any], saved.checkpoint["channel_values"])

    def _history(self, namespace: tuple[str, ...], key: str) -> _Steps[list[ItemVersion]]:
        namespace = validate_namespace(namespace, for_write=False)
        yield from self._load()
        state = self._require_state()
        with self._lock:
            refs = state.history(namespace, key)
        versions = []
        for number, ref in enumerate(refs, start=1):
            record = (yield from self._fetch(namespace, ref.checkpoint_id))[key]
            value = json.loads(record["value"]) if record["op"] == "put" else None
            versions.append(
                ItemVersion(
                    namespace,
                    key,
                    number,
                    value,
                    ref.at,
                    record.get("reason", record["op"]),
                    ref.checkpoint_id,
                )
            )
        return versions

    def _restore(self, namespace: tuple[str, ...], key: str, version: int) -> _Steps[Item | None]:
        namespace = validate_namespace(namespace)
        yield from self._load()
        state = self._require_state()
        with self._lock:
            refs = state.history(namespace, key)
        if not isinstance(version, int) or not 1 <= version <= len(refs):
            raise ConfigurationError(
                f"item {namespace!r}/{key!r} has versions 1..{len(refs)}, not {version!r}. "
                "Fix: pick one from store.history(namespace, key)."
            )
        record = (yield from self._fetch(namespace, refs[version - 1].checkpoint_id))[key]
        yield from self._write_back(
            state, [_put_op(namespace, key, record if record["op"] == "put" else None)]
        )
        with self._lock:
            entry = state.live(namespace, key, self._clock())
            return entry.item() if entry is not None else None

    def _write_back(self, state: StoreState, ops: list[PutOp]) -> _Steps[int]:
        """Write old versions back as new ones (reason ``"restore"``); returns how many were written."""
        texts = [state.texts_for(op.value, op.index) if op.value is not None else [] for op in ops]
        flat = [t for group in texts for t in group]
        vectors = np.asarray((yield _Embed(flat)), dtype=np.float32) if flat else None
        bounds = list(itertools.accumulate((len(group) for group in texts), initial=0))
        with self._lock:
            now = self._clock()
            writes = [
                self._plan_put(
                    state, op, vectors[a:b] if vectors is not None and b > a else None, now, reason="restore"
                )
                for op, (a, b) in zip(ops, itertools.pairwise(bounds), strict=True)
            ]
        planned = [w for w in writes if w is not None]
        yield from self._write(state, planned)
        return len(planned)

    def _records_at(self, namespace: tuple[str, ...], when: datetime) -> _Steps[dict[str, dict[str, Any]]]:
        """The put record of each item of ``namespace`` live at ``when``, by key."""
        state = self._require_state()
        with self._lock:
            chosen: dict[str, str] = {}
            for key in state.keys_ever(namespace):
                past = [r for r in state.history(namespace, key) if r.at <= when]
                if past and not past[-1].deleted:
                    chosen[key] = past[-1].checkpoint_id
        channels: dict[str, dict[str, Any]] = {}
        for cid in sorted(set(chosen.values())):
            channels[cid] = yield from self._fetch(namespace, cid)
        records = {}
        for key, cid in sorted(chosen.items()):
            record = channels[cid][key]
            expires = parse_time(record.get("expires_at"))
            if expires is None or expires > when:
                records[key] = record
        return records

    def _namespace_at(self, namespace: tuple[str, ...], when: datetime) -> _Steps[list[Item]]:
        namespace = validate_namespace(namespace, for_write=False)
        yield from self._load()
        records = yield from self._records_at(namespace, when)
        items = []
        for key, record in records.items():
            created, updated = parse_time(record["created_at"]), parse_time(record["updated_at"])
            assert created is not None
            assert updated is not None
            value = json.loads(record["value"])
            items.append(
                Item(value=value, key=key, namespace=namespace, created_at=created, updated_at=updated)
            )
        return items

    def _rollback(self, namespace: tuple[str, ...], when: datetime) -> _Steps[int]:
        namespace = validate_namespace(namespace)
        yield from self._load()
        state = self._require_state()
        records = yield from self._records_at(namespace, when)
        with self._lock:
            now = self._clock()
            ops = []
            for key in state.keys_ever(namespace):
                target, current = records.get(key), state.live(namespace, key, now)
                if target is None and current is not None:
                    ops.append(_put_op(namespace, key, None))
                elif target is not None and (current is None or current.value != json.loads(target["value"])):
                    ops.append(_put_op(namespace, key, target))
        return (yield from self._write_back(state, ops))

    def _require_state(self) -> StoreState:
        state = self._state
        assert state is not None
        return state

    # ------------------------------------------------------------------ the two thin I/O paths

    def _check_sync(self) -> None:
        loop = getattr(self.checkpointer, "loop", None)
        if not isinstance(loop, asyncio.AbstractEventLoop):
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop or not loop.is_running():
            raise BlockingCallError(
                "a synchronous call on a CheckpointerStore over the async-only "
                f"{type(self.checkpointer).__name__} from its event loop (or with that loop stopped) "
                "would deadlock. "
                "Fix: use the async methods, e.g. `await store.aput(...)` / `await store.abatch(...)`."
            )

    def _run(self, steps: _Steps[T]) -> T:
        self._check_sync()
        try:
            request = next(steps)
            while True:
                try:
                    result = self._do(request)
                except BaseException as exc:
                    request = steps.throw(exc)
                else:
                    request = steps.send(result)
        except StopIteration as stop:
            return cast(T, stop.value)

    async def _arun(self, steps: _Steps[T]) -> T:
        try:
            request = next(steps)
            while True:
                try:
                    result = await self._ado(request)
                except BaseException as exc:
                    request = steps.throw(exc)
                else:
                    request = steps.send(result)
        except StopIteration as stop:
            return cast(T, stop.value)

    def _do(self, request: _Request) -> Any:
        if isinstance(request, _Embed):
            return self._require_embeddings().embed_documents(request.texts)
        if isinstance(request, _EmbedQuery):
            return self._require_embeddings().embed_query(request.text)
        saver = self.checkpointer
        with _translated(saver, request):
            if isinstance(request, _Put):
                return saver.put(request.config, request.checkpoint, request.metadata, request.versions)
            if isinstance(request, _List):
                return list(saver.list(request.config))
            return saver.get_tuple(request.config)

    async def _ado(self, request: _Request) -> Any:
        if isinstance(request, _Embed):
            return await self._require_embeddings().aembed_documents(request.texts)
        if isinstance(request, _EmbedQuery):
            return await self._require_embeddings().aembed_query(request.text)
        if self._async_native is False:
            return await run_in_executor(None, self._do, request)
        saver = self.checkpointer
        try:
            with _translated(saver, request):
                if isinstance(request, _Put):
                    result: Any = await saver.aput(
                        request.config, request.checkpoint, request.metadata, request.versions
                    )
                elif isinstance(request, _List):
                    result = [t async for t in saver.alist(request.config)]
                else:
                    result = await saver.aget_tuple(request.config)
        except StoreError as exc:
            if not isinstance(exc.__cause__, NotImplementedError):
                raise
            self._async_native = False  # a sync-only saver (SqliteSaver): nothing was done; use a thread
            return await run_in_executor(None, self._do, request)
        self._async_native = True
        return result

    def _require_embeddings(self) -> Embeddings:
        assert self._embeddings is not None
        return self._embeddings


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _put_op(namespace: tuple[str, ...], key: str, record: dict[str, Any] | None) -> PutOp:
    """The PutOp that writes a put record's value back (with its index and TTL), or a deletion."""
    if record is None:
        return PutOp(namespace, key, None)
    return PutOp(
        namespace, key, json.loads(record["value"]), index=record.get("index"), ttl=record.get("ttl")
    )


def _embeddings(embed: Any) -> Embeddings:
    if inspect.iscoroutinefunction(embed):  # an async function: LangGraph's wrapper runs it for both paths
        return ensure_embeddings(embed)
    return resolve_embeddings(embed)


@contextmanager
def _translated(saver: BaseCheckpointSaver[Any], request: _Put | _List | _Get) -> Iterator[None]:
    """Turn a checkpointer's exception into a StoreError naming the saver, the operation and the thread."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        what = {_Put: "write a checkpoint", _List: "list checkpoints", _Get: "read a checkpoint"}[
            type(request)
        ]
        thread = request.config["configurable"]["thread_id"]
        raise StoreError(f"{type(saver).__name__} failed to {what} of thread {thread!r}: {exc}") from exc
