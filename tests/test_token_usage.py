"""``Memory.token_usage``: tokens per model call of a thread, with memory and without."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, MemoryState, RecallConfig, TokenBudgets, WindowConfig
from langmem_plugin.core.tokens import count_message_tokens, count_tokens
from langmem_plugin.errors import ConfigurationError, ScopeError
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

TOKENIZER = "gpt-4o-mini"
INSTRUCTIONS = "You help Sam plan a trip to Lisbon."
MAX_TURNS = 2
BUDGET = 150  # the memories section's tokens
FENCE_SLACK = 100  # the fence and section headers around the recalled memories
TURNS = 7
CONFIG: Any = {"configurable": {"user_id": "sam", "thread_id": "trip"}}


def _answer(n: int) -> str:
    return f"Answer {n}: " + "Lisbon's trams, tiles and pastries make a full day. " * 8


def _question(n: int) -> str:
    return f"Question {n}: what should I see in Lisbon on day {n}?"


@pytest.fixture
def memory() -> Iterator[Memory]:
    store = InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
    with Memory(
        store,
        tokenizer_model=TOKENIZER,
        recall=RecallConfig(budgets=TokenBudgets(memories=BUDGET)),
        context=ContextConfig(window=WindowConfig(max_turns=MAX_TURNS)),
    ) as memory:
        yield memory


def _graph(memory: Memory, model: Any, **add: Any) -> Any:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model, **add)
    return builder.compile(checkpointer=InMemorySaver(), store=memory.store)


def _chat(memory: Memory, turns: int = TURNS) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel([_answer(n) for n in range(turns)])
    graph = _graph(memory, model, instructions=INSTRUCTIONS)
    for n in range(turns):
        graph.invoke({"messages": [HumanMessage(_question(n))]}, CONFIG)
    return graph, model


def _before_each_answer(messages: list[BaseMessage]) -> list[list[BaseMessage]]:
    return [messages[:i] for i, m in enumerate(messages) if isinstance(m, AIMessage)]


def test_one_row_per_answer_counts_what_the_model_was_sent(memory: Memory) -> None:
    graph, model = _chat(memory)
    usage = memory.token_usage(graph, CONFIG)

    assert usage.thread_id == "trip"
    assert [t.number for t in usage.turns] == list(range(1, TURNS + 1))
    assert [t.question for t in usage.turns] == [_question(n) for n in range(TURNS)]
    assert all(t.tool_calls == () for t in usage.turns)
    # with memory: exactly what the model was sent (the scripted model keeps every input)
    assert [t.with_memory for t in usage.turns] == [
        count_message_tokens(c, model=TOKENIZER) for c in model.calls
    ]
    # without memory: the instructions and every message before the answer, counted independently
    history = graph.get_state(CONFIG).values["messages"]
    expected = [
        count_message_tokens([SystemMessage(INSTRUCTIONS), *before], model=TOKENIZER)
        for before in _before_each_answer(history)
    ]
    assert [t.without_memory for t in usage.turns] == expected
    # recalled: what recall recorded injecting, part of what the model saw
    assert usage.turns[0].recalled == 0  # nothing stored yet
    # while the window holds every earlier exchange, recall sends none of them again
    assert all(t.recalled == 0 for t in usage.turns[:MAX_TURNS])
    assert all(0 < t.recalled <= BUDGET + FENCE_SLACK for t in usage.turns[MAX_TURNS:])
    for turn, call in zip(usage.turns, model.calls, strict=True):
        assert turn.recalled <= count_tokens(str(call[0].content), model=TOKENIZER)
    assert usage.total_with == sum(t.with_memory for t in usage.turns)
    assert usage.total_without == sum(t.without_memory for t in usage.turns)


def test_without_memory_grows_and_with_memory_stays_bounded(memory: Memory) -> None:
    graph, _ = _chat(memory)
    turns = memory.token_usage(graph, CONFIG).turns

    without = [t.without_memory for t in turns]
    assert all(a < b for a, b in itertools.pairwise(without))
    one_turn = max(
        count_message_tokens([HumanMessage(_question(n)), AIMessage(_answer(n))], model=TOKENIZER)
        for n in range(TURNS)
    )
    bound = count_tokens(INSTRUCTIONS, model=TOKENIZER) + BUDGET + FENCE_SLACK + MAX_TURNS * one_turn
    assert all(t.with_memory <= bound for t in turns), ([t.with_memory for t in turns], bound)
    assert bound < without[-1]  # the bound holds however long the thread gets; the history does not
    assert all(t.with_memory < t.without_memory for t in turns[-3:])
    assert turns[-1].saved is not None
    assert turns[-1].saved > 0.2


async def test_the_async_twin_reads_the_same(memory: Memory) -> None:
    graph, _ = _chat(memory, turns=3)
    assert await memory.atoken_usage(graph, CONFIG) == memory.token_usage(graph, CONFIG)


def test_each_model_call_is_a_row_a_tool_call_too(memory: Memory) -> None:
    model = ScriptedChatModel([tool_call("search_memory", query="Lisbon"), "Trams.", "Tiles."])
    graph = _graph(memory, model, instructions=INSTRUCTIONS)
    graph.invoke({"messages": [HumanMessage("What did I plan?")]}, CONFIG)
    graph.invoke({"messages": [HumanMessage("And then?")]}, CONFIG)

    turns = memory.token_usage(graph, CONFIG).turns
    assert [(t.question, t.tool_calls) for t in turns] == [
        ("What did I plan?", ("search_memory",)),
        ("What did I plan?", ()),
        ("And then?", ()),
    ]
    assert [t.with_memory for t in turns] == [count_message_tokens(c, model=TOKENIZER) for c in model.calls]


def test_a_model_node_of_your_own_takes_its_instructions(memory: Memory) -> None:
    model = ScriptedChatModel(["One.", "Two."])

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(memory.messages_for_model(state, instructions="Be brief."))]}

    graph = _graph(memory, agent)
    for text in ("Hi", "Again"):
        graph.invoke({"messages": [HumanMessage(text)]}, CONFIG)

    sent = [count_message_tokens(c, model=TOKENIZER) for c in model.calls]
    assert [t.with_memory for t in memory.token_usage(graph, CONFIG, instructions="Be brief.").turns] == sent
    assert [t.with_memory for t in memory.token_usage(graph, CONFIG).turns] != sent  # not found in the graph


def test_messages_that_come_with_the_input_are_no_model_call(memory: Memory) -> None:
    model = ScriptedChatModel(["One.", "Two."])
    graph = _graph(memory, model)
    graph.invoke({"messages": [HumanMessage("Hi")]}, CONFIG)
    graph.update_state(CONFIG, {"messages": [AIMessage("(written by hand)")]})
    graph.invoke({"messages": [HumanMessage("Pasted: an old chat"), AIMessage("(an old answer)")]}, CONFIG)

    turns = memory.token_usage(graph, CONFIG).turns
    assert len(turns) == len(model.calls) == 2
    assert [t.with_memory for t in turns] == [count_message_tokens(c, model=TOKENIZER) for c in model.calls]


def test_only_the_current_branch_counts(memory: Memory) -> None:
    model = ScriptedChatModel(["A0.", "A1.", "A2.", "Forked."])
    graph = _graph(memory, model)
    for n in range(3):
        graph.invoke({"messages": [HumanMessage(f"Q{n}")]}, CONFIG)
    first_done = next(  # the checkpoint where the first run ended
        s for s in graph.get_state_history(CONFIG) if len(s.values.get("messages", [])) == 2 and not s.next
    )
    graph.invoke({"messages": [HumanMessage("Q-fork")]}, first_done.config)

    assert [t.question for t in memory.token_usage(graph, CONFIG).turns] == ["Q0", "Q-fork"]
    ended_there = {"configurable": {**CONFIG["configurable"], **first_done.config["configurable"]}}
    assert [t.question for t in memory.token_usage(graph, ended_there).turns] == ["Q0"]


def test_a_thread_without_checkpoints_is_empty(memory: Memory) -> None:
    graph, _ = _chat(memory, turns=1)
    usage = memory.token_usage(graph, {"configurable": {"thread_id": "never-ran"}})
    assert usage.turns == []
    assert (usage.total_with, usage.total_without) == (0, 0)
    assert usage.as_dict() == {"thread_id": "never-ran", "turns": [], "total_with": 0, "total_without": 0}
    assert "no model calls" in str(usage)
    assert "<svg" not in usage._repr_html_()


def test_the_table_the_dict_and_the_chart(memory: Memory) -> None:
    graph, _ = _chat(memory, turns=3)
    usage = memory.token_usage(graph, CONFIG)

    text = str(usage)
    assert text.splitlines()[0].startswith("thread 'trip': 3 model calls")
    assert len(text.splitlines()) == 1 + 1 + 3 + 1  # summary, header, rows, total
    assert _question(2) in text
    data = usage.as_dict()
    assert data["turns"][0] == {
        "number": 1,
        "question": _question(0),
        "with_memory": usage.turns[0].with_memory,
        "without_memory": usage.turns[0].without_memory,
        "recalled": 0,
        "tool_calls": [],
    }
    assert (data["total_with"], data["total_without"]) == (usage.total_with, usage.total_without)
    html = usage._repr_html_()
    assert html.count("<svg") == 1
    assert html.count("<polyline") == 2
    assert html.count("<circle") == 2 * 3
    assert "<table" in html
    assert "<script" not in html
    assert not re.search(r"\bon\w+=", html)  # no event handlers


def test_a_hostile_question_is_escaped(memory: Memory) -> None:
    model = ScriptedChatModel(["Sure."])
    graph = _graph(memory, model)
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    graph.invoke({"messages": [HumanMessage(hostile)]}, CONFIG)

    html = memory.token_usage(graph, CONFIG)._repr_html_()
    assert "<svg" in html
    assert "&lt;script&gt;" in html
    assert "<script" not in html
    assert "<img" not in html


def test_a_hostile_thread_id_is_escaped(memory: Memory) -> None:
    model = ScriptedChatModel(["Sure."])
    graph = _graph(memory, model)
    config = {"configurable": {"thread_id": "<b>t</b>"}}
    graph.invoke({"messages": [HumanMessage("hi")]}, config)
    html = memory.token_usage(graph, config)._repr_html_()
    assert "<b>" not in html
    assert "&lt;b&gt;" in html


def test_a_graph_without_a_checkpointer_is_refused(memory: Memory) -> None:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Hi."]))
    with pytest.raises(ConfigurationError, match="compile with a checkpointer"):
        memory.token_usage(builder.compile(store=memory.store), CONFIG)
    with pytest.raises(ConfigurationError, match="takes a compiled graph, got StateGraph"):
        memory.token_usage(builder, CONFIG)


@pytest.mark.parametrize("config", [None, {}, {"configurable": {"user_id": "sam"}}])
def test_a_config_without_a_thread_is_refused(memory: Memory, config: Any) -> None:
    graph, _ = _chat(memory, turns=1)
    with pytest.raises(ScopeError, match="thread_id"):
        memory.token_usage(graph, config)


async def test_the_async_twin_refuses_alike(memory: Memory) -> None:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Hi."]))
    with pytest.raises(ConfigurationError, match="compile with a checkpointer"):
        await memory.atoken_usage(builder.compile(), CONFIG)
    with pytest.raises(ConfigurationError, match="must be a RunnableConfig"):
        await memory.atoken_usage(_chat(memory, turns=1)[0], "trip")  # type: ignore[arg-type]
