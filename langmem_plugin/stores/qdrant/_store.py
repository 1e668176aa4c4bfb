"""QdrantStore: LangGraph's BaseStore on Qdrant — embedded by default, a server or cluster by URL."""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langgraph.store.base import IndexConfig, Op, PutOp, Result, TTLConfig

from langmem_plugin.core.bounded import BoundedWrite, ItemLimits
from langmem_plugin.core.candidates import CandidateQuery, Candidates
from langmem_plugin.core.embeddings import embedder_id
from langmem_plugin.core.steps import arun_steps, run_steps
from langmem_plugin.errors import ConfigurationError, StoreError
from langmem_plugin.stores._common import TTLSweeper
from langmem_plugin.stores._transfer import StoredItem
from langmem_plugin.stores._validation import CheckedStore, validate_namespace
from langmem_plugin.stores.qdrant._batch import run_batch
from langmem_plugin.stores.qdrant._bounded import run_bounded
from langmem_plugin.stores.qdrant._calls import Call, SearchMode
from langmem_plugin.stores.qdrant._candidates import TermVerdicts, run_candidates
from langmem_plugin.stores.qdrant._config import (
    QdrantIndexConfig,
    QdrantOptions,
    QdrantSearchConfig,
    batch_config,
    ranked_by,
    tuning,
    with_dims,
)
from langmem_plugin.stores.qdrant._edge import EdgeEngine
from langmem_plugin.stores.qdrant._embedding import EmbedCall, aembed, embed
from langmem_plugin.stores.qdrant._layout import to_us
from langmem_plugin.stores.qdrant._lock import ACROSS_PROCESSES
from langmem_plugin.stores.qdrant._maintenance import run_export_page, run_import, run_sweep
from langmem_plugin.stores.qdrant._opening import (
    MEMORY,
    OPEN_LATER,
    Gate,
    check_one_place,
    engine_for,
    open_in_background,
    removal,
)
from langmem_plugin.stores.qdrant._scrub import SCRUB_NOW_POINTS, Scrubbed

if TYPE_CHECKING:  # qdrant-client takes about a second to import: imported for url=/client=/':memory:'
    from qdrant_client import QdrantClient

__all__ = ["QdrantIndexConfig", "QdrantOptions", "QdrantSearchConfig", "QdrantStore"]


