"""The model writes run memory with add_run_note: every later call of the run sees the notes, parallel
calls all stick in call order, bad notes are refused with nothing written, and the run's end clears them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState
from langmem_plugin.services.context import run_notes_reducer
from langmem_plugin.services.layout import CompartmentLimits, MemoryLayout
from langmem_plugin.testing import ScriptedChatModel

CONFIG: Any = {"configurable": {"user_id": "ann", "thread_id": "t1"}}


def _calls(*notes: Any) -> AIMessage:
    calls = [
        {"name": "add_run_note", "args": {"note": n}, "id": f"c{i}", "type": "tool_call"}
        for i, n in enumerate(notes)
    ]
    return AIMessage("", tool_calls=calls, id="m1")


def _run(memory: Memory, script: list[Any], mode: str = "sync") -> tuple[dict[str, Any], ScriptedChatModel]:
    model = ScriptedChatModel(script)
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model)
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    inputs = {"messages": [HumanMessage("find the cheapest flight")]}
    if mode == "sync":
        return graph.invoke(inputs, CONFIG), model
    import asyncio

    return asyncio.run(graph.ainvoke(inputs, CONFIG)), model


def _system(call: list[Any]) -> str:
    return "\n".join(str(m.content) for m in call if m.type == "system")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_notes_all_stick_are_seen_next_call_and_are_cleared_at_the_end(mode: str) -> None:
    memory = Memory(InMemoryStore(), tools=["lean", "add_run_note"])
    try:
        assert "add_run_note" in [t.name for t in memory.tools]
        out, model = _run(
            memory, [_calls("fare A is 120 EUR", "fare B is 95 EUR", "   "), "B is cheaper."], mode
        )
    finally:
        memory.close()
    answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [a.status for a in answers] == ["success", "success", "error"]
    assert "(1 run note)" in str(answers[0].content)
    assert "(2 run notes)" in str(answers[1].content)  # counts what the merge keeps
    assert "Nothing was added" in str(answers[2].content)
    second = _system(model.calls[1])
    assert "fare A is 120 EUR" in second
    assert "fare B is 95 EUR" in second
    assert second.index("fare A") < second.index("fare B")
    assert out["run_memory"] == []  # cleared when the run ended


def test_run_memory_full_is_refused_in_the_answer_and_the_tool_can_be_left_out() -> None:
    layout = MemoryLayout(limits={"run": CompartmentLimits(max_items=2, max_chars=50)})
    memory = Memory(InMemoryStore(), layout=layout, tools=["lean", "add_run_note"])
    try:
        out, _ = _run(memory, [_calls("one", "two", "three", "x" * 51), "done"])
    finally:
        memory.close()
    answers = [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "run memory is full" in answers[2]
    assert "at most 50" in answers[3]
    without = Memory(InMemoryStore(), tools=["save_memory"])
    assert [t.name for t in without.tools] == ["save_memory"]
    without.close()


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.one_of(st.none(), st.lists(st.text(max_size=5), max_size=3)),
    updates=st.lists(
        st.one_of(
            st.lists(st.text(max_size=5), max_size=3),
            st.builds(lambda n: {"add": n}, st.lists(st.text(max_size=5))),
        ),
        max_size=5,
    ),
)
def test_the_reducer_appends_additions_and_replaces_on_a_list(start: Any, updates: list[Any]) -> None:
    expected = list(start or [])
    current = start
    for update in updates:
        current = run_notes_reducer(current, update)
        expected = [*expected, *update["add"]] if isinstance(update, dict) else list(update)
        assert current == expected
