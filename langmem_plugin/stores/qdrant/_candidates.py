"""The steps of ``search_candidates``: the dense and the BM25 top-N of each query, raw and unfused.

Against the engine, for all the queries of one call:

1. with embeddings, per query: one ``Count`` of the searched items — with a filter,
   exactly, of those that have a search vector; without one, of the namespace, as
   the engine's index gives it — (none: the query is answered with empty lists,
   nothing embedded);
2. with ``background_df`` set (and at least ``background_min_docs`` such items):
   one BM25 probe per query term not decided recently, asking for at most
   ``ceil(background_df × total)`` ids — every probe of every query in one
   :class:`~._calls.QueryBatch` (one ``query_batch_points`` on a server). A probe
   that fills its limit marks a background word (the count it returns is capped at
   the threshold, which is all the rule needs), so no probe reads more than the
   threshold's worth of ids, and none reads a payload or the namespace. A term's
   verdict is kept (:class:`TermVerdicts`) while the searched items number within
   5% of the count it was taken at: a word's share of the items cannot move much
   before that;
3. one embedding request for the dense texts of every query;
4. the dense and the BM25 query of every query, ``limit`` hits each, in one
   ``QueryBatch``, with expiry and the exact filter re-checked on every hit (the
   lists short of ``limit`` after the check are topped up in another batch).

So a recall over user and session memory is, on a server, two counts, at most
one batch of probes and one batch of four queries: what comes back is the
candidates fused, and the probes' ids.

The hits are the items as stored, scored by the engine: cosine for the dense
list (a multi-vector item scores its best vector), BM25 for the lexical one.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langgraph.store.base import SearchItem, SearchOp

from langmem_plugin.core.candidates import CandidateQuery, Candidates, background_terms, without_background
from langmem_plugin.core.lexical import SparseVector
from langmem_plugin.core.steps import Steps
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import Condition, parse_filter
from langmem_plugin.stores._validation import validate_op
from langmem_plugin.stores.qdrant._batch import Refresh
from langmem_plugin.stores.qdrant._calls import Call, Count, EmbedQueries, Hit, Nearest, Query, QueryBatch
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._filters import Filter, Match, live, native
from langmem_plugin.stores.qdrant._layout import DENSE, SPARSE, search_item_of, tiebreak
from langmem_plugin.stores.qdrant._search import fetch_ranked_batch
from langmem_plugin.stores.qdrant._writes import checked

__all__ = ["TermVerdicts", "run_candidates"]

_DRIFT = 0.05  # a verdict holds while the searched items number within this share of its count
_MAX_VERDICTS = 50_000


class TermVerdicts:
    """Whether a query term is background under a prefix and filter, as last probed (thread-safe)."""

    def __init__(self) -> None:
        self._verdicts: dict[tuple[str, int], tuple[bool, int]] = {}
        self._lock = threading.Lock()

    def get(self, scope: str, term: int, total: int) -> bool | None:
        with self._lock:
            found = self._verdicts.get((scope, term))
        if found is None or abs(total - found[1]) > _DRIFT * found[1]:
            return None
        return found[0]

    def put(self, scope: str, term: int, total: int, background: bool) -> None:
        with self._lock:
            if len(self._verdicts) >= _MAX_VERDICTS:
                self._verdicts.clear()
            self._verdicts[(scope, term)] = (background, total)


def run_candidates(
    config: BatchConfig, queries: Sequence[CandidateQuery], now_us: int, verdicts: TermVerdicts
) -> Steps[Call, list[Candidates]]:
    """The steps of one ``search_candidates`` call: one :class:`Candidates` per query, in order."""
    for q in queries:
        if not isinstance(q, CandidateQuery):
            raise ConfigurationError(f"search_candidates takes CandidateQuery objects, got {q!r}")
        validate_op(SearchOp(q.namespace_prefix, q.filter, q.limit, 0, q.query))
    plans: list[_Plan] = []
    for q in queries:
        conditions = parse_filter(q.filter)
        base = Filter(live(now_us, q.namespace_prefix).must[:-1]).and_(*native(conditions))
        plan = _Plan(q, conditions, base, base.and_(Match("indexed", 1)))
        if config.dims is not None:
            # nothing here: no embedding, no query. A namespace alone is counted from its index (an
            # exact count reads every point of it: 1.4 ms for 10k points, 0.04 ms estimated)
            prefix = Filter(live(now_us, q.namespace_prefix).must[:-1])
            plan.total = yield (Count(plan.indexed) if conditions else Count(prefix, exact=False))
        plans.append(plan)

    if config.dims is not None:
        yield from _drop_background(config, plans, verdicts)
        texts = tuple(dict.fromkeys(p.dense_text for p in plans if p.dense_text is not None))
        if texts:
            embedded: list[list[float]] = yield EmbedQueries(texts)
            vectors = dict(zip(texts, (checked(config, v) for v in embedded), strict=True))
            for plan in plans:
                if plan.dense_text is not None:
                    plan.dense_vector = vectors[plan.dense_text]

    # every list of every query in one batch of engine queries
    wanted: list[tuple[Filter, Nearest, int, Callable[[Hit], bool]]] = []
    slots: list[tuple[int | None, int | None]] = []
    for plan in plans:
        check = _checker(plan.conditions, now_us)
        dense_at = lexical_at = None
        if plan.dense_vector is not None:
            dense_at = len(wanted)
            wanted.append((plan.base, Nearest(DENSE, [plan.dense_vector]), plan.query.limit, check))
        searchable = config.dims is None or plan.total > 0
        sparse = config.encoder.encode_query(plan.query.query) if searchable else None
        if sparse:
            lexical_at = len(wanted)
            wanted.append((plan.base, Nearest(SPARSE, sparse), plan.query.limit, check))
        slots.append((dense_at, lexical_at))
    lists: list[list[Hit]] = (yield from fetch_ranked_batch(wanted)) if wanted else []

    refresh = Refresh()
    out: list[Candidates] = []
    for plan, (dense_at, lexical_at) in zip(plans, slots, strict=True):
        dense = lists[dense_at] if dense_at is not None else []
        lexical = lists[lexical_at] if lexical_at is not None else []
        if config.ttl.refresh(None):
            for hit in (*dense, *lexical):
                refresh.add(hit)
        out.append(
            Candidates(
                dense=_items(dense),
                lexical=_items(lexical),
                dense_query=plan.dense_text or plan.query.query,
                lexical_index=True,
            )
        )
    yield from refresh.calls(now_us)
    return out


@dataclass
class _Plan:
    """One query of the call, as its steps fill it in."""

    query: CandidateQuery
    conditions: list[Condition]
    base: Filter
    indexed: Filter  # ``base``, and a search vector
    total: int = 0  # the searched items, as counted (with embeddings only)
    background: dict[int, bool] | None = None  # the verdict on each query term, when the rule applies
    dense_text: str | None = None  # the query without its background words (None: nothing to embed)
    dense_vector: list[float] | None = None


def _checker(conditions: list[Condition], now_us: int) -> Callable[[Hit], bool]:
    def check(hit: Hit) -> bool:
        if int(hit.payload["expires_us"]) <= now_us:
            return False
        value = hit.payload["value"]
        return all(c.matches(value) for c in conditions)

    return check


def _items(hits: list[Hit]) -> list[SearchItem]:
    ranked = sorted(hits, key=lambda h: (-(h.score or 0.0), *tiebreak(h.payload)))
    return [search_item_of(h.payload, h.score) for h in ranked]


def _drop_background(config: BatchConfig, plans: list[_Plan], verdicts: TermVerdicts) -> Steps[Call, None]:
    """Set each plan's ``dense_text``: its query without its background words, found by one capped,
    ids-only probe per query term not decided recently — all of them in one :class:`QueryBatch`."""
    probes: list[tuple[_Plan, str, int, int]] = []  # plan, scope, term, cap
    for plan in plans:
        q = plan.query
        if not plan.total:
            continue  # nothing searchable: nothing to embed
        plan.dense_text = q.query
        if q.background_df is None or plan.total < q.background_min_docs:
            continue
        cap = max(1, math.ceil(q.background_df * plan.total))
        scope = json.dumps([q.namespace_prefix, q.filter, q.background_df], sort_keys=True, default=str)
        plan.background = {}
        for term in background_terms(q.query, config.encoder):
            verdict = verdicts.get(scope, term, plan.total)
            if verdict is None:
                probes.append((plan, scope, term, cap))
            else:
                plan.background[term] = verdict
    if probes:
        calls = tuple(
            Query(plan.indexed, Nearest(SPARSE, SparseVector((term,), (1.0,))), cap, with_payload=False)
            for plan, _, term, cap in probes
        )
        pages: list[list[Hit]] = yield QueryBatch(calls)
        for (plan, scope, term, cap), hits in zip(probes, pages, strict=True):
            background = len(hits) >= cap  # a probe that fills its cap marks a background word
            verdicts.put(scope, term, plan.total, background)
            assert plan.background is not None
            plan.background[term] = background
    for plan in plans:
        q = plan.query
        if plan.background is None or q.background_df is None:
            continue
        freq = {term: plan.total if found else 0 for term, found in plan.background.items()}
        plan.dense_text = without_background(
            q.query, config.encoder, freq.get, plan.total, q.background_df, q.background_min_docs
        )
