"""Recall never sends the model an exchange it already sees (issue 37, item 2: tokens).

An exchange of the thread that is still in the model's window is left out of the memory
prompt ("in the conversation"); once the window has moved past it, recall brings it back.
Real graphs, the offline MiniLM, a scripted model.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import ContextConfig, Memory, MemoryState, WindowConfig
from langmem_plugin.core.scope import Scope
from langmem_plugin.testing import ScriptedChatModel

CONFIG: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}


def _graph(memory: Memory, replies: list[str]) -> Any:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(replies))
    return builder.compile(checkpointer=InMemorySaver())


def _recalled(out: dict[str, Any]) -> list[str]:
    return [item["content"] for item in out["memory_context"]["items"]]


def test_an_exchange_in_the_window_is_not_recalled_and_one_past_it_is() -> None:
    with Memory(context=ContextConfig(window=WindowConfig(max_turns=2))) as memory:
        graph = _graph(memory, ["Noted.", "Sure.", "Fine.", "Green tea."])
        graph.invoke({"messages": [HumanMessage("I like green tea in the morning.")]}, CONFIG)
        second = graph.invoke({"messages": [HumanMessage("Which tea do I like in the morning?")]}, CONFIG)
        assert not any("green tea" in text for text in _recalled(second))  # the model sees it already
        graph.invoke({"messages": [HumanMessage("Tell me about the weather.")]}, CONFIG)
        fourth = graph.invoke({"messages": [HumanMessage("Which tea do I like in the morning?")]}, CONFIG)
        # the window (2 turns) no longer holds the first exchange: recall brings it back
        assert any("I like green tea in the morning" in text for text in _recalled(fourth))


def test_another_thread_recalls_the_exchange() -> None:
    with Memory() as memory:
        graph = _graph(memory, ["Noted.", "Green tea."])
        graph.invoke({"messages": [HumanMessage("I like green tea in the morning.")]}, CONFIG)
        other: Any = {"configurable": {"user_id": "sam", "thread_id": "t2"}}
        out = graph.invoke({"messages": [HumanMessage("Which tea do I like in the morning?")]}, other)
        assert any("I like green tea in the morning" in text for text in _recalled(out))


def test_the_recall_explains_what_it_left_out() -> None:
    with Memory() as memory:
        graph = _graph(memory, ["Noted.", "Green tea."])
        first = graph.invoke({"messages": [HumanMessage("I like green tea in the morning.")]}, CONFIG)
        ids = [m.id for m in first["messages"]]
        scope = Scope(user_id="sam", thread_id="t1")
        asked = [*first["messages"], HumanMessage("Which tea do I like?")]
        recall = memory.turn.recall(scope, memory.store, asked, shown=ids)
        outcomes = {c.outcome for c in recall.considered if "green tea" in (c.content or "")}
        assert "in the conversation" in outcomes
        assert not any("green tea" in item.content for item in recall.items)
