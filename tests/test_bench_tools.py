"""``bench tools`` at a small size: every number is computed from the tools and the thread it runs,
and the break-even turns follow from the series it prints."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import pytest
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langmem_plugin import Memory, count_tokens
from langmem_plugin.bench.tools import ThreadTokens, chat_turns, langmem_tools, run_tools_bench
from langmem_plugin.cli import main
from langmem_plugin.errors import MissingDependencyError
from langmem_plugin.surfaces.tools import LEAN_TOOL_NAMES


def _tokens(tools: Sequence[BaseTool]) -> int:
    return sum(count_tokens(json.dumps(convert_to_openai_tool(t)), model="gpt-4o-mini") for t in tools)


def _break_even(with_: tuple[int, ...], without: tuple[int, ...]) -> int | None:
    """The first call from which every call with memory costs less (brute force)."""
    return next(
        (k + 1 for k in range(len(with_)) if all(w < o for w, o in zip(with_[k:], without[k:], strict=True))),
        None,
    )


def test_the_bench_measures_the_sets_langmem_and_the_threads() -> None:
    result = run_tools_bench(turns=6, window=2)
    with Memory() as lean, Memory(tools="full") as full:
        assert result.sets["lean"] == (LEAN_TOOL_NAMES, _tokens(lean.tools))
        assert result.sets["full"] == (tuple(t.name for t in full.tools), _tokens(full.tools))
    assert result.langmem == _tokens(langmem_tools())
    by_tool = {cost.name: cost for cost in result.tools}
    assert by_tool["clear_memory"].comes_in == "full (destructive)"
    assert by_tool["save_memory"].comes_in == "lean, full"
    assert by_tool["create_plan"].comes_in == "plan=True adds"
    assert by_tool["retrieve_result"].comes_in == "results=ResultsConfig() adds"
    for name, (names, tokens) in result.sets.items():
        assert tokens == sum(by_tool[n].tokens for n in names), name

    windowed, whole = result.threads
    assert windowed.window == "last 2 turns"
    assert whole.window == "whole thread (the default)"
    for thread in result.threads:
        assert thread.schemas == result.lean
        assert len(thread.with_memory) == len(thread.without_memory) == 6
        assert list(thread.without_memory) == sorted(set(thread.without_memory))  # the history grows
        assert all(w > thread.schemas for w in thread.with_memory)
    # the whole thread resent with memory costs more than without, every call
    assert all(w > o for w, o in zip(whole.with_memory, whole.without_memory, strict=True))
    assert whole.break_even() is None
    assert whole.cumulative_break_even() is None
    # the window stops the growth: the later calls with memory cost less than the history
    assert (
        windowed.with_memory[-1] - windowed.with_memory[2]
        < whole.without_memory[-1] - whole.without_memory[2]
    )
    assert windowed.break_even() == _break_even(windowed.with_memory, windowed.without_memory)
    extra = result.full - result.lean
    assert windowed.break_even(extra) == _break_even(windowed.shifted(extra), windowed.without_memory)

    report = result.report()
    assert "langmem's manage_memory + search_memory" in report
    assert f"{result.lean / result.langmem:.2f}x" in report
    assert "tokens per model call, window last 2 turns:" in report
    assert "each call costs less from call" in report


def test_break_even_turns_follow_the_series() -> None:
    thread = ThreadTokens("w", 10, with_memory=(30, 30, 30, 30), without_memory=(10, 25, 40, 55))
    assert thread.break_even() == 3  # 30 < 40 and 30 < 55
    assert thread.cumulative_break_even() == 4  # -20, -25, -15, +10
    assert thread.break_even(30) is None  # a set 30 tokens larger never pays back here
    flapping = ThreadTokens("w", 0, with_memory=(5, 50, 5), without_memory=(10, 10, 10))
    assert flapping.break_even() == 3  # call 1 is cheaper, call 2 is not: the run starts again
    assert flapping.cumulative_break_even() == 1


def test_the_generated_chat_is_seeded() -> None:
    turns = chat_turns(3, seed=1)
    assert turns == chat_turns(3, seed=1) != chat_turns(3, seed=2)
    assert len(turns) == 3
    assert all(user and answer for user, answer in turns)


def test_the_command_line_runs_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "tools", "--turns", "3", "--window", "1"]) == 0
    out = capsys.readouterr().out
    assert "vs langmem" in out
    assert "tokens per model call, window last 1 turn:" in out


def test_without_langmem_it_says_the_pip_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "langmem", None)  # import langmem raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'langmem-plugin\[bench\]'"):
        langmem_tools()
    assert main(["bench", "tools", "--turns", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("langmem-plugin bench tools: bench tools compares with LangMem's tools")
