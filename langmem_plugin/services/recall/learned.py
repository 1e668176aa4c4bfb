"""The learned ranker: a small model over the signals recall already computes, shipped as a file.

By default (``RecallConfig(ranker="learned")``) recall reads the pool fusion reads
(:func:`~.pool.pool_limit`), turns each candidate that passes the similarity floor into its
features (:mod:`.features`: the dense and lexical scores and places, the lifts, how much of the
question and of the other best candidates it covers, its length, its place in its session, its
age) and orders the pool by :class:`LearnedRanker`'s score instead of the fused score; the best
``RecallConfig.candidates`` of each namespace go on to ranking and fitting as before, the model's
score standing for the relevance. ``ranker="fusion"`` orders by the fused score alone.

The model is a logistic function of the features, read from a JSON file: the one in this package
(``ranker.json``, :data:`DEFAULT_MODEL`), or one trained on your own conversations with
``python -m langmem_plugin.bench.train_ranker`` and passed as
``RecallConfig(ranker=LearnedRanker.load(path))``. Either linear, or small gradient-boosted trees
correcting a linear anchor by a bounded amount: the shipped model anchors on the fused score and
the time lift, and its trees, which never split on the time lift or the age, move that anchor by
at most ``clip`` either way (the training script's ``train`` says why). Scoring is a few
operations on small arrays: nothing downloads, nothing is random.

>>> ranker = LearnedRanker.load()
>>> ranker.kind in ("logistic", "trees"), len(ranker.score([[0.0] * len(ranker.features)]))
(True, 1)
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.recall.features import FEATURES, feature_matrix
from langmem_plugin.services.recall.retrieval import RetrievedItem

__all__ = ["DEFAULT_MODEL", "FORMAT", "LearnedRanker", "default_ranker", "tree_outputs"]

#: The model shipped in the package.
DEFAULT_MODEL = Path(__file__).with_name("ranker.json")
#: What a model file says it is.
FORMAT = "langmem-plugin learned ranker"


class LearnedRanker:
    """Scores a recall's candidates with a model over their features.

    Args:
        model: the model as its JSON file holds it: ``format`` (:data:`FORMAT`), ``features``
            (the names of :data:`~langmem_plugin.services.recall.features.FEATURES`, in order),
            ``kind`` and its numbers: ``"logistic"``: ``mean`` and ``scale`` (each feature's
            standardisation), ``weights`` and ``bias``; ``"trees"``: ``base`` (the log-odds
            before any tree), ``feature``, ``threshold`` and ``value`` (:func:`tree_outputs`), and
            optionally ``linear`` (a weight per feature: the anchor the trees correct, e.g. the
            fused score's) and ``clip`` (the most the trees' sum may move the anchor either way,
            so that an anchor ahead by more than twice ``clip`` keeps its order).
        source: where the model came from (shown in ``repr``).

    Raises:
        ConfigurationError: the model is not one (another format, features this version does
            not compute, lengths that differ, a number that is not finite).
    """

    #: What a model file says it is (:data:`FORMAT`).
    FORMAT = FORMAT

    def __init__(self, model: Mapping[str, Any], *, source: str = "<dict>") -> None:
        self.source = source
        if not isinstance(model, Mapping) or model.get("format") != FORMAT:
            raise ConfigurationError(
                f"{source} is not a learned ranker model (its 'format' must be {FORMAT!r}); "
                "write one with python -m langmem_plugin.bench.train_ranker"
            )
        features = tuple(model.get("features") or ())
        if features != FEATURES:
            raise ConfigurationError(
                f"{source} scores the features {list(features)}, and this version computes "
                f"{list(FEATURES)}. Fix: train it again with this version "
                "(python -m langmem_plugin.bench.train_ranker)"
            )
        self.features = features
        self.kind = str(model.get("kind", "logistic"))
        try:
            if self.kind == "trees":
                self._read_trees(model)
            elif self.kind == "logistic":
                self._read_logistic(model)
            else:
                raise ValueError(f"'kind' must be 'logistic' or 'trees', not {self.kind!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"{source} is not a model that reads: {exc}") from exc

    def _read_logistic(self, model: Mapping[str, Any]) -> None:
        mean, scale, weights = (np.asarray(model[k], dtype=np.float64) for k in ("mean", "scale", "weights"))
        bias = float(model["bias"])
        shapes = {a.shape for a in (mean, scale, weights)}
        if shapes != {(len(FEATURES),)} or not all(np.isfinite(a).all() for a in (mean, scale, weights)):
            raise ValueError(f"'mean', 'scale' and 'weights' must each hold {len(FEATURES)} finite numbers")
        if not math.isfinite(bias):
            raise ValueError("'bias' must be a finite number")
        if (scale <= 0).any():
            raise ValueError("every 'scale' must be above 0")
        self.weights = weights / scale  # the standardising folded into the weights: one product
        self.bias = bias - float(mean @ self.weights)

    def _read_trees(self, model: Mapping[str, Any]) -> None:
        feature = np.asarray(model["feature"], dtype=np.int64)
        threshold = np.asarray(
            [[math.inf if v is None else v for v in row] for row in model["threshold"]], dtype=np.float64
        )
        value = np.asarray(model["value"], dtype=np.float64)
        base = float(model["base"])
        trees, inner = feature.shape if feature.ndim == 2 else (0, 0)
        if (
            not trees
            or (inner + 1) & inner
            or threshold.shape != feature.shape
            or value.shape != (trees, inner + 1)
            or not ((feature >= 0) & (feature < len(FEATURES))).all()
            or np.isnan(threshold).any()
            or not np.isfinite(value).all()
            or not math.isfinite(base)
        ):
            raise ValueError(
                "'feature' and 'threshold' must be trees x (2**depth - 1) (features by number), 'value' "
                "trees x 2**depth finite numbers, and 'base' a finite number"
            )
        linear = np.asarray(model.get("linear") or [0.0] * len(FEATURES), dtype=np.float64)
        if linear.shape != (len(FEATURES),) or not np.isfinite(linear).all():
            raise ValueError(f"'linear' must hold {len(FEATURES)} finite numbers")
        clip = model.get("clip")
        if clip is not None and not (isinstance(clip, int | float) and math.isfinite(clip) and clip > 0):
            raise ValueError(f"'clip' must be a number above 0 or null, not {clip!r}")
        self.trees = (feature, threshold, value)
        self._forest = _Forest(feature, threshold, value)
        self.linear = linear
        self.clip = None if clip is None else float(clip)
        self.bias = base

    @classmethod
    def load(cls, path: str | Path | None = None) -> LearnedRanker:
        """The model at ``path`` (a JSON file), or the one shipped in the package."""
        source = Path(path) if path is not None else DEFAULT_MODEL
        try:
            model = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read the ranker model {source}: {exc}") from exc
        return cls(model, source=str(source))

    def __repr__(self) -> str:
        return f"LearnedRanker(source={self.source!r})"

    def logits(self, rows: np.ndarray) -> np.ndarray:
        """The model's log-odds for each row of features (an array, one row per candidate)."""
        if self.kind == "trees":
            residual = self._forest.outputs(rows)
            if self.clip is not None:
                residual = np.clip(residual, -self.clip, self.clip)
            anchored: np.ndarray = rows @ self.linear + residual + self.bias
            return anchored
        out: np.ndarray = rows @ self.weights + self.bias
        return out

    def score(self, rows: Sequence[Sequence[float]]) -> list[float]:
        """The probability, by the model, that each row's candidate is what the question needs."""
        if not len(rows):
            return []
        logits = self.logits(np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES)))
        return (1.0 / (1.0 + np.exp(-np.clip(logits, -30.0, 30.0)))).tolist()  # type: ignore[no-any-return]

    def rerank(
        self, query: str, hits: Sequence[RetrievedItem], now: datetime, *, keep: int
    ) -> list[RetrievedItem]:
        """The best ``keep`` of one search's ``hits`` by the model, best first (ties in the pool's
        order), each with the model's score as its score (``now``: the date of a hit whose value
        has none)."""
        if not hits:
            return []
        logits = self.logits(feature_matrix(query, hits, now))
        scores = 1.0 / (1.0 + np.exp(-np.clip(logits, -30.0, 30.0)))
        order = np.argsort(-scores, kind="stable")[:keep].tolist()
        return [_rescored(hits[i], score) for i, score in zip(order, scores[order].tolist(), strict=True)]


