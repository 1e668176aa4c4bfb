"""``forget_user`` after a run that used every feature: nothing of the user left in any store.

Two users run the same script (memory tools, plan mode with an archived plan, stored tool results,
a summary, extraction, ``import_history``), each in threads of their own and in one thread they
share. Every text of a user names them, so after ``forget_user("alice")`` a listing of every
namespace and every item of the store must hold no "alice" — and bob's items must be as they were,
but for the copy of alice's words his next exchange in the shared thread kept (``metadata.context``).
On CheckpointerStore her items' history goes too, and no row of its SQLite file names her; bob's
items keep their history (but that exchange, whose older versions quote her).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, MemoryState, WindowConfig
from langmem_plugin.core.scope import Scope
from langmem_plugin.services.context.results import ResultsConfig
from langmem_plugin.services.context.summary import SummaryConfig
from langmem_plugin.services.upkeep.extraction import ExtractionConfig
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)
from tests.test_checkpointer_purge import rows_naming

USERS = ("alice", "bob")
INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
_NAME = re.compile(r"\b(alice|bob)\b")


@tool
def fetch_report(topic: str) -> str:
    """Fetch a long report on a topic."""
    return " ".join(f"Report line {i} on {topic}: the value was {i * 7 % 101}." for i in range(120))


def _name_in(messages: list[BaseMessage]) -> str:
    """The user the newest human message names."""
    for message in reversed(messages):
        if message.type == "human":
            found = _NAME.findall(str(message.content))
            if found:
                return str(found[-1])
    return "nobody"


def _extract(messages: list[BaseMessage]) -> AIMessage:
    prompt = str(messages[-1].content)
    if "EXISTING id=" in prompt:  # a decision call: add every new memory
        return tool_call("ConsolidationDecisions", decisions=[])
    name = _name_in(messages)
    return tool_call("ExtractedMemories", memories=[{"content": f"{name} drinks green tea daily"}])


def _summarize(messages: list[BaseMessage]) -> AIMessage:
    names = sorted(set(_NAME.findall(" ".join(str(m.content) for m in messages))))
    return AIMessage(f"Summary: {' and '.join(names)} asked long questions.")


def _agent_script(user: str) -> list[Any]:
    return [
        # own thread, turn 1: a memory tool
        tool_call("save_memory", content=f"{user} keeps bees on the roof"),
        f"Noted, {user}.",
        # turn 2: a plan, completed and archived
        tool_call("create_plan", goal=f"{user} repaints the door", steps=["Buy paint", "Paint"]),
        tool_call("update_plan_step", step_id="s1", status="completed"),
        tool_call("update_plan_step", step_id="s2", status="completed"),
        tool_call("complete_plan", summary=f"{user} painted the door"),
        f"Done, {user}.",
        # turn 3: a stored tool result
        tool_call("fetch_report", topic=f"{user} bees"),
        f"Your bees are fine, {user}.",
        # turns 4-6: long questions, so the window summarizes
        *[f"Answer {i} for {user}." for i in range(3)],
        # the shared thread: a memory tool and a stored tool result
        tool_call("save_memory", content=f"{user} shares the office kettle"),
        tool_call("fetch_report", topic=f"{user} kettle"),
        f"Kettle noted, {user}.",
    ]


def _memory(store: BaseStore) -> Memory:
    window = WindowConfig(max_tokens=700, summary=SummaryConfig(ScriptedChatModel([_summarize] * 40)))
    results = ResultsConfig(full_tokens=8000, keep_calls=1, compact_above_tokens=None)
    extractor = ScriptedChatModel([_extract] * 80)
    return Memory(
        store,
        plan=True,
        tokenizer_model="gpt-4o-mini",
        context=ContextConfig(window=window, results=results),
        extraction=ExtractionConfig(model=extractor, debounce=0),
    )


def _run(memory: Memory, user: str) -> None:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(_agent_script(user)), tools=[fetch_report])
    graph = builder.compile(checkpointer=_SHARED_SAVER, store=memory.store)
    own = {"configurable": {"user_id": user, "thread_id": f"{user}-1"}}
    turns = [
        f"I am {user} and I keep bees.",
        f"{user} wants to repaint the door.",
        f"How are my bees doing? {user}",
        *[f"Long question {i} from {user}: " + " ".join(f"w{i}_{j}" for j in range(120)) for i in range(3)],
    ]
    for text in turns:
        graph.invoke({"messages": [HumanMessage(text)]}, own)
        memory.flush(timeout=20)
    shared = {"configurable": {"user_id": user, "thread_id": "shared"}}
    graph.invoke({"messages": [HumanMessage(f"{user} here: we share the kettle.")]}, shared)
    memory.flush(timeout=20)
    history = [
        {"role": "user", "content": f"{user} imported: I moved to Oslo last year."},
        {"role": "assistant", "content": f"Noted that {user} moved."},
    ]
    memory.import_history(history, {"configurable": {"user_id": user, "thread_id": f"{user}-imported"}})


_SHARED_SAVER = InMemorySaver()  # the graphs' own checkpointer (not the store under test)


def _everything(store: BaseStore) -> dict[tuple[tuple[str, ...], str], dict[str, Any]]:
    """Every item of every namespace of ``store``."""
    out: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
    for namespace in store.list_namespaces(limit=100_000):
        for item in store.search(namespace, limit=100_000, refresh_ttl=False):
            if tuple(item.namespace) == namespace:
                out[(namespace, item.key)] = item.value
    return out


def _unquoted(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without the copy of the exchange before it (``metadata.context``)."""
    metadata = value.get("metadata") or {}
    return {**value, "metadata": {k: v for k, v in metadata.items() if k != "context"}}


