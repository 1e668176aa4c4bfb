"""What a QdrantStore is configured with: the user's dicts, checked, and what the steps read of them.

:class:`QdrantIndexConfig`, :class:`QdrantSearchConfig` and :class:`QdrantOptions`
are what a user passes; :class:`BatchConfig` is what the store's steps
(:mod:`._batch`, :mod:`._maintenance`) need to know, built once from them.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, TTLConfig
from langgraph.store.base.embed import ensure_embeddings

from langmem_plugin.core.embeddings import embedding_dims, known_dims, resolve_embeddings
from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import Clock, TTLSettings, lexical_fields_of, utc_clock
from langmem_plugin.stores.qdrant._cache import CACHE_BYTES
from langmem_plugin.stores.qdrant._calls import Fusion, SearchMode
from langmem_plugin.stores.qdrant._layout import FilterIndexType, filter_index_fields

if TYPE_CHECKING:  # qdrant-client takes about a second to import: the embedded engine does without it
    from qdrant_client import AsyncQdrantClient

__all__ = [
    "OPTIMIZE_EVERY",
    "BatchConfig",
    "QdrantIndexConfig",
    "QdrantOptions",
    "QdrantSearchConfig",
    "Tuning",
    "batch_config",
    "ranked_by",
    "tuning",
]

#: Build the embedded engine's HNSW index once this many points were written since the last build.
OPTIMIZE_EVERY = 10_000

_MODES = ("hybrid", "dense", "lexical")

# Options that were renamed: the old name, and what to write instead.
_RENAMED = {
    "cache_items": "cache_bytes (the payload cache is bounded by memory now, not by a count of items): "
    "options={'cache_bytes': 64 * 2**20} (the default), or 0 for no cache",
}
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
    or ``"rrf"`` (reciprocal rank fusion with ``rrf_k``: ranks only). DBSF is the default: it ranked
    better on LoCoMo with the same signals (the README's benchmark section has the numbers)."""


class QdrantOptions(TypedDict, total=False):
    """The tuning knobs of a QdrantStore; every one has a default that suits most stores."""

    durable: bool
    """Embedded only: fsync after every write batch (every write is in the WAL anyway). Default False."""
    filter_indexes: Mapping[str, FilterIndexType]
    """Payload indexes for value keys you filter on, e.g. ``{"kind": "keyword", "priority": "integer"}``
    (dot paths allowed): filtered searches then stay fast at scale. Filters work on every key without
    them."""
    optimize_every: int | None
    """Embedded only: build the HNSW index over new points once this many were written since the last
    build (default 10,000): the write that crosses it pauses for a bounded build (at most 20,000 points
    are indexed or merged at once). None: only when ``optimize()`` is called; until then searches scan
    un-indexed points exactly."""
    cache_bytes: int
    """Embedded only: how many bytes of this process's memory the items kept in process may take
    (the most recently written or read; default 64 MiB: each item its value's JSON text plus a few
    hundred bytes). Once it answers most lookups, searches take only ids and scores from the engine;
    the store is its directory's only writer, so the cache is always current. 0: no cache."""
    retries: int
    """Server only: how many times a call is made again after a transient failure (no answer in
    transport, or a 429/502/503/504), waiting 0.25 s, 0.5 s, ... (with jitter) between tries. Every call
    is idempotent, so a retry never writes twice. Default 2."""
    aclient: AsyncQdrantClient
    """With ``client=``: an ``AsyncQdrantClient`` on the same server, for native async (without one,
    async calls run the sync client in an executor)."""
    clock: Clock
    """The time source (tests pass a fake one); default: UTC now."""


@dataclass(frozen=True)
class Tuning:
    """:class:`QdrantOptions` checked, with every default filled in."""

    durable: bool = False
    filter_indexes: tuple[tuple[str, FilterIndexType], ...] = ()
    optimize_every: int | None = OPTIMIZE_EVERY
    cache_bytes: int = CACHE_BYTES
    retries: int = 2
    aclient: AsyncQdrantClient | None = None
    clock: Clock = utc_clock


