"""What the learned ranker reads of each candidate: the signals recall already computes.

:func:`candidate_features` turns one search's pool (the fused candidates of
:mod:`.retrieval`, each with its dense and lexical scores and the lifts it got) into one row of
numbers per candidate, named by :data:`FEATURES`:

- the fused score, and the candidate's place in the pool by it;
- the dense similarity and the BM25 score (scaled to the pool's best), each with its place in
  its own list and whether the candidate is in that list at all;
- what the neighbour, session, time and speaker lifts added;
- how much of the question it covers: its share of the question's words and of the names the
  question gives (capitalised words), read as the lexical index reads words (stemmed, stop
  words left out);
- how much it shares with the other best candidates, past the question's own words (a second
  hop names what the first hop told);
- whether a neighbour of it or another candidate of its session is among the best;
- its length, whether it asks, whether it opens its session, and its age against the newest
  candidate.

Every value is a plain number computed from the pool alone: nothing is fitted here, so the same
rows serve the ranker that scores them (:mod:`.learned`) and the script that trains it
(``python -m langmem_plugin.bench.train_ranker``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.services.recall.retrieval import RetrievedItem

__all__ = ["FEATURES", "TOP", "candidate_features", "written_at"]

#: How many of the pool's best (by fused score) count as "the best candidates".
TOP = 5

#: The name of each column :func:`candidate_features` gives, in order.
FEATURES: tuple[str, ...] = (
    "fused",
    "fused_gap",
    "fused_rank",
    "dense",
    "has_dense",
    "dense_rank",
    "lexical",
    "has_lexical",
    "lexical_rank",
    "neighbours_lift",
    "group_lift",
    "time_lift",
    "speaker_lift",
    "query_cover",
    "name_cover",
    "top_overlap",
    "bridge",
    "neighbour_in_top",
    "session_in_top",
    "length",
    "asks",
    "opens_session",
    "age",
)

_WORDS = BM25Encoder()
_NAME = re.compile(r"(?<![\w'])[A-Z][\w'-]+")
_LIFTS = ("neighbours", "group", "time", "speaker")
_TEXTS_KEPT = 4096


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _terms(text: str) -> frozenset[int]:
    """The lexical terms of ``text`` (the texts of the last :data:`_TEXTS_KEPT` seen are kept:
    the same memories come back question after question)."""
    return frozenset(_WORDS.encode_query(text).indices) if text else frozenset()


def _names(query: str) -> frozenset[int]:
    """The lexical terms of the capitalised words of ``query`` but its first word."""
    found = _NAME.findall(query)
    words = [w for n, w in enumerate(found) if n or not query.lstrip().startswith(w)]
    return _terms(" ".join(words))


def _places(values: Sequence[float | None]) -> list[float]:
    """``log(1 + place)`` of each value among the present ones, best first (absent: the last place)."""
    order = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: -(values[i] or 0.0))
    place = dict.fromkeys(range(len(values)), float(len(values)))
    for n, i in enumerate(order):
        place[i] = float(n)
    return [math.log1p(place[i]) for i in range(len(values))]


def _group(meta: Mapping[str, Any]) -> str:
    return str(meta.get("session_id") or meta.get("session") or meta.get("thread_id") or "")


def written_at(value: Mapping[str, Any], default: datetime) -> datetime:
    """When a stored memory was written (its value's ``created_at``; naive: UTC), else ``default``."""
    stamp = value.get("created_at")
    when = default
    if isinstance(stamp, str):
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(stamp)
    elif isinstance(stamp, datetime):
        when = stamp
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def candidate_features(query: str, hits: Sequence[RetrievedItem], now: datetime) -> list[list[float]]:
    """One row of :data:`FEATURES` per candidate of one search's pool (``hits``, as stored values:
    no record is parsed). ``now`` stands in for a date a value lacks."""
    n = len(hits)
    if not n:
        return []
    contents = [str(h.value.get("content") or "") for h in hits]
    metas = [m if isinstance(m := h.value.get("metadata"), Mapping) else {} for h in hits]
    dates = [written_at(h.value, now) for h in hits]
    fused = [h.score for h in hits]
    best = max(fused)
    fused_place = _places(fused)
    dense_place = _places([h.dense_score for h in hits])
    lexical_place = _places([h.lexical_score for h in hits])
    dense_floor = min((h.dense_score for h in hits if h.dense_score is not None), default=0.0)
    lexical_top = max((h.lexical_score or 0.0 for h in hits), default=0.0) or 1.0
    asked = _terms(query)
    names = _names(query)
    terms = [_terms(text) for text in contents]
    top = sorted(range(n), key=lambda i: -fused[i])[:TOP]
    top_keys = {hits[i].key for i in top}
    top_groups = {i: _group(metas[i]) for i in top}
    everyone = frozenset().union(*(terms[i] for i in top))  # the best candidates' words
    newest = max(dates)
    rows: list[list[float]] = []
    for i, hit in enumerate(hits):
        lifts = dict.fromkeys(_LIFTS, 0.0)
        for name, value in hit.lifts:
            if name in lifts:
                lifts[name] += value
        mine = terms[i]
        others = everyone if i not in top_groups else frozenset().union(*(terms[j] for j in top if j != i))
        told = mine - asked
        shared = len(mine & others) / (len(mine) + 1)
        bridge = len(told & (others - asked)) / (len(told) + 1)
        meta = metas[i]
        around = str(meta.get("neighbours") or "").split()
        group = _group(meta)
        in_top = [g for j, g in top_groups.items() if j != i]
        rows.append(
            [
                hit.score,
                best - hit.score,
                fused_place[i],
                hit.dense_score if hit.dense_score is not None else dense_floor - 0.05,
                1.0 if hit.dense_score is not None else 0.0,
                dense_place[i],
                (hit.lexical_score or 0.0) / lexical_top,
                1.0 if hit.lexical_score is not None else 0.0,
                lexical_place[i],
                lifts["neighbours"],
                lifts["group"],
                1.0 if lifts["time"] > 0 else 0.0,
                1.0 if lifts["speaker"] > 0 else 0.0,
                len(mine & asked) / len(asked) if asked else 0.0,
                len(mine & names) / len(names) if names else 0.0,
                shared,
                bridge,
                1.0 if top_keys.intersection(around) else 0.0,
                1.0 if group and group in in_top else 0.0,
                math.log1p(len(contents[i])),
                1.0 if "?" in contents[i] else 0.0,
                0.0 if meta.get("previous") else 1.0,
                math.log1p(max((newest - dates[i]).total_seconds(), 0.0) / 86400.0),
            ]
        )
    return rows