def _text(key: tuple[tuple[str, ...], str], value: Any) -> str:
    return json.dumps([key, value], ensure_ascii=False).lower()


@pytest.fixture(params=["in-memory", "qdrant", "checkpointer-sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    if request.param == "in-memory":
        yield InMemoryStore(index=INDEX)
    elif request.param == "postgres":  # a real PostgreSQL with pgvector (skips, saying why, without)
        from langmem_plugin.stores.postgres import PostgresMemoryStore
        from tests.test_postgres_contract import fresh_database

        url = fresh_database(request.getfixturevalue("pgvector_url"))
        with PostgresMemoryStore.from_conn_string(url, index=INDEX, setup=True) as postgres:
            yield postgres
    elif request.param == "qdrant":
        pytest.importorskip("qdrant_edge")
        from langmem_plugin.stores.qdrant import QdrantStore

        with QdrantStore(path=tmp_path / "q", index=INDEX) as qdrant:
            yield qdrant
    else:
        with CheckpointerStore.from_sqlite(tmp_path / "store.db", index=INDEX) as checkpointed:
            yield checkpointed


def test_forget_user_after_every_feature_leaves_nothing_of_theirs(store: BaseStore, tmp_path: Path) -> None:
    memory = _memory(store)
    for user in USERS:
        _run(memory, user)
    before = _everything(store)
    kinds = {v.get("kind") for k, v in before.items() if "alice" in _text(k, v)}
    assert {"episode", "fact", "plan", "summary", "tool_result"} <= kinds  # every feature wrote
    assert any(v.get("source") == "extraction" for v in before.values())
    assert any(k[0][:2] == ("memory_meta", "history") for k in before)
    assert memory.reflector is not None
    assert memory.reflector.failed == []
    histories = {k: store.history(*k) for k in before} if isinstance(store, CheckpointerStore) else {}

    report = memory.forget_user("alice")

    after = _everything(store)
    left = [k for k, v in after.items() if "alice" in _text(k, v)]
    assert left == [], json.dumps([[k, after[k]] for k in left], default=str)[:3000]
    bobs = {k: v for k, v in before.items() if "alice" not in _text(k, _unquoted(v))}
    assert set(after) == set(bobs)
    changed = [k for k in bobs if after[k] != bobs[k]]
    assert all(k[0][:2] == ("memories", "user") and k[0][2] == "bob" for k in changed)
    assert changed  # bob's exchange after alice's in the shared thread
    for key in changed:  # only the copy of alice's words in it went
        assert after[key] == _unquoted(bobs[key])
        assert "alice" in bobs[key]["metadata"]["context"]
    if isinstance(store, CheckpointerStore):  # its history of what was forgotten goes too
        assert all(store.history(*k) == [] for k in before if k not in after)
        for key in changed:  # bob's exchange keeps its current version only: the older ones quote alice
            assert [v.value for v in store.history(*key)] == [after[key]]
        kept = [k for k in bobs if k not in changed]
        assert all(store.history(*k) == histories[k] for k in kept)  # the rest of bob's, as it was
        assert any(len(histories[k]) > 1 for k in kept)
        assert report.history_purged >= len(before) - len(bobs)
        assert rows_naming(tmp_path / "store.db", "alice") == []  # no row of the file, blobs decoded
    else:
        assert report.history_purged == 0
    assert report.quotes_stripped == len(changed)
    assert report.shared_threads == ["shared"]
    assert sorted(report.threads) == ["alice-1", "alice-imported"]
    assert report.counts["tool_results"] == 2  # one in her thread, one in the shared thread
    assert report.total == len(before) - len(bobs)
    assert report.queued == {"queued_reflections": 0, "failed_reflections": 0, "failed_writes": 0}
    memory.close()


def test_forget_user_drops_queued_reflections_and_failed_writes_of_that_user_only() -> None:
    extractor = ScriptedChatModel([_extract] * 10)
    memory = Memory(InMemoryStore(index=INDEX), extraction=ExtractionConfig(model=extractor, debounce=600))
    reflector, writer = memory.reflector, memory.writer
    assert reflector is not None
    for user in USERS:
        scope = Scope(user_id=user, thread_id=f"{user}-1")
        assert reflector.schedule(memory.store, scope, [HumanMessage(f"{user} likes tea")])

        def broken() -> Any:
            raise RuntimeError("store down")
            yield  # pragma: no cover

        writer.retries = 0
        writer.submit(memory.store, broken, f"episode of {user}", user_id=user)
    assert reflector.pending == 2
    assert len(writer.failed) == 2

    report = memory.forget_user("alice")

    assert report.queued == {"queued_reflections": 1, "failed_reflections": 0, "failed_writes": 1}
    assert reflector.pending == 1  # bob's job waits on
    assert [w.user_id for w in writer.failed] == ["bob"]
    assert extractor.calls == []  # alice's job was dropped, not run
    reflector.flush(timeout=10)
    assert len(extractor.calls) == 1
    assert "bob" in str(extractor.calls[0])
    memory.close()
