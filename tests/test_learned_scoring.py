"""The learned ranker's fast path (issue 36: recall p50 within 15 ms) gives exactly the numbers of a
straightforward reference: the features read candidate by candidate, and the trees walked one row
and one tree at a time, on random pools and random models (hypothesis). Not close: the same floats,
so the fast path can reorder nothing."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plugin.services.recall.features import FEATURES, TOP, feature_matrix, text_terms
from langmem_plugin.services.recall.learned import FORMAT, LearnedRanker, default_ranker, tree_outputs
from langmem_plugin.services.recall.retrieval import RetrievedItem

NOW = datetime(2024, 6, 1, 12, tzinfo=UTC)


# --- the reference: every feature read candidate by candidate, every tree walked row by row ---


def _reference_places(values: list[float], present: list[bool]) -> list[float]:
    """log(1 + place) among the present values, best first, ties in pool order; absent: last."""
    order = sorted((i for i in range(len(values)) if present[i]), key=lambda i: -values[i])
    place = [float(len(values))] * len(values)
    for rank, i in enumerate(order):
        place[i] = float(rank)
    return np.log1p(np.array(place)).tolist()  # type: ignore[no-any-return]


def _reference_names(query: str) -> frozenset[int]:
    found = re.findall(r"(?<![\w'])[A-Z][\w'-]+", query)
    words = [w for n, w in enumerate(found) if n or not query.lstrip().startswith(w)]
    return text_terms(" ".join(words))


def _reference_group(meta: Mapping[str, Any]) -> str:
    return str(meta.get("session_id") or meta.get("session") or meta.get("thread_id") or "")


def _reference_stamp(value: Mapping[str, Any]) -> float:
    stamp, when = value.get("created_at"), NOW
    if isinstance(stamp, str):
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(stamp)
    elif isinstance(stamp, datetime):
        when = stamp
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


def _reference_features(query: str, hits: Sequence[RetrievedItem]) -> np.ndarray:
    """Each candidate's row, one candidate and one feature at a time (the pool-wide numbers
    first: the best fused score, the dense floor, the best BM25 score, the newest stamp, the top)."""
    n = len(hits)
    if not n:
        return np.zeros((0, len(FEATURES)))
    fused = [h.score for h in hits]
    dense = [h.dense_score for h in hits]
    lexical = [h.lexical_score or 0.0 for h in hits]
    metas = [m if isinstance(m := h.value.get("metadata"), Mapping) else {} for h in hits]
    contents = [str(h.value.get("content") or "") for h in hits]
    terms = [text_terms(c) for c in contents]
    asked, names = text_terms(query), _reference_names(query)
    fused_rank = _reference_places(fused, [True] * n)
    dense_rank = _reference_places([d or 0.0 for d in dense], [d is not None for d in dense])
    lexical_rank = _reference_places(lexical, [h.lexical_score is not None for h in hits])
    floor = min((d for d in dense if d is not None), default=0.0)
    best_lexical = max(lexical) or 1.0
    top = sorted(range(n), key=lambda i: -fused[i])[:TOP]
    top_keys = {hits[i].key for i in top}
    sessions = Counter(_reference_group(metas[i]) for i in top)
    stamps = [_reference_stamp(h.value) for h in hits]
    rows = []
    for i, hit in enumerate(hits):
        lifts = dict.fromkeys(("neighbours", "group", "time", "speaker"), 0.0)
        for name, value in hit.lifts:
            if name in lifts:
                lifts[name] += value
        others = frozenset().union(*(terms[j] for j in top if j != i))
        told = terms[i] - asked
        group = _reference_group(metas[i])
        row = {
            "fused": fused[i],
            "fused_gap": max(fused) - fused[i],
            "fused_rank": fused_rank[i],
            "dense": dense[i] if dense[i] is not None else floor - 0.05,
            "has_dense": float(dense[i] is not None),
            "dense_rank": dense_rank[i],
            "lexical": lexical[i] / best_lexical,
            "has_lexical": float(hit.lexical_score is not None),
            "lexical_rank": lexical_rank[i],
            "neighbours_lift": lifts["neighbours"],
            "group_lift": lifts["group"],
            "time_lift": float(lifts["time"] > 0),
            "speaker_lift": float(lifts["speaker"] > 0),
            "query_cover": len(terms[i] & asked) / len(asked) if asked else 0.0,
            "name_cover": len(terms[i] & names) / len(names) if names else 0.0,
            "top_overlap": len(terms[i] & others) / (len(terms[i]) + 1),
            "bridge": len(told & (others - asked)) / (len(told) + 1),
            "neighbour_in_top": float(bool(top_keys & set(str(metas[i].get("neighbours") or "").split()))),
            "session_in_top": float(bool(group) and sessions[group] - (i in top) > 0),
            "length": float(np.log1p(float(len(contents[i])))),
            "asks": float("?" in contents[i]),
            "opens_session": 0.0 if metas[i].get("previous") else 1.0,
            "age": float(np.log1p(np.maximum(max(stamps) - stamps[i], 0.0) / 86400.0)),
        }
        rows.append([row[name] for name in FEATURES])
    return np.array(rows)


def _reference_trees(
    rows: np.ndarray, feature: np.ndarray, threshold: np.ndarray, value: np.ndarray
) -> np.ndarray:
    """Each row down each tree, one node at a time; the leaves reached summed along each row (numpy's
    sum of a rows x trees array: the order the model's sum has always had)."""
    trees, inner = feature.shape
    reached = np.zeros((len(rows), trees))
    for r, row in enumerate(rows):
        for t in range(trees):
            node = 0
            while node < inner:
                node = 2 * node + 1 if row[feature[t, node]] <= threshold[t, node] else 2 * node + 2
            reached[r, t] = value[t, node - inner]
    out: np.ndarray = reached.sum(axis=1)
    return out


# --- random pools and models ---

_WORDS = [
    "Anna",
    "cello",
    "Berlin",
    "orchestra",
    "tea",
    "garden",
    "dog",
    "Pixel",
    "moved",
    "job",
    "the",
    "plays",
]
_STAMPS = st.one_of(
    st.none(),
    st.just("not a date"),
    st.integers(0, 400).map(lambda d: (NOW - timedelta(days=d, minutes=d)).isoformat()),
    st.integers(0, 400).map(lambda d: (NOW - timedelta(days=d)).replace(tzinfo=None).isoformat()),
    st.integers(0, 400).map(lambda d: (NOW - timedelta(days=d)).astimezone(timezone(timedelta(hours=5)))),
    st.integers(0, 400).map(lambda d: (NOW - timedelta(days=d)).replace(tzinfo=None)),
)
_SCORES = st.sampled_from([0.0, 0.5, 1.0, -0.25]) | st.floats(-3, 6, allow_nan=False)


@st.composite
def _pools(draw: st.DrawFn) -> tuple[str, list[RetrievedItem]]:
    n = draw(st.integers(0, 14))
    keys = [f"ep-{i}" for i in range(n)]
    hits = []
    for i in range(n):
        meta: dict[str, Any] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "session": st.sampled_from(["", "s1", "s2", "s3"]),
                    "session_id": st.sampled_from(["", "a", "b"]),
                    "thread_id": st.sampled_from(["t1", "t2"]),
                    "previous": st.sampled_from(["", "ep-0"]),
                    "neighbours": st.lists(st.sampled_from([*keys, "elsewhere"]), max_size=3).map(" ".join),
                },
            )
        )
        value: dict[str, Any] = {
            "content": " ".join(draw(st.lists(st.sampled_from([*_WORDS, "?"]), max_size=8))),
            "metadata": draw(st.just(meta) | st.just("not a mapping")),
        }
        stamp = draw(_STAMPS)
        if stamp is not None:
            value["created_at"] = stamp
        lifts = draw(
            st.lists(
                st.tuples(st.sampled_from(["neighbours", "group", "time", "speaker", "salience"]), _SCORES),
                max_size=5,
            )
        )
        hits.append(
            RetrievedItem(
                ("memories", "user", "u1"),
                keys[i],
                value,
                draw(_SCORES),
                draw(st.none() | _SCORES),
                draw(st.none() | st.floats(0, 12)),
                tuple(lifts),
            )
        )
    query = " ".join(draw(st.lists(st.sampled_from(_WORDS), max_size=6)))
    return query, hits


