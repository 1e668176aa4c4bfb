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
_COLUMN = {name: i for i, name in enumerate(FEATURES)}
_LIFTS = ("neighbours", "group", "time", "speaker")  # the lifts read, each into its own column
_LIFT_SLOTS = {name: slot for slot, name in enumerate(_LIFTS)}
_SHARED = [  # the columns :func:`_shared` computes candidate by candidate, in this order
    _COLUMN[f]
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
    """:func:`candidate_features` as an array (candidates x :data:`FEATURES`): what the ranker scores.

    One pass over the candidates reads what each says of itself (its scores, lifts, words, length,
    metadata and stamp), the columns that place it in the pool are computed on whole arrays, and a
    second pass (:func:`_shared`) reads what it shares with the question and the best candidates."""
    n = len(hits)
    out = np.zeros((n, len(FEATURES)))
    if not n:
        return out
    default = (now if now.tzinfo is not None else now.replace(tzinfo=UTC)).timestamp()
    fused_scores: list[float] = []
    dense_scores: list[float] = []
    lexical_scores: list[float] = []
    listed: list[bool] = []  # in the dense list, for each candidate; then in the lexical list, for each
    lifted = [[0.0] * n for _ in _LIFTS]
    terms: list[frozenset[int]] = []
    lengths: list[int] = []
    asks: list[bool] = []
    metas: list[Mapping[str, Any]] = []
    stamps: list[float] = []
    for i, hit in enumerate(hits):
        fused_scores.append(hit.score)
        dense_scores.append(hit.dense_score or 0.0)
        lexical_scores.append(hit.lexical_score or 0.0)
        for name, added in hit.lifts:
            slot = _LIFT_SLOTS.get(name)
            if slot is not None:
                lifted[slot][i] += added
        value = hit.value
        content = str(value.get("content") or "")
        terms.append(text_terms(content))
        lengths.append(len(content))
        asks.append("?" in content)
        meta = value.get("metadata")
        metas.append(meta if type(meta) is dict or isinstance(meta, Mapping) else {})
        stamps.append(_timestamp(value.get("created_at"), default))
    listed.extend(h.dense_score is not None for h in hits)
    listed.extend(h.lexical_score is not None for h in hits)
    has_dense, has_lexical = np.array(listed, dtype=bool).reshape(2, n)
    fused, dense, lexical, sizes, times = np.array(
        [fused_scores, dense_scores, lexical_scores, lengths, stamps], dtype=np.float64
    )
    by_fused = np.argsort(-fused, kind="stable")  # the pool best first by the fused score
    place = np.empty(n)
    place[by_fused] = np.arange(n, dtype=np.float64)
    column = out.T  # column[k]: feature k of every candidate, written in place
    column[_COLUMN["fused"]] = fused
    column[_COLUMN["fused_gap"]] = fused.max() - fused
    column[_COLUMN["fused_rank"]] = np.log1p(place)  # _places with every candidate present
    floor = dense[has_dense].min() if has_dense.any() else 0.0
    column[_COLUMN["dense"]] = np.where(has_dense, dense, floor - 0.05)
    column[_COLUMN["has_dense"]] = has_dense
    column[_COLUMN["dense_rank"]] = _places(dense, has_dense)
    column[_COLUMN["lexical"]] = lexical / (lexical.max() or 1.0)
    column[_COLUMN["has_lexical"]] = has_lexical
    column[_COLUMN["lexical_rank"]] = _places(lexical, has_lexical)
    for name, values in zip(_LIFTS, lifted, strict=True):
        column[_COLUMN[f"{name}_lift"]] = values
    for name in ("time_lift", "speaker_lift"):  # whether the lift applied, not how much
        column[_COLUMN[name]] = column[_COLUMN[name]] > 0
    _shared(column, query, terms, metas, by_fused[:TOP].tolist(), hits)
    column[_COLUMN["length"]] = np.log1p(sizes)
    column[_COLUMN["asks"]] = asks
    column[_COLUMN["age"]] = np.log1p(np.maximum(times.max() - times, 0.0) / 86400.0)
    return out


def _shared(
    column: np.ndarray,
    query: str,
    terms: Sequence[frozenset[int]],
    metas: Sequence[Mapping[str, Any]],
    top: Sequence[int],
    hits: Sequence[RetrievedItem],
) -> None:
    """Into ``column`` (features x candidates): what each candidate shares with the question and
    with the best candidates (``top``: their places in the pool, best first). The words in common
    are counted candidate by candidate; the shares are divided on whole arrays (an integer over an
    integer, exactly rounded either way)."""
    asked, names = _question(query)
    held = Counter[int]()  # how many of the best hold each word
    for i in top:
        held.update(terms[i])
    everyone = frozenset(held)  # the best candidates' words
    known = everyone & asked  # ... that the question asks (a few)
    twice = frozenset(word for word, count in held.items() if count > 1)  # ... held by two of them
    twice_known = twice & asked
    sizes: list[int] = []
    common: list[int] = []
    overlap: list[int] = []
    bridged: list[int] = []
    for mine in terms:
        sizes.append(len(mine))
        common.append(len(mine & asked))
        shared = len(mine & everyone)
        overlap.append(shared)
        bridged.append(shared - len(mine & known))  # its words past the question's held by the best
    for i in top:  # the others of one of the best are the best but itself: the words two of them hold
        mine = terms[i]
        overlap[i] = len(mine & twice)
        bridged[i] = overlap[i] - len(mine & twice_known)
    counts = np.array([sizes, common, overlap, bridged], dtype=np.float64)
    if asked:
        column[_COLUMN["query_cover"]] = counts[1] / len(asked)
    if names:
        named = np.array([len(mine & names) for mine in terms], dtype=np.float64)
        column[_COLUMN["name_cover"]] = named / len(names)
    column[_COLUMN["top_overlap"]] = counts[2] / (counts[0] + 1)
    column[_COLUMN["bridge"]] = counts[3] / (counts[0] - counts[1] + 1)
    best = {hits[i].key for i in top}
    column[_COLUMN["neighbour_in_top"]] = [
        not best.isdisjoint(_keys(str(meta.get("neighbours") or ""))) for meta in metas
    ]
    groups = [_group(meta) for meta in metas]
    count = Counter(groups[i] for i in top)  # how many of the best are of each session
    session = [bool(group) and count.get(group, 0) > 0 for group in groups]
    for i in top:  # one of the best needs another of its session among them
        session[i] = bool(groups[i]) and count[groups[i]] > 1
    column[_COLUMN["session_in_top"]] = session
    column[_COLUMN["opens_session"]] = [not meta.get("previous") for meta in metas]


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _keys(text: str) -> frozenset[str]:
    """The keys a memory's ``neighbours`` names, read once for the last :data:`_TEXTS_KEPT`."""
    return frozenset(text.split())


@functools.lru_cache(maxsize=1024)
def _question(query: str) -> tuple[frozenset[int], frozenset[int]]:
    """The lexical terms of ``query`` and of the names it gives, read once per question."""
    return text_terms(query), _names(query)


def _timestamp(stamp: object, default: float) -> float:
    """``written_at(value, ...).timestamp()`` for a value whose ``created_at`` is ``stamp``
    (``default``: the POSIX time that stands in for a date the value lacks)."""
    if isinstance(stamp, str):
        seconds = _seconds(stamp)
        return default if seconds is None else seconds
    if isinstance(stamp, datetime):
        return (stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)).timestamp()
    return default


@functools.lru_cache(maxsize=_TEXTS_KEPT)
def _seconds(stamp: str) -> float | None:
    """The POSIX time of an ISO stamp (naive: UTC), ``None`` if it does not read; the stamps of
    the last :data:`_TEXTS_KEPT` memories are read once: the same come back question after question."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()