class QdrantStore(CheckedStore):
    """A LangGraph ``BaseStore`` on Qdrant, with hybrid (dense + BM25) search, filters, TTL and export.

    Where the data lives — give exactly one of:

    - ``path``: a directory for Qdrant's embedded engine (Qdrant Edge) in this
      process, durable there; one opener at a time (see below);
    - ``path=":memory:"``: qdrant-client's in-process local mode, for quick
      experiments only (it scans in Python: ≈ 1 s per filtered search at 100k items;
      a directory of that name is ``"./:memory:"``);
    - ``url`` (and ``api_key``): a Qdrant server or cluster, with native async;
    - ``client``: your own ``QdrantClient`` (and ``options={"aclient": ...}`` for
      native async).

    Opening. An embedded store opens at construction: the constructor takes the
    directory's lock and loads the shard, so a path another store holds fails
    right there with :class:`~langmem_plugin.errors.StoreLockedError` (its
    message says whether the holder is this process or another one), a
    reopen with another index config (``dims``, ``fields``, ``lexical_fields``)
    with :class:`~langmem_plugin.errors.StoreConfigMismatchError`, and one with
    another embedder with :class:`~langmem_plugin.errors.EmbedderMismatchError` —
    not at some later first get or put. This is the one exception to "constructors do no
    I/O": a store object that exists but cannot be used would only move the
    error away from its cause. A server store (``url``/``client``/``":memory:"``)
    does no I/O in the constructor: it connects, checks the server and creates
    the collection in :meth:`setup`, or on first use. Either way the TTL sweeper
    starts in :meth:`setup` (or on first use), and :meth:`close` (or leaving a
    ``with`` block) releases the store; after a close, the next use opens it again.
    An index without ``dims``, whose embedder does not declare them (an Ollama or vLLM
    server behind ``OpenAIEmbeddings(base_url=...)``), makes no call in the constructor
    either: the first use learns the dims by one call
    (:func:`~langmem_plugin.core.embeddings.embedding_dims`), then opens, so an embedded
    store's errors above come from that first use.

    The embedder is part of the store: the store records what names it
    (:func:`~langmem_plugin.core.embeddings.embedder_id`) beside its dims — in
    ``store.json``, or in a server collection's metadata — when it is created (or, in a
    store that names none yet, with the first vectors a known embedder writes), and
    refuses another known embedder (checked where the layout is: at construction
    embedded, in :meth:`setup` on a server). An unknown embedder (a plain function) is
    neither recorded nor checked.

    Search: with an ``index`` (LangGraph's ``IndexConfig``: ``dims``, ``embed`` as an
    ``Embeddings``, a function or a ``"provider:model"`` string — default the offline
    MiniLM — and ``fields``) a query is answered by hybrid search; without one, by
    BM25 over the values' words. The index may also name ``lexical_fields``
    (:class:`QdrantIndexConfig`): BM25 then reads those fields instead of the embedded
    ones. Hybrid fuses the two halves by score (DBSF) by default; ``search={"fusion":
    "rrf"}`` fuses ranks instead (see the README's LoCoMo section). Items put with
    ``index=False`` (or without text at the fields) have no vector: a query lists
    them after the scored items, with ``score=None``, newest first. Filters support
    ``$eq $ne $gt $gte $lt $lte $in $nin $exists`` on keys and dot paths (see
    ``docs/store-contract.md``).

    Differences from LangGraph's InMemoryStore, on purpose: ``created_at`` is kept when
    an item is updated; a namespace exists only while it holds an item; a search
    without a query lists newest ``updated_at`` first (ties by namespace, key); values
    must be JSON objects of at most 1 MiB; expired items are never returned.

    Item limits (:class:`~langmem_plugin.core.bounded.BoundedStore`): embedded and
    ``":memory:"``, the store is the data's one writer (the directory lock admits one
    store per path, in one process), so :meth:`write_bounded` counts and writes under the
    store's writer lock and a compartment's limit holds (:attr:`item_limits` is
    ``"shared"``). On a server (``url``/``client``) other clients write too and Qdrant has
    no transaction to count and write in: :attr:`item_limits` is ``"process"`` and
    :meth:`write_bounded` refuses rather than pretend.

    Hybrid search pages are stable within the first ``search["candidates"]`` (100)
    results of each half. :meth:`export_items` / :meth:`import_items` move items with
    their timestamps and TTL, exactly (JSONL files: ``langmem_plugin.stores.export_jsonl``).

    >>> from langmem_plugin.testing import FakeEmbeddings
    >>> with QdrantStore(":memory:", index={"dims": 64, "embed": FakeEmbeddings(64)}) as store:
    ...     store.put(("users", "u1"), "tea", {"text": "I drink green tea every morning"})
    ...     store.put(("users", "u1"), "tax", {"text": "The tax deadline is in April"})
    ...     [item.key for item in store.search(("users",), query="green tea", limit=1)]
    ['tea']

    Args:
        path: directory of the embedded store (created when missing), or ``":memory:"``.
        url: URL of a Qdrant server or cluster.
        api_key: its API key.
        client: a ``QdrantClient`` to use (not closed by the store).
        collection: the collection's name with ``url`` or ``client`` (default ``"langmem"``).
        index: LangGraph's ``IndexConfig`` (or :class:`QdrantIndexConfig`); None: no embeddings,
            lexical search only.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``, ``sweep_interval_minutes``;
            the sweeper starts with the store).
        search: how queries rank (:class:`QdrantSearchConfig`).
        options: the tuning knobs (:class:`QdrantOptions`: ``durable``, ``filter_indexes``,
            ``optimize_every``, ``cache_bytes``, ``retries``, ``aclient``, ``clock``).

    Raises:
        ConfigurationError: not exactly one place, or a bad config value (the message names the fix).
        StoreLockedError: embedded: another store holds the path (in this process or another).
        StoreConfigMismatchError: embedded: the directory was written with another index config,
            or by an earlier version in format 1.
        EmbedderMismatchError: embedded: the directory was written with another embedder (a
            subclass of StoreConfigMismatchError; on a server, raised by :meth:`setup`).
    """

    supports_ttl = True

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        client: QdrantClient | None = None,
        collection: str = "langmem",
        index: IndexConfig | QdrantIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search: QdrantSearchConfig | None = None,
        options: QdrantOptions | None = None,
    ) -> None:
        check_one_place(path, url, client)
        self.index_config = dict(index) if index else None
        self.ttl_config = ttl
        self._config, self._embeddings = batch_config(index, search, ttl)
        embedder = embedder_id(self._embeddings)
        self._verdicts = TermVerdicts()  # shared with views: same data
        knobs = tuning(options)
        self._clock = knobs.clock
        self._engine = engine_for(
            path,
            url=url,
            api_key=api_key,
            client=client,
            collection=collection,
            config=self._config,
            knobs=knobs,
            embedder=embedder,
        )
        embedded = isinstance(self._engine, EdgeEngine)
        self._sweeper = (
            TTLSweeper(self.sweep_ttl, self._config.ttl.sweep_interval_minutes)
            if self._config.ttl.sweep_interval_minutes
            else None
        )
        self._setup_lock = threading.Lock()
        # embedded (where the path lock turns other processes away) or ":memory:": this store and
        # its views are the data's one writer
        sole = ACROSS_PROCESSES if embedded else path == MEMORY
        self._item_limits: ItemLimits = "shared" if sole else "process"
        self._writer_lock = threading.Lock()  # shared with the views: one lock for the one writer
        self._owner = True
        self._ready = False  # the engine is open and the sweeper started
        self._removal: weakref.finalize[Any, QdrantStore] | None = None  # set by temporary()
        if embedded and not OPEN_LATER.get() and not self._dims_unknown:
            self._engine.open()  # embedded: lock and load now (see the class docstring)

    @classmethod
    def temporary(
        cls,
        *,
        index: IndexConfig | QdrantIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search: QdrantSearchConfig | None = None,
        options: QdrantOptions | None = None,
    ) -> QdrantStore:
        """An embedded store in a new temporary directory, removed when the store is closed.

        Also removed when the store is garbage-collected or the process exits (whichever
        comes first; a process killed with SIGKILL leaves it in the system's temporary
        directory, named ``langmem-memory-*``). The same engine as ``QdrantStore(path)``:
        hybrid search, payload indexes, HNSW — what ``Memory()`` uses when given no store.
        After :meth:`close` the store cannot be opened again (its data is gone): a use
        raises :class:`~langmem_plugin.errors.StoreError`. The new directory is created
        in a background thread (creating a shard syncs it to disk, a second or so on a busy
        disk), so the constructor returns at once and the first use waits for it.

        >>> from langmem_plugin.testing import FakeEmbeddings
        >>> store = QdrantStore.temporary(index={"dims": 32, "embed": FakeEmbeddings(32)})
        >>> store.put(("docs",), "a", {"text": "green tea"})
        >>> folder = store.path
        >>> folder.exists(), store.close(), folder.exists()
        (True, None, False)
        """
        directory = Path(tempfile.mkdtemp(prefix="langmem-memory-"))
        token = OPEN_LATER.set(True)  # a new directory: no lock to take, no config to check
        try:
            store = cls(directory, index=index, ttl=ttl, search=search, options=options)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        finally:
            OPEN_LATER.reset(token)
        gate = Gate()
        store._removal = removal(store, store._engine, directory, gate)
        if not store._dims_unknown:  # else the first use learns them, then opens
            open_in_background(store._engine, gate)  # the first use's setup() waits for it
        return store

    @property
    def _dims_unknown(self) -> bool:
        """An index whose dims were not given nor known without a call: :meth:`setup` learns them."""
        return self._embeddings is not None and self._config.dims is None

    @property
    def path(self) -> Path | None:
        """The directory of an embedded store (None on a server or in local mode)."""
        return self._engine.path if isinstance(self._engine, EdgeEngine) else None

    # ------------------------------------------------------------------ lifecycle

    def setup(self) -> None:
        """Open the engine (create the store when new) and start the TTL sweeper if configured.

        Idempotent; every operation calls it. An embedded store is already open
        when constructed; for a server, calling it yourself moves the I/O (and a
        connection or version error) to a moment you choose.
        """
        if self._ready and self._engine.is_open:
            return
        if self._removal is not None and not self._removal.alive:
            raise StoreError(
                f"this temporary QdrantStore was closed and its directory {self.path} removed with "
                "its data. Fix: keep the store (or the Memory) open while you use it, or give it a "
                "directory that stays: QdrantStore('./memory') or Memory(path='./memory')."
            )
        with self._setup_lock:
            if self._dims_unknown:
                assert self._embeddings is not None
                self._config = with_dims(self._config, self._embeddings, self._engine.dims)
                self._engine.dims = self._config.dims
            if not self._engine.is_open:
                self._engine.open()
            if self._sweeper is not None and self._owner:
                self._sweeper.start()
            self._ready = True

    async def asetup(self) -> None:
        """:meth:`setup`, from async code."""
        if not (self._ready and self._engine.is_open):
            await run_in_executor(None, self.setup)

    def close(self) -> None:
        """Stop the sweeper and close the engine (the embedded engine flushes and unlocks)."""
        if not self._owner:
            return
        if self._sweeper is not None:
            self._sweeper.stop()
        self._ready = False
        self._engine.close()
        if self._removal is not None:
            self._removal()  # a temporary store: its directory goes with it

    async def aclose(self) -> None:
        """:meth:`close`, from async code (also closes an async client the store created)."""
        if not self._owner:
            return
        if self._sweeper is not None:
            self._sweeper.stop()
        self._ready = False
        await self._engine.aclose()
        if self._removal is not None:
            self._removal()

    def __enter__(self) -> QdrantStore:
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> QdrantStore:
        await self.asetup()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def search_mode(self) -> SearchMode:
        """How ``search(query=...)`` ranks: ``"hybrid"`` (fused: RRF or DBSF), ``"dense"``, ``"lexical"``."""
        return self._config.mode

    def with_search(self, **search: Any) -> QdrantStore:
        """A view of this store (same data, same engine) whose queries rank differently.

        >>> from langmem_plugin.testing import FakeEmbeddings
        >>> store = QdrantStore(":memory:", index={"dims": 32, "embed": FakeEmbeddings(32)})
        >>> lexical = store.with_search(mode="lexical", score_threshold=0.1)
        >>> store.put(("docs",), "a", {"text": "green tea"})
        >>> [i.key for i in lexical.search(("docs",), query="tea")], lexical.search(("docs",), query="tax")
        (['a'], [])
        >>> store.close()

        Args:
            **search: keys of :class:`QdrantSearchConfig`.
        """
        unknown = set(search) - set(QdrantSearchConfig.__annotations__)
        if unknown:
            known = sorted(QdrantSearchConfig.__annotations__)
            raise ConfigurationError(f"unknown search option(s) {sorted(unknown)}; use {known}")
        view = copy.copy(self)
        view._config = ranked_by(self._config, search)
        view._owner = False
        return view

    # ------------------------------------------------------------------ the BaseStore contract

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops as one batch: results in op order, reads before writes."""
        self.setup()
        return run_steps(run_batch(self._config, list(ops), self._clock()), self._do)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` with native async I/O."""
        await self.asetup()
        return await arun_steps(run_batch(self._config, list(ops), self._clock()), self._ado)

    def search_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """The dense and the BM25 top-N of each query, raw and unfused (see ``core.candidates``).

        What :class:`~langmem_plugin.services.recall.retrieval.HybridRetriever` (and so recall) fuses.
        Per query: a count and one capped probe per query word for the background words
        (with embeddings), one embedding request for all queries, one dense and one BM25 query.
        """
        self.setup()
        steps = run_candidates(self._config, list(queries), to_us(self._clock()), self._verdicts)
        return run_steps(steps, self._do)

    async def asearch_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """:meth:`search_candidates` with native async I/O."""
        await self.asetup()
        steps = run_candidates(self._config, list(queries), to_us(self._clock()), self._verdicts)
        return await arun_steps(steps, self._ado)

    # ------------------------------------------------------------------ item limits

    @property
    def item_limits(self) -> ItemLimits:
        """``"shared"`` (embedded, ``":memory:"``): :meth:`write_bounded` holds every writer of the
        data to a limit. ``"process"`` (a server): it refuses; see the class docstring."""
        return self._item_limits

    def write_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """Count each bound's namespace and write ``write.ops``, with no other write in between.

        Returns the evictions made (deletes of the items a bound chose to make room).

        Raises:
            ConfigurationError: a server store (``item_limits`` is ``"process"``).
            Exception: a bound's refusal (e.g. ``MemoryLimitError``); nothing is written.
        """
        self._require_shared()
        self.setup()
        with self._writer_lock:
            return run_steps(run_bounded(self._config, write, self._clock()), self._do)

    async def awrite_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """:meth:`write_bounded` from async code, with native async I/O (and embeddings)."""
        self._require_shared()
        await self.asetup()
        # threads take this lock too, so it is polled: the event loop never blocks on it
        while not self._writer_lock.acquire(blocking=False):  # noqa: ASYNC110
            await asyncio.sleep(0.002)
        try:
            return await arun_steps(run_bounded(self._config, write, self._clock()), self._ado)
        finally:
            self._writer_lock.release()

    def _require_shared(self) -> None:
        if self._item_limits != "shared":
            raise ConfigurationError(
                "this QdrantStore is not its data's one writer (a Qdrant server, where other clients "
                "write too, or an embedded store on a system without flock) and Qdrant has no "
                "transaction to count a namespace and write to it in one step, so it does not claim "
                "to hold item limits: item_limits is 'process'. Fix: leave limits to the memory "
                "services (they count then write, holding within this process only), run one writer "
                "process, or set max_items=None and bound the data elsewhere."
            )

    # ------------------------------------------------------------------ export and import

    def export_items(self, prefix: tuple[str, ...] = ()) -> Iterator[StoredItem]:
        """Every live item under ``prefix``, with timestamps and TTL (for ``stores.export_jsonl``).

        Pages are read lazily; no read refreshes a TTL.
        """
        self.setup()
        now = self._clock()
        offset: str | None = None
        while True:
            items, offset = run_steps(
                run_export_page(validate_namespace(prefix, for_write=False), now, offset), self._do
            )
            yield from items
            if offset is None:
                return

    def import_items(self, items: Iterable[StoredItem]) -> int:
        """Write exported items exactly (values, timestamps, expiry); returns how many were written.

        All items are validated before the first write. Items already expired are skipped.
        """
        self.setup()
        return run_steps(run_import(self._config, list(items), self._clock()), self._do)

    async def aimport_items(self, items: Iterable[StoredItem]) -> int:
        """:meth:`import_items`, from async code."""
        await self.asetup()
        return await arun_steps(run_import(self._config, list(items), self._clock()), self._ado)

    # ------------------------------------------------------------------ TTL and maintenance

    def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many."""
        self.setup()
        return run_steps(run_sweep(self._clock()), self._do)

    async def asweep_ttl(self) -> int:
        """:meth:`sweep_ttl`, from async code."""
        await self.asetup()
        return await arun_steps(run_sweep(self._clock()), self._ado)

    def start_ttl_sweeper(self) -> None:
        """Start the background sweeper (needs ``ttl={"sweep_interval_minutes": ...}``)."""
        if self._sweeper is None:
            raise ConfigurationError(
                "this store has no sweep interval. Fix: QdrantStore(..., ttl={'sweep_interval_minutes': 5})."
            )
        self._sweeper.start()

    def stop_ttl_sweeper(self) -> None:
        """Stop the background sweeper (no-op when not running)."""
        if self._sweeper is not None:
            self._sweeper.stop()

    def optimize(self) -> bool:
        """Embedded engine: index every point and merge the index into one segment, now.

        The store builds its HNSW index on its own every ``optimize_every``
        points, in bounded steps that leave it in segments of up to 20,000
        points (searched one after the other); this full compaction merges
        them into one, the fastest to search. Call it after a bulk load or at a
        quiet moment: it holds the GIL while it runs (the benchmark prints how
        long), and other calls on the store wait. A server optimizes on its
        own: a no-op there. Returns whether anything changed.
        """
        self.setup()
        return self._engine.optimize()

    def scrub(self) -> Scrubbed | None:
        """Embedded engine: rewrite the store's directory without what was deleted, now.

        Qdrant Edge keeps a deleted item's text in its write-ahead log and segment
        files; the scrub copies every live item into a new shard, swaps it in and
        overwrites the old files with zeros before removing them
        (:mod:`langmem_plugin.stores.qdrant._scrub`: each step crash-safe). It
        blocks the store meanwhile, for about as long as an index build of every
        item (``langmem-plugin bench forgetting`` prints it). Forgetting runs it
        itself (:meth:`purge_history`); call it after your own deletes.

        None on a server (``url=``, ``client=``: its disk is the server's, which its
        operator looks after) and in ``":memory:"`` mode (nothing on disk).
        """
        self.setup()
        if not isinstance(self._engine, EdgeEngine):
            return None
        return self._engine.scrub()

    async def ascrub(self) -> Scrubbed | None:
        """:meth:`scrub`, from async code (in the default executor)."""
        return await run_in_executor(None, self.scrub)

    def purge_history(
        self, namespaces: Iterable[tuple[str, ...]] = (), *, keys: Iterable[tuple[tuple[str, ...], str]] = ()
    ) -> int:
        """What forgetting asks after its deletes: the embedded store scrubs its directory.

        Every forget (``forget_user``, ``forget``, ``forget_about``, the forget tools,
        ``clear_memory``, ``delete_idle_threads``) asks it once its batch is written
        (:class:`~langmem_plugin.services.store_steps.PurgeHistory`). A request that names
        whole ``namespaces`` (a user or a thread removed) always scrubs; one of single
        ``keys`` scrubs while the store holds at most
        :data:`~langmem_plugin.stores.qdrant._scrub.SCRUB_NOW_POINTS` items, and above that
        leaves the text on disk until the next scrub (:meth:`scrub`, or the next request
        that makes one), so that a forget tool never holds a big store for long.

        Returns 0: the store keeps no old versions of its items (``history_purged``
        counts those), whether or not it scrubbed. A server or ``":memory:"``: nothing
        to do (see :meth:`scrub`).
        """
        if not isinstance(self._engine, EdgeEngine):
            return 0
        whole, single = any(True for _ in namespaces), any(True for _ in keys)
        if whole or (single and self.count() <= SCRUB_NOW_POINTS):
            self.scrub()
        return 0

    async def apurge_history(
        self, namespaces: Iterable[tuple[str, ...]] = (), *, keys: Iterable[tuple[tuple[str, ...], str]] = ()
    ) -> int:
        """:meth:`purge_history`, from async code (in the default executor)."""
        return await run_in_executor(None, self.purge_history, tuple(namespaces), keys=tuple(keys))

    @property
    def optimize_seconds(self) -> float:
        """Seconds this store has spent building indexes (automatically and in :meth:`optimize`).

        Always 0.0 on a server, which builds its indexes in the background.
        """
        return self._engine.optimize_seconds

    def count(self) -> int:
        """How many items the store holds (expired, unswept ones included)."""
        self.setup()
        return self._engine.count()

    # ------------------------------------------------------------------ the two ways to carry out a request

    def _do(self, call: Call) -> Any:
        if isinstance(call, EmbedCall):
            return embed(self._embedder(), call)
        return self._engine.execute(call)

    async def _ado(self, call: Call) -> Any:
        if isinstance(call, EmbedCall):
            return await aembed(self._embedder(), call)
        return await self._engine.aexecute(call)

    def _embedder(self) -> Embeddings:
        assert self._embeddings is not None  # the steps embed only when an index is configured
        return self._embeddings

    def __repr__(self) -> str:
        return f"QdrantStore({self._engine.describe()}, dims={self._config.dims}, mode={self._config.mode!r})"
