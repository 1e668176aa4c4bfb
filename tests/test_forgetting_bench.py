"""`langmem-plugin bench forgetting` end to end on a tiny LoCoMo-shaped file (no real data needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin.bench.forgetting import run_forgetting_bench
from langmem_plugin.cli import main
from langmem_plugin.testing import FakeEmbeddings

LINES = [
    ("Ann", "I adopted a puppy named Biscuit last spring."),
    ("Bo", "My marathon training in Boston is going really well."),
    ("Ann", "I started pottery classes every Saturday morning."),
    ("Bo", "Biscuit chewed through my violin case yesterday."),
    ("Ann", "My sister moved to Lisbon to study architecture."),
    ("Bo", "I bought a red kayak for paddling on the river."),
    ("Ann", "We are planning a trip to Kyoto in the autumn."),
    ("Bo", "I finally finished reading that novel about whales."),
]
QUESTIONS = [
    ("What is the name of Ann's puppy?", "D1:1"),
    ("Where is Bo training for the marathon?", "D1:2"),
    ("When does Ann go to pottery classes?", "D1:3"),
    ("Where did Ann's sister move?", "D1:5"),
    ("What colour is Bo's kayak?", "D1:6"),
    ("Where are they planning a trip?", "D1:7"),
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    turns = [{"speaker": who, "dia_id": f"D1:{n}", "text": text} for n, (who, text) in enumerate(LINES, 1)]
    sample: dict[str, Any] = {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": [{"question": q, "evidence": [e], "category": 4} for q, e in QUESTIONS],
    }
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps([sample]))
    return path


def test_forgotten_facts_are_never_injected_afterwards_and_the_rest_is_still_recalled(data: Path) -> None:
    result = run_forgetting_bench(data, facts=3, seed=1, embeddings=FakeEmbeddings())
    assert result.facts == 3
    assert result.questions == len(QUESTIONS)
    assert 0 < result.kept_questions < len(QUESTIONS)  # the questions about a forgotten fact are left out
    assert result.injected_before > 0  # the forgotten statements were recalled before the forget
    assert result.injected_after == 0
    assert result.evidence_before > 0
    assert result.evidence_after >= result.evidence_before  # nothing the kept questions need went
    table = result.table()
    assert "after 0 (goal 0)" in table
    assert f"of the {result.kept_questions} questions whose evidence was kept" in table


def test_the_seed_chooses_the_facts(data: Path) -> None:
    one = run_forgetting_bench(data, facts=2, seed=1, embeddings=FakeEmbeddings())
    same = run_forgetting_bench(data, facts=2, seed=1, embeddings=FakeEmbeddings())
    assert (one.kept_questions, one.injected_before) == (same.kept_questions, same.injected_before)


def test_the_cli_runs_the_bench(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "forgetting", "--data", str(data), "--facts", "2", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "forgetting 2 facts of a LoCoMo conversation" in out
    assert "recalls injecting a forgotten statement: before" in out
    assert "after 0 (goal 0)" in out


def test_forget_user_failing_at_each_write_batch_never_mixes_and_a_retry_leaves_nothing(data: Path) -> None:
    from langmem_plugin.bench.bad_day import run_bad_day_bench

    result = run_bad_day_bench(data, shared=6, embeddings=FakeEmbeddings())
    assert result.items > 0
    assert result.quoted > 0  # b's exchanges quoted a before: the strip is measured
    assert result.rows
    for _, removed, quoting, left in result.rows:
        assert not (removed and quoting)  # never part of a forgotten while b still shows a's words
        assert left == 0
    assert "0 mixed (goal 0)" in result.table()
