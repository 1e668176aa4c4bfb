"""Recall's candidate pool: the one search a recall asks of the store, and its learned reordering.

- :func:`search_candidates`: one search per compartment's namespace, all in one request to the
  store (the fused search of :mod:`.retrieval`, or the store's own), with the similarity floor and
  the scores a memory inherits from its source exchange (:mod:`.sources`);
- :func:`pool_steps`: the pool a learned ranker reads (:func:`pool_limit`: the candidates fusion
  reads, so that it costs no more store reads than fusion does) with each candidate's features
  (:mod:`.features`): what ``RecallConfig(ranker="learned")`` ranks, and what the training script
  (``python -m langmem_plugin.bench.train_ranker``) dumps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import SearchOp

from langmem_plugin.core.record import MemoryRecord, utc_now
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import InvalidRecordError, ScopeError
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.operations import StoredMemory, to_stored
from langmem_plugin.services.recall.answer import Considered
from langmem_plugin.services.recall.features import candidate_features, written_at
from langmem_plugin.services.recall.learned import LearnedRanker
from langmem_plugin.services.recall.retrieval import RetrievalConfig, RetrievedItem, fused_search_steps
from langmem_plugin.services.recall.sources import SOURCE_LIFT, inherited_score, source_scores
from langmem_plugin.services.store_steps import StoreSteps

__all__ = ["Pool", "pool_limit", "pool_steps", "ranked_pool", "search_candidates"]


def pool_limit(retrieval: RetrievalConfig) -> int:
    """How many candidates per namespace a learned ranker reads: ``candidates``, asked of each list
    (dense and lexical) and kept, by the fused score, of their union: the pool fusion reads, which
    the ranker orders anew."""
    return retrieval.candidates


@dataclass(frozen=True)
class Pool:
    """One query's candidate pools as a learned ranker reads them.

    Attributes:
        hits: per namespace searched, the candidates the ranker scores (:func:`ranked_pool`).
        rows: per namespace, each candidate's features
            (:data:`~langmem_plugin.services.recall.features.FEATURES`).
    """

    hits: list[list[RetrievedItem]]
    rows: list[list[list[float]]]


def _passes(hit: RetrievedItem, min_similarity: float | None) -> bool:
    """Whether ``hit`` clears the similarity floor: a BM25 match, or a dense similarity of at
    least ``min_similarity`` (a store with no index scores neither: it passes)."""
    return (
        min_similarity is None
        or hit.lexical_score is not None
        or (hit.dense_score is None and hit.lexical_score is None)
        or (hit.dense_score is not None and hit.dense_score >= min_similarity)
    )


def ranked_pool(
    hits: Sequence[RetrievedItem],
    namespace: tuple[str, ...],
    *,
    min_similarity: float | None,
    as_of: datetime | None,
    now: datetime,
) -> list[RetrievedItem]:
    """The hits of one search a learned ranker scores: those in ``namespace`` itself that clear
    the similarity floor and were written by ``as_of``, in fused order."""
    return [
        hit
        for hit in hits
        if hit.namespace == namespace
        and _passes(hit, min_similarity)
        and (as_of is None or written_at(hit.value, now) <= as_of)
    ]


def _learned(
    ranker: LearnedRanker,
    query: str,
    hits: Sequence[RetrievedItem],
    namespace: tuple[str, ...],
    *,
    keep: int,
    min_similarity: float | None,
    as_of: datetime | None,
    now: datetime,
) -> list[RetrievedItem]:
    """The best ``keep`` of the pool by ``ranker``, then the hits under the floor that fusion would
    have kept (scored 0: they stay only when a source exchange passed, as with fusion)."""
    pool = ranked_pool(hits, namespace, min_similarity=min_similarity, as_of=as_of, now=now)
    below = [dataclasses.replace(h, score=0.0) for h in hits[:keep] if not _passes(h, min_similarity)]
    return [*ranker.rerank(query, pool, now, keep=keep), *below]


def pool_steps(
    scope: Scope,
    layout: MemoryLayout,
    query: str,
    *,
    compartments: Sequence[Compartment],
    retrieval: RetrievalConfig,
    min_similarity: float | None,
    now: datetime | None = None,
) -> StoreSteps[Pool]:
    """The pools of ``query`` in ``compartments`` a learned ranker reads (a recall's, with these
    fields of its :class:`~.rank.RecallConfig`), as store steps (one request), with each
    candidate's features: what the training script dumps."""
    now = now or utc_now()
    searches = _searchable(layout, scope, compartments)
    prefixes = [ns for _, ns in searches]
    pages = yield from fused_search_steps(retrieval, prefixes, query, limit=pool_limit(retrieval), now=now)
    hits = [
        ranked_pool(page, ns, min_similarity=min_similarity, as_of=None, now=now)
        for ns, page in zip(prefixes, pages, strict=True)
    ]
    return Pool(hits, [candidate_features(query, page, now) for page in hits])


