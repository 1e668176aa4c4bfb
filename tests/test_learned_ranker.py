"""The learned ranker (issue 36 item 2), recall's default: the shipped model loads offline from the
package, scores deterministically, cannot undo the fusion's time lift or a strong fused lead, orders a
real recall's pool, and the training script runs on a tiny set."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.runnables import RunnableConfig

from langmem_plugin import Memory, RecallConfig
from langmem_plugin.bench import train_ranker
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.recall.features import FEATURES
from langmem_plugin.services.recall.learned import DEFAULT_MODEL, FORMAT, LearnedRanker, default_ranker
from langmem_plugin.services.recall.pool import pool_limit, pool_steps
from langmem_plugin.services.recall.retrieval import RetrievalConfig
from langmem_plugin.services.store_steps import execute

WRITE: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
ASK: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "q"}}


def _model(**weights: float) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "features": list(FEATURES),
        "mean": [0.0] * len(FEATURES),
        "scale": [1.0] * len(FEATURES),
        "weights": [weights.get(name, 0.0) for name in FEATURES],
        "bias": 0.0,
    }


def _history() -> list[dict[str, Any]]:
    chatter = [f"We walked past shop number {n} in the old town and it was closed" for n in range(60)]
    return [
        {"date": "2024-03-01", "messages": [{"role": "Kim", "content": text} for text in chatter[:30]]},
        {
            "date": "2024-03-08",
            "messages": [
                {"role": "Kim", "content": "Did you ever hear Anna play the cello?"},
                {"role": "Lee", "content": "Anna plays the cello in an orchestra in Berlin."},
                *({"role": "Kim", "content": text} for text in chatter[30:]),
            ],
        },
    ]


@pytest.fixture(scope="module")
def memory() -> Any:
    with Memory() as memory:
        memory.import_history(_history(), WRITE, per="message", progress=False)
        yield memory


def test_the_shipped_model_loads_from_the_package() -> None:
    assert DEFAULT_MODEL.parent.name == "recall"
    assert DEFAULT_MODEL.is_file()
    assert DEFAULT_MODEL.stat().st_size < 100_000  # a small file, read offline
    ranker = LearnedRanker.load()
    assert ranker.features == FEATURES
    assert default_ranker() is default_ranker()  # read once per process
    assert RecallConfig().learned_ranker is default_ranker()  # the default ranker
    assert RecallConfig(ranker="learned").learned_ranker is default_ranker()
    assert RecallConfig(ranker="fusion").learned_ranker is None  # the hand-set fusion, one argument away
    assert RecallConfig(ranker="fusion", retrieval=None).learned_ranker is None
    assert RecallConfig(retrieval=None).learned_ranker is None  # no signals: the store's own order


def test_scores_are_deterministic_probabilities() -> None:
    rows = [[(i * 7 + j * 3) % 5 / 2.0 for j in range(len(FEATURES))] for i in range(30)]
    first = LearnedRanker.load().score(rows)
    again = LearnedRanker.load().score(rows)
    assert first == again
    assert all(0.0 < s < 1.0 and math.isfinite(s) for s in first)
    assert len(set(first)) > 1  # the features move the score
    assert LearnedRanker.load().score([]) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "something else"}, "not a learned ranker"),
        ({"features": ["fused"]}, "train it again"),
        ({"weights": [1.0]}, "finite numbers"),
        ({"bias": float("nan")}, "finite number"),
        ({"scale": [0.0] * len(FEATURES)}, "above 0"),
        ({"kind": "forest"}, "'logistic' or 'trees'"),
        (
            {"kind": "trees", "base": 0.0, "feature": [[0, 1]], "threshold": [[0.0, 0.0]], "value": [[1.0]]},
            "2\\*\\*depth",
        ),
        (
            {"kind": "trees", "base": 0.0, "feature": [[99]], "threshold": [[0.0]], "value": [[1.0, 2.0]]},
            "2\\*\\*depth",
        ),
    ],
)
def test_a_model_that_is_not_one_is_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        LearnedRanker({**_model(fused=1.0), **change})


def test_a_tree_model_sends_each_row_to_its_leaf() -> None:
    """One tree of depth 1 on "asks" and one on "length": the sum of the leaves each row reaches."""
    asks, length = FEATURES.index("asks"), FEATURES.index("length")
    model = {
        **_model(),
        "kind": "trees",
        "base": -1.0,
        "feature": [[asks], [length]],
        "threshold": [[0.5], [None]],  # None: every row goes left
        "value": [[0.5, -2.0], [1.0, 9.0]],
    }
    rows = [[0.0] * len(FEATURES) for _ in range(2)]
    rows[1][asks] = 1.0
    logits = LearnedRanker(model).logits(np.asarray(rows))
    assert logits.tolist() == [-1.0 + 0.5 + 1.0, -1.0 - 2.0 + 1.0]


def test_a_model_file_that_does_not_read_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "ranker.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigurationError, match=r"ranker\.json"):
        LearnedRanker.load(bad)
    with pytest.raises(ConfigurationError, match="missing"):
        LearnedRanker.load(tmp_path / "missing.json")


def test_recall_config_checks_the_ranker() -> None:
    with pytest.raises(ConfigurationError, match="'fusion', 'learned'"):
        RecallConfig(ranker="neural")
    with pytest.raises(ConfigurationError, match="ranker='fusion'"):
        RecallConfig(ranker=LearnedRanker.load(), retrieval=None)  # a model of your own needs signals
    assert RecallConfig(ranker="fusion", retrieval=None).learned_ranker is None
    assert RecallConfig(ranker="learned", retrieval=None).learned_ranker is None  # the store's order


def test_the_shipped_model_is_anchored_on_the_fusion_and_the_time_lift() -> None:
    """The trees correct the fused score and the time lift by at most ``clip`` each way and never
    split on the time lift or the age, so the time lift always adds twice the clip or more."""
    model = json.loads(DEFAULT_MODEL.read_text())
    clip, linear = model["clip"], dict(zip(FEATURES, model["linear"], strict=True))
    assert model["kind"] == "trees"
    assert clip > 0
    assert linear["fused"] > 0
    assert linear["time_lift"] >= 2 * clip
    assert {name for name, w in linear.items() if w} == {"fused", "time_lift"}
    split = {
        FEATURES[f]
        for fs, ts in zip(model["feature"], model["threshold"], strict=True)
        for f, t in zip(fs, ts, strict=True)
        if t is not None
    }
    assert "time_lift" not in split
    assert "age" not in split
    assert len(split) > 5
    ranker = LearnedRanker.load()
    rows = np.random.default_rng(0).normal(size=(400, len(FEATURES)))
    rows[:, FEATURES.index("time_lift")] = 0.0
    timed = rows.copy()
    timed[:, FEATURES.index("time_lift")] = 1.0
    assert np.allclose(ranker.logits(timed) - ranker.logits(rows), linear["time_lift"])
    older = rows.copy()
    older[:, FEATURES.index("age")] += 5.0
    assert np.allclose(ranker.logits(older), ranker.logits(rows))  # recency is ranking's, not the model's
    anchor = rows @ np.asarray(model["linear"]) + model["base"]
    assert np.all(np.abs(ranker.logits(rows) - anchor) <= clip + 1e-9)


def test_an_anchored_model_is_its_anchor_plus_the_clipped_trees() -> None:
    fused, asks = FEATURES.index("fused"), FEATURES.index("asks")
    linear = [0.0] * len(FEATURES)
    linear[fused] = 2.0
    model = {
        **_model(),
        "kind": "trees",
        "base": -1.0,
        "linear": linear,
        "clip": 0.5,
        "feature": [[asks]],
        "threshold": [[0.5]],
        "value": [[0.25, -3.0]],  # an asking candidate: -3, clipped to -0.5
    }
    rows = np.zeros((2, len(FEATURES)))
    rows[:, fused] = 1.0
    rows[1, asks] = 1.0
    assert LearnedRanker(model).logits(rows).tolist() == [-1.0 + 2.0 + 0.25, -1.0 + 2.0 - 0.5]
    for bad, message in (({"clip": 0}, "'clip'"), ({"clip": "1"}, "'clip'"), ({"linear": [1.0]}, "'linear'")):
        with pytest.raises(ConfigurationError, match=message):
            LearnedRanker({**model, **bad})


def test_the_pool_holds_more_than_fusion_keeps_with_a_row_per_candidate(memory: Memory) -> None:
    config = RecallConfig(candidates=10)
    steps = pool_steps(
        Scope(user_id="u1", thread_id="q"),
        memory.layout,
        "shop old town",
        compartments=config.compartments,
        retrieval=RetrievalConfig(),
        min_similarity=config.min_relevance,
    )
    pool = execute(memory.store, steps)
    (hits, empty), (rows, _) = pool.hits, pool.rows  # user memory; this thread's session memory
    assert empty == []
    assert pool_limit(RetrievalConfig()) == RetrievalConfig().candidates  # what fusion reads of each list
    assert len(hits) > config.candidates  # the learned ranker orders more than fusion keeps
    assert len(rows) == len(hits)
    assert all(len(row) == len(FEATURES) and all(math.isfinite(v) for v in row) for row in rows)
    cover = FEATURES.index("query_cover")
    assert max(row[cover] for row in rows) == 1.0  # a turn holding every word of the question


def test_a_real_recall_with_the_learned_ranker(memory: Memory) -> None:
    with Memory(memory.store, recall=RecallConfig(ranker="learned")) as learned:
        recall = learned.recall("What instrument does Anna play?", ASK)
    injected = [item.content for item in recall.items]
    assert any("plays the cello in an orchestra" in text for text in injected[:3]), injected
    assert all(0.0 < item.score <= 1.0 for item in recall.items)
    again = Memory(memory.store, recall=RecallConfig(ranker="learned")).recall(
        "What instrument does Anna play?", ASK
    )
    assert [i.id for i in again.items] == [i.id for i in recall.items]  # deterministic


@pytest.mark.parametrize(("weight", "first"), [(-5.0, "plays the cello"), (5.0, "Did you ever hear")])
def test_the_models_score_orders_the_candidates(memory: Memory, weight: float, first: str) -> None:
    """Two turns on the question, one asking and one telling: the model's weight decides."""
    ranker = LearnedRanker(_model(query_cover=2.0, asks=weight))
    with Memory(memory.store, recall=RecallConfig(ranker=ranker)) as ranked:
        recall = ranked.recall("Anna cello", ASK)
    assert first in recall.items[0].content, [i.content for i in recall.items[:3]]


