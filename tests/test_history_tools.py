"""Edits made by the memory tools are recorded in history, in the same batch as the edit.

Real graphs: ``Memory.add_to`` (recall → model → ToolNode → remember) and a bare ``ToolNode``,
with a scripted chat model making real tool calls; ``memory.history(id)`` reads them back.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState, create_memory_tools
from langmem_plugin.core.scope import Scope
from langmem_plugin.services import MemoryLayout, execute, save_steps
from langmem_plugin.services.history import history_steps
from langmem_plugin.services.upkeep.consolidation import consolidate
from langmem_plugin.services.upkeep.extraction import Candidate
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

ALICE = {"configurable": {"user_id": "alice", "thread_id": "t1"}}
HISTORY = ("memory_meta", "history", "alice")


class BatchLog(InMemoryStore):
    """An InMemoryStore that keeps every batch of writes it is given."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.writes: list[list[PutOp]] = []

    def _log(self, ops: Iterable[Op]) -> list[Op]:
        ops = list(ops)
        puts = [op for op in ops if isinstance(op, PutOp)]
        if puts:
            self.writes.append(puts)
        return ops

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return super().batch(self._log(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await super().abatch(self._log(ops))


def _last_id(messages: list[BaseMessage]) -> str:
    """The memory id the newest tool answer names ("Saved memory 3f2a... in user memory")."""
    answer = [m for m in messages if isinstance(m, ToolMessage)][-1]
    found = re.search(r"memory ([0-9a-f]{12})", str(answer.content))
    assert found, answer.content
    return found.group(1)


def test_save_update_delete_through_the_agent_graph_are_in_history() -> None:
    memory = Memory(embeddings=FakeEmbeddings())
    model = ScriptedChatModel(
        [
            tool_call("save_memory", content="Drinks green tea", category="preferences/drinks"),
            lambda ms: tool_call("update_memory", id=_last_id(ms), content="Drinks black tea"),
            lambda ms: tool_call("delete_memory", id=_last_id(ms)),
            "Done.",
        ]
    )
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model)
    graph = builder.compile(store=memory.store)
    run_id = uuid.uuid4()
    out = graph.invoke({"messages": [HumanMessage("I switched to black tea")]}, {**ALICE, "run_id": run_id})

    memory_id = _last_id(out["messages"])
    entries = memory.history(memory_id, ALICE)
    assert [(e.action, e.old, e.new, e.source) for e in entries] == [
        ("ADD", None, None, "tool:save_memory"),  # forgotten: who and when, never the text (issue 24)
        ("UPDATE", None, None, "tool:update_memory"),
        ("DELETE", None, None, "tool:delete_memory"),
    ]
    assert {(e.run_id, e.thread_id) for e in entries} == {(str(run_id), "t1")}
    assert entries[0].at <= entries[1].at <= entries[2].at
    assert memory.store.get(("memories", "user", "alice"), memory_id) is None  # deleted, history kept


def _tool_graph(store: InMemoryStore) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(create_memory_tools(include="full")))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(store=store)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_edit_and_its_history_entry_are_one_batch(mode: str) -> None:
    store = BatchLog(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
    graph = _tool_graph(store)

    def call(message: Any) -> list[BaseMessage]:
        if mode == "sync":
            out = graph.invoke({"messages": [message]}, ALICE)
        else:
            out = asyncio.run(graph.ainvoke({"messages": [message]}, ALICE))
        return list(out["messages"])

    saved = _last_id(call(tool_call("save_memory", content="Lives in Oslo")))
    call(tool_call("update_memory", id=saved, content="Lives in Bergen", priority=7))
    call(tool_call("delete_memory", id=saved))
    edits = [w for w in store.writes if any(op.namespace == ("memories", "user", "alice") for op in w)]
    edits = [w for w in edits if any(op.value is None or "content" in op.value for op in w)]
    recorded = [w for w in edits if any(op.namespace == HISTORY for op in w)]
    # save, update, delete: each write of the memory carries its history entry in the same batch
    kinds = [
        [op.value["action"] for op in w if op.namespace == HISTORY and op.value is not None] for w in recorded
    ]
    # the delete redacts the earlier entries (their text) in its own batch (issue 24)
    assert kinds == [["ADD"], ["UPDATE"], ["ADD", "UPDATE", "DELETE"]]
    entries = execute(store, history_steps(Scope(user_id="alice"), saved))
    assert [(e.action, e.new) for e in entries] == [
        ("ADD", None),  # redacted by the delete
        ("UPDATE", None),
        ("DELETE", None),
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_clear_memory_records_each_deletion_with_the_filter(mode: str) -> None:
    store = InMemoryStore()
    layout, scope = MemoryLayout(), Scope(user_id="alice")
    tea = execute(store, save_steps(scope, layout, "Likes tea", category="food/drinks"))
    soup = execute(store, save_steps(scope, layout, "Likes soup", category="food"))
    kept = execute(store, save_steps(scope, layout, "Works in Oslo", category="work"))
    graph = _tool_graph(store)
    clear = tool_call("clear_memory", compartment="user", category="food")
    if mode == "sync":
        graph.invoke({"messages": [clear]}, ALICE)
    else:
        asyncio.run(graph.ainvoke({"messages": [clear]}, ALICE))

    for memory in (tea, soup):
        (entry,) = execute(store, history_steps(scope, memory.id))
        # who cleared it, when and by which filter, never the text (as a forget's entry)
        assert (entry.action, entry.source) == ("DELETE", "tool:clear_memory")
        assert (entry.old, entry.new) == (None, None)
        assert entry.reason == "cleared user memory matching category 'food'"
    assert execute(store, history_steps(scope, kept.id)) == []
    assert store.get(("memories", "user", "alice"), kept.id) is not None


def test_a_failed_edit_writes_no_history_and_a_read_writes_none() -> None:
    store = BatchLog()
    layout, scope = MemoryLayout(), Scope(user_id="alice")
    saved = execute(store, save_steps(scope, layout, "Lives in Oslo"))
    graph = _tool_graph(store)
    out = graph.invoke(
        {"messages": [tool_call("update_memory", id="000000000000", content="Lives in Rome")]}, ALICE
    )
    assert "no memory has the id" in str(out["messages"][-1].content)
    graph.invoke({"messages": [tool_call("search_memory", query="Oslo")]}, ALICE)
    graph.invoke({"messages": [tool_call("get_memory", id=saved.id)]}, ALICE)
    graph.invoke({"messages": [tool_call("save_memory", content="")]}, ALICE)  # invalid: nothing written
    assert store.search(HISTORY) == []


def test_session_memory_without_a_user_is_edited_without_history() -> None:
    store = InMemoryStore()
    tools = create_memory_tools(compartments=["session"], default_compartment="session")
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile(store=store)
    out = graph.invoke(
        {"messages": [tool_call("save_memory", content="Meeting at noon")]},
        {"configurable": {"thread_id": "t1"}},
    )
    assert "Saved memory" in str(out["messages"][-1].content)
    assert [ns for ns in store.list_namespaces() if ns[0] == "memory_meta"] == []  # history is per user


def test_tool_edits_and_consolidation_share_one_history() -> None:
    store = InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
    scope = Scope(user_id="alice", thread_id="t1")
    graph = _tool_graph(store)
    out = graph.invoke({"messages": [tool_call("save_memory", content="Prefers green tea")]}, ALICE)
    memory_id = _last_id(list(out["messages"]))
    decider = ScriptedChatModel([])  # an exact duplicate: skipped without a model call
    result = consolidate(store, scope, [Candidate("Prefers green tea")], model=decider)
    assert decider.calls == []
    assert (result.counts()["added"], result.counts()["duplicates"]) == (0, 1)
    (entry,) = execute(store, history_steps(scope, memory_id))
    assert (entry.action, entry.source) == ("ADD", "tool:save_memory")
