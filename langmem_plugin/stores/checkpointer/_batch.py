"""A batch of store ops as steps: load the log, embed, read, prepare the records, write the checkpoints.

Also the candidate lists of a hybrid search (:meth:`CheckpointerLogic.candidates`), as steps
of the same shape: read, embed, read, write the TTL refreshes.

Pure: nothing here does I/O. Each method that needs the saver or the
embeddings is *steps* (``langmem_plugin.core.steps``): it yields a request
from ``_log`` and receives its result; ``_store`` drives the steps with a
blocking or an awaited executor.
"""

from __future__ import annotations

import gc
import itertools
import json
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import numpy as np
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, Result, SearchOp

from langmem_plugin.core.candidates import CandidateQuery, Candidates
from langmem_plugin.core.steps import Steps
from langmem_plugin.errors import EmbedderMismatchError
from langmem_plugin.stores._common import (
    Clock,
    TTLSettings,
    apply_list_namespaces,
    compile_filter,
    expiry,
)
from langmem_plugin.stores._embedder import check_embedder, embedder_mismatch
from langmem_plugin.stores._validation import final_puts, validate_namespace, validate_op, validate_value
from langmem_plugin.stores.checkpointer._entries import Entry, Mode
from langmem_plugin.stores.checkpointer._log import (
    Embed,
    EmbedQueries,
    Exclusive,
    HeldRequest,
    ListCheckpoints,
    PutCheckpoint,
    Request,
    Write,
    checkpoint_request,
    decode_vectors,
    encode_vectors,
    namespace_thread,
    registry_thread,
    thread_config,
)
from langmem_plugin.stores.checkpointer._state import StoreState

__all__ = ["CheckpointerLogic", "OpenedWith"]

_REFRESH_FRACTION = 0.01  # a read refreshes an expiry only when it moves by at least 1% of the TTL


@dataclass(frozen=True, slots=True)
class OpenedWith:
    """The embedder a store is opened with, as its put records name it (``_embedder``'s rule).

    Args:
        embedder: its ``embedder_id`` (None: unknown, or no embeddings: nothing recorded, nothing checked).
        where: names the store for an ``EmbedderMismatchError`` (called only to raise one).
    """

    embedder: str | None
    where: Callable[[], str]


