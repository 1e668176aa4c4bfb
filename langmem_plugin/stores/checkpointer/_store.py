"""The CheckpointerStore class: configuration, lifecycle, and the I/O that carries out its steps.

Everything that is not I/O lives in ``_batch`` (a batch of ops) and ``_history``
(history, restore, rollback); this module runs those steps with
:func:`~langmem_plugin.core.steps.run_steps` (blocking saver and embeddings) or
:func:`~langmem_plugin.core.steps.arun_steps` (their async methods), and
translates the saver's exceptions at one choke point.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import IndexConfig, Item, Op, PutOp, Result, TTLConfig

from langmem_plugin.core.bounded import BoundedWrite, ItemLimits
from langmem_plugin.core.candidates import CandidateQuery, Candidates
from langmem_plugin.core.embeddings import embedder_id
from langmem_plugin.core.steps import Steps, arun_steps, run_steps
from langmem_plugin.errors import BlockingCallError, ConfigurationError, MissingDependencyError, StoreError
from langmem_plugin.stores._common import Clock, TTLSettings, TTLSweeper, utc_clock
from langmem_plugin.stores._hold import Held, Holds
from langmem_plugin.stores._validation import CheckedStore
from langmem_plugin.stores.checkpointer import _history
from langmem_plugin.stores.checkpointer._batch import CheckpointerLogic, OpenedWith
from langmem_plugin.stores.checkpointer._bounded import bounded
from langmem_plugin.stores.checkpointer._config import CheckpointerIndexConfig, embeddings_of, index_settings
from langmem_plugin.stores.checkpointer._entries import Mode
from langmem_plugin.stores.checkpointer._history import ItemVersion
from langmem_plugin.stores.checkpointer._hold import aheld_caught_up, caught_up, file_holds, held_caught_up
from langmem_plugin.stores.checkpointer._log import (
    DeleteThread,
    Embed,
    EmbedQueries,
    Exclusive,
    GetCheckpoint,
    ListCheckpoints,
    PutCheckpoint,
    Request,
)
from langmem_plugin.stores.checkpointer._purge import purge
from langmem_plugin.stores.checkpointer._sqlite import SqliteWriter, sqlite_file

__all__ = ["CheckpointerIndexConfig", "CheckpointerStore"]

T = TypeVar("T")

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class CheckpointerStore(CheckedStore):
    """A ``BaseStore`` kept in a LangGraph checkpointer, with history (see the package docstring).

    Args:
        checkpointer: any ``BaseCheckpointSaver`` — ``InMemorySaver``, ``SqliteSaver``,
            ``AsyncSqliteSaver``, ``PostgresSaver``... The store deletes none but its own
            threads (:meth:`purge_history`); it shares the saver with your graphs safely
            (reserved thread ids).
        index: ``IndexConfig`` (``dims``, ``embed``: an ``Embeddings``, a function or a
            ``"provider:model"`` string, ``fields``) plus an optional ``mode`` and
            ``lexical_fields``. None: lexical (BM25) search over every string of a value.
        ttl: ``TTLConfig`` (minutes). Expired items are never returned; ``sweep_ttl()``
            writes their deletion, and runs every ``sweep_interval_minutes`` once the
            store is set up.
        clock: returns the current time (timezone-aware UTC); for tests.
        name: the store's name among the saver's threads (several stores can share a saver).

    Values are JSON objects of at most 1 MiB of JSON (``MAX_VALUE_BYTES``); anything else is an
    ``InvalidValueError`` and nothing is written. Constructing does no I/O; the log is read on
    :meth:`setup` / :meth:`asetup` or the first call.

    It is a :class:`~langmem_plugin.core.candidates.CandidateStore`: :meth:`search_candidates`
    gives a hybrid search its raw dense and BM25 lists, to be fused by the caller.

    It keeps the history of what it deletes until :meth:`purge_history` drops it (forgetting
    calls it after its deletes).

    The embedder is part of the store (:mod:`langmem_plugin.stores._embedder`): each put record
    names the embedder that made its vectors (:func:`~langmem_plugin.core.embeddings.embedder_id`,
    beside their dims and fields), and opening — :meth:`setup` or the first call, which read the
    log — raises :class:`~langmem_plugin.errors.EmbedderMismatchError` when a record names another
    known embedder than the store's; nothing is written, and every later call raises it again.
    Records that name none (written before embedders were recorded, or by an unknown embedder such
    as a plain function) and a store opened with an unknown embedder are not checked: their vectors
    are reused when their dims and fields match, as before.

    It is a :class:`~langmem_plugin.core.bounded.BoundedStore`: over a ``SqliteSaver`` on a
    file (:meth:`from_sqlite`), :meth:`write_bounded` counts and writes in one SQLite write
    transaction, so a compartment's item limit holds for every store object and process
    writing that file (:attr:`item_limits` is ``"shared"``). Over any other saver it cannot
    lock the storage: :attr:`item_limits` is ``"process"`` and :meth:`write_bounded` refuses.
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
        mode, dims, fields, lexical_fields = index_settings(index)
        self._embeddings: Embeddings | None = (
            embeddings_of(index["embed"]) if index and mode != "lexical" else None
        )
        self._steps = CheckpointerLogic(
            name=name,
            mode=mode,
            dims=dims,
            fields=fields,
            lexical_fields=lexical_fields,
            ttl=TTLSettings.from_config(ttl),
            clock=clock or utc_clock,
            on_load=self.start_ttl_sweeper,
            opened_with=OpenedWith(embedder_id(self._embeddings), self._where),
            transactional=lambda: self._sqlite_writer() is not None,
        )
        self._async_native: bool | None = None
        self._sweeper: TTLSweeper | None = None
        self._writer: SqliteWriter | None = None
        self._holds: Holds | None = None
        self._writer_known = False
        self._writer_lock = threading.Lock()

    @property
    def search_mode(self) -> Mode:
        """How ``search(query=...)`` ranks: ``"semantic"`` (cosine), ``"lexical"`` (BM25) or ``"hybrid"``."""
        return self._steps.mode

    # ------------------------------------------------------------------ lifecycle

    def setup(self) -> None:
        """Read the log and build the indexes now (otherwise the first call does); start the sweeper.

        Raises:
            EmbedderMismatchError: the log holds vectors of another known embedder (the class
                docstring); the first call raises it alike without setup.
        """
        self._run_sync(self._steps.load())

    async def asetup(self) -> None:
        """Async :meth:`setup`."""
        await arun_steps(self._steps.load(), self._ado)

    def start_ttl_sweeper(self) -> None:
        """Start the TTL sweeper thread when ``sweep_interval_minutes`` is configured."""
        interval = self._steps.ttl.sweep_interval_minutes
        with self._steps.lock:
            if interval is None or self._sweeper is not None:
                return
            self._sweeper = TTLSweeper(self.sweep_ttl, interval, name=f"langmem-ckpt-sweeper-{self.name}")
        self._sweeper.start()

    def close(self) -> None:
        """Stop the sweeper and close the bounded writes' connection. The checkpointer is yours: it
        is not closed."""
        if self._sweeper is not None:
            self._sweeper.stop()
            self._sweeper = None
        if self._writer is not None:
            self._writer.close()

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
                an OS crash may lose the last ones. ``"FULL"``: an fsync per write (slower)
                survives those too.

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
        return self._run_sync(self._steps.batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (native with async savers; sync-only savers run in an executor)."""
        return await arun_steps(self._steps.batch(list(ops)), self._ado)

    # ------------------------------------------------------------------ BoundedStore

    @property
    def item_limits(self) -> ItemLimits:
        """``"shared"`` over a ``SqliteSaver`` on a file: :meth:`write_bounded` holds every store
        object and process writing it to a limit. ``"process"`` over any other saver
        (``InMemorySaver``, ``PostgresSaver``, ``AsyncSqliteSaver``, an in-memory SQLite database):
        :meth:`write_bounded` refuses, and the services count then write in this process."""
        return "shared" if self._sqlite_writer() is not None else "process"

    def write_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """Count each bound's namespace and write ``write.ops`` in one SQLite write transaction.

        Returns the evictions made (deletes of the items a bound chose to make room).

        Raises:
            ConfigurationError: the saver is not a ``SqliteSaver`` on a file (``item_limits`` is
                ``"process"``): nothing here could hold the limit across writers.
            Exception: a bound's refusal (e.g. ``MemoryLimitError``); nothing is written.
        """
        self._require_shared()
        return self._run_sync(bounded(self._steps, write))

    async def awrite_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """Async :meth:`write_bounded` (the transaction runs in an executor thread)."""
        self._require_shared()
        return await arun_steps(bounded(self._steps, write), self._ado)

    def _sqlite_writer(self) -> SqliteWriter | None:
        with self._writer_lock:
            if not self._writer_known:
                path = sqlite_file(self.checkpointer)
                self._writer = SqliteWriter(path, self.checkpointer) if path else None
                self._holds = file_holds(path) if path else Holds(object(), None)
                self._writer_known = True
            return self._writer

    def hold(self, keys: Iterable[str], *, wait: bool = True) -> Held | None:
        """Hold ``keys`` (the services' read-modify-writes and document changes) until the
        returned ``Held`` is released; ``wait=False``: all now or None.

        Over a ``SqliteSaver`` on a file the hold reaches every store object and process on it (a
        byte-range lock on ``<file>.hold``), and the store then folds what other writers committed,
        so the held steps read what every process wrote. Over any other saver it holds this store
        object's callers only. How and why: :mod:`langmem_plugin.stores.checkpointer._hold`.
        """
        self._check_sync()
        holds, shared = self._hold_place()
        catch_up = (lambda: self._run_sync(caught_up(self._steps))) if shared else None
        return held_caught_up(holds, keys, wait, catch_up)

    async def ahold(self, keys: Iterable[str], *, wait: bool = True) -> Held | None:
        """Async :meth:`hold` (waits without blocking the event loop)."""
        holds, shared = self._hold_place()
        catch_up = (lambda: arun_steps(caught_up(self._steps), self._ado)) if shared else None
        return await aheld_caught_up(holds, keys, wait, catch_up)

    def _hold_place(self) -> tuple[Holds, bool]:
        shared = self._sqlite_writer() is not None
        assert self._holds is not None
        return self._holds, shared

    def _where(self) -> str:
        """The store, as an error names it: its file over a SqliteSaver on one, else its saver."""
        named = "" if self.name == "store" else f" {self.name!r}"
        writer = self._sqlite_writer()
        if writer is not None:
            return f"the CheckpointerStore{named} at {writer.path}"
        return f"the CheckpointerStore{named} over {type(self.checkpointer).__name__}"

    def _require_shared(self) -> SqliteWriter:
        writer = self._sqlite_writer()
        if writer is None:
            raise ConfigurationError(
                f"this CheckpointerStore over {type(self.checkpointer).__name__} cannot count and write "
                "in one exclusive step (only a SqliteSaver on a file can: its write transaction holds "
                "every process), so it does not claim to hold item limits: item_limits is 'process'. "
                "Fix: use CheckpointerStore.from_sqlite(path) for limits that hold across processes, or "
                "leave it to the memory services, which count then write within this process."
            )
        return writer

    # ------------------------------------------------------------------ CandidateStore

    def search_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """One :class:`~langmem_plugin.core.candidates.Candidates` per query, in order; unfused.

        Each query reads the live items under its prefix that match its filter (as :meth:`search`
        does). ``dense``: the top ``limit`` by cosine with the embedded ``dense_query``, the
        cosine as ``score``; ``lexical``: the top ``limit`` by BM25 over ``lexical_fields``, the
        BM25 score as ``score`` (the same scores and order as a lexical-mode search). Items with
        no vector, or no shared term, are in neither list. One embedding request embeds every
        query of the call. Returned items get their TTL refreshed when reads refresh it.

        ``dense_query`` drops the query's background words (``CandidateQuery.background_df``),
        counting document frequencies exactly over the query's own items (prefix and filter),
        not the whole store. By mode: ``"hybrid"`` fills both lists; ``"lexical"`` leaves
        ``dense`` empty (nothing is embedded; ``dense_query`` is what would be); ``"semantic"``
        has no BM25 index: ``lexical`` is empty, ``lexical_index`` False, and no word is
        dropped (no document frequencies to count).
        """
        return self._run_sync(self._steps.candidates(list(queries)))

    async def asearch_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """Async :meth:`search_candidates`."""
        return await arun_steps(self._steps.candidates(list(queries)), self._ado)

    def sweep_ttl(self) -> int:
        """Delete expired items (a ``"expired"`` deletion in their history); returns how many."""
        return self._run_sync(self._steps.sweep())

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        return await arun_steps(self._steps.sweep(), self._ado)

    # ------------------------------------------------------------------ history

    def history(self, namespace: tuple[str, ...], key: str) -> list[ItemVersion]:
        """Every version of an item, oldest first (``value=None`` for a deletion). Empty if never written."""
        return self._run_sync(_history.history(self._steps, namespace, key))

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[ItemVersion]:
        """Async :meth:`history`."""
        return await arun_steps(_history.history(self._steps, namespace, key), self._ado)

    def restore(self, namespace: tuple[str, ...], key: str, version: int) -> Item | None:
        """Write version ``version`` of an item back as its newest version.

        Returns the item as now stored (None when that version was a deletion).

        Raises:
            ConfigurationError: ``version`` is not one of the item's versions.
        """
        return self._run_sync(_history.restore(self._steps, namespace, key, version))

    async def arestore(self, namespace: tuple[str, ...], key: str, version: int) -> Item | None:
        """Async :meth:`restore`."""
        return await arun_steps(_history.restore(self._steps, namespace, key, version), self._ado)

    def rollback(self, namespace: tuple[str, ...], when: datetime) -> int:
        """Make ``namespace`` what it was at ``when``; returns how many items changed.

        Items changed since get their old value back, items deleted since come back, items
        created since are deleted — each change a new ``"restore"`` version in its history.
        """
        return self._run_sync(_history.rollback(self._steps, namespace, when))

    async def arollback(self, namespace: tuple[str, ...], when: datetime) -> int:
        """Async :meth:`rollback`."""
        return await arun_steps(_history.rollback(self._steps, namespace, when), self._ado)

    def namespace_at(self, namespace: tuple[str, ...], when: datetime) -> list[Item]:
        """The items of ``namespace`` as they were at ``when`` (by key), as of each item's timestamps."""
        return self._run_sync(_history.namespace_at(self._steps, namespace, when))

    async def anamespace_at(self, namespace: tuple[str, ...], when: datetime) -> list[Item]:
        """Async :meth:`namespace_at`."""
        return await arun_steps(_history.namespace_at(self._steps, namespace, when), self._ado)

    def purge_history(
        self,
        namespaces: Iterable[tuple[str, ...]] = (),
        *,
        keys: Iterable[tuple[tuple[str, ...], str]] = (),
    ) -> int:
        """Remove old versions from the checkpointer: each item named keeps only its current version.

        What forgetting calls after its deletes (``Memory.forget_user``, ``forget``,
        ``forget_about``), so that a deleted item's text is not kept in its history.

        Args:
            namespaces: each namespace, and every namespace below it (whole labels), entirely:
                every item ever written there keeps only its current version, and a deleted one
                leaves nothing. A namespace left with nothing loses its checkpoint thread and its
                entry in the store's registry.
            keys: ``(namespace, key)`` of single items, purged alike; the other items of their
                namespaces keep their history.

        Returns:
            How many versions were removed (a deletion counts, as in :meth:`history`).

        After it, :meth:`history` lists only the current version of each item named (nothing
        for a deleted one); :meth:`restore`, :meth:`rollback` and :meth:`namespace_at` see no
        further back. Each checkpoint that held a removed version is written again without it,
        under its own id (other items keep their history), or deleted when nothing is left.

        How each saver is purged safely (one SQLite transaction on a file; checkpoint by checkpoint,
        oldest first, elsewhere), what stays in ``InMemorySaver``'s and ``PostgresSaver``'s blob
        storage, and writes during a purge: :mod:`langmem_plugin.stores.checkpointer._purge`.

        Raises:
            InvalidNamespaceError: a namespace is not a non-empty tuple of labels.
            InvalidValueError: a key is not a string.
            StoreError: the checkpointer failed; what was done stays done, nothing is lost.

        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> store = CheckpointerStore(InMemorySaver())
        >>> store.put(("users", "u1"), "tea", {"text": "likes green tea"})
        >>> store.put(("users", "u1"), "tea", {"text": "prefers black tea now"})
        >>> store.purge_history(keys=[(("users", "u1"), "tea")])
        1
        >>> [v.value for v in store.history(("users", "u1"), "tea")]
        [{'text': 'prefers black tea now'}]
        """
        return self._run_sync(self._purge(namespaces, keys))

    async def apurge_history(
        self,
        namespaces: Iterable[tuple[str, ...]] = (),
        *,
        keys: Iterable[tuple[tuple[str, ...], str]] = (),
    ) -> int:
        """Async :meth:`purge_history`."""
        return await arun_steps(self._purge(namespaces, keys), self._ado)

    def _purge(
        self, namespaces: Iterable[tuple[str, ...]], keys: Iterable[tuple[tuple[str, ...], str]]
    ) -> Steps[Request, int]:
        transaction = self._sqlite_writer() is not None
        return purge(self._steps, list(namespaces), list(keys), transaction=transaction)

    # ------------------------------------------------------------------ the I/O, sync and async

    def _check_sync(self) -> None:
        """The deadlock guard: refuse a sync call that would block on an async-only saver's own loop."""
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

    def _run_sync(self, steps: Steps[Request, T]) -> T:
        """:func:`run_steps` with the blocking saver and embeddings, after the deadlock guard."""
        self._check_sync()
        return run_steps(steps, self._do)

    def _do(self, request: Request) -> Any:
        if isinstance(request, Exclusive):
            return self._require_shared().run(request.steps, lock=request.lock, scrub=request.scrub)
        if isinstance(request, Embed):
            return self._require_embeddings().embed_documents(request.texts)
        if isinstance(request, EmbedQueries):
            embeddings = self._require_embeddings()
            return [embeddings.embed_query(text) for text in request.texts]
        saver = self.checkpointer
        with _translated(saver, request):
            if isinstance(request, PutCheckpoint):
                return saver.put(request.config, request.checkpoint, request.metadata, request.versions)
            if isinstance(request, ListCheckpoints):
                return list(saver.list(request.config))
            if isinstance(request, DeleteThread):
                saver.delete_thread(request.thread)
                return None
            return saver.get_tuple(request.config)

    async def _ado(self, request: Request) -> Any:
        if isinstance(request, Embed):
            return await self._require_embeddings().aembed_documents(request.texts)
        if isinstance(request, EmbedQueries):
            embeddings = self._require_embeddings()
            return list(await asyncio.gather(*(embeddings.aembed_query(text) for text in request.texts)))
        if self._async_native is False or isinstance(request, Exclusive):
            return await run_in_executor(None, self._do, request)
        saver = self.checkpointer
        try:
            with _translated(saver, request):
                if isinstance(request, PutCheckpoint):
                    result: Any = await saver.aput(
                        request.config, request.checkpoint, request.metadata, request.versions
                    )
                elif isinstance(request, ListCheckpoints):
                    result = [t async for t in saver.alist(request.config)]
                elif isinstance(request, DeleteThread):
                    await saver.adelete_thread(request.thread)
                    result = None
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
def _translated(
    saver: BaseCheckpointSaver[Any], request: PutCheckpoint | ListCheckpoints | GetCheckpoint | DeleteThread
) -> Iterator[None]:
    """Turn a checkpointer's exception into a StoreError naming the saver, the operation and the thread."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        what = {
            PutCheckpoint: "write a checkpoint",
            ListCheckpoints: "list checkpoints",
            GetCheckpoint: "read a checkpoint",
            DeleteThread: "delete the thread",
        }[type(request)]
        if isinstance(request, DeleteThread):
            thread = request.thread
        else:
            thread = request.config["configurable"]["thread_id"]
        raise StoreError(f"{type(saver).__name__} failed to {what} of thread {thread!r}: {exc}") from exc
