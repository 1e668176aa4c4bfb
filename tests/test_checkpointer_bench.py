"""``langmem-plugin bench checkpointer`` runs end to end on a small corpus (numbers are not checked)."""

from __future__ import annotations

import pytest

from langmem_plugin.cli import main


@pytest.mark.slow
def test_bench_checkpointer_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pysqlite3", reason="the bench extra (pysqlite3-binary) is not installed")
    assert main(["bench", "checkpointer", "--items", "300", "--samples", "5"]) == 0
    out = capsys.readouterr().out
    for row in (
        "batched put",
        "single put p50",
        "filtered search p50",
        "vector search p50",
        "reopen",
        "disk",
    ):
        assert row in out
    assert "CheckpointerStore(SqliteSaver)" in out
    assert "SqliteStore" in out


def test_bench_checkpointer_scale_prints_one_row_per_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "checkpointer", "--scale", "200,400", "--samples", "3"]) == 0
    out = capsys.readouterr().out
    assert "| 200 " in out
    assert "| 400 " in out
    assert "vector search p50" in out
