"""QdrantStore: LangGraph's BaseStore on Qdrant — embedded by default, a server or cluster by URL."""

from __future__ import annotations

import asyncio
import copy
import inspect
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypedDict, cast

from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor
from langgraph.store.base import BaseStore, IndexConfig, Op, Result, TTLConfig
from langgraph.store.base.embed import ensure_embeddings
from qdrant_client import AsyncQdrantClient, QdrantClient

from langmem_plugin.core.embeddings import embedding_dims, resolve_embeddings
from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import Clock, TTLSettings, TTLSweeper, utc_clock, validate_namespace
from langmem_plugin.stores._transfer import StoredItem
from langmem_plugin.stores.qdrant._cache import CACHE_ITEMS
from langmem_plugin.stores.qdrant._edge import OPTIMIZE_EVERY, EdgeEngine
from langmem_plugin.stores.qdrant._plan import (
    Call,
    EmbedDocuments,
    EmbedQueries,
    FilterIndexType,
    Fusion,
    PlanConfig,
    SearchMode,
    filter_index_fields,
    run_batch,
    run_export_page,
    run_import,
    run_sweep,
)
from langmem_plugin.stores.qdrant._remote import ClientEngine, Retries

__all__ = ["QdrantIndexConfig", "QdrantSearchConfig", "QdrantStore"]

_MODES = ("hybrid", "dense", "lexical")
_FUSIONS = ("rrf", "dbsf")


class QdrantIndexConfig(IndexConfig, total=False):
    """LangGraph's ``IndexConfig`` plus what only QdrantStore reads."""

    lexical_fields: list[str]
    """The fields whose text BM25 indexes, same syntax as ``fields`` (e.g. ``["metadata.session_date",
    "metadata.context", "content"]``); default: the embedded ``fields``. Only items that have a dense
    vector get a BM25 vector. Like ``fields``, it applies to what is written while it is set: reopen a
    store with the ``lexical_fields`` it was written with (or export and import to re-index)."""


class QdrantSearchConfig(TypedDict, total=False):
    """How ``search(query=...)`` ranks."""

    mode: SearchMode
    """``"hybrid"`` (default): dense and BM25 results fused by the engine (see ``fusion``);
    ``"dense"``: the embeddings only; ``"lexical"``: BM25 only. A store without an IndexConfig is always
    lexical."""
    score_threshold: float | None
    """Leave out results scoring below this: cosine similarity in dense mode and for the dense half of
    hybrid (the BM25 half then still needs a shared word), BM25 score in lexical mode."""
    candidates: int
    """Hybrid search fuses the best ``candidates`` (default 100) of each half; pages beyond that may shift."""
    rrf_k: int
    """The k of reciprocal rank fusion, ``1 / (k + rank)`` (default 60; used with ``fusion="rrf"``)."""
    fusion: Fusion
    """How hybrid search fuses its halves: ``"dbsf"`` (default; Qdrant's distribution-based score fusion:
    each half's scores normalised by their mean ± 3 standard deviations, then summed, so margins count)
    or ``"rrf"`` (reciprocal rank fusion with ``rrf_k``: ranks only). DBSF is the default because it
    measured better on LoCoMo: recall@10 +7 points over RRF with the same signals (README)."""


def _fusion_of(value: Any) -> Fusion:
    if value not in _FUSIONS:
        raise ConfigurationError(
            f"search fusion {value!r} is not one of {', '.join(_FUSIONS)}. "
            "Fix: search={'fusion': 'dbsf'} (score-based, the default) or 'rrf' (rank-based)."
        )
    return cast(Fusion, value)


