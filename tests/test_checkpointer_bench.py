"""``langmem-plugin bench checkpointer`` runs end to end on a small corpus (numbers are not checked).

``--scale`` is ``bench scale --stores checkpointer``: tests/test_bench_scale.py runs it.
"""

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
