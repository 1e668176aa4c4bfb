"""The steps of ``search_candidates``: the dense and the BM25 top-N of each query, raw and unfused.

Per query, against the engine:

1. with embeddings: one ``Count`` of the searched items that have a search
   vector (none: the query is answered with empty lists, nothing embedded); with
   ``background_df`` set, — when there are at least ``background_min_docs``
   of them — one BM25 probe per query term not decided recently, asking for at most
   ``ceil(background_df × total)`` ids. A probe that fills its limit marks a
   background word (the count it returns is capped at the threshold, which is all
   the rule needs), so no probe reads more than the threshold's worth of ids and
   nothing reads the namespace. A term's verdict is kept (:class:`TermVerdicts`)
   while the searched items number within 5% of the count it was taken at: a
   word's share of the items cannot move much before that;
2. one embedding request for the dense texts of every query of the call;
3. a dense query and a BM25 query of ``limit`` hits each, with expiry and the
   exact filter re-checked on every hit (topped up until ``limit`` pass, as
   ``search`` does).

The hits are the items as stored, scored by the engine: cosine for the dense
list (a multi-vector item scores its best vector), BM25 for the lexical one.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence

from langgraph.store.base import SearchItem, SearchOp

from langmem_plugin.core.candidates import CandidateQuery, Candidates, background_terms, without_background
from langmem_plugin.core.lexical import SparseVector
from langmem_plugin.core.steps import Steps
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import Condition, parse_filter
from langmem_plugin.stores._validation import validate_op
from langmem_plugin.stores.qdrant._batch import Refresh
from langmem_plugin.stores.qdrant._calls import Call, Count, EmbedQueries, Hit, Nearest, Query
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._filters import Filter, Match, live, native
from langmem_plugin.stores.qdrant._layout import DENSE, SPARSE, search_item_of, tiebreak
from langmem_plugin.stores.qdrant._search import fetch_ranked
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
    refresh = Refresh()
    plans = []
    for q in queries:
        conditions = parse_filter(q.filter)
        base = Filter(live(now_us, q.namespace_prefix).must[:-1]).and_(*native(conditions))
        dense_text: str | None = q.query
        if config.dims is not None:
            indexed = base.and_(Match("indexed", 1))
            total: int = yield Count(indexed)  # nothing searchable here: no embedding, no query
            dense_text = (
                (yield from _without_background(config, q, indexed, total, verdicts)) if total else None
            )
        plans.append((q, conditions, base, dense_text))

    vectors: dict[str, list[float]] = {}
    if config.dims is not None:
        texts = tuple(dict.fromkeys(text for _, _, _, text in plans if text is not None))
        if texts:
            embedded: list[list[float]] = yield EmbedQueries(texts)
            vectors = dict(zip(texts, (checked(config, v) for v in embedded), strict=True))

    out: list[Candidates] = []
    for q, conditions, base, dense_text in plans:
        if config.dims is not None and dense_text is None:
            out.append(Candidates(dense=[], lexical=[], dense_query=q.query, lexical_index=True))
            continue

        def check(hit: Hit, conditions: list[Condition] = conditions) -> bool:
            if int(hit.payload["expires_us"]) <= now_us:
                return False
            value = hit.payload["value"]
            return all(c.matches(value) for c in conditions)

        dense: list[Hit] = []
        if config.dims is not None and dense_text is not None:
            rank = Nearest(DENSE, [vectors[dense_text]])
            dense = yield from fetch_ranked(base, rank, q.limit, check)
        lexical: list[Hit] = []
        sparse = config.encoder.encode_query(q.query)
        if sparse:
            lexical = yield from fetch_ranked(base, Nearest(SPARSE, sparse), q.limit, check)
        if config.ttl.refresh(None):
            for hit in (*dense, *lexical):
                refresh.add(hit)
        out.append(
            Candidates(
                dense=_items(dense),
                lexical=_items(lexical),
                dense_query=dense_text or q.query,
                lexical_index=True,
            )
        )
    yield from refresh.calls(now_us)
    return out


def _items(hits: list[Hit]) -> list[SearchItem]:
    ranked = sorted(hits, key=lambda h: (-(h.score or 0.0), *tiebreak(h.payload)))
    return [search_item_of(h.payload, h.score) for h in ranked]


def _without_background(
    config: BatchConfig, q: CandidateQuery, indexed: Filter, total: int, verdicts: TermVerdicts
) -> Steps[Call, str]:
    """The query without its background words, found by one capped probe per term (``total``: the
    searched items with a search vector)."""
    if q.background_df is None or total < q.background_min_docs:
        return q.query
    cap = max(1, math.ceil(q.background_df * total))
    scope = json.dumps([q.namespace_prefix, q.filter, q.background_df], sort_keys=True, default=str)
    freq: dict[int, int] = {}
    for term in background_terms(q.query, config.encoder):
        background = verdicts.get(scope, term, total)
        if background is None:
            probe = Nearest(SPARSE, SparseVector((term,), (1.0,)))
            hits: list[Hit] = yield Query(indexed, probe, cap, with_payload=False)  # ids only
            background = len(hits) >= cap
            verdicts.put(scope, term, total, background)
        freq[term] = total if background else 0
    threshold, min_docs = q.background_df, q.background_min_docs
    return without_background(q.query, config.encoder, freq.get, total, threshold, min_docs)
