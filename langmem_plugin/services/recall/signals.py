"""Recall's built-in lifts from what a question names: a time, a speaker.

Both run in the fusion of :mod:`.retrieval` after the neighbour and session lifts, in the fused
score's units (standard deviations of the signals), switched by
:class:`~langmem_plugin.services.recall.retrieval.RetrievalConfig`'s ``time_weight`` and
``speaker_weight``:

- :func:`time_lift`: a candidate dated inside a period the question names (:mod:`.when`), or
  up to ``after_days`` after it (what happened is often told later);
- :class:`SpeakerNames`: a candidate said by someone the question names, names compared as the
  lexical index reads words (:class:`~langmem_plugin.core.lexical.BM25Encoder`: case, plurals and
  possessives do not matter; stop words never match).

>>> from datetime import UTC, datetime
>>> from langmem_plugin.services.recall.when import question_periods
>>> periods = question_periods("What did Kevin do on 21.01.2024?", datetime(2024, 2, 1, tzinfo=UTC))
>>> dates = [datetime(2024, 1, 21, 9, tzinfo=UTC), datetime(2023, 5, 1, tzinfo=UTC)]
>>> time_lift(dates, [0.5, 0.9], periods, 1.4, 0.0)
[1.9, 0.9]
>>> SPEAKERS.lift("What did Kevin watch?", ["Kevin", "Elise", ""], [0.0, 0.0, 0.0], 1.2)
[1.2, 0.0, 0.0]
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import UTC, datetime

from langgraph.store.base import Item

from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.services.recall.fusion import field_text
from langmem_plugin.services.recall.when import Period

__all__ = ["SPEAKERS", "SpeakerNames", "dated", "time_lift"]

_NAMES_KEPT = 10_000  # distinct speaker names whose words are remembered


def dated(item: Item, path: str) -> datetime:
    """The date at ``path`` in the item's value (ISO 8601), else the store's ``created_at``; UTC."""
    when = item.created_at
    stamp = field_text(item.value, path) if path else ""
    if stamp:
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(stamp)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def time_lift(
    dates: Sequence[datetime],
    scores: Sequence[float],
    periods: Sequence[Period],
    weight: float,
    after_days: float,
) -> list[float]:
    """``scores``, each plus ``weight`` when its date is in one of ``periods`` (or just after)."""
    return [
        score + weight if any(period.holds(when, after_days) for period in periods) else score
        for when, score in zip(dates, scores, strict=True)
    ]


class SpeakerNames:
    """Who a question names, read as the lexical index reads words (one per process: :data:`SPEAKERS`)."""

    def __init__(self) -> None:
        self._encoder = BM25Encoder()
        self._words: dict[str, frozenset[int]] = {}

    def words(self, text: str) -> frozenset[int]:
        """The lexical terms of ``text`` (a name: remembered)."""
        found = self._words.get(text)
        if found is None:
            found = frozenset(self._encoder.encode_query(text).indices) if text else frozenset()
            if len(self._words) < _NAMES_KEPT:
                self._words[text] = found
        return found

    def lift(
        self, query: str, speakers: Sequence[str], scores: Sequence[float], weight: float
    ) -> list[float]:
        """``scores``, each plus ``weight`` when the query names its speaker."""
        asked = frozenset(self._encoder.encode_query(query).indices)
        return [
            score + weight if speaker and not asked.isdisjoint(self.words(speaker)) else score
            for speaker, score in zip(speakers, scores, strict=True)
        ]


#: The one :class:`SpeakerNames` of the process (its cache of names is shared by every search).
SPEAKERS = SpeakerNames()
