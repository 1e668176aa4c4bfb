"""Bad arguments of every subcommand: one line on stderr with the fix, exit status 2, no work done.

Each case goes through the command's ``main()`` (what the ``langmem-plugin`` script calls), so a
case fails if anything starts before the arguments are checked: the first output of every
command is its title line on stdout, and none may appear. A few run in a fresh process, as a
user's shell would, to show that no traceback reaches the terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from langmem_plugin.cli import build_parser, main

# (argv, what the one line must name). Every subcommand, every option that takes a value.
BAD_ARGUMENTS = [
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["doctor", "--jsn"], "unrecognized arguments: --jsn"),
    (["demo", "extra"], "unrecognized arguments: extra"),
    (["bench"], "the following arguments are required: NAME"),
    (["bench", "nope"], "invalid choice: 'nope'"),
    (["bench", "core", "--queries", "-3"], "--queries: must be a whole number of at least 1, got '-3'"),
    (["bench", "core", "--queries", "many"], "--queries: must be a whole number of at least 1, got 'many'"),
    (["bench", "core", "--docs", "0"], "--docs: must be a whole number of at least 1, got '0'"),
    (["bench", "memory", "--memories", "-1"], "--memories: must be a whole number of at least 1"),
    (["bench", "memory", "--queries", "1.5"], "--queries: must be a whole number of at least 1, got '1.5'"),
    (["bench", "stores", "--sizes", "10,-5"], "--sizes: sizes must be positive"),
    (["bench", "stores", "--others", "-1"], "--others: must be a whole number of at least 0, got '-1'"),
    (["bench", "stores", "--queries", "0"], "--queries: must be a whole number of at least 1"),
    (["bench", "stores", "--budget", "-2"], "--budget: must be a number of seconds above 0, got '-2'"),
    (["bench", "stores", "--budget", "nan"], "--budget: must be a number of seconds above 0, got 'nan'"),
    (["bench", "stores", "--peers", "inmemory,postgres"], "unknown peer 'postgres'; choose from:"),
    (["bench", "checkpointer", "--items", "0"], "--items: must be a whole number of at least 1"),
    (["bench", "checkpointer", "--samples", "-7"], "--samples: must be a whole number of at least 1"),
    (["bench", "checkpointer", "--scale", "10,x"], "--scale: sizes must be integers separated by commas"),
    (["bench", "locomo"], "the following arguments are required: --data"),
    (["bench", "locomo", "--data", "x.json", "--variants", "bm26"], "unknown variant 'bm26'"),
    (["bench", "context", "--steps", "0"], "--steps: must be a whole number of at least 1, got '0'"),
    (["bench", "context", "--trace", "long"], "--trace: invalid choice: 'long'"),
    (["bench", "plan", "--window", "-800"], "--window: must be a whole number of at least 1, got '-800'"),
    (["bench", "startup", "--runs", "0"], "--runs: must be a whole number of at least 1, got '0'"),
    (["bench", "tools", "--turns", "0"], "--turns: must be a whole number of at least 1, got '0'"),
    (["bench", "tools", "--window", "all"], "--window: must be a whole number of at least 1, got 'all'"),
]


@pytest.mark.parametrize(
    ("argv", "named"), BAD_ARGUMENTS, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_a_bad_argument_is_one_line_with_the_fix(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing started: no title line, no table
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert named in lines[0]
    assert lines[0].startswith("langmem-plugin")
    assert lines[0].endswith("--help)")  # where to read what the command takes


def test_demo_refuses_a_dir_it_cannot_write_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a directory")
    for bad in [a_file, a_file / "inside"]:
        with pytest.raises(SystemExit) as info:
            main(["demo", "--dir", str(bad)])
        assert info.value.code == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        (line,) = captured.err.splitlines()
        assert f"--dir: cannot write in {str(bad)!r}" in line
        assert "pass a directory you can write in, or leave --dir out for a temporary one" in line
    assert a_file.read_text() == "not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory")
def test_demo_refuses_a_read_only_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(SystemExit) as info:
        main(["demo", "--dir", str(locked / "demo")])
    assert info.value.code == 2
    assert "cannot write in" in capsys.readouterr().err


def test_a_good_dir_is_given_to_the_demo_as_written_and_nothing_is_made(tmp_path: Path) -> None:
    wanted = tmp_path / "a" / "b"
    assert build_parser().parse_args(["demo", "--dir", str(wanted)]).dir == str(wanted)
    assert list(tmp_path.iterdir()) == []  # checked, not made: the probe left nothing behind


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "core", "--queries", "-3"],
        ["demo", "--dir", "/proc/langmem-plugin-demo"],
        ["bench", "checkpointer", "--scale", "ten"],
    ],
    ids=" ".join,
)
def test_no_traceback_reaches_the_terminal(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "langmem_plugin", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_a_count_is_a_whole_number_of_at_least_its_minimum_or_refused(text: str) -> None:
    parser = build_parser()
    try:
        expected = int(text.replace("_", ""))
    except ValueError:
        expected = None
    if expected is not None and expected >= 1:
        assert parser.parse_args(["bench", "plan", "--window", text]).window == expected
        return
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["bench", "plan", "--window", text])
    assert info.value.code == 2


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=20))
@example("~0")  # a home directory that cannot be found (CI runs as a user with no entry named 0)
def test_whatever_is_typed_the_refusal_is_one_line(text: str) -> None:
    for argv in (
        ["doctor", "--json", text],
        ["demo", "--dir", text, "--x"],
        ["bench", "core", "--docs", text, text],
    ):
        done = _refusal(argv)
        if done is not None:
            assert len(done.splitlines()) == 1, done
            assert done.startswith("langmem-plugin")


def _refusal(argv: list[str]) -> str | None:
    """What the command wrote on stderr when it refused ``argv`` (``None``: it parsed)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        build_parser().parse_args(argv)
    return err.getvalue() or None  # nothing on stderr: it parsed, or it was asked for --help
