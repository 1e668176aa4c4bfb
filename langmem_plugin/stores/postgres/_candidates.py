"""``search_candidates`` on Postgres: the dense and the BM25 top-N of each query, raw and unfused.

All the queries of one call are answered by **one statement** (one round trip) in the usual case:

1. before it, each query's dense text is *guessed*: the query without the words that were
   background (``background_df``) the last time this process searched the same prefix and
   filter (:class:`Verdicts`; the query itself when nothing is known), and every guessed text is
   embedded in one request;
2. the statement holds, per query, the lexical part (:func:`~._sql.lexical_with_stats`: the
   searched items' count and each term's document frequency, then the BM25 top-N with the idf
   computed from them) and the dense part (exact cosine over the namespace's vectors, pgvector),
   ``limit`` each; the expiries of what they return are pushed in the same statement;
3. the counts that came back decide each query's true dense text
   (:func:`~langmem_plugin.core.candidates.without_background`, exactly as before); a query
   whose guess was wrong (a word became background, or stopped being) — or whose capped dense
   list came back short — has its dense list read again, embedded anew, in a second statement.

So a guess only saves a round trip; it never changes an answer. Recall fuses the lists
(:mod:`langmem_plugin.services.recall.retrieval`); nothing is fused here. With a filter that
Postgres cannot check exactly (a list or dict operand, ``$in``, ranges...), each list reads
``limit × 8`` rows and the filter is checked here; a list may then come back short when fewer
than one row in eight matches.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from langmem_plugin.core.candidates import CandidateQuery, Candidates, background_terms, without_background
from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import parse_filter, search_sort_key
from langmem_plugin.stores._validation import validate_op
from langmem_plugin.stores.postgres._ops import item_of
from langmem_plugin.stores.postgres._sql import Filtered, dense_candidates, lexical_with_stats, split_filter

__all__ = ["CAP_MARGIN", "COMMON_SHARE", "OVERFETCH", "CandidatePlan", "Verdicts", "plan_queries", "shaped"]

#: How many rows a list reads per candidate when part of the filter is checked in Python.
OVERFETCH = 8
#: Without a filter, the dense list joins its best ``limit + CAP_MARGIN`` vectors' items only.
CAP_MARGIN = 16
#: The query's terms are *common* under a prefix when, at the last count, the items holding them
#: add up to this share of the searched items or more: the lexical part then reads the namespace
#: twice rather than keeping the items that hold a term (see :func:`~._sql.lexical_with_stats`;
#: the same lists either way).
COMMON_SHARE = 0.5
_MAX_SCOPES = 10_000


class Verdicts:
    """The last counts seen per searched prefix and filter: what the next dense text is guessed
    from (thread-safe, bounded)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, dict[int, int]]] = {}
        self._lock = threading.Lock()

    def get(self, scope: str) -> tuple[int, dict[int, int]] | None:
        with self._lock:
            return self._seen.get(scope)

    def put(self, scope: str, total: int, freqs: dict[int, int]) -> None:
        with self._lock:
            if len(self._seen) >= _MAX_SCOPES:
                self._seen.clear()
            known = self._seen.get(scope, (0, {}))[1]
            self._seen[scope] = (total, {**known, **freqs})