class CheckpointerLogic:
    """Everything a :class:`CheckpointerStore` does that is not I/O: its settings, lock and folded state.

    Args:
        name: the store's name among the saver's threads.
        mode, dims, fields, lexical_fields: the search settings (validated by the store).
        ttl: the TTL settings.
        clock: returns the current time (timezone-aware UTC).
        on_load: called once the log has been read (the store starts its TTL sweeper).
        opened_with: the store's embedder: each put record with vectors names it (``"embedder"``,
            beside ``dims`` and ``fields``), and a record naming another known one refuses the store
            (:meth:`fold`). Default: unknown.
    """

    def __init__(
        self,
        *,
        name: str,
        mode: Mode,
        dims: int | None,
        fields: list[str] | None,
        lexical_fields: list[str] | None,
        ttl: TTLSettings,
        clock: Clock,
        on_load: Callable[[], None],
        opened_with: OpenedWith | None = None,
        transactional: Callable[[], bool] = lambda: False,
    ) -> None:
        self.name = name
        #: Whether the saver commits several checkpoints together (an :class:`Exclusive` section:
        #: a SqliteSaver on a file): a batch over several namespaces is then written whole.
        self.transactional = transactional
        self.mode: Mode = mode
        self.dims = dims
        self.fields = fields
        self.lexical_fields = lexical_fields
        self.ttl = ttl
        self.clock = clock
        self.lock = threading.Lock()
        self.state: StoreState | None = None
        self.opened_with = opened_with or OpenedWith(None, lambda: "the CheckpointerStore")
        #: ``(where, written_with, opened_with)`` once a record named another embedder: every call
        #: raises that ``EmbedderMismatchError`` again, without reading the log again.
        self.refused: tuple[str, str, str] | None = None
        self._on_load = on_load

    def require_state(self) -> StoreState:
        state = self.state
        assert state is not None
        return state

    # ------------------------------------------------------------------ open: fold the log

    def load(self) -> Steps[Request, None]:
        """Read the registry and every namespace thread, fold them, build the indexes (once).

        Raises:
            EmbedderMismatchError: a put record names another known embedder than the store's
                (:meth:`fold`); nothing is written, and every later call raises it again.
        """
        if self.refused is not None:
            raise embedder_mismatch(*self.refused)
        if self.state is not None:
            return
        state = StoreState(
            mode=self.mode, dims=self.dims, fields=self.fields, lexical_fields=self.lexical_fields
        )
        registry = yield ListCheckpoints(thread_config(registry_thread(self.name)))
        namespaces: set[tuple[str, ...]] = set()
        for saved in cast(list[CheckpointTuple], registry):
            for labels in saved.checkpoint["channel_values"].values():
                namespaces.add(tuple(labels))
        state.begin_load()
        for namespace in sorted(namespaces):
            thread = namespace_thread(self.name, namespace)
            saved_list = cast(list[CheckpointTuple], (yield ListCheckpoints(thread_config(thread))))
            saved_list.sort(key=lambda t: t.checkpoint["id"])
            with _gc_paused():  # folding creates many small objects: the collector only slows it down
                for saved in saved_list:
                    self.fold(state, namespace, saved)
            if saved_list:
                state.heads[thread] = saved_list[-1].checkpoint["id"]
            state.registered.add(namespace)
        with _gc_paused():
            missing = state.finish_load()
        if missing:  # written without (or with other) embeddings: embed once now
            texts = [state.texts_for(e.value, e.index) for e in missing]
            flat = yield Embed([t for group in texts for t in group])
            vectors = np.asarray(flat, dtype=np.float32)
            bounds = np.cumsum([0] + [len(group) for group in texts])
            assert state.vectors is not None
            state.vectors.set_many(
                [e.slot for e in missing],
                [vectors[a:b] for a, b in itertools.pairwise(bounds)],
            )
        with self.lock:
            if self.state is None:
                self.state = state
        self._on_load()

    def fold(self, state: StoreState, namespace: tuple[str, ...], saved: CheckpointTuple) -> None:
        """Apply one checkpoint of ``namespace`` read from the log (its records, with their vectors).

        A put record that names another known embedder than the store's refuses the store (an
        ``EmbedderMismatchError``, :attr:`refused`); one that names none (written before embedders
        were recorded, or by an unknown one), or a store whose embedder is unknown, is not checked.

        Raises:
            EmbedderMismatchError: as above; what was folded of this checkpoint is to be dropped.
        """
        cid = saved.checkpoint["id"]
        vectors_ok = state.vectors is not None
        opened = self.opened_with.embedder
        for key, record in saved.checkpoint["channel_values"].items():
            vectors = None
            if record["op"] == "put":
                if opened is not None and record.get("embedder", opened) != opened:
                    self._check_embedder(record["embedder"])
                # vectors made with other dims or fields are not reused: finish_load embeds again
                if (
                    vectors_ok
                    and record.get("dims") == self.dims
                    and record.get("fields") == state.fields_for(record.get("index"))
                ):
                    assert self.dims is not None
                    vectors = decode_vectors(record.get("vectors"), self.dims)
            state.apply(namespace, key, cid, record, vectors)

    def _check_embedder(self, written: object) -> None:
        """:func:`check_embedder` of a record's embedder; a refusal is kept in :attr:`refused`."""
        where = self.opened_with.where()
        try:
            check_embedder(where, written, self.opened_with.embedder)
        except EmbedderMismatchError as error:
            self.refused = (where, error.written_with, error.opened_with)
            raise

    # ------------------------------------------------------------------ a batch

    def batch(self, ops: list[Op]) -> Steps[Request, list[Result]]:
        """Results in op order; reads see the state before the batch's writes; the last put to a key wins."""
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
        yield from self.load()
        state = self.require_state()
        # embeddings first (no lock held during I/O)
        winners, texts, doc_vectors = yield from embedded_puts(state, puts, self.lock)
        query_vectors: dict[int, np.ndarray] = {}
        searches = {i: op.query for i, op in enumerate(ops) if isinstance(op, SearchOp) and op.query}
        if state.vectors is not None and searches:
            embedded = yield EmbedQueries(list(searches.values()))
            query_vectors = {
                i: np.asarray(v, dtype=np.float32) for i, v in zip(searches, embedded, strict=True)
            }
        with self.lock:
            now = self.clock()
            results, refreshes = self._read(state, ops, query_vectors, now)
            writes: list[Write] = []
            start = 0
            put_keys = set()
            for op, group in zip(winners, texts, strict=True):
                vectors = None
                if doc_vectors is not None and group:
                    vectors = doc_vectors[start : start + len(group)]
                    start += len(group)
                write = self.prepare_put(state, op, vectors, now)
                put_keys.add((tuple(op.namespace), op.key))
                if write is not None:
                    writes.append(write)
            writes.extend(w for w in refreshes if (w.namespace, w.key) not in put_keys)
        yield from self.write(state, writes)
        return results

    def _read(
        self, state: StoreState, ops: list[Op], query_vectors: dict[int, np.ndarray], now: datetime
    ) -> tuple[list[Result], list[Write]]:
        """The results of the batch's reads, and the TTL refreshes they call for."""
        results: list[Result] = []
        refresh: dict[tuple[tuple[str, ...], str], Entry] = {}
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                entry = state.live(tuple(op.namespace), op.key, now)
                results.append(entry.item() if entry is not None else None)
                if entry is not None and self.ttl.refresh(op.refresh_ttl):
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
                if self.ttl.refresh(op.refresh_ttl):
                    for e, _ in page:
                        refresh[(e.namespace, e.key)] = e
            elif isinstance(op, ListNamespacesOp):
                results.append(apply_list_namespaces(state.live_namespaces(now), op))
            else:
                results.append(None)
        return results, self._refreshes(refresh.values(), now)

    @staticmethod
    def _refreshes(entries: Iterable[Entry], now: datetime) -> list[Write]:
        """The TTL refreshes of the entries a read returned (those whose expiry moves enough)."""
        writes = []
        for entry in entries:
            if entry.ttl is None or entry.expires_at is None:
                continue
            new_expiry = expiry(now, entry.ttl)
            assert new_expiry is not None
            if (new_expiry - entry.expires_at).total_seconds() < entry.ttl * 60 * _REFRESH_FRACTION:
                continue
            writes.append(
                Write(
                    entry.namespace,
                    entry.key,
                    {"op": "refresh", "of": entry.checkpoint_id, "expires_at": new_expiry.isoformat()},
                )
            )
        return writes

    # ------------------------------------------------------------------ candidate lists

    def candidates(self, queries: list[CandidateQuery]) -> Steps[Request, list[Candidates]]:
        """One :class:`Candidates` per query: the dense and the BM25 top ``limit``, raw scores, unfused.

        Select each query's items and read its dense query (background words dropped, exact
        document frequencies over those items), embed the dense queries in one request (no lock
        held), then rank under the lock at a fresh time — selecting again only if a write landed
        meanwhile — and write the TTL refreshes of what was returned (as a search does).
        """
        for q in queries:
            validate_op(SearchOp(q.namespace_prefix, q.filter, q.limit, 0, q.query))
        if not queries:
            return []
        yield from self.load()
        state = self.require_state()
        matches = [compile_filter(q.filter) if q.filter else None for q in queries]

        def select(now: datetime) -> list[np.ndarray]:
            return [
                state.select(tuple(q.namespace_prefix), m, now) for q, m in zip(queries, matches, strict=True)
            ]

        with self.lock:
            selected = select(self.clock())
            texts = [state.dense_query(slots, q) for slots, q in zip(selected, queries, strict=True)]
            writes_seen = state.writes
        vectors: list[np.ndarray | None] = [None] * len(queries)
        if state.vectors is not None:
            embedded = yield EmbedQueries(texts)
            vectors = [np.asarray(v, dtype=np.float32) for v in embedded]
        answers: list[Candidates] = []
        refresh: dict[tuple[tuple[str, ...], str], Entry] = {}
        with self.lock:
            now = self.clock()
            if state.writes != writes_seen:
                selected = select(now)
            for q, slots, text, vector in zip(queries, selected, texts, vectors, strict=True):
                slots = state.still_live(slots, now)
                dense, lexical = state.candidates(slots, q, vector)
                answers.append(
                    Candidates(
                        dense=[e.search_item(score) for e, score in dense],
                        lexical=[e.search_item(score) for e, score in lexical],
                        dense_query=text,
                        lexical_index=state.lexical is not None,
                    )
                )
                if self.ttl.refresh(None):
                    refresh.update(((e.namespace, e.key), e) for e, _ in (*dense, *lexical))
            writes = self._refreshes(refresh.values(), now)
        yield from self.write(state, writes)
        return answers

    def prepare_put(
        self,
        state: StoreState,
        op: PutOp,
        vectors: np.ndarray | None,
        now: datetime,
        *,
        reason: str | None = None,
    ) -> Write | None:
        """The record a put (or a deletion: ``op.value is None``) writes; None when it writes nothing."""
        namespace = tuple(op.namespace)
        if op.value is None:
            if state.present(namespace, op.key) is None:
                return None  # deleting what is not there writes nothing (no phantom history)
            return Write(
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
            record["dims"] = self.dims
            record["fields"] = state.fields_for(record["index"])
            if self.opened_with.embedder is not None:  # an unknown embedder names nothing
                record["embedder"] = self.opened_with.embedder
        return Write(namespace, op.key, record, vectors, cast(dict[str, Any], op.value))

    # ------------------------------------------------------------------ writing

    def write(self, state: StoreState, writes: list[Write]) -> Steps[Request, None]:
        """Write one checkpoint per namespace (registering new namespaces first), applying each once written.

        Where the saver commits several checkpoints together (:attr:`transactional`), a batch of
        more than one checkpoint is written in one :class:`Exclusive` section: all or none, a
        process killed part-way included. Elsewhere each checkpoint is applied to memory as soon
        as the saver acknowledges it, so a failure part-way leaves memory agreeing with what was
        written.
        """
        if not writes:
            return
        by_namespace: dict[tuple[str, ...], list[Write]] = {}
        for w in writes:
            by_namespace.setdefault(w.namespace, []).append(w)
        checkpoints: list[tuple[PutCheckpoint, list[tuple[Any, ...]]]] = []
        threads = [namespace_thread(self.name, ns) for ns in by_namespace]
        with self.lock:
            new = [ns for ns in by_namespace if ns not in state.registered]
            now_text = self.clock().isoformat()
            if new:
                registry = registry_thread(self.name)
                channels = {namespace_thread(self.name, ns): list(ns) for ns in new}
                checkpoints.append((self._checkpoint(state, registry, channels, now_text), []))
                state.registered.update(new)
            for (namespace, group), thread in zip(by_namespace.items(), threads, strict=True):
                put = self._checkpoint(state, thread, {w.key: w.record for w in group}, now_text)
                cid = put.checkpoint["id"]
                checkpoints.append(
                    (put, [(namespace, w.key, cid, w.record, w.vectors, w.value) for w in group])
                )
                state.writing[thread] = state.writing.get(thread, 0) + 1  # a purge leaves the thread be
        written = 0
        try:
            if len(checkpoints) > 1 and self.transactional():
                yield Exclusive(_each(request for request, _ in checkpoints))  # committed whole, or raised
                written = len(checkpoints)
                with self.lock:
                    for _, applied in checkpoints:
                        state.apply_many(applied)
                return
            for request, applied in checkpoints:
                yield request
                written += 1
                with self.lock:
                    state.apply_many(applied)
        except BaseException:
            if new and written == 0:  # the registry checkpoint itself failed
                with self.lock:
                    state.registered.difference_update(new)
            raise
        finally:
            with self.lock:
                for thread in threads:
                    state.writing[thread] -= 1
                    if not state.writing[thread]:
                        del state.writing[thread]

    def _checkpoint(self, state: StoreState, thread: str, channels: dict[str, Any], ts: str) -> PutCheckpoint:
        """The next checkpoint of ``thread``, child of its head; it becomes the head."""
        put = checkpoint_request(thread, channels, ts, parent=state.heads.get(thread))
        state.heads[thread] = put.checkpoint["id"]
        return put

    def sweep(self) -> Steps[Request, int]:
        """Write the deletion (reason ``"expired"``) of every expired item; returns how many."""
        yield from self.load()
        state = self.require_state()
        with self.lock:
            now = self.clock()
            writes = [
                Write(e.namespace, e.key, {"op": "delete", "at": now.isoformat(), "reason": "expired"})
                for entries in state.items.values()
                for e in entries.values()
                if e.expired(now)
            ]
        yield from self.write(state, writes)
        return len(writes)


def embedded_puts(
    state: StoreState, puts: list[tuple[int, PutOp]], lock: threading.Lock
) -> Steps[Request, tuple[list[PutOp], list[list[str]], np.ndarray | None]]:
    """The last put per (namespace, key), in op order: with the texts each indexes and their vectors.

    A put whose item is indexed by the same texts already (a write that changes bookkeeping
    only: an access count, a mark, a link) reuses the item's vectors: only the other texts
    are embedded.
    """
    winners = [op for _, op in sorted(final_puts(puts).values(), key=lambda t: t[0])]
    texts = [state.texts_for(op.value, op.index) if op.value is not None else [] for op in winners]
    with lock:  # the vector matrix changes under writes: read the kept vectors in one piece
        kept = [
            state.stored_vectors(tuple(op.namespace), op.key, group) if group else None
            for op, group in zip(winners, texts, strict=True)
        ]
    flat = [t for group, old in zip(texts, kept, strict=True) if old is None for t in group]
    if not any(texts):
        return winners, texts, None
    fresh = iter(np.asarray((yield Embed(flat)), dtype=np.float32) if flat else ())
    rows: list[np.ndarray] = []
    for group, old in zip(texts, kept, strict=True):
        if old is not None:
            rows.extend(old)
        else:
            rows.extend(next(fresh) for _ in group)
    return winners, texts, np.asarray(rows, dtype=np.float32)


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _each(requests: Iterable[PutCheckpoint]) -> Generator[HeldRequest, Any, None]:
    """The steps of an exclusive section that writes ``requests``, one after the other."""
    for request in requests:
        _saved = yield request  # each answer is sent back in: a plain iterator could not take it
