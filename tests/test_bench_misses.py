"""The miss table of ``bench locomo --misses`` on a synthetic LoCoMo-shaped conversation built to
lose evidence at every stage: through ``Memory()`` (embedded Qdrant), the real import and recall."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from langmem_plugin.bench.locomo import KS, run_locomo_bench
from langmem_plugin.bench.locomo.misses import FATES, ORACLE_BUDGETS, POOL_SIZES, MissTable, oracle_share
from langmem_plugin.cli import main
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.testing import FakeEmbeddings

SESSIONS, PER_SESSION = 10, 25
#: the words of the question whose evidence shares none of them (each distractor holds three)
RARE = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


def _filler(rng: random.Random, words: int) -> str:
    syllables = ["ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "vu", "ze", "qua", "rho"]
    return " ".join("".join(rng.choice(syllables) for _ in range(3)) for _ in range(words)).capitalize() + "."


def _conversation() -> dict[str, Any]:
    """250 turns: 25 long turns about a saxophone, 55 distractors holding three of :data:`RARE`
    each, one turn said twice, one turn sharing no word with its question, filler."""
    rng = random.Random(11)
    texts = [_filler(rng, 8) for _ in range(SESSIONS * PER_SESSION)]
    saxophone = list(range(3, 250, 10))  # 25 turns, one every 10
    for i in saxophone:
        texts[i] = f"I practised the saxophone again. {_filler(rng, 60)}"
    distractors = [i for i in range(250) if i % 10 in (5, 7)][:55]
    for n, i in enumerate(distractors):
        texts[i] = " ".join(RARE[(n + j * 3) % len(RARE)] for j in range(3)) + f" {_filler(rng, 4)}"
    hidden, twice, parrot = 100, (21, 181), 62
    texts[hidden] = "Quietly rebuilt the greenhouse roof."
    for i in twice:
        texts[i] = "I adopted a ferret named Pickle."
    texts[parrot] = "My parrot is called Mango."
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bo"}
    ids = []
    for s in range(SESSIONS):
        conversation[f"session_{s + 1}_date_time"] = f"10:00 am on {s + 1} March, 2023"
        turns = []
        for t in range(PER_SESSION):
            i = s * PER_SESSION + t
            speaker = "Ann" if i in twice or i % 2 == 0 else "Bo"
            turns.append({"speaker": speaker, "dia_id": f"D{s + 1}:{t + 1}", "text": texts[i]})
            ids.append(f"D{s + 1}:{t + 1}")
        conversation[f"session_{s + 1}"] = turns
    qa = [
        {
            "question": "When did they play the saxophone?",
            "evidence": [ids[i] for i in saxophone],
            "category": 1,
        },
        {
            "question": "What is the ferret called, Pickle?",
            "evidence": [ids[i] for i in twice],
            "category": 2,
        },
        {"question": " ".join(RARE) + "?", "evidence": [ids[hidden]], "category": 3},
        {"question": "What is the name of the parrot?", "evidence": [ids[parrot]], "category": 4},
    ]
    return {"sample_id": "conv-misses", "conversation": conversation, "qa": qa}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("misses") / "locomo_misses.json"
    path.write_text(json.dumps([_conversation()]))
    return path, run_locomo_bench(path, variants=("product",), embeddings=FakeEmbeddings(256), misses=True)


def test_every_evidence_turn_has_one_fate_and_the_injected_ones_are_the_product_rows(run: Any) -> None:
    _, result = run
    table: MissTable = result.misses
    (product,) = result.variants
    assert len(table.questions) == len(product.recall[KS[0]]) == 4
    for question, recall in zip(table.questions, product.recall[KS[0]], strict=True):
        assert question.fates
        assert set(question.fates) <= set(FATES)
        # an injected turn is never a miss: the injected share is what the product row counted
        assert question.fates.count("injected") / len(question.fates) == pytest.approx(recall)
        # a turn outside the default pool is a first-stage miss, and only such a turn is
        assert question.outside[0] == question.fates.count("not in pool")
        assert list(question.outside) == sorted(question.outside, reverse=True)
        assert question.outside[POOL_SIZES.index(1000)] == 0  # more candidates than turns: all in
        # the oracle: never less at a larger budget, never more than the pool holds
        assert list(question.oracle) == sorted(question.oracle)
        assert question.oracle[-1] <= 1 - question.outside[0] / len(question.fates) + 1e-9
    for category in (None, 1, 2, 3, 4):  # each category asked (5, adversarial, is not)
        assert sum(table.share(fate, category) for fate in FATES) == pytest.approx(100.0)
    assert table.share("injected") == pytest.approx(product.mean_recall(KS[0]))
    saxophone, twice, hidden, parrot = table.questions
    # 25 long turns for 550 tokens: some in, the rest cut by the budget or ranked out of the 20 kept
    assert {"injected", "cut: budget", "ranked out"} <= set(saxophone.fates)
    assert "not in pool" not in saxophone.fates
    assert saxophone.oracle[0] < saxophone.oracle[-1]
    assert sorted(twice.fates) == ["cut: duplicate", "injected"]  # the same text once only
    assert hidden.fates == ("not in pool",)  # the 50 best of each list are the distractors
    assert hidden.oracle == (0.0,) * len(ORACLE_BUDGETS)
    assert parrot.fates == ("injected",)
    assert parrot.oracle == (1.0,) * len(ORACLE_BUDGETS)


def test_the_table_prints_every_fate_per_category_and_the_oracle(run: Any) -> None:
    _, result = run
    text = result.misses.table()
    assert "1 multi-hop" in text
    assert "overall" in text
    for label in ("first stage", "ranked out", "cut by the budget", "cut as a duplicate", "@200", "@1000"):
        assert label in text
    for budget in ORACLE_BUDGETS:
        assert f"{budget} tokens" in text
    missed = sum(len(q.fates) - q.fates.count("injected") for q in result.misses.questions)
    assert f"{missed} of 29 evidence turns missed over 4 questions" in text


def test_oracle_packs_the_cheapest_evidence_first() -> None:
    items = [(40, ["a"]), (10, ["b"]), (10, ["b", "x"]), (25, ["c"]), (5, ["z"])]
    shares = [oracle_share(["a", "b", "c"], items, budget) for budget in (9, 10, 35, 74, 75)]
    assert shares == pytest.approx([0.0, 1 / 3, 2 / 3, 2 / 3, 1.0])


def test_misses_needs_the_product_row(run: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = run
    with pytest.raises(ConfigurationError, match="--variants product --misses"):
        run_locomo_bench(path, variants=("bm25-turns",), embeddings=FakeEmbeddings(16), misses=True)
    code = main(["bench", "locomo", "--data", str(path), "--variants", "bm25-turns", "--misses"])
    assert code != 0
    assert "--variants product --misses" in capsys.readouterr().err