def _check_count(name: str, value: Any, minimum: int, what: str, fix: str) -> None:
    """An option that must be an int (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be {what}, got {value!r}. Fix: {fix}.")


def tuning(options: QdrantOptions | None) -> Tuning:
    """Check ``options`` and fill in the defaults.

    Raises:
        ConfigurationError: an unknown key, or a value out of range (the message names the fix).
    """
    options = options or {}
    for old, fix in _RENAMED.items():
        if old in options:
            raise ConfigurationError(f"QdrantStore option {old!r} was replaced. Fix: use {fix}.")
    unknown = set(options) - set(QdrantOptions.__annotations__)
    if unknown:
        known = sorted(QdrantOptions.__annotations__)
        raise ConfigurationError(f"unknown QdrantStore option(s) {sorted(unknown)}; use {known}")
    indexes = filter_index_fields(options.get("filter_indexes"))
    optimize_every = options.get("optimize_every", OPTIMIZE_EVERY)
    if optimize_every is not None:
        _check_count(
            "optimize_every",
            optimize_every,
            1,
            "a positive number of points or None",
            "options={'optimize_every': 10_000} (the default), or None to build indexes only in optimize()",
        )
    retries = options.get("retries", 2)
    _check_count(
        "retries",
        retries,
        0,
        "a number of retries >= 0",
        "options={'retries': 2} (the default), or 0 to fail on the first transient error",
    )
    cache_bytes = options.get("cache_bytes", CACHE_BYTES)
    _check_count(
        "cache_bytes",
        cache_bytes,
        0,
        "a number of bytes >= 0",
        "options={'cache_bytes': 64 * 2**20} (the default), or 0 to read every item from the engine",
    )
    return Tuning(
        durable=bool(options.get("durable", False)),
        filter_indexes=indexes,
        optimize_every=optimize_every,
        cache_bytes=cache_bytes,
        retries=retries,
        aclient=options.get("aclient"),
        clock=options.get("clock") or utc_clock,
    )


@dataclass(frozen=True)
class BatchConfig:
    """What the store's steps need to know about the store's configuration.

    Attributes:
        dims: dense vector dimension; None when the store has no IndexConfig (lexical search only).
        fields: the IndexConfig's fields (None: the whole value, ``"$"``).
        lexical_fields: the fields whose text BM25 indexes (None: the embedded texts).
        mode: how a query ranks: ``"hybrid"`` (dense + BM25 fused by the engine), ``"dense"`` or
            ``"lexical"``.
        score_threshold: drop query results scoring below this (cosine for dense and for the dense
            half of hybrid; BM25 for lexical).
        candidates: the size of each prefetch that hybrid search fuses (pages past it may shift).
        rrf_k: the k of reciprocal rank fusion, ``1 / (k + rank)``.
        fusion: how hybrid search fuses its two halves: ``"dbsf"`` (by score) or ``"rrf"`` (by rank).
        ttl: the store's TTL settings.
        encoder: the BM25 encoder (the engine applies IDF).
    """

    dims: int | None = None
    fields: tuple[str, ...] | None = None
    lexical_fields: tuple[str, ...] | None = None
    mode: SearchMode = "hybrid"
    score_threshold: float | None = None
    candidates: int = 100
    rrf_k: int = 60
    fusion: Fusion = "dbsf"
    ttl: TTLSettings = field(default_factory=TTLSettings)
    encoder: BM25Encoder = field(default_factory=BM25Encoder)


def _fusion_of(value: Any) -> Fusion:
    if value not in _FUSIONS:
        raise ConfigurationError(
            f"search fusion {value!r} is not one of {', '.join(_FUSIONS)}. "
            "Fix: search={'fusion': 'dbsf'} (score-based, the default) or 'rrf' (rank-based)."
        )
    return cast(Fusion, value)


def _embeddings_of(embed: Any) -> Embeddings:
    """IndexConfig's ``embed``: an Embeddings, a sync or async function, a "provider:model" string."""
    if inspect.iscoroutinefunction(embed):
        return ensure_embeddings(embed)  # LangGraph's wrapper: native async, sync via a loop
    return resolve_embeddings(embed)


def ranked_by(config: BatchConfig, search: Mapping[str, Any]) -> BatchConfig:
    """``config`` ranking queries as ``search`` (a :class:`QdrantSearchConfig`) says; the rest kept."""
    mode = search.get("mode", config.mode)
    if mode not in _MODES:
        raise ConfigurationError(f"search mode {mode!r} is not one of {', '.join(_MODES)}")
    return dataclasses.replace(
        config,
        mode=mode,
        score_threshold=search.get("score_threshold", config.score_threshold),
        candidates=int(search.get("candidates", config.candidates)),
        rrf_k=int(search.get("rrf_k", config.rrf_k)),
        fusion=_fusion_of(search.get("fusion", config.fusion)),
    )


def batch_config(
    index: IndexConfig | QdrantIndexConfig | None,
    search: QdrantSearchConfig | None,
    ttl: TTLConfig | None,
) -> tuple[BatchConfig, Embeddings | None]:
    """The steps' configuration of a store, and its embeddings (None without an ``index``).

    With embeddings whose dims are not in the index and not known without a call, the config's
    ``dims`` is ``None`` until :func:`with_dims` learns them (the store's first use).
    """
    embeddings: Embeddings | None = None
    dims: int | None = None
    fields: tuple[str, ...] | None = None
    lexical_fields: tuple[str, ...] | None = None
    if index:
        embeddings = _embeddings_of(index.get("embed"))
        raw_dims = index.get("dims")
        dims = int(raw_dims) if raw_dims else known_dims(embeddings)  # None: learned by with_dims()
        raw_fields = index.get("fields")
        fields = tuple(raw_fields) if raw_fields else None
        lexical_fields = lexical_fields_of(cast(Mapping[str, Any], index).get("lexical_fields"))
    base = BatchConfig(
        dims=dims, fields=fields, lexical_fields=lexical_fields, ttl=TTLSettings.from_config(ttl)
    )
    return ranked_by(base, search or {}), embeddings


def with_dims(config: BatchConfig, embeddings: Embeddings, learned: int | None) -> BatchConfig:
    """``config`` with the dims of ``embeddings``: ``learned`` when another view of the store has
    them already, else one call of the embedder (:func:`~langmem_plugin.core.embeddings.embedding_dims`:
    an ``EmbeddingsError`` naming the embedder, why it was called and the fix when it fails)."""
    return dataclasses.replace(config, dims=learned or embedding_dims(embeddings))