def _tiny_locomo(path: Path) -> Path:
    turns = [
        {"dia_id": f"D1:{n}", "speaker": "Kim" if n % 2 else "Lee", "text": text}
        for n, text in enumerate(
            [
                "I adopted a grey cat named Pixel last week.",
                "That is lovely, how old is Pixel?",
                "Pixel is two years old and loves boxes.",
                "We went hiking near the lake on Sunday.",
                "The lake was frozen, we skated instead.",
                "My brother Tom moved to Lisbon for work.",
            ],
            1,
        )
    ]
    sample = {
        "sample_id": "tiny",
        "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns},
        "qa": [
            {"question": "What is the name of Kim's cat?", "evidence": ["D1:1"], "category": 4},
            {"question": "How old is Pixel?", "evidence": ["D1:3"], "category": 4},
            {"question": "Where did Tom move?", "evidence": ["D1:6"], "category": 4},
            {"question": "What did they do at the lake?", "evidence": ["D1:4", "D1:5"], "category": 1},
        ],
    }
    out = path / "tiny.json"
    out.write_text(json.dumps([sample, {**sample, "sample_id": "tiny-2"}]))
    return out


def test_the_training_script_runs_on_a_tiny_slice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _tiny_locomo(tmp_path)
    cache, model = tmp_path / "pool.npz", tmp_path / "ranker.json"
    assert train_ranker.main(["dump", "--data", str(data), "--out", str(cache)]) == 0
    pool = train_ranker.Pool.load(cache)
    assert len(pool.evidence) == 8
    assert pool.label.sum() >= 8  # every evidence turn is in its pool
    assert (
        train_ranker.main(
            [
                "train",
                "--cache",
                str(cache),
                "--train",
                "LoCoMo:0",
                "--valid",
                "LoCoMo:1",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    assert "fusion: LoCoMo" in capsys.readouterr().out
    ranker = LearnedRanker.load(model)
    assert json.loads(model.read_text())["trained_on"] == ["LoCoMo:0"]
    with Memory(recall=RecallConfig(ranker=ranker)) as memory:
        memory.import_history([{"role": "user", "content": "My cat is called Pixel"}], WRITE, progress=False)
        assert "Pixel" in memory.recall("What is my cat called?", ASK).prompt


def test_a_split_that_does_not_read_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="SET:FIRST-LAST"):
        train_ranker.parse_split("LoCoMo:five", {"LoCoMo": 10})
