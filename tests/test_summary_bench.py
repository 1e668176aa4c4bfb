"""``langmem-plugin bench context``: registered in the CLI, errors without a traceback, summary rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from langmem_plugin.bench.context import run_context_bench
from langmem_plugin.cli import main


def _locomo(path: Path) -> Path:
    turns = [
        {"speaker": "Ann" if i % 2 else "Bob", "dia_id": f"D1:{i}", "text": f"Line {i} about hiking and tea."}
        for i in range(40)
    ]
    sample = {
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1 May 2023",
            "session_1": turns,
        }
    }
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_bench_context_without_its_data_says_why_without_a_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "langmem_plugin",
            "bench",
            "context",
            "--data",
            str(tmp_path / "missing.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("langmem-plugin bench context: LoCoMo data not found at")
    assert "Fix: pass --data PATH to locomo10.json" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--steps", "0"], "--steps: must be a whole number of at least 1"),
        (["--data", "NOT_JSON"], "is not LoCoMo data"),
    ],
)
def test_bench_context_rejects_bad_input_with_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("not json", encoding="utf-8")
    args = [str(bad) if a == "NOT_JSON" else a for a in args]
    if "--data" not in args:
        args += ["--data", str(_locomo(tmp_path / "locomo.json"))]
    try:
        code = main(["bench", "context", *args])
    except SystemExit as refused:  # a bad argument: refused by the command line before any work
        code = refused.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_bench_context_prints_the_summarization_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "context", "--data", str(_locomo(tmp_path / "locomo.json")), "--steps", "6"]) == 0
    out = capsys.readouterr().out
    for row in (
        "none",
        "context-editing",
        "summarization-mw",
        "ours: summary 16k",
        "ours: default + summary 16k",
    ):
        assert f"| {row} " in out


def test_our_summary_keeps_the_window_and_every_result_retrievable(tmp_path: Path) -> None:
    result = run_context_bench(_locomo(tmp_path / "locomo.json"), steps=6)
    setups = {s.name: s for s in result.setups}
    summary = setups["ours: summary 16k"]
    assert max(summary.tokens[1:]) < max(setups["none"].tokens)  # the window was summarized
    assert summary.tokens[-1] < setups["none"].tokens[-1]
    assert setups["ours: default + summary 16k"].retrievable == 1.0