def _lexical_fields_of(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value:
        raise ConfigurationError(
            f"index lexical_fields must be a non-empty list of field paths, got {value!r}. "
            'Fix: index={..., "lexical_fields": ["content"]} (a list, even for one field).'
        )
    bad = [f for f in value if not isinstance(f, str) or not f.strip()]
    if bad:
        raise ConfigurationError(
            f"index lexical_fields holds {bad!r}, not field paths. Fix: strings such as 'metadata.context'."
        )
    return tuple(value)


Engine = EdgeEngine | ClientEngine


def _check_count(name: str, value: Any, minimum: int, what: str, fix: str) -> None:
    """A constructor argument that must be an int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be {what}, got {value!r}. Fix: {fix}.")


def _embeddings_of(embed: Any) -> Embeddings:
    """IndexConfig's ``embed``: an Embeddings, a sync or async function, a "provider:model" string."""
    if inspect.iscoroutinefunction(embed):
        return ensure_embeddings(embed)  # LangGraph's wrapper: native async, sync via a loop
    return resolve_embeddings(embed)


class QdrantStore(BaseStore):
    """A LangGraph ``BaseStore`` on Qdrant, with hybrid (dense + BM25) search, filters, TTL and export.

    Where the data lives — give exactly one of:

    - ``path``: Qdrant's embedded engine (Qdrant Edge) in this process, durable in
      that directory; one process at a time (a second opener gets
      :class:`~langmem_plugin.errors.StoreLockedError`);
    - ``url`` (and ``api_key``): a Qdrant server or cluster, with native async;
    - ``client`` (and optionally ``aclient``): your own ``QdrantClient`` /
      ``AsyncQdrantClient``;
    - ``location=":memory:"``: qdrant-client's in-process local mode, for quick
      experiments only (it scans in Python: ≈ 1 s per filtered search at 100k items).

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
    ``STORE-CONTRACT.md``).

    Differences from LangGraph's InMemoryStore, on purpose: ``created_at`` is kept when
    an item is updated; a namespace exists only while it holds an item; a search
    without a query lists newest ``updated_at`` first (ties by namespace, key); values
    must be JSON objects of at most 1 MiB; expired items are never returned.

    Hybrid search pages are stable within the first ``search["candidates"]`` (100)
    results of each half. :meth:`export_items` / :meth:`import_items` move items with
    their timestamps and TTL, exactly (JSONL files: ``stores._transfer.export_jsonl``).

    The constructor does no I/O: the store opens on :meth:`setup` or on first use.

    >>> from langmem_plugin.testing import FakeEmbeddings
    >>> with QdrantStore(location=":memory:", index={"dims": 64, "embed": FakeEmbeddings(64)}) as store:
    ...     store.put(("users", "u1"), "tea", {"text": "I drink green tea every morning"})
    ...     store.put(("users", "u1"), "tax", {"text": "The tax deadline is in April"})
    ...     [item.key for item in store.search(("users",), query="green tea", limit=1)]
    ['tea']

    Args:
        path: directory of the embedded store (created when missing).
        url: URL of a Qdrant server or cluster.
        api_key: its API key.
        client: a ``QdrantClient`` to use (not closed by the store).
        aclient: an ``AsyncQdrantClient`` on the same server, for native async (with ``client``).
        location: ``":memory:"`` for qdrant-client's local mode.
        collection: the collection's name on a server (default ``"langmem"``).
        index: LangGraph's ``IndexConfig``; None: no embeddings, lexical search only.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``, ``sweep_interval_minutes``;
            the sweeper starts with the store).
        search: how queries rank (:class:`QdrantSearchConfig`).
        clock: the time source (tests pass a fake one); default: UTC now.
        durable: embedded only: fsync after every write batch (every write is in the WAL anyway).
        filter_indexes: payload indexes for value keys you filter on, e.g. ``{"kind": "keyword",
            "priority": "integer"}`` (dot paths allowed): filtered searches then stay fast at scale.
            Filters work on every key without them.
        optimize_every: embedded only: build the HNSW index over new points once this many were
            written since the last build (default 10,000): the write that crosses it pauses for
            a bounded build (seconds: at most 20,000 points are indexed or merged at once). None:
            only when :meth:`optimize` is called; until then searches scan un-indexed points exactly.
        cache_items: embedded only: how many items to keep in process (most recently written or
            read; default 100,000; each ≈ 260 bytes plus its value's JSON). Once it answers most
            lookups, searches take only ids and scores from the engine (a search's time in the
            engine drops by a third); the store is its directory's only writer, so the cache is
            always current. 0: no cache.
        retries: server only: how many times a call is made again after a transient failure (no
            answer in transport, or a 429/502/503/504), waiting 0.25 s, 0.5 s, ... (with jitter)
            between tries. Every call is idempotent, so a retry never writes twice.
    """

    supports_ttl = True

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        client: QdrantClient | None = None,
        aclient: AsyncQdrantClient | None = None,
        location: str | None = None,
        collection: str = "langmem",
        index: IndexConfig | QdrantIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search: QdrantSearchConfig | None = None,
        clock: Clock | None = None,
        durable: bool = False,
        filter_indexes: Mapping[str, FilterIndexType] | None = None,
        optimize_every: int | None = OPTIMIZE_EVERY,
        cache_items: int = CACHE_ITEMS,
        retries: int = 2,
    ) -> None:
        given = [
            name
            for name, v in (("path", path), ("url", url), ("client", client), ("location", location))
            if v
        ]
        if len(given) != 1:
            raise ConfigurationError(
                f"QdrantStore needs exactly one of path=, url=, client= or location=, got {given or 'none'}. "
                "Fix: QdrantStore(path='./memory') for the embedded engine, or url='http://localhost:6333'."
            )
        self.index_config = dict(index) if index else None
        self.ttl_config = ttl
        self._embeddings: Embeddings | None = None
        dims: int | None = None
        fields: tuple[str, ...] | None = None
        lexical_fields: tuple[str, ...] | None = None
        if index:
            self._embeddings = _embeddings_of(index.get("embed"))
            raw_dims = index.get("dims")
            dims = int(raw_dims) if raw_dims else embedding_dims(self._embeddings)
            raw_fields = index.get("fields")
            fields = tuple(raw_fields) if raw_fields else None
            lexical_fields = _lexical_fields_of(cast(Mapping[str, Any], index).get("lexical_fields"))
        search = search or {}
        mode = search.get("mode", "hybrid")
        if mode not in _MODES:
            raise ConfigurationError(f"search mode {mode!r} is not one of {', '.join(_MODES)}")
        self._config = PlanConfig(
            dims=dims,
            fields=fields,
            lexical_fields=lexical_fields,
            mode=mode,
            score_threshold=search.get("score_threshold"),
            candidates=int(search.get("candidates", 100)),
            rrf_k=int(search.get("rrf_k", 60)),
            fusion=_fusion_of(search.get("fusion", "dbsf")),
            ttl=TTLSettings.from_config(ttl),
            encoder=BM25Encoder(),
        )
        self._clock: Clock = clock or utc_clock
        self._engine: Engine
        indexes = filter_index_fields(filter_indexes)
        if optimize_every is not None:
            _check_count(
                "optimize_every",
                optimize_every,
                1,
                "a positive number of points or None",
                "optimize_every=10_000 (the default), or None to build indexes only in optimize()",
            )
        _check_count(
            "retries",
            retries,
            0,
            "a number of retries >= 0",
            "retries=2 (the default), or 0 to fail on the first transient error",
        )
        _check_count(
            "cache_items",
            cache_items,
            0,
            "a number of items >= 0",
            "cache_items=100_000 (the default), or 0 to read every item from the engine",
        )
        if path:
            self._engine = EdgeEngine(
                Path(path),
                dims=dims,
                durable=durable,
                filter_indexes=indexes,
                fields=fields,
                lexical_fields=lexical_fields,
                optimize_every=optimize_every,
                cache_items=cache_items,
            )
        else:
            owns = client is None
            if url:  # no version check in the constructor (a thread doing I/O): setup() checks it
                client = QdrantClient(url=url, api_key=api_key, check_compatibility=False)
                aclient = AsyncQdrantClient(url=url, api_key=api_key, check_compatibility=False)
            elif location:
                client = QdrantClient(location=location)
            assert client is not None  # exactly one of the four was given
            self._engine = ClientEngine(
                client,
                aclient=aclient,
                collection=collection,
                dims=dims,
                owns=owns,
                filter_indexes=indexes,
                retries=Retries(retries=retries),
            )
        self._sweeper = (
            TTLSweeper(self.sweep_ttl, self._config.ttl.sweep_interval_minutes)
            if self._config.ttl.sweep_interval_minutes
            else None
        )
        self._setup_lock = threading.Lock()
        self._owner = True

    # ------------------------------------------------------------------ lifecycle

    def setup(self) -> None:
        """Open the engine (create the store when new) and start the TTL sweeper if configured.

        Idempotent; every operation calls it, so calling it yourself only moves
        the I/O (and a :class:`~langmem_plugin.errors.StoreLockedError`) earlier.
        """
        if self._engine.is_open:
            return
        with self._setup_lock:
            if not self._engine.is_open:
                self._engine.open()
                if self._sweeper is not None and self._owner:
                    self._sweeper.start()

    async def asetup(self) -> None:
        """:meth:`setup`, from async code."""
        if not self._engine.is_open:
            await run_in_executor(None, self.setup)

    def close(self) -> None:
        """Stop the sweeper and close the engine (the embedded engine flushes and unlocks)."""
        if not self._owner:
            return
        if self._sweeper is not None:
            self._sweeper.stop()
        self._engine.close()

    async def aclose(self) -> None:
        """:meth:`close`, from async code (also closes an async client the store created)."""
        if not self._owner:
            return
        if self._sweeper is not None:
            self._sweeper.stop()
        if isinstance(self._engine, ClientEngine):
            await self._engine.aclose()
        else:
            self._engine.close()

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
        >>> store = QdrantStore(location=":memory:", index={"dims": 32, "embed": FakeEmbeddings(32)})
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
        mode = search.get("mode", self._config.mode)
        if mode not in _MODES:
            raise ConfigurationError(f"search mode {mode!r} is not one of {', '.join(_MODES)}")
        view = copy.copy(self)
        view._config = PlanConfig(
            dims=self._config.dims,
            fields=self._config.fields,
            lexical_fields=self._config.lexical_fields,
            mode=mode,
            score_threshold=search.get("score_threshold", self._config.score_threshold),
            candidates=int(search.get("candidates", self._config.candidates)),
            rrf_k=int(search.get("rrf_k", self._config.rrf_k)),
            fusion=_fusion_of(search.get("fusion", self._config.fusion)),
            ttl=self._config.ttl,
            encoder=self._config.encoder,
        )
        view._owner = False
        return view

    # ------------------------------------------------------------------ the BaseStore contract

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops in one plan: results in op order, reads before writes."""
        self.setup()
        return cast(list[Result], self._drive(run_batch(self._config, list(ops), self._clock())))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` with native async I/O."""
        await self.asetup()
        return cast(list[Result], await self._adrive(run_batch(self._config, list(ops), self._clock())))

    # ------------------------------------------------------------------ export and import

    def export_items(self, prefix: tuple[str, ...] = ()) -> Iterator[StoredItem]:
        """Every live item under ``prefix``, with timestamps and TTL (for :mod:`.._transfer`).

        Pages are read lazily; no read refreshes a TTL.
        """
        self.setup()
        now = self._clock()
        offset: str | None = None
        while True:
            items, offset = self._drive(
                run_export_page(validate_namespace(prefix, for_write=False), now, offset)
            )
            yield from items
            if offset is None:
                return

    def import_items(self, items: Iterable[StoredItem]) -> int:
        """Write exported items exactly (values, timestamps, expiry); returns how many were written.

        All items are validated before the first write. Items already expired are skipped.
        """
        self.setup()
        return cast(int, self._drive(run_import(self._config, list(items), self._clock())))

    async def aimport_items(self, items: Iterable[StoredItem]) -> int:
        """:meth:`import_items`, from async code."""
        await self.asetup()
        return cast(int, await self._adrive(run_import(self._config, list(items), self._clock())))

    # ------------------------------------------------------------------ TTL and maintenance

    def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many."""
        self.setup()
        return cast(int, self._drive(run_sweep(self._clock())))

    async def asweep_ttl(self) -> int:
        """:meth:`sweep_ttl`, from async code."""
        await self.asetup()
        return cast(int, await self._adrive(run_sweep(self._clock())))

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
        them into one, the fastest to search (measured at 100k items: about
        half the latency of five segments). Call it after a bulk load or at a
        quiet moment: it holds the GIL while it runs, tens of seconds at 100k
        items on a loaded 2-core machine (the benchmark prints its time), and
        other calls on the store wait. A server optimizes on its own: a no-op
        there. Returns whether anything changed.
        """
        self.setup()
        return self._engine.optimize()

    @property
    def optimize_seconds(self) -> float:
        """Seconds this store has spent building indexes (automatically and in :meth:`optimize`).

        Always 0.0 on a server, which builds its indexes in the background.
        """
        return self._engine.optimize_seconds if isinstance(self._engine, EdgeEngine) else 0.0

    def count(self) -> int:
        """How many items the store holds (expired, unswept ones included)."""
        self.setup()
        return self._engine.count()

    # ------------------------------------------------------------------ the two I/O paths

    def _drive(self, plan: Any) -> Any:
        try:
            call = next(plan)
            while True:
                call = plan.send(self._do(call))
        except StopIteration as done:
            return done.value

    async def _adrive(self, plan: Any) -> Any:
        try:
            call = next(plan)
            while True:
                call = plan.send(await self._ado(call))
        except StopIteration as done:
            return done.value

    def _do(self, call: Call) -> Any:
        if isinstance(call, EmbedDocuments):
            return self._embedder().embed_documents(list(call.texts))
        if isinstance(call, EmbedQueries):
            return [self._embedder().embed_query(text) for text in call.texts]
        return self._engine.execute(call)

    async def _ado(self, call: Call) -> Any:
        if isinstance(call, EmbedDocuments):
            return await self._embedder().aembed_documents(list(call.texts))
        if isinstance(call, EmbedQueries):
            return list(await asyncio.gather(*(self._embedder().aembed_query(t) for t in call.texts)))
        return await self._engine.aexecute(call)

    def _embedder(self) -> Embeddings:
        assert self._embeddings is not None  # the plan embeds only when an index is configured
        return self._embeddings

    def __repr__(self) -> str:
        where = (
            f"path={str(self._engine.path)!r}"
            if isinstance(self._engine, EdgeEngine)
            else f"collection={self._engine.collection!r}"
        )
        return f"QdrantStore({where}, dims={self._config.dims}, mode={self._config.mode!r})"
