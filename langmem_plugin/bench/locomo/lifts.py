"""The LoCoMo recipe's lifts: the speaker, the date and how much a turn tells.

Benchmark code, written over the product's one extension point,
:class:`~langmem_plugin.services.recall.retrieval.Lift` (``RetrievalConfig(lifts=(...))``).
Each lift reads what it needs from each candidate of a hybrid search and adds
to its fused score,
in the fused score's units (standard deviations of the signals):

- :class:`MentionLift`: a memory from or about someone the query names (the
  speaker, compared as BM25 tokens, so case and possessives do not matter);
- :class:`PeriodLift`: a memory dated in the day or month the query names
  (:func:`query_period`, English month names), or up to ``after_days`` after it;
- :class:`SalienceLift`: a memory that tells rather than reacts or asks back
  (:func:`~langmem_plugin.bench.locomo.salience.memory_salience`).

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.services.recall.retrieval import HybridRetriever, RetrievalConfig
>>> from langmem_plugin.testing import FakeEmbeddings
>>> store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
>>> config = RetrievalConfig(lifts=(MentionLift("metadata.speaker", weight=2.0),))
>>> store.put(("c",), "ann", {"content": "I adopted a puppy last week", "metadata": {"speaker": "Ann"}})
>>> store.put(("c",), "bob", {"content": "I adopted a puppy", "metadata": {"speaker": "Bob"}})
>>> [hit.key for hit in HybridRetriever(store, config).search(("c",), "When did Ann adopt a puppy?")]
['ann', 'bob']
"""

from __future__ import annotations

import calendar
import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import Item

from langmem_plugin.bench.locomo.salience import memory_salience
from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.services.recall import field_text

__all__ = ["MentionLift", "PeriodLift", "SalienceLift", "query_period"]

_TERM_CACHE = 10_000  # distinct values whose BM25 terms are remembered


@dataclass(frozen=True)
class MentionLift:
    """``weight`` for a candidate whose ``path`` (in its value: ``"metadata.speaker"``) the query names.

    "Names" means any of the words there, as BM25 tokenises them (``encoder``: use the
    retriever's, so both read words the same way), is one of the query's.
    """

    path: str
    weight: float = 1.2
    encoder: BM25Encoder = field(default_factory=BM25Encoder, compare=False)
    _terms: dict[str, frozenset[int]] = field(default_factory=dict, init=False, compare=False, repr=False)

    def feature(self, item: Item) -> frozenset[int]:
        named = field_text(item.value, self.path)
        if not named:
            return frozenset()
        terms = self._terms.get(named)
        if terms is None:
            terms = frozenset(self.encoder.encode_query(named).indices)
            if len(self._terms) < _TERM_CACHE:
                self._terms[named] = terms
        return terms

    def __call__(
        self, query: str, features: Sequence[frozenset[int]], scores: Sequence[float]
    ) -> list[float]:
        asked = frozenset(self.encoder.encode_query(query).indices)
        weight = self.weight
        return [weight if not asked.isdisjoint(named) else 0.0 for named in features]


@dataclass(frozen=True)
class PeriodLift:
    """``weight`` for a candidate dated in the period the query names, or up to ``after_days`` after it.

    The period is a day or a month with its year ("on 7 May 2023", "in June 2023"; :func:`query_period`):
    what happened is often told later. A candidate's date is the ISO-8601 date at ``path`` in its
    value (a memory record's ``created_at``, which imports may set to the past), else the item's
    ``created_at`` in the store.
    """

    weight: float = 1.4
    after_days: float = 30.0
    path: str | None = "created_at"

    def feature(self, item: Item) -> datetime:
        created = item.created_at
        if self.path and (stamp := field_text(item.value, self.path)):
            with contextlib.suppress(ValueError):
                created = datetime.fromisoformat(stamp)
        return created if created.tzinfo is not None else created.replace(tzinfo=UTC)

    def __call__(self, query: str, features: Sequence[datetime], scores: Sequence[float]) -> list[float]:
        period = query_period(query)
        if period is None:
            return [0.0] * len(features)
        start, end = period
        end += timedelta(days=self.after_days)
        weight = self.weight
        return [weight if start <= created < end else 0.0 for created in features]


@dataclass(frozen=True)
class SalienceLift:
    """``weight`` times ``score(value)``: how much a memory is worth recalling whatever the query."""

    score: Callable[[Mapping[str, Any]], float] = memory_salience
    weight: float = 1.2

    def feature(self, item: Item) -> float:
        return float(self.score(item.value))

    def __call__(self, query: str, features: Sequence[float], scores: Sequence[float]) -> list[float]:
        weight = self.weight
        return [weight * salience for salience in features]


_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): n for n, name in enumerate(calendar.month_abbr) if name})
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_FIRST = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.IGNORECASE)


def query_period(query: str) -> tuple[datetime, datetime] | None:
    """The day or month a query names, as ``[start, end)`` in UTC; ``None`` when it names neither.

    >>> [d.date().isoformat() for d in query_period("Where was Dave on October 3, 2023?")]
    ['2023-10-03', '2023-10-04']
    >>> [d.date().isoformat() for d in query_period("What did she start in June 2023?")]
    ['2023-06-01', '2023-07-01']
    >>> query_period("What did she do in 2023?") is None
    True
    """
    try:
        if m := _MONTH_FIRST.search(query):
            start = datetime(int(m[3]), _MONTHS[m[1].lower()], int(m[2]), tzinfo=UTC)
            return start, start + timedelta(days=1)
        if m := _DAY_FIRST.search(query):
            start = datetime(int(m[3]), _MONTHS[m[2].lower()], int(m[1]), tzinfo=UTC)
            return start, start + timedelta(days=1)
        if m := _MONTH_YEAR.search(query):
            year, month = int(m[2]), _MONTHS[m[1].lower()]
            end = (
                datetime(year + 1, 1, 1, tzinfo=UTC)
                if month == 12
                else datetime(year, month + 1, 1, tzinfo=UTC)
            )
            return datetime(year, month, 1, tzinfo=UTC), end
    except ValueError:  # "February 30, 2023"
        return None
    return None
