"""The plan bench runs offline and shows its claim: the plan survives trimming, the todo list does not."""

from __future__ import annotations

from langmem_plugin.bench.plan import main, run_plan_bench


def test_the_plan_bench_compares_both_agents_on_the_same_task() -> None:
    result = run_plan_bench(window=800)
    by_name = {(s.name, s.trimmed): s for s in result.sides}
    ours, todo = by_name["Memory(plan=True)", True], by_name["TodoListMiddleware", True]
    # after trimming, the todo list is gone from every second call of a step; the plan never is
    assert all(call.steps_known == 12 for call in ours.calls[1:])
    assert any(call.steps_known == 0 for call in todo.calls[1:])
    assert all(0 < call.system_tokens <= 300 for call in ours.calls[1:])  # the default plan budget
    whole_ours, whole_todo = by_name["Memory(plan=True)", False], by_name["TodoListMiddleware", False]
    assert sum(c.tokens for c in whole_ours.calls) < sum(c.tokens for c in whole_todo.calls)
    assert ours.note_kept
    assert not todo.note_kept
    table = result.table()
    assert "TodoListMiddleware" in table
    assert "| 28 " in result.per_call_table()


def test_the_plan_bench_prints_its_tables(capsys: object) -> None:
    assert main(["--window", "600"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "statuses readable" in out


def test_the_command_line_runs_the_plan_bench(capsys: object) -> None:
    from langmem_plugin.cli import main as cli

    assert cli(["bench", "plan", "--window", "600"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "TodoListMiddleware" in out
    assert "statuses readable" in out