def _rescored(hit: RetrievedItem, score: float) -> RetrievedItem:
    """``dataclasses.replace(hit, score=score)``, without its walk over the fields each call."""
    return RetrievedItem(
        hit.namespace, hit.key, hit.value, score, hit.dense_score, hit.lexical_score, hit.lifts
    )


def tree_outputs(x: np.ndarray, feature: np.ndarray, threshold: np.ndarray, value: np.ndarray) -> np.ndarray:
    """The sum over complete trees in heap order (``feature`` and ``threshold``: trees x inner nodes;
    ``value``: trees x leaves) of the leaf each row of ``x`` reaches (``x[f] <= threshold``: left)."""
    return _Forest(feature, threshold, value).outputs(x)


class _Forest:
    """Complete trees of one depth as arrays built once (when a model loads), walked over all the
    rows and all the trees at once: every node's test in one comparison, then each node picks
    between what its two subtrees give (``np.where``), from the leaves up: no arithmetic, only
    choices, so each row gets exactly its leaf's value in every tree.

    The leaves reached form one rows x trees array, summed along its rows as :func:`tree_outputs`
    always summed them: the same numbers added in the same order, the same floats."""

    def __init__(self, feature: np.ndarray, threshold: np.ndarray, value: np.ndarray) -> None:
        trees, inner = feature.shape
        self.trees, self.inner = int(trees), int(inner)
        self.nodes = np.ascontiguousarray(feature, dtype=np.intp).ravel()  # tree by tree, heap order
        self.cuts = np.ascontiguousarray(threshold, dtype=np.float64).ravel()
        self.leaves: list[np.ndarray] = [  # each a column: trees x 1
            np.ascontiguousarray(value[:, leaf : leaf + 1], dtype=np.float64) for leaf in range(inner + 1)
        ]

    def outputs(self, x: np.ndarray) -> np.ndarray:
        """The sum of the leaves each row of ``x`` reaches, one per row."""
        columns = np.ascontiguousarray(x.T)  # a feature's values, side by side: each node's copied whole
        left = (columns[self.nodes] <= self.cuts[:, None]).reshape(self.trees, self.inner, len(x))
        chosen = np.broadcast_to(self._below(left, 0), (self.trees, len(x)))  # trees x rows
        reached = np.ascontiguousarray(chosen.T, dtype=np.float64)  # rows x trees, C order
        out: np.ndarray = reached.sum(axis=1)
        return out

    def _below(self, left: np.ndarray, node: int) -> np.ndarray:
        """What the subtree at ``node`` (heap order) gives each row, in each tree."""
        if node >= self.inner:
            return self.leaves[node - self.inner]
        chosen: np.ndarray = np.where(
            left[:, node], self._below(left, 2 * node + 1), self._below(left, 2 * node + 2)
        )
        return chosen


@functools.cache
def default_ranker() -> LearnedRanker:
    """The shipped model, read once per process."""
    return LearnedRanker.load()
