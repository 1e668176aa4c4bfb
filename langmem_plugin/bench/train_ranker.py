"""Train recall's learned ranker on conversations with evidence.

``python -m langmem_plugin.bench.train_ranker`` runs it.

Two steps, so that trying a model costs seconds rather than an import:

1. ``dump``: each conversation of the sets given (LoCoMo's ``locomo10.json``, a REALTALK folder or
   chat file, or your own in LoCoMo's schema) is imported into a fresh ``Memory()`` the way the
   ``product`` row of ``bench locomo`` imports it, and each question's candidate pool is searched
   the way recall searches it with ``RecallConfig(ranker="learned")``; each candidate's features
   (:func:`~langmem_plugin.services.recall.features.candidate_features`), whether it carries an
   evidence turn, and its token cost are written to one ``.npz`` cache file;
2. ``train``: small gradient-boosted tree ensembles that correct an anchor, the fused score and
   the time lift (:func:`train` says how, and why the correction is bounded), fitted on the
   conversations named by ``--train``; the one chosen on those named by ``--valid`` (by the
   evidence an injection of the ranked pool within the token budget would carry) is written as
   the JSON file :class:`~langmem_plugin.services.recall.learned.LearnedRanker` loads.

``--train`` and ``--valid`` name conversations as ``SET:FIRST-LAST`` (0-based, in the set's file
order; the set by its name, ``LoCoMo`` or ``REALTALK``), comma-separated. The shipped model was
trained with::

    python -m langmem_plugin.bench.train_ranker dump --data locomo10.json --data realtalk/ --out pool.npz
    python -m langmem_plugin.bench.train_ranker train --cache pool.npz \\
        --train LoCoMo:0-4,REALTALK:0-2 --valid LoCoMo:5-9,REALTALK:3-4 \\
        --out langmem_plugin/services/recall/ranker.json

Use the model with ``RecallConfig(ranker=LearnedRanker.load(path))``. What it finds against the
hand-set fusion is in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.recall import FEATURES, LearnedRanker, tree_outputs

__all__ = [
    "Pool",
    "dump_pools",
    "evidence_share",
    "fit_logistic",
    "fit_trees",
    "main",
    "parse_split",
    "train",
]

#: The most tokens of one memory recall shows (a fifth of the default 600-token budget), plus
#: what its line costs around it: the cost of an item in :func:`evidence_share`.
SHOWN_TOKENS, LINE_TOKENS = 120, 6
#: The default memories budget less its headers, and the most items recall injects.
BUDGET, MAX_ITEMS = 560, 20
#: The bounds tried for the trees' correction of the anchor (log-odds either way).
CLIPS = (0.75, 1.0)
#: The time lift's weight in the anchor, per unit of the clip: at 2 the trees, moving two
#: candidates at most a clip each, cannot rank one the question's time names under one it does not
#: when their fused scores are alike.
TIME_WEIGHT_PER_CLIP = 2.0
#: The features no tree splits on: the time lift (the anchor weighs it) and the age (ranking's
#: recency weighs it after the model, so a memory's age is not counted twice).
UNSPLIT = ("time_lift", "age")


@dataclass
class Pool:
    """The dumped pools: one row per candidate.

    Attributes:
        x: the features (:data:`FEATURES`), one row per candidate.
        label: 1 when the candidate carries an evidence turn.
        question: the question's number (over the whole dump) of each row.
        cost: each candidate's token cost (capped at what recall shows of one memory).
        turns: per question, each candidate's evidence turns (indices into its evidence).
        evidence: per question, how many evidence turns it has.
        sets: per question, its set's name; conversations: its conversation (0-based); category.
    """

    x: np.ndarray
    label: np.ndarray
    question: np.ndarray
    cost: np.ndarray
    evidence: np.ndarray
    sets: np.ndarray
    conversations: np.ndarray
    categories: np.ndarray
    turns: list[list[tuple[int, ...]]]

    def save(self, path: Path) -> None:
        np.savez_compressed(
            path,
            x=self.x,
            label=self.label,
            question=self.question,
            cost=self.cost,
            evidence=self.evidence,
            sets=self.sets,
            conversations=self.conversations,
            categories=self.categories,
            turns=np.array(json.dumps(self.turns)),
            features=np.array(json.dumps(list(FEATURES))),
        )

    @classmethod
    def load(cls, path: Path) -> Pool:
        data = np.load(path)
        names = json.loads(str(data["features"]))
        if names != list(FEATURES):
            raise ConfigurationError(
                f"{path} holds features {names}, and this version computes {list(FEATURES)}. "
                "Fix: dump the pools again with this version"
            )
        turns = [[tuple(t) for t in q] for q in json.loads(str(data["turns"]))]
        keys = ("x", "label", "question", "cost", "evidence", "sets", "conversations", "categories")
        return cls(**{k: data[k] for k in keys}, turns=turns)

    def questions(self, selected: Iterable[tuple[str, int]]) -> np.ndarray:
        """The numbers of the questions of the ``(set, conversation)`` pairs ``selected``."""
        wanted = set(selected)
        return np.array(
            [
                q
                for q, (s, c) in enumerate(zip(self.sets, self.conversations, strict=True))
                if (str(s), int(c)) in wanted
            ],
            dtype=np.int64,
        )


def parse_split(text: str, sets: dict[str, int]) -> list[tuple[str, int]]:
    """``"LoCoMo:0-4,REALTALK:0-2"`` as ``(set, conversation)`` pairs (``sets``: each set's size).

    >>> parse_split("LoCoMo:0-1,REALTALK:3", {"LoCoMo": 10, "REALTALK": 5})
    [('LoCoMo', 0), ('LoCoMo', 1), ('REALTALK', 3)]
    """
    found: list[tuple[str, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, span = part.partition(":")
        first, _, last = span.partition("-")
        if name not in sets or not first.isdecimal() or not (last or first).isdecimal():
            raise ConfigurationError(
                f"cannot read {part!r} as SET:FIRST-LAST with SET one of {sorted(sets)} "
                "(e.g. LoCoMo:0-4); conversations are 0-based"
            )
        found.extend((name, c) for c in range(int(first), int(last or first) + 1) if c < sets[name])
    return found


def _turn_ids(
    memory: Any, namespace: tuple[str, ...], key: str, value: Any, seen: dict[Any, set[str]]
) -> set[str]:
    if (namespace, key) not in seen:
        if value is None:
            item = memory.store.get(namespace, key)
            value = {} if item is None else item.value
        meta = value.get("metadata") or {}
        parent = meta.get("episode")
        if parent and "message_ids" not in meta:
            seen[(namespace, key)] = _turn_ids(memory, namespace, str(parent), None, seen)
        else:
            seen[(namespace, key)] = set(str(meta.get("message_ids", "")).split())
    return seen[(namespace, key)]


def dump_pools(
    paths: Sequence[Path],
    *,
    conversations: int | None = None,
    embeddings: Any = None,
    say: Callable[[str], None] = print,
) -> Pool:
    """Import every conversation of ``paths`` into a fresh ``Memory()`` and dump each question's pool."""
    from langmem_plugin import Memory, RecallConfig
    from langmem_plugin.bench.locomo.data import TOKEN_MODEL, load_conversations
    from langmem_plugin.bench.locomo.product import history_of
    from langmem_plugin.core.embeddings import resolve_embeddings
    from langmem_plugin.services.recall import RetrievalConfig, pool_steps
    from langmem_plugin.services.store_steps import execute

    embeddings = embeddings or resolve_embeddings()
    rows: list[list[float]] = []
    labels: list[int] = []
    owner: list[int] = []
    costs: list[int] = []
    evidence: list[int] = []
    sets: list[str] = []
    convs: list[int] = []
    categories: list[int] = []
    turns: list[list[tuple[int, ...]]] = []
    config = RecallConfig(ranker="learned")
    for path in paths:
        dataset = load_conversations(path)
        for n, conv in enumerate(dataset.conversations[:conversations]):
            start = time.perf_counter()
            with ExitStack() as stack:
                memory = stack.enter_context(Memory(embeddings=embeddings, recall=config))
                user = conv.sample_id
                write: RunnableConfig = {"configurable": {"user_id": user, "thread_id": user}}
                memory.import_history(history_of(conv), write, per="message", progress=False)
                scope = Scope(user_id=user, thread_id="q")
                memory.recall(
                    [HumanMessage("warm-up")], {"configurable": {"user_id": user, "thread_id": "q"}}
                )
                seen: dict[Any, set[str]] = {}
                for question in conv.questions:
                    steps = pool_steps(
                        scope,
                        memory.layout,
                        question.text,
                        compartments=config.compartments,
                        retrieval=config.retrieval or RetrievalConfig(),
                        min_similarity=config.min_relevance,
                    )
                    pool = execute(memory.store, steps)
                    number = len(evidence)
                    wanted = {e: i for i, e in enumerate(question.evidence)}
                    carried: list[tuple[int, ...]] = []
                    for page, page_rows in zip(pool.hits, pool.rows, strict=True):
                        for found, row in zip(page, page_rows, strict=True):
                            ids = _turn_ids(memory, found.namespace, found.key, found.value, seen)
                            hit = tuple(sorted(wanted[t] for t in ids if t in wanted))
                            carried.append(hit)
                            rows.append(row)
                            labels.append(1 if hit else 0)
                            owner.append(number)
                            tokens = count_tokens(str(found.value.get("content", "")), model=TOKEN_MODEL)
                            costs.append(min(tokens, SHOWN_TOKENS) + LINE_TOKENS)
                    turns.append(carried)
                    evidence.append(len(question.evidence))
                    sets.append(dataset.name)
                    convs.append(n)
                    categories.append(question.category)
            say(
                f"{dataset.name} {n} ({conv.sample_id}): {len(conv.questions)} questions, "
                f"{time.perf_counter() - start:.0f} s"
            )
    return Pool(
        x=np.array(rows, dtype=np.float64).reshape(-1, len(FEATURES)),
        label=np.array(labels, dtype=np.int8),
        question=np.array(owner, dtype=np.int64),
        cost=np.array(costs, dtype=np.int64),
        evidence=np.array(evidence, dtype=np.int64),
        sets=np.array(sets),
        conversations=np.array(convs, dtype=np.int64),
        categories=np.array(categories, dtype=np.int64),
        turns=turns,
    )


def evidence_share(
    pool: Pool, scores: np.ndarray, questions: np.ndarray, *, budget: int = BUDGET
) -> tuple[float, dict[int, float]]:
    """The evidence recall (percent, mean over ``questions``; and per category) of injecting each
    question's candidates best first by ``scores`` until ``budget`` tokens or :data:`MAX_ITEMS`."""
    starts = np.searchsorted(pool.question, questions, side="left")
    ends = np.searchsorted(pool.question, questions, side="right")
    shares: list[float] = []
    by_category: dict[int, list[float]] = {}
    for q, start, end in zip(questions, starts, ends, strict=True):
        order = start + np.argsort(-scores[start:end], kind="stable")
        used, items, covered = 0, 0, set()
        for row in order:
            cost = int(pool.cost[row])
            if used + cost > budget:
                continue
            used += cost
            items += 1
            covered.update(pool.turns[q][row - start])
            if items >= MAX_ITEMS:
                break
        share = len(covered) / int(pool.evidence[q])
        shares.append(share)
        by_category.setdefault(int(pool.categories[q]), []).append(share)
    mean = 100.0 * sum(shares) / len(shares) if shares else math.nan
    return mean, {c: 100.0 * sum(v) / len(v) for c, v in sorted(by_category.items())}


def _rows(pool: Pool, questions: np.ndarray) -> np.ndarray:
    return np.isin(pool.question, questions)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, l2: float, weight: np.ndarray | None = None, steps: int = 400
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A logistic model of ``y`` on standardised ``x`` with an L2 penalty, fitted by Newton steps:
    ``(mean, scale, weights, bias)``."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    sample = np.ones(len(x)) if weight is None else weight
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -30, 30)))
        gradient = z.T @ (sample * (p - y)) + penalty * w
        hessian = (z * (sample * p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return mean, scale, w[:-1], float(w[-1])


def fit_trees(
    x: np.ndarray,
    y: np.ndarray,
    *,
    weight: np.ndarray,
    trees: int,
    depth: int,
    rate: float = 0.1,
    bins: int = 32,
    min_hessian: float = 5.0,
    l2: float = 1.0,
    start: np.ndarray | None = None,
) -> dict[str, Any]:
    """Gradient-boosted trees of depth ``depth`` on the logistic loss (Newton leaves, histogram
    splits at quantiles of each feature), as :class:`LearnedRanker` reads them: complete trees in
    heap order (node ``i``'s children are ``2i+1`` and ``2i+2``; a node that does not split sends
    everything left). ``start``: each row's log-odds before the first tree (an anchor the trees
    correct; its ``base`` is then 0), else the training set's."""
    n, width = x.shape
    edges = [np.unique(np.quantile(x[:, f], np.linspace(0, 1, bins + 1)[1:-1])) for f in range(width)]
    binned = np.stack([np.searchsorted(edges[f], x[:, f], side="left") for f in range(width)], axis=1)
    offsets = np.arange(width) * (bins + 1)
    inner, leaves = 2**depth - 1, 2**depth
    features = np.zeros((trees, inner), dtype=np.int64)
    thresholds = np.full((trees, inner), np.inf)
    values = np.zeros((trees, leaves))
    share = min(max(float(np.average(y, weights=weight)), 1e-6), 1 - 1e-6)
    base = math.log(share / (1 - share)) if start is None else 0.0
    logits = np.full(n, base) if start is None else np.array(start, dtype=np.float64)
    for t in range(trees):
        p = 1.0 / (1.0 + np.exp(-logits))
        g, h = weight * (p - y), weight * p * (1 - p)
        nodes = [np.arange(n)]
        for i in range(inner):
            rows = nodes[i]
            best = (0.0, -1, 0)
            if len(rows):
                flat = (binned[rows] + offsets).ravel()
                gs = np.bincount(flat, np.repeat(g[rows], width), minlength=width * (bins + 1))
                hs = np.bincount(flat, np.repeat(h[rows], width), minlength=width * (bins + 1))
                gs, hs = (
                    gs.reshape(width, bins + 1).cumsum(axis=1),
                    hs.reshape(width, bins + 1).cumsum(axis=1),
                )
                total_g, total_h = gs[0, -1], hs[0, -1]
                right_g, right_h = total_g - gs, total_h - hs
                gain = gs**2 / (hs + l2) + right_g**2 / (right_h + l2) - total_g**2 / (total_h + l2)
                gain[(hs < min_hessian) | (right_h < min_hessian)] = 0.0
                at = np.unravel_index(int(np.argmax(gain)), gain.shape)
                if gain[at] > 1e-9 and at[1] < len(edges[at[0]]):
                    best = (float(gain[at]), int(at[0]), int(at[1]))
            if best[1] >= 0:
                _, f, b = best
                features[t, i], thresholds[t, i] = f, float(edges[f][b])
                left = binned[rows, f] <= b
                nodes.extend([rows[left], rows[~left]])
            else:
                nodes.extend([rows, rows[:0]])
        for leaf in range(leaves):
            rows = nodes[inner + leaf]
            values[t, leaf] = -rate * g[rows].sum() / (h[rows].sum() + l2) if len(rows) else 0.0
        logits += tree_outputs(x, features[t : t + 1], thresholds[t : t + 1], values[t : t + 1])
    return {
        "base": base,
        "feature": features.tolist(),
        "threshold": [[v if math.isfinite(v) else None for v in row] for row in thresholds.tolist()],
        "value": values.tolist(),
    }


def _rounded(values: Any) -> Any:
    """``values`` (nested lists) with each float at 6 significant digits: a small file."""
    if isinstance(values, list):
        return [_rounded(v) for v in values]
    return float(f"{values:.6g}") if isinstance(values, float) else values


def train(
    pool: Pool,
    train_on: Sequence[tuple[str, int]],
    choose_on: Sequence[tuple[str, int]],
    *,
    say: Callable[[str], None] = print,
    clips: Sequence[float] = CLIPS,
    depth: int = 2,
    sizes: Sequence[int] = (50, 100, 200),
) -> dict[str, Any]:
    """Fit the anchored tree models on ``train_on`` and keep the one whose ranking injects the most
    evidence on ``choose_on`` (the mean over its sets, each set weighing alike); the model as
    :class:`~langmem_plugin.services.recall.learned.LearnedRanker` reads it.

    Each model is a logistic function of an anchor and a correction: the anchor is the fused
    score (its weight and the bias fitted on the training rows) plus the time lift at
    :data:`TIME_WEIGHT_PER_CLIP` times the clip; the correction is ``sizes`` gradient-boosted trees
    of depth ``depth`` fitted on top of the anchor, which never split on the time lift and whose sum
    is clipped to ``clips`` either way. So a candidate the question's time names is never ranked
    under one it does not name by the trees alone, and a fused lead of more than twice the clip
    (in log-odds) is never undone: what the fusion encodes (the time lift of "yesterday" in any
    language, a strong match in any language) stays, and the trees reorder what it leaves close.
    """
    train_q, valid_q = pool.questions(train_on), pool.questions(choose_on)
    if not len(train_q) or not len(valid_q):
        raise ConfigurationError("the training or the choosing split names no dumped question")
    rows = _rows(pool, train_q)
    x, y = pool.x[rows], pool.label[rows].astype(np.float64)
    # each question weighs alike, whatever the size of its pool; each set too
    per_question = np.bincount(pool.question[rows], minlength=len(pool.evidence)).astype(np.float64)
    weight = 1.0 / per_question[pool.question[rows]]
    for name in set(pool.sets[train_q]):
        mine = pool.sets[pool.question[rows]] == name
        weight[mine] /= weight[mine].sum()
    weight *= len(weight) / weight.sum()
    sets = sorted({str(s) for s in pool.sets[valid_q]})

    def shares(scores: np.ndarray) -> list[float]:
        return [evidence_share(pool, scores, valid_q[pool.sets[valid_q] == s])[0] for s in sets]

    def told(name: str, found: list[float]) -> str:
        return f"{name}: " + ", ".join(f"{s} {v:.1f}" for s, v in zip(sets, found, strict=True))

    fused, timed = FEATURES.index("fused"), FEATURES.index("time_lift")
    say(told("fusion", shares(pool.x[:, fused])))
    mean, scale, w, b = fit_logistic(x[:, [fused]], y, l2=1.0, weight=weight)
    slope = float(w[0] / scale[0])
    bias = float(b - mean[0] * slope)
    unsplit = x.copy()
    for name in UNSPLIT:
        unsplit[:, FEATURES.index(name)] = 0.0  # one value: no tree can split on it
    head = {"format": LearnedRanker.FORMAT, "version": 2, "features": list(FEATURES), "kind": "trees"}
    best: tuple[float, dict[str, Any]] | None = None
    for clip in clips:
        linear = [0.0] * len(FEATURES)
        linear[fused], linear[timed] = slope, TIME_WEIGHT_PER_CLIP * clip
        start = bias + x @ np.asarray(linear)
        fitted = fit_trees(unsplit, y, weight=weight, trees=max(sizes), depth=depth, start=start)
        for size in sizes:
            cut = {k: v[:size] for k, v in fitted.items() if k != "base"}
            model = _rounded({**head, "base": bias, "linear": linear, "clip": clip, **cut})
            found = shares(LearnedRanker(model).logits(pool.x))
            say(told(f"anchored trees, clip {clip} x {size}", found))
            if best is None or sum(found) > best[0]:
                best = (sum(found), model)
    assert best is not None
    return {
        **best[1],
        "trained_on": [f"{s}:{c}" for s, c in train_on],
        "chosen_on": [f"{s}:{c}" for s, c in choose_on],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's docs)."""
    parser = argparse.ArgumentParser(prog="python -m langmem_plugin.bench.train_ranker")
    steps = parser.add_subparsers(dest="step", required=True)
    dump = steps.add_parser("dump", help="import the conversations and dump each question's candidate pool")
    dump.add_argument("--data", action="append", required=True, help="a set (repeat for several)")
    dump.add_argument("--conversations", type=int, default=None, help="only the first N of each set")
    dump.add_argument("--out", required=True, type=Path, help="the cache file to write (.npz)")
    fit = steps.add_parser("train", help="fit the ranker on a dump and write it as JSON")
    fit.add_argument("--cache", required=True, type=Path, help="a file written by dump")
    fit.add_argument("--train", required=True, help="conversations to fit on, e.g. LoCoMo:0-4,REALTALK:0-2")
    fit.add_argument("--valid", required=True, help="conversations to choose on, e.g. LoCoMo:5-9")
    fit.add_argument("--out", required=True, type=Path, help="the model file to write (.json)")
    args = parser.parse_args(argv)
    if args.step == "dump":
        pool = dump_pools([Path(p) for p in args.data], conversations=args.conversations)
        pool.save(args.out)
        print(f"{len(pool.evidence)} questions, {len(pool.label)} candidates -> {args.out}")
        return 0
    pool = Pool.load(args.cache)
    sizes = {str(s): int(pool.conversations[pool.sets == s].max()) + 1 for s in set(pool.sets)}
    model = train(pool, parse_split(args.train, sizes), parse_split(args.valid, sizes))
    args.out.write_text(json.dumps(model, separators=(",", ":")) + "\n")
    print(f"model -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
