"""The main job: `langmem-plugin demo` runs offline, end to end, with the real store and checkpointer."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plugin.demo import SCENARIO, run_demo


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
    assert all(t.stored is not None for t in turns)
    assert (tmp_path / "checkpoints.sqlite").exists()
    assert (tmp_path / "memory").is_dir()
    assert "tokens    :" in text
    assert "tool call : update_memory" in text
    # where things live, what the scores mean, and which text was cut
    assert f"store     : embedded QdrantStore (MiniLM embeddings) at {tmp_path / 'memory'}" in text
    assert f"checkpoint: SqliteSaver at {tmp_path / 'checkpoints.sqlite'}" in text
    assert f"kept in {tmp_path}" in text
    assert "rank = recall's ordering" in text
    assert "store = the store's similarity" in text
    recalled = [line for line in lines if line.startswith("  [")]
    assert any(line.endswith("…") for line in recalled)  # a long episode, cut
    assert any(line.endswith("Sam is vegetarian") for line in recalled)  # a short memory, whole


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
    run_demo(store=store, out=lines.append)
    text = "\n".join(lines)
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
