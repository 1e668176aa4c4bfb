"""The budget curve of ``bench locomo --budget-curve`` on a small LoCoMo-shaped conversation, through
``Memory()`` (embedded Qdrant), the real import and recall at every budget and preset."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin.bench.locomo.budget import (
    ANCHORS,
    CURVE_BUDGETS,
    CURVE_ROWS,
    FENCE_TOKENS,
    curve_config,
    run_budget_curve,
)
from langmem_plugin.cli import main
from langmem_plugin.services.recall import FIT_BEFORE, FIT_SHAPED
from langmem_plugin.testing import FakeEmbeddings

WORDS = [
    "river", "garden", "bread", "letter", "window", "market", "summer", "train", "coffee", "evening",
    "kitchen", "mountain",
]  # fmt: skip
FENCE_AND_HEADERS = 80  # the fence, its preamble and a section's headers, beyond the memories budget


def _conversation() -> dict[str, Any]:
    """4 sessions of 20 turns: a hike told in 8 long turns over every session, a cat named once."""
    rng = random.Random(5)

    def filler(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."

    texts = [filler(10) for _ in range(80)]
    hikes = list(range(2, 80, 10))
    for n, i in enumerate(hikes):
        texts[i] = f"{filler(40)} We hiked up peak number {n} with the dog. {filler(40)}"
    texts[33] = "My cat is called Miso."
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bo"}
    ids = []
    for s in range(4):
        conversation[f"session_{s + 1}_date_time"] = f"10:00 am on {s + 1} May, 2023"
        turns = []
        for t in range(20):
            i = s * 20 + t
            turns.append(
                {"speaker": "Ann" if i % 2 else "Bo", "dia_id": f"D{s + 1}:{t + 1}", "text": texts[i]}
            )
            ids.append(f"D{s + 1}:{t + 1}")
        conversation[f"session_{s + 1}"] = turns
    qa = [
        {
            "question": "Which peaks have they hiked with the dog?",
            "evidence": [ids[i] for i in hikes],
            "category": 1,
        },
        {"question": "What is the cat called?", "evidence": [ids[33]], "category": 4},
    ]
    return {"sample_id": "conv-budget", "conversation": conversation, "qa": qa}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("budget") / "locomo_budget.json"
    path.write_text(json.dumps([_conversation()]))
    return path


def test_every_row_is_measured_at_every_budget_within_its_tokens(data: Path) -> None:
    curve = run_budget_curve(data, embeddings=FakeEmbeddings(64))
    for row in CURVE_ROWS:
        for total in CURVE_BUDGETS:
            point = curve.point(row, total)
            assert len(point.shares) == 2
            assert max(point.tokens) <= total - FENCE_TOKENS + FENCE_AND_HEADERS
        # the hikes: eight long turns, more of them shown as the budget grows
        hikes = [curve.point(row, total).shares[0] for total in CURVE_BUDGETS]
        assert hikes[-1] > hikes[0]
        assert curve.evidence(row, CURVE_BUDGETS[-1], 4) == 100.0  # the cat, found at any large budget
    tokens = [curve.tokens("default", total) for total in CURVE_BUDGETS]
    assert tokens == sorted(tokens)
    text = curve.table()
    for total in CURVE_BUDGETS:
        assert f"{total} tokens" in text
    for row in CURVE_ROWS:
        assert f"{row}, overall" in text
        assert f"{row}, 1 multi-hop" in text
    for name, _ in ANCHORS:
        assert name in text


def test_each_row_is_its_preset_at_the_budget() -> None:
    assert curve_config("default", 600).budgets.memories == 550  # the default's own budget
    assert curve_config("default", 600).max_items == 20
    assert curve_config("default", 600).candidates == 20
    assert curve_config("default", 2000).max_items > 20
    assert curve_config("default", 2000).candidates == curve_config("default", 2000).max_items
    fast = curve_config("fast", 400).retrieval
    assert fast is not None
    assert fast.candidates == 30
    assert curve_config("fit before", 1000).fit == FIT_BEFORE
    assert curve_config("default", 1000).fit == FIT_SHAPED


def test_the_command_prints_the_curve(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "locomo", "--data", str(data), "--budget-curve"]) == 0
    out = capsys.readouterr().out
    assert "anchor: mem0" in out
    assert "default, overall" in out
