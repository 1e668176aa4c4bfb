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
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.services.recall.retrieval import RetrievedItem

__all__ = ["FEATURES", "TOP", "candidate_features", "feature_matrix", "text_terms", "written_at"]

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
_LIFT_COLUMNS = {lift: FEATURES.index(f"{lift}_lift") for lift in ("neighbours", "group", "time", "speaker")}
_PER_ROW = [  # the columns computed candidate by candidate, in this order
    FEATURES.index(f)
    for f in (
        "query_cover",
        "name_cover",
        "top_overlap",
        "bridge",
        "neighbour_in_top",
        "session_in_top",
        "opens_session",
    )
]
_TEXTS_KEPT = 4096


def text_terms(text: str) -> frozenset[int]:
    """The lexical terms of ``text``, read as the lexical index reads words (stemmed, stop words
    left out). Those of the last :data:`_TEXTS_KEPT` short texts are kept: the same memories come
    back question after question (the features here, the near-duplicate rule of the fitting)."""
    return _short_terms(text) if len(text) <= _KEPT_CHARS else frozenset(_WORDS.encode_query(text).indices)


_KEPT_CHARS = 4000


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _short_terms(text: str) -> frozenset[int]:
    return frozenset(_WORDS.encode_query(text).indices) if text else frozenset()


def _names(query: str) -> frozenset[int]:
    """The lexical terms of the capitalised words of ``query`` but its first word."""
    found = _NAME.findall(query)
    words = [w for n, w in enumerate(found) if n or not query.lstrip().startswith(w)]
    return text_terms(" ".join(words))


def _places(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """``log(1 + place)`` of each value among the ``present`` ones, best first (ties in pool order;
    absent: the last place)."""
    place = np.full(len(values), float(len(values)))
    order = np.flatnonzero(present)
    order = order[np.argsort(-values[order], kind="stable")]
    place[order] = np.arange(len(order), dtype=np.float64)
    out: np.ndarray = np.log1p(place)
    return out


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
    return feature_matrix(query, hits, now).tolist()  # type: ignore[no-any-return]


def feature_matrix(query: str, hits: Sequence[RetrievedItem], now: datetime) -> np.ndarray:
    """:func:`candidate_features` as an array (candidates x :data:`FEATURES`): what the ranker scores."""
    n = len(hits)
    out = np.zeros((n, len(FEATURES)))
    if not n:
        return out
    values = [h.value for h in hits]
    contents = [str(v.get("content") or "") for v in values]
    metas = [m if isinstance(m := v.get("metadata"), Mapping) else {} for v in values]
    fused = np.fromiter((h.score for h in hits), np.float64, n)
    has_dense = np.fromiter((h.dense_score is not None for h in hits), bool, n)
    has_lexical = np.fromiter((h.lexical_score is not None for h in hits), bool, n)
    dense = np.fromiter((h.dense_score or 0.0 for h in hits), np.float64, n)
    lexical = np.fromiter((h.lexical_score or 0.0 for h in hits), np.float64, n)
    column = {name: out[:, i] for i, name in enumerate(FEATURES)}  # views: written in place
    column["fused"][:] = fused
    column["fused_gap"][:] = fused.max() - fused
    column["fused_rank"][:] = _places(fused, np.ones(n, dtype=bool))
    floor = dense[has_dense].min() if has_dense.any() else 0.0
    column["dense"][:] = np.where(has_dense, dense, floor - 0.05)
    column["has_dense"][:] = has_dense
    column["dense_rank"][:] = _places(dense, has_dense)
    column["lexical"][:] = lexical / (lexical.max() or 1.0)
    column["has_lexical"][:] = has_lexical
    column["lexical_rank"][:] = _places(lexical, has_lexical)
    for i, hit in enumerate(hits):
        for name, value in hit.lifts:
            if name in _LIFT_COLUMNS:
                out[i, _LIFT_COLUMNS[name]] += value
    for name in ("time_lift", "speaker_lift"):  # whether the lift applied, not how much
        column[name][:] = column[name] > 0
    asked = text_terms(query)
    names = _names(query)
    terms = [text_terms(text) for text in contents]
    top = [int(i) for i in np.argsort(-fused, kind="stable")[:TOP]]
    top_keys = {hits[i].key for i in top}
    top_groups = {i: _group(metas[i]) for i in top}
    everyone = frozenset().union(*(terms[i] for i in top))  # the best candidates' words
    beyond = everyone - asked
    top_count = Counter(top_groups.values())  # how many of the best are of each session
    per_row: list[tuple[float, ...]] = []
    for i, mine in enumerate(terms):
        if i in top_groups:
            others = frozenset().union(*(terms[j] for j in top if j != i))
            past = others - asked
        else:
            others, past = everyone, beyond
        told = mine - asked
        meta = metas[i]
        group = _group(meta)
        per_row.append(
            (
                len(mine & asked) / len(asked) if asked else 0.0,
                len(mine & names) / len(names) if names else 0.0,
                len(mine & others) / (len(mine) + 1),
                len(told & past) / (len(told) + 1),
                1.0 if top_keys.intersection(str(meta.get("neighbours") or "").split()) else 0.0,
                1.0 if group and top_count.get(group, 0) > (top_groups.get(i) == group) else 0.0,
                0.0 if meta.get("previous") else 1.0,
            )
        )
    out[:, _PER_ROW] = per_row
    column["length"][:] = np.log1p(np.fromiter(map(len, contents), np.float64, n))
    column["asks"][:] = np.fromiter(("?" in text for text in contents), bool, n)
    stamps = np.fromiter((written_at(v, now).timestamp() for v in values), np.float64, n)
    column["age"][:] = np.log1p(np.maximum(stamps.max() - stamps, 0.0) / 86400.0)
    return out