@dataclass
class CandidatePlan:
    """One query of a call, as the statement's answer fills it in."""

    query: CandidateQuery
    filtered: Filtered
    terms: list[int]
    scope: str
    guess: str = ""
    common: bool = False
    total: int = 0
    freqs: dict[int, int] = field(default_factory=dict)

    @property
    def limit(self) -> int:
        """How many rows each list reads (more when part of the filter is checked here)."""
        return self.query.limit * (OVERFETCH if self.filtered.residual else 1)

    @property
    def capped(self) -> bool:
        """Whether the dense list ranks the vectors before reading items (no filter at all)."""
        return self.query.filter is None

    @property
    def refresh_ok(self) -> bool:
        """Whether every row read is returned (no filter checked here), so its expiry may be pushed."""
        return not self.filtered.residual

    def guess_text(self, verdicts: Verdicts, encoder: BM25Encoder) -> str:
        """The dense text the last counts under this prefix and filter give (see the module); the
        same counts say whether the query's terms are common there (:func:`~._sql.lexical_with_stats`)."""
        seen = verdicts.get(self.scope)
        q = self.query
        if seen is None:
            self.guess = q.query
        else:
            total, freqs = seen
            self.guess = without_background(
                q.query, encoder, freqs.get, total, q.background_df, q.background_min_docs
            )
            self.common = total > 0 and sum(freqs.get(t, 0) for t in self.terms) >= COMMON_SHARE * total
        return self.guess

    def dense_text(self, encoder: BM25Encoder) -> str | None:
        """The true dense text, from the counts of this statement (None: nothing searched)."""
        if self.total == 0:
            return None
        q = self.query
        return without_background(
            q.query, encoder, self.freqs.get, self.total, q.background_df, q.background_min_docs
        )

    def lexical_part(self, now: datetime) -> tuple[str, dict[str, Any], bool]:
        params: dict[str, Any] = {}
        filtered = split_filter(parse_filter(self.query.filter), params)
        statement, own = lexical_with_stats(
            self.query.namespace_prefix, filtered, self.terms, self.limit, now, common=self.common
        )
        return statement, own | params, self.refresh_ok

    def dense_part(
        self, vector: Sequence[float], vector_type: str, now: datetime, *, capped: bool, vectors_per_item: int
    ) -> tuple[str, dict[str, Any], bool]:
        params: dict[str, Any] = {}
        filtered = split_filter(parse_filter(self.query.filter), params)
        statement, own = dense_candidates(
            self.query.namespace_prefix,
            filtered,
            vector,
            vector_type,
            self.limit,
            0,
            now,
            refresh=False,
            cap=self.limit + CAP_MARGIN if capped else None,
            vectors_per_item=vectors_per_item,
        )
        return statement, own | params, self.refresh_ok

    def take_stats(self, row: Mapping[str, Any], verdicts: Verdicts) -> None:
        """Read the lexical part's first row: the searched items' count and each term's."""
        self.total = int(row["total"])
        self.freqs = dict(zip(self.terms, (int(n) for n in row["freqs"]), strict=True))
        verdicts.put(self.scope, self.total, self.freqs)

    def short(self, dense_rows: int) -> bool:
        """Whether a capped dense list came back short of what the namespace holds (an expired item
        among the best, or items with several vectors): it is then read again without the cap."""
        return self.capped and dense_rows < min(self.query.limit, self.total)


def plan_queries(queries: Sequence[CandidateQuery], encoder: BM25Encoder) -> list[CandidatePlan]:
    """Check every query (a bad one raises before any I/O) and plan it."""
    plans = []
    for q in queries:
        if not isinstance(q, CandidateQuery):
            raise ConfigurationError(f"search_candidates takes CandidateQuery objects, got {q!r}")
        validate_op(SearchOp(q.namespace_prefix, q.filter, q.limit, 0, q.query))
        filtered = split_filter(parse_filter(q.filter), {})
        scope = json.dumps(
            [q.namespace_prefix, q.filter, q.background_df, q.background_min_docs],
            sort_keys=True,
            default=str,
        )
        plans.append(CandidatePlan(q, filtered, background_terms(q.query, encoder), scope))
    return plans


def shaped(plan: CandidatePlan, rows: Sequence[Mapping[str, Any]]) -> list[SearchItem]:
    """A list's item rows as search items: the residual filter checked, best first, at most ``limit``."""
    items: list[SearchItem] = []
    for row in rows:
        if row["prefix"] is None:
            continue  # the statistics row
        item = item_of(row, float(row["score"]), scored=True)
        if isinstance(item, SearchItem) and all(c.matches(item.value) for c in plan.filtered.residual):
            items.append(item)
    items.sort(key=search_sort_key)
    return items[: plan.query.limit]


def candidates_of(
    plan: CandidatePlan, dense: list[SearchItem], lexical: list[SearchItem], text: str | None
) -> Candidates:
    return Candidates(dense=dense, lexical=lexical, dense_query=text or plan.query.query)
