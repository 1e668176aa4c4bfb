"""`langmem-plugin bench inspect` end to end at a tiny size: the store built, every page answered."""

from __future__ import annotations

import sys

import pytest

from langmem_plugin.cli import main


def test_the_command_line_runs_the_inspector_bench(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "inspect", "--items", "300", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "inspector benchmark (300 memories of one user" in out
    assert "store built in" in out
    assert "225 imported exchanges in 1 thread(s)" in out
    assert "75 saved facts" in out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    assert "| 1 user, 1 threads" in rows["catalog"]
    assert "| 50 rows, more" in rows["memories, first page"]
    assert "| 50 rows, more" in rows["memories, offset 150"]
    assert "| 1 rows " in rows["contains=zeppelin (few)"]  # one saved fact in 2,500 holds the word
    assert "| 0 rows " in rows["contains=xylophone (none)"]
    assert "candidates" in rows["search (recall explained)"]
    assert "| 1 changes, 1 exchange" in rows["one memory"]
    assert "| 50 rows, more" in rows["sorted by priority"]
    assert "| 50 rows, more" in rows["a thread, everything of it"]  # the user's memory from the thread
    assert "| 50 items " in rows["export kind=fact (JSON)"]  # two facts in three, one preference


def test_the_inspector_bench_without_the_inspect_extra_says_the_pip_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "starlette.testclient", None)  # as if starlette were not installed
    assert main(["bench", "inspect", "--items", "300"]) == 2
    captured = capsys.readouterr()
    assert "store built" not in captured.out  # nothing built first
    assert captured.err.strip() == (
        "langmem-plugin bench inspect: the inspector benchmark needs starlette.testclient. "
        "Fix: pip install 'langmem-plugin[inspect]' httpx"
    )


@pytest.mark.parametrize(("option", "value"), [("--items", "99"), ("--repeat", "0")])
def test_the_inspector_bench_refuses_bad_counts_before_anything_runs(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "inspect", option, value])
    assert exited.value.code == 2
    assert "must be a whole number of at least" in capsys.readouterr().err
