"""The conversation window, idle threads, static knowledge and run memory limits."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, MemoryState, WindowConfig
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_message_tokens, count_tokens
from langmem_plugin.errors import ConfigurationError, MemoryLimitError
from langmem_plugin.services import (
    MemoryLayout,
    aadd_documents,
    add_documents,
    add_run_note,
    adelete_idle_threads,
    delete_idle_threads,
    execute,
    message_blocks,
    read_sources,
    save_steps,
    trim_window,
    window_removals,
)
from langmem_plugin.services.knowledge import default_splitter
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel

KNOWLEDGE = ("memories", "agent", "assistant", "knowledge")


def _conversation(turns: int) -> list[Any]:
    messages: list[Any] = [SystemMessage("sys", id="s")]
    for i in range(turns):
        messages.append(HumanMessage(f"question {i} " + "word " * 20, id=f"h{i}"))
        call = {"name": "search_memory", "args": {"query": f"q{i}"}, "id": f"c{i}", "type": "tool_call"}
        messages.append(AIMessage("", tool_calls=[call], id=f"a{i}"))
        messages.append(ToolMessage("result " * 30, tool_call_id=f"c{i}", id=f"t{i}"))
        messages.append(AIMessage(f"answer {i}", id=f"f{i}"))
    return messages


def _no_orphans(window: list[Any]) -> None:
    calls = {c["id"] for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in window if isinstance(m, ToolMessage)}
    assert calls == results


def test_trim_by_turns_keeps_system_and_tool_pairs() -> None:
    messages = _conversation(5)
    window = trim_window(messages, max_turns=2)
    assert window[0].content == "sys"
    assert [m.id for m in window[1:]] == ["h3", "a3", "t3", "f3", "h4", "a4", "t4", "f4"]
    _no_orphans(window)
    assert len(messages) == 21  # the input is not modified


def test_trim_by_tokens_never_splits_a_tool_call_from_its_result() -> None:
    messages = _conversation(6)
    for limit in (60, 100, 150, 220, 400):
        window = trim_window(messages, max_tokens=limit, model="gpt-4o")
        _no_orphans(window)
        assert window[0].content == "sys"
        assert isinstance(window[1], HumanMessage) or len(window) <= 4
        if len(window) > 4:
            assert count_message_tokens(window, model="gpt-4o") <= limit
    tiny = trim_window(messages, max_tokens=5)
    assert [m.id for m in tiny] == ["s", "h5", "f5"]  # the newest answer, with its question
    with pytest.raises(ConfigurationError):
        trim_window(messages, max_turns=0)


def test_blocks_keep_unknown_results_with_their_call() -> None:
    call = AIMessage("", tool_calls=[{"name": "x", "args": {}, "id": "c1", "type": "tool_call"}])
    blocks = message_blocks([HumanMessage("q"), call, ToolMessage("r", tool_call_id="other")])
    assert [len(b) for b in blocks] == [1, 2]


def test_window_removals_rewrite_history_only_when_asked() -> None:
    messages = _conversation(3)
    kept = trim_window(messages, max_turns=1)
    removals = window_removals(messages, kept)
    assert all(isinstance(r, RemoveMessage) for r in removals)
    assert {r.id for r in removals} == {m.id for m in messages} - {m.id for m in kept}


def test_model_node_sees_the_window_and_the_checkpoint_keeps_everything() -> None:
    memory = Memory(embeddings=FakeEmbeddings(), context=ContextConfig(window=WindowConfig(max_turns=1)))
    model = ScriptedChatModel(["one", "two", "three"])
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model)
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    config: Any = {"configurable": {"user_id": "u", "thread_id": "t"}}
    for text in ("a", "b", "c"):
        out = graph.invoke({"messages": [HumanMessage(text)]}, config)
    assert [m.content for m in model.calls[-1] if not isinstance(m, SystemMessage)] == ["c"]
    assert len(out["messages"]) == 6


def _checkpointed_threads(saver: Any) -> None:
    builder = StateGraph(MemoryState)
    memory = Memory(embeddings=FakeEmbeddings())
    memory.add_to(builder, ScriptedChatModel(["x", "y"]))
    graph = builder.compile(checkpointer=saver, store=memory.store)
    for thread in ("old", "new"):
        graph.invoke(
            {"messages": [HumanMessage("hi")]}, {"configurable": {"user_id": "u", "thread_id": thread}}
        )


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_delete_idle_threads(kind: str, tmp_path: Path) -> None:
    def run(saver: Any) -> None:
        _checkpointed_threads(saver)
        store = InMemoryStore()
        execute(
            store, save_steps(Scope(thread_id="old"), MemoryLayout(), "session note", compartment="session")
        )
        future = datetime.now(UTC) + timedelta(days=10)
        assert delete_idle_threads(saver, timedelta(days=30), now=future) == []
        assert delete_idle_threads(saver, timedelta(days=1), now=future, dry_run=True) == ["new", "old"]
        deleted = delete_idle_threads(saver, timedelta(days=1), now=future, store=store)
        assert deleted == ["new", "old"]
        assert list(saver.list(None)) == []
        assert store.search(("memories", "session", "old")) == []
        with pytest.raises(ConfigurationError):
            delete_idle_threads(saver, timedelta(0))

    if kind == "memory":
        run(InMemorySaver())
    else:
        with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
            run(saver)


def test_delete_idle_threads_async() -> None:
    saver = InMemorySaver()
    _checkpointed_threads(saver)
    future = datetime.now(UTC) + timedelta(days=10)
    assert asyncio.run(adelete_idle_threads(saver, timedelta(days=1), now=future)) == ["new", "old"]


def test_default_chunks_fit_the_token_limit() -> None:
    text = "# Guide\n\n" + "\n\n".join(
        f"Paragraph {i}. " + "Some words here. " * (i % 7 + 1) for i in range(40)
    )
    text += "\n\n" + "x" * 3000  # one very long "sentence"
    chunks = default_splitter(50, "gpt-4o").split_text(text)
    assert all(count_tokens(c, model="gpt-4o") <= 50 for c in chunks)
    assert chunks[0].startswith("# Guide")
    assert "".join(chunks).replace("\n", "").replace(" ", "").count("Paragraph") == 40


def test_add_documents_from_files_replaces_older_versions(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "faq.md").write_text("# FAQ\n\n" + "\n\n".join(f"Answer {i}." for i in range(30)))
    (tmp_path / "docs" / "notes.txt").write_text("Plain notes.")
    (tmp_path / "docs" / "image.png").write_bytes(b"\x89PNG")
    store = InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
    added = add_documents(store, [tmp_path / "docs"], chunk_tokens=20, progress=True)
    assert [Path(a.name).name for a in added] == ["faq.md", "notes.txt"]
    first = len(store.search(KNOWLEDGE, limit=100))
    assert first == sum(a.chunks for a in added) > 2
    add_documents(store, [tmp_path / "docs"], chunk_tokens=20)  # idempotent
    assert len(store.search(KNOWLEDGE, limit=100)) == first
    (tmp_path / "docs" / "faq.md").write_text("# FAQ\n\nOnly one answer now.")
    again = add_documents(store, [tmp_path / "docs" / "faq.md"], chunk_tokens=20)
    assert again[0].removed > 0
    assert len(store.search(KNOWLEDGE, limit=100)) == 2
    assert store.search(KNOWLEDGE, query="answer")[0].value["kind"] == "document"
    (missing, image) = read_sources([tmp_path / "missing.md", tmp_path / "docs" / "image.png"])
    assert "does not exist" in (missing.error or "")
    assert "is a .png file; add_documents reads" in (image.error or "")


def test_add_documents_async_and_per_agent() -> None:
    store = InMemoryStore()
    asyncio.run(
        aadd_documents(
            store,
            ["Support hours: 9 to 5.", Document(page_content="Other.", metadata={"source": "x"})],
            agent="support",
        )
    )
    items = store.search(("memories", "agent", "support", "knowledge"))
    assert sorted(i.value["content"] for i in items) == ["Other.", "Support hours: 9 to 5."]
    assert store.search(KNOWLEDGE) == []


def test_run_memory_limits() -> None:
    assert add_run_note(None, "a") == ["a"]
    with pytest.raises(MemoryLimitError, match="at most 2000"):
        add_run_note([], "x" * 2001)
    with pytest.raises(MemoryLimitError, match="run memory is full"):
        add_run_note(["n"] * 50, "one more")