_CUTS = np.array([0.0, 0.5, 1.0, -1.0, np.inf])  # inf: a node every row passes left (null in a file)


@st.composite
def _forests(draw: st.DrawFn) -> tuple[dict[str, Any], np.ndarray]:
    """A random model of complete trees and rows to score, drawn from a seed (the arrays are too
    big for hypothesis to draw number by number): cuts and features that tie, infinities, NaN."""
    depth, trees, n = (
        draw(st.integers(1, 4)),
        draw(st.integers(1, 40) | st.just(200)),
        draw(st.integers(0, 60)),
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inner, width = 2**depth - 1, len(FEATURES)
    cuts = np.where(
        rng.random((trees, inner)) < 0.5,
        rng.choice(_CUTS, (trees, inner)),
        rng.uniform(-2, 2, (trees, inner)),
    )
    rows = np.where(
        rng.random((n, width)) < 0.5, rng.choice([*_CUTS, np.nan], (n, width)), rng.uniform(-2, 2, (n, width))
    )
    model = {
        "format": FORMAT,
        "features": list(FEATURES),
        "kind": "trees",
        "base": float(rng.uniform(-5, 5)),
        "linear": rng.uniform(-3, 3, width).tolist(),
        "clip": draw(st.none() | st.floats(0.1, 2)),
        "feature": rng.integers(0, width, (trees, inner)).tolist(),
        "threshold": [[None if np.isinf(c) else float(c) for c in row] for row in cuts],
        "value": rng.uniform(-1, 1, (trees, inner + 1)).tolist(),
    }
    return model, rows


# --- the checks ---


@settings(max_examples=150, deadline=None)
@given(_pools())
def test_the_features_are_the_references_exactly(pool: tuple[str, list[RetrievedItem]]) -> None:
    query, hits = pool
    fast = feature_matrix(query, hits, NOW)
    assert fast.shape == (len(hits), len(FEATURES))
    assert fast.flags.c_contiguous
    assert np.array_equal(fast, _reference_features(query, hits))


@settings(max_examples=80, deadline=None)
@given(_forests())
def test_the_trees_are_the_references_exactly(forest: tuple[dict[str, Any], np.ndarray]) -> None:
    model, rows = forest
    ranker = LearnedRanker(model)
    feature, threshold, value = ranker.trees
    residual = _reference_trees(rows, feature, threshold, value)
    assert np.array_equal(tree_outputs(rows, feature, threshold, value), residual, equal_nan=True)
    if ranker.clip is not None:
        residual = np.clip(residual, -ranker.clip, ranker.clip)
    with np.errstate(invalid="ignore"):  # an infinite feature times a weight of 0: NaN either way
        expected = rows @ ranker.linear + residual + ranker.bias
        assert np.array_equal(ranker.logits(rows), expected, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(_pools())
def test_the_shipped_models_ranking_is_the_references_exactly(pool: tuple[str, list[RetrievedItem]]) -> None:
    """The shipped model's trees on random pools: the fast rerank keeps exactly the candidates,
    the order and the scores of the reference, and every field of each candidate but its score."""
    query, hits = pool
    ranker = default_ranker()
    rows = _reference_features(query, hits)
    feature, threshold, value = ranker.trees
    assert ranker.clip is not None
    logits = (
        rows @ ranker.linear
        + np.clip(_reference_trees(rows, feature, threshold, value), -ranker.clip, ranker.clip)
        + ranker.bias
    )
    scores = 1.0 / (1.0 + np.exp(-np.clip(logits, -30.0, 30.0)))
    keep = 5
    expected = [
        dataclasses.replace(hits[i], score=float(scores[i]))
        for i in np.argsort(-scores, kind="stable")[:keep]
    ]
    assert ranker.rerank(query, hits, NOW, keep=keep) == expected
    assert ranker.score(rows.tolist()) == scores.tolist()
