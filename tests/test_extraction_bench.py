"""The extraction benchmark runs end to end on one LoCoMo conversation (fake embeddings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plugin.bench.extraction import main, run_extraction_bench
from langmem_plugin.testing import FakeEmbeddings

# ../shared beside the repository, as CI lays it out
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="LoCoMo data not available")


def test_extraction_keeps_fewer_memories_and_times_consolidation() -> None:
    result = run_extraction_bench(DATA, conversations=[0], embeddings=FakeEmbeddings(), ks=(5,))
    turns, extracted = result.variants
    assert result.questions > 100
    assert 0 < extracted.memories < turns.memories
    assert extracted.candidates >= extracted.memories
    assert extracted.consolidation_ms
    assert all(0.0 <= r <= 1.0 for r in extracted.recall[5] + turns.recall[5])
    assert "ms_per_candidate_mean" in result.rows()[1]
    assert extracted.replay_duplicates == extracted.candidates  # a replayed session: all duplicates ...
    assert extracted.replay_decision_calls == 0  # ... skipped without a model call


def test_the_command_line_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data", str(DATA), "--conversations", "1", "--embeddings", "fake"]) == 0
    out = capsys.readouterr().out
    assert "every turn" in out
    assert "extraction" in out
