"""The main job: `langmem-plugin demo` runs offline, end to end, with the real store and checkpointer."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plugin.demo import EXTRACTED, SCENARIO, DemoTurn, run_demo


def test_demo_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    lines: list[str] = []
    turns = run_demo(directory=tmp_path, out=lines.append)
    text = "\n".join(lines)
    assert "OFFLINE SCRIPTED MODEL" in text
    assert len(turns) == len(SCENARIO)
    # thread 2 relies on what thread 1 saved
    dinner = turns[2]
    assert dinner.thread == "thread-2"
    assert "chickpea" in dinner.answer
    assert "400 g" in dinner.answer
    assert any(i["content"] == "Sam is vegetarian" for i in dinner.recalled)
    # the update and the delete happened through real tool calls
    assert [c["name"] for c in turns[3].tool_calls] == ["search_memory", "update_memory"]
    assert turns[3].tool_results[1].startswith("Updated memory")
    assert [c["name"] for c in turns[4].tool_calls] == ["search_memory", "delete_memory"]
    # thread 3 sees the updated memory and not the deleted one
    final = turns[5].answer
    assert "pescatarian" in final
    assert "marathon" not in final
    assert "vegetarian" not in final
    assert turns[5].injected_tokens < turns[5].history_tokens
    # every exchange is stored but the one that forgot a memory (it is about what was forgotten)
    assert [t.stored is None for t in turns] == [i == 4 for i in range(len(turns))]
    assert (tmp_path / "checkpoints.sqlite").exists()
    assert (tmp_path / "memory").is_dir()
    assert "tokens    :" in text
    assert "tool call : update_memory" in text
    # where things live, what the scores mean, and which text was cut
    assert f"store     : embedded QdrantStore (MiniLM embeddings) at {tmp_path / 'memory'}" in text
    assert f"checkpoint: SqliteSaver at {tmp_path / 'checkpoints.sqlite'}" in text
    assert f"kept in {tmp_path} (each run there starts clean)" in text
    assert "match = how well a memory fits the turn" in text
    assert "so 0.167 is a below-average match" in text
    recalled = [line for line in lines if line.startswith("  [")]
    assert any(line.endswith("…") for line in recalled)  # a long episode, cut
    assert any(line.endswith("Sam is vegetarian") for line in recalled)  # a short memory, whole
    _assert_plan_turns(turns, text)
    _assert_extraction(turns, lines)


def _assert_plan_turns(turns: list[DemoTurn], text: str) -> None:
    """Thread 4: the agent creates a plan, then advances it; the plan is in the model's prompt."""
    created, advanced = turns[6], turns[7]
    assert (created.thread, advanced.thread) == ("thread-4", "thread-4")
    assert [c["name"] for c in created.tool_calls] == ["create_plan"]
    assert created.plan_seen[0] == 'goal: "Host a dinner for six on Saturday" (0 of 3 steps done)'
    assert created.plan_seen[1:] == [
        '- s1 [pending] "Plan the menu"',
        '- s2 [pending] "Shop for the ingredients"',
        '- s3 [pending] "Cook and serve"',
    ]
    assert [c["name"] for c in advanced.tool_calls] == ["update_plan_step", "update_plan_step"]
    assert '- s1 [completed] "Plan the menu" notes: "curry, sardines starter"' in advanced.plan_seen
    assert '- s2 [in_progress] "Shop for the ingredients"' in advanced.plan_seen
    assert advanced.answer == "On it: 1 of 3 steps done. Next up: Shop for the ingredients."
    assert "plan seen : (the [plan] section of the model's prompt" in text
    assert not any(t.plan_seen for t in turns[:6])  # no plan in the threads without one


def _assert_extraction(turns: list[DemoTurn], lines: list[str]) -> None:
    """Thread 5: no tool call; extraction supersedes the diet memory; history shows every change."""
    text = "\n".join(lines)
    assert "extraction: on (scripted-extractor" in text
    assert "OFFLINE: the scripted model plays the extractor and the consolidation decider" in text
    assert turns[8].thread == "thread-5"
    assert turns[8].tool_calls == []  # the agent wrote nothing itself
    extracted = text.split("── background extraction", 1)[1].split("── memory.history", 1)[0]
    found = [line.split() for line in extracted.splitlines()[1:] if line.strip()]
    assert [words[0] for words in found] == ["ADD", "INVALIDATE"]
    assert all(" ".join(words).endswith("from thread-5 (Sam stopped eating fish)") for words in found)
    assert EXTRACTED in extracted
    changes = text.split("── memory.history(", 1)[1].split("── what the store holds", 1)[0].splitlines()[1:]
    actions = [line.split()[1:3] for line in changes if line.strip()]
    assert actions == [
        ["ADD", "tool:save_memory"],
        ["UPDATE", "tool:update_memory"],
        ["INVALIDATE", "consolidation"],
    ]
    assert "Sam is vegetarian → Sam is pescatarian: eats fish, no meat" in changes[1]
    held = text.split("── what the store holds about sam", 1)[1].splitlines()
    (old,) = [line for line in held if "Sam is pescatarian" in line]
    assert "[no longer true since " in old  # superseded, kept
    (new,) = [line for line in held if EXTRACTED in line]
    assert "no longer true" not in new


def test_cut_marks_cut_text() -> None:
    from langmem_plugin.demo import cut

    assert cut("short", 10) == "short"
    assert cut("a\nb", 10) == "a / b"
    assert cut("x" * 20, 10) == "x" * 9 + "…"
    assert len(cut("y" * 200, 80)) == 80


def test_demo_with_a_given_store_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.store.memory import InMemoryStore

    from langmem_plugin.testing import FakeEmbeddings

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    lines: list[str] = []
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    run_demo(store=store, out=lines.append, extraction=False)
    text = "\n".join(lines)
    assert "extraction: off (no model configured" in text  # off, and it says why
    assert "memories are written only by the agent's tool calls" in text
    assert "store     : InMemoryStore (given by the caller)" in text
    assert "removed at the end (--dir DIR keeps them)" in text
    assert "what the store holds about sam" in text


def test_memory_bench_runs() -> None:
    from langmem_plugin.bench.memory import run_memory_bench
    from langmem_plugin.cli import build_parser

    result = run_memory_bench(memories=10, queries=2, stores=("inmemory",))
    (row,) = result.rows
    assert row.recall_p50_ms > 0
    assert row.injected_tokens > 0
    assert row.all_tokens > 0
    assert "recall p50" in result.table()
    assert build_parser().parse_args(["bench", "memory", "--memories", "5"]).memories == 5
    assert build_parser().parse_args(["demo", "--dir", "x"]).dir == "x"