def search_candidates(
    searches: Sequence[tuple[Compartment, tuple[str, ...]]],
    query: str,
    *,
    limit: int,
    retrieval: RetrievalConfig | None = None,
    min_similarity: float | None = None,
    signals: dict[tuple[tuple[str, ...], str], RetrievedItem] | None = None,
    dropped: list[Considered] | None = None,
    as_of: datetime | None = None,
    now: datetime | None = None,
    ranker: LearnedRanker | None = None,
    keep: int = 20,
) -> StoreSteps[list[StoredMemory]]:
    """The candidate search of recall: one search per namespace, all in one request to the store.

    This is the one place recall asks a store for candidates. With ``retrieval``,
    :func:`~langmem_plugin.services.recall.retrieval.fused_search_steps` over the namespaces:
    one candidate request, the lists fused per namespace; scores are the fused
    scores, and a candidate that shares no word with the query (no BM25 score) needs
    a dense similarity of at least ``min_similarity``, so an unrelated memory is not
    injected just for being the best of a poor lot — unless an exchange it came from passed: it
    then takes that exchange's score (:mod:`.sources`) — (``dropped`` collects those when given, and
    ``signals`` each hit's scores by namespace and key). Without ``retrieval``, one store
    search per namespace, in one batch; scores are the store's own (higher is
    better), or ``None`` when the store has no index. With ``as_of``, what was written after it
    is left out, as if it were not stored. A time the query names ("last week") is read from
    ``now``, else ``as_of``, else now. With ``ranker`` (and ``retrieval``), the fused hits of each
    namespace that clear the floor are ordered by the learned model instead, its score replacing
    the fused score, and the best ``keep`` go on.
    """
    found: list[StoredMemory] = []
    if retrieval is None:
        pages = yield [SearchOp(ns, query=query, limit=limit) for _, ns in searches]
        for (comp, ns), page in zip(searches, pages, strict=True):
            found.extend(
                m
                for item in page
                if tuple(item.namespace) == ns
                and (m := to_stored(item, comp))
                and _written_by(m.record, as_of)
            )
        return found
    prefixes = [ns for _, ns in searches]
    pages_hits = yield from fused_search_steps(retrieval, prefixes, query, limit=limit, now=now or as_of)
    if ranker is not None:
        when = now or as_of or utc_now()
        pages_hits = [
            _learned(ranker, query, hits, ns, keep=keep, min_similarity=min_similarity, as_of=as_of, now=when)
            for ns, hits in zip(prefixes, pages_hits, strict=True)
        ]
    below: list[tuple[Compartment, tuple[str, ...], MemoryRecord, RetrievedItem]] = []
    for (comp, ns), hits in zip(searches, pages_hits, strict=True):
        for hit in hits:
            if hit.namespace != ns:
                continue
            try:
                record = MemoryRecord.from_value(hit.value)
            except InvalidRecordError:
                continue
            if not _written_by(record, as_of):
                continue
            unscored = hit.dense_score is None and hit.lexical_score is None  # a store with no index
            if (
                min_similarity is not None
                and not unscored
                and hit.lexical_score is None
                and (hit.dense_score is None or hit.dense_score < min_similarity)
            ):
                below.append((comp, ns, record, hit))
                continue
            if signals is not None:
                signals[(ns, hit.key)] = hit
            found.append(StoredMemory(hit.key, comp, ns, record, None if unscored else hit.score))
    sourced = source_scores(found, as_of)  # a memory is kept when an exchange it came from passed
    for comp, ns, record, hit in below:
        inherited = inherited_score(record, sourced)
        if inherited is None:
            if dropped is not None:
                dropped.append(_considered(hit.key, comp, record, "below threshold", hit))
            continue
        score = max(hit.score, inherited)
        hit = dataclasses.replace(hit, score=score, lifts=(*hit.lifts, (SOURCE_LIFT, score - hit.score)))
        if signals is not None:
            signals[(ns, hit.key)] = hit
        found.append(StoredMemory(hit.key, comp, ns, record, score))
    return found


def _considered(
    key: str,
    compartment: Compartment,
    record: MemoryRecord,
    outcome: str,
    hit: RetrievedItem | None,
    relevance: float | None = None,
    **more: Any,
) -> Considered:
    if hit is not None:
        relevance = hit.score
    return Considered(
        key,
        compartment.value,
        record.content,
        outcome,
        None if relevance is None else round(relevance, 4),
        None if hit is None or hit.dense_score is None else round(hit.dense_score, 4),
        None if hit is None or hit.lexical_score is None else round(hit.lexical_score, 4),
        () if hit is None else tuple((name, round(value, 4)) for name, value in hit.lifts),
        **more,
    )


def _searchable(
    layout: MemoryLayout, scope: Scope, compartments: Sequence[Compartment]
) -> list[tuple[Compartment, tuple[str, ...]]]:
    """The compartments the scope can name, with their namespaces; a ScopeError if none."""
    found: list[tuple[Compartment, tuple[str, ...]]] = []
    first: ScopeError | None = None
    for compartment in compartments:
        try:
            found.append((compartment, layout.namespace(compartment, scope)))
        except ScopeError as exc:
            first = first or exc
    if not found and first is not None:
        raise first
    return found


def _written_by(record: MemoryRecord, as_of: datetime | None) -> bool:
    """Whether ``record`` existed at ``as_of`` (always, without one)."""
    return as_of is None or record.created_at <= as_of
