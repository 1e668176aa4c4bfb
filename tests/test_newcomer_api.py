"""Issue 25, a newcomer's first hour: the API takes what LangChain takes, a duplicate save and a
second demo run pile nothing up, the scores shown are the ones explained, a tool argument a tool
does not take is an error the model can act on, and the window keeps every answer's question.

Real parts throughout: embedded Qdrant (``Memory()``'s default store, ``QdrantStore(path=...)``),
a real ``StateGraph`` and ``ToolNode``; only the model is scripted.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import ChatPromptValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore

from langmem_plugin import (
    ConfigurationError,
    Memory,
    MiniLMEmbeddings,
    QdrantStore,
    ResultsConfig,
    WindowConfig,
    memory_index,
    trim_window,
)
from langmem_plugin.core.record import MemoryRecord, artifact_memories
from langmem_plugin.core.tokens import count_message_tokens
from langmem_plugin.core.validity import invalidated
from langmem_plugin.services.context import ContextConfig
from langmem_plugin.testing import FakeEmbeddings

CONFIG: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    """``Memory()`` on its default store (embedded Qdrant) holding three of Sam's memories."""
    with Memory(embeddings=FakeEmbeddings(), tools="full") as memory:
        save = _tool(memory, "save_memory")
        for content in ("Sam drinks green tea", "Sam runs marathons", "Sam works on rockbot"):
            save.invoke({"content": content}, CONFIG)
        yield memory


def _tool(memory: Memory, name: str) -> Any:
    return {tool.name: tool for tool in memory.tools}[name]


def _ids(recalled: Any) -> list[str]:
    return [item.id for item in recalled.items]


# -- 1. every method that takes messages takes what LangChain takes ---------------------------

texts = st.text(min_size=1, max_size=60).filter(lambda t: t.strip() and "\x00" not in t)


@SLOW
@given(question=texts)
def test_recall_reads_every_form_langchain_reads(memory: Memory, question: str) -> None:
    reference = memory.recall([HumanMessage(question)], CONFIG)
    forms: list[Any] = [
        question,
        [("user", question)],
        [("human", question)],
        [{"role": "user", "content": question}],
        [{"type": "human", "content": question}],
        ChatPromptValue(messages=[HumanMessage(question)]),
        [("assistant", "earlier answer"), ("user", question)],
        (HumanMessage(question),),
    ]
    for form in forms:
        recalled = memory.recall(form, CONFIG)
        assert (recalled.query, _ids(recalled)) == (reference.query, _ids(reference)), form
    async_ = asyncio.run(memory.arecall([("user", question)], CONFIG))
    assert (async_.query, _ids(async_)) == (reference.query, _ids(reference))


def test_a_question_as_a_pair_recalls_what_a_message_recalls(memory: Memory) -> None:
    for form in ([("user", "green tea")], [{"role": "user", "content": "green tea"}], "green tea"):
        recalled = memory.recall(form, CONFIG)
        assert recalled.query == "green tea"
        assert "Sam drinks green tea" in [item.content for item in recalled.items]


#: Elements of a message list: what LangChain reads, and what it does not.
elements = st.one_of(
    st.tuples(st.sampled_from(["user", "human", "assistant", "ai", "system", "wizard", ""]), texts),
    st.fixed_dictionaries(
        {
            "role": st.one_of(st.sampled_from(["user", "assistant", "tool"]), st.text(max_size=8)),
            "content": texts,
        }
    ),
    st.dictionaries(st.text(max_size=6), st.one_of(st.none(), st.integers(), texts), max_size=3),
    st.tuples(texts),
    st.tuples(st.sampled_from(["user", "ai"]), st.one_of(st.none(), st.integers())),
    st.builds(HumanMessage, texts),
    st.builds(AIMessage, texts),
    st.integers(),
    st.none(),
    st.floats(allow_nan=True),
    st.binary(max_size=8),
    texts,
)


@SLOW
@given(messages=st.lists(elements, max_size=5))
def test_input_langchain_cannot_read_is_a_typed_error_naming_it(memory: Memory, messages: list[Any]) -> None:
    first_bad = None
    read: list[BaseMessage] = []
    for index, element in enumerate(messages):
        try:
            read.extend(convert_to_messages([element]))
        except Exception:
            first_bad = index
            break
    if first_bad is not None:
        with pytest.raises(
            ConfigurationError, match=rf"recall\(messages\): messages\[{first_bad}\] is "
        ) as err:
            memory.recall(messages, CONFIG)
        assert "Fix: " in str(err.value)
        return
    recalled = memory.recall(messages, CONFIG)  # never an empty recall from misread input
    humans = [m for m in read if isinstance(m, HumanMessage)]
    assert recalled.query == (humans[-1].text.strip() if humans else "")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (None, "takes a str or a list of messages, got NoneType"),
        ({"role": "user", "content": "hi"}, "got dict"),
        (("user", "green tea"), "Fix: put it in a list: [('user', 'green tea')]"),
        ([("tool", "result")], "lacks the key 'tool_call_id'"),
        ([HumanMessage("ok"), 42], "messages[1] is int 42"),
    ],
)
def test_unreadable_messages_say_what_and_how_to_fix(memory: Memory, value: Any, words: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        memory.recall(value, CONFIG)
    assert words in str(err.value)
    with pytest.raises(ConfigurationError):
        asyncio.run(memory.arecall(value, CONFIG))


def test_messages_for_model_reads_a_dict_state_of_pairs() -> None:
    with Memory(
        embeddings=FakeEmbeddings(), context=ContextConfig(window=WindowConfig(max_turns=1))
    ) as memory:
        state = {"messages": [("user", "first"), ("assistant", "one"), ("user", "second")]}
        shown = memory.messages_for_model(state)
        assert [(m.type, m.content) for m in shown] == [("human", "second")]
        with pytest.raises(ConfigurationError, match=r"messages_for_model\(messages\): messages\[0\]"):
            memory.messages_for_model({"messages": [object()]})


# -- 6. a duplicate save returns the memory; a second demo run starts clean --------------------


def _tool_graph(memory: Memory) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(memory.tools))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(checkpointer=InMemorySaver(), store=memory.store)


def _call(graph: Any, name: str, config: Any = CONFIG, **args: Any) -> ToolMessage:
    call = {"name": name, "args": args, "id": f"call-{name}-{len(args)}", "type": "tool_call"}
    out = graph.invoke({"messages": [AIMessage("", tool_calls=[call])]}, config)
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage)
    return message


def _user_memories(memory: Memory, user: str = "sam") -> list[dict[str, Any]]:
    return [i.value for i in memory.store.search(("memories", "user", user), limit=100)]


def test_saving_an_exact_duplicate_returns_the_memory_already_there(tmp_path: Path) -> None:
    store = QdrantStore(
        path=tmp_path / "memory", index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
    )
    with store, Memory(store) as memory:
        graph = _tool_graph(memory)
        first = _call(graph, "save_memory", content="Sam is vegetarian", category="preferences/food")
        memory_id = first.text.split()[2]
        again = _call(graph, "save_memory", content="Sam is vegetarian", category="food")
        assert again.status == "success"
        assert again.text.startswith(f"Memory {memory_id} in user memory already says exactly this")
        assert "nothing was saved again" in again.content
        assert "update_memory" in again.content
        assert artifact_memories(again.artifact) == ("saved", [memory_id])  # this exchange states it too
        assert [v["content"] for v in _user_memories(memory)] == ["Sam is vegetarian"]
        assert [e.action for e in memory.history(memory_id, CONFIG)] == ["ADD"]  # nothing recorded twice
        # not exactly the same text, or another compartment: a new memory
        _call(graph, "save_memory", content="Sam is vegetarian.")
        _call(graph, "save_memory", content="Sam is vegetarian", compartment="session")
        assert sorted(v["content"] for v in _user_memories(memory)) == [
            "Sam is vegetarian",
            "Sam is vegetarian.",
        ]
        # a memory no longer true (superseded by consolidation) is no answer: the text is saved anew
        namespace = ("memories", "user", "sam")
        old = MemoryRecord.from_value(store.get(namespace, memory_id).value)  # type: ignore[union-attr]
        store.put(namespace, memory_id, invalidated(old, by=None).to_value())
        anew = _call(graph, "save_memory", content="Sam is vegetarian")
        assert anew.text.startswith("Saved memory ")
        assert memory_id not in anew.content
        assert sorted(v["content"] for v in _user_memories(memory)).count("Sam is vegetarian") == 2


def test_a_bad_duplicate_check_never_reads_before_the_content_is_valid(tmp_path: Path) -> None:
    with Memory(embeddings=FakeEmbeddings(), path=tmp_path / "m") as memory:
        graph = _tool_graph(memory)
        for content in ("", "   ", "x" * 100_000):
            answer = _call(graph, "save_memory", content=content)
            assert answer.status == "error"
            assert answer.text.startswith("Error:")
        assert _user_memories(memory) == []


def _demo(directory: Path, minilm: MiniLMEmbeddings) -> tuple[str, list[tuple[str, str]]]:
    from langmem_plugin.demo import USER_ID, run_demo

    lines: list[str] = []
    run_demo(directory=directory, out=lines.append)
    with QdrantStore(path=directory / "memory", index=memory_index(minilm)) as store:
        held = sorted(
            (str(i.value["category"]), str(i.value["content"]))
            for i in store.search(("memories", "user", USER_ID), limit=500)
            if not str(i.value.get("category", "")).startswith("episode")
        )
    return "\n".join(lines), held


def test_the_demo_run_twice_in_one_directory_starts_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm: MiniLMEmbeddings
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    first, held_first = _demo(tmp_path, minilm)
    second, held_second = _demo(tmp_path, minilm)
    assert "(each run there starts clean)" in first
    assert "this run removed the previous run's first" in second
    assert held_second == held_first  # the same memories, not twice as many
    assert len(held_first) == len(set(held_first))


def test_the_demo_refuses_a_directory_it_did_not_write(tmp_path: Path) -> None:
    from langmem_plugin.demo import run_demo

    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "mine.txt").write_text("not the demo's")
    with pytest.raises(ConfigurationError, match="no demo run left there") as err:
        run_demo(directory=tmp_path, out=lambda line: None)
    assert "Fix: pass a new or empty directory" in str(err.value)
    assert (tmp_path / "memory" / "mine.txt").read_text() == "not the demo's"


# -- 7. the scores shown are the ones explained ------------------------------------------------


def test_the_rank_shown_is_the_blend_the_legend_explains(tmp_path: Path) -> None:
    from langmem_plugin.demo import SCORES

    assert "0.75 ×" in SCORES
    assert "0.15 × priority" in SCORES
    assert "0.10 × recency" in SCORES
    with Memory(embeddings=FakeEmbeddings(), path=tmp_path / "m") as memory:
        graph = _tool_graph(memory)
        for content, priority in (("Sam drinks green tea", 9), ("Sam runs in May", 1), ("Sam likes tea", 5)):
            _call(graph, "save_memory", content=content, priority=priority)
        recalled = memory.recall("which tea does Sam drink", CONFIG)
    priorities = {"Sam drinks green tea": 9, "Sam runs in May": 1, "Sam likes tea": 5}
    best = max(item.relevance or 0.0 for item in recalled.items)
    assert recalled.items
    for item in recalled.items:
        assert item.relevance is not None
        assert 0.0 <= item.score <= 1.0
        match = min(max(item.relevance / best, 0.0), 1.0) if best > 0 else 0.0
        expected = 0.75 * match + 0.15 * (priorities[item.content] - 1) / 9 + 0.10  # saved just now
        assert math.isclose(item.score, expected, abs_tol=1e-3), item


def test_the_search_tool_says_what_its_score_is() -> None:
    with Memory(embeddings=FakeEmbeddings()) as memory:
        assert (
            "higher is better, comparable only within one answer"
            in _tool(memory, "search_memory").description
        )


# -- 10. a tool argument a tool does not take; the window keeps every answer's question --------

names = st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True)


@SLOW
@given(tool=st.sampled_from(["save_memory", "search_memory", "list_categories", "clear_memory"]), extra=names)
def test_an_argument_a_tool_does_not_take_is_an_error_naming_it(
    memory: Memory, tool: str, extra: str
) -> None:
    schema = _tool(memory, tool).args_schema
    taken = list(schema.model_fields)
    if extra in taken:
        return
    graph = _tool_graph(memory)
    calls: dict[str, dict[str, Any]] = {
        "save_memory": {"content": "Sam drinks green tea"},
        "search_memory": {"query": "tea"},
        "list_categories": {},
        "clear_memory": {"compartment": "user", "all": True},
    }
    good = calls[tool]
    before = _user_memories(memory)
    answer = _call(graph, tool, **good, **{extra: "session"})
    assert answer.status == "error"
    assert f"unknown argument(s) {extra!r}" in answer.content
    assert (", ".join(taken) if taken else "no arguments") in answer.content
    assert "Nothing was done" in answer.content
    assert _user_memories(memory) == before


def test_the_plan_docs_example_search_is_real(memory: Memory) -> None:
    graph = _tool_graph(memory)
    refused = _call(graph, "search_memory", query="tea", compartment="session")
    assert refused.status == "error"
    assert "'compartment'" in refused.content
    assert "search_memory takes query, category, tags, since, until, limit" in refused.content
    docs = (Path(__file__).resolve().parent.parent / "docs" / "plan.md").read_text()
    assert '"compartment": "session"}, config)' not in docs


def test_result_tools_refuse_unknown_arguments_too() -> None:
    with Memory(embeddings=FakeEmbeddings(), context=ContextConfig(results=ResultsConfig())) as memory:
        graph = _tool_graph(memory)
        answer = _call(graph, "retrieve_result", id="r1", user_id="bob")
        assert answer.status == "error"
        assert "unknown argument(s) 'user_id'" in answer.content


@st.composite
def conversations(draw: st.DrawFn) -> list[BaseMessage]:
    """A real conversation: optional system prompt and greeting, turns of a question, tool calls
    answered by their results (several in one message), and an answer (the last one may be open)."""
    word = st.sampled_from(["tea", "marathon", "rockbot", "Ana", "April", "green", "x" * 40])
    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage("You are helpful."))
    if draw(st.booleans()):
        messages.append(AIMessage("Hello! How can I help?"))
    calls = 0
    for turn in range(draw(st.integers(1, 5))):
        messages.append(HumanMessage(" ".join(draw(st.lists(word, min_size=1, max_size=8))), id=f"h{turn}"))
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{calls + i}" for i in range(draw(st.integers(1, 2)))]
            calls += len(ids)
            tool_calls = [
                {"name": "search_memory", "args": {"query": "q"}, "id": i, "type": "tool_call"} for i in ids
            ]
            messages.append(AIMessage("", tool_calls=tool_calls))
            messages.extend(
                ToolMessage(" ".join(draw(st.lists(word, max_size=20))), tool_call_id=i) for i in ids
            )
        if draw(st.booleans()) or turn < 4:
            messages.append(AIMessage(" ".join(draw(st.lists(word, min_size=1, max_size=10)))))
    return messages


@settings(max_examples=150, deadline=None)
@given(
    messages=conversations(),
    max_tokens=st.one_of(st.none(), st.integers(1, 400)),
    max_turns=st.one_of(st.none(), st.integers(1, 4)),
)
def test_the_window_never_keeps_an_answer_without_its_question(
    messages: list[BaseMessage], max_tokens: int | None, max_turns: int | None
) -> None:
    kept = trim_window(messages, max_tokens=max_tokens, max_turns=max_turns)
    at = {id(m): i for i, m in enumerate(messages)}
    positions = [at[id(m)] for m in kept]
    assert positions == sorted(positions)
    assert kept[-1] is messages[-1]
    head = [m for m in messages if isinstance(m, SystemMessage)]
    assert kept[: len(head)] == head
    for position in positions:
        question = next((i for i in range(position, -1, -1) if isinstance(messages[i], HumanMessage)), None)
        assert question is None or question in positions, "an answer kept without its question"
    calls = {c["id"] for m in kept if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in kept if isinstance(m, ToolMessage)}
    assert calls == results  # no call without its results, no result without its call
    if max_tokens is not None and count_message_tokens(kept) > max_tokens:
        # over the limit only when nothing smaller keeps the rules: the question and the newest step
        rest = [m for m in kept if not isinstance(m, SystemMessage)]
        questions = [m for m in rest if isinstance(m, HumanMessage)]
        assert len(questions) <= 1
        assert not questions or rest[0] is questions[0]
        assert isinstance(rest[0], HumanMessage)
        assert all(isinstance(m, ToolMessage) for m in rest[2:])  # the question, then one step


def test_trim_window_reads_what_a_chat_model_reads() -> None:
    history: list[Any] = [("user", "first"), ("assistant", "one"), {"role": "user", "content": "second"}]
    kept = trim_window(history, max_turns=1)
    assert [(m.type, m.content) for m in kept] == [("human", "second")]
    assert [m.content for m in trim_window(history, max_tokens=8)] == ["second"]
    with pytest.raises(ConfigurationError, match=r"trim_window\(messages\): messages\[1\] is int 7"):
        trim_window([("user", "hi"), 7], max_tokens=50)  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="takes a list of messages"):
        trim_window("hi", max_turns=1)


def test_a_tiny_window_keeps_the_question_with_the_answer() -> None:
    messages = [HumanMessage("What tea does Sam drink?"), AIMessage("Green tea.")]
    assert trim_window(messages, max_tokens=5) == messages


@pytest.mark.parametrize(
    ("tool", "good", "takes"),
    [
        ("add_run_note", {"note": "the build is green"}, "add_run_note takes note"),
        ("create_plan", {"goal": "ship", "steps": ["build"]}, "create_plan takes goal, steps"),
        ("update_plan_step", {"step_id": "s1", "status": "completed"}, "update_plan_step takes step_id"),
        ("get_plan", {}, "get_plan takes no arguments"),
    ],
)
def test_plan_and_run_note_tools_refuse_unknown_arguments_and_change_nothing(
    tool: str, good: dict[str, Any], takes: str
) -> None:
    from langmem_plugin import MemoryState

    with Memory(InMemoryStore(), embeddings=FakeEmbeddings(), plan=True, tools="full") as memory:
        builder = StateGraph(MemoryState)
        builder.add_node("tools", ToolNode(memory.tools))
        builder.add_edge(START, "tools")
        builder.add_edge("tools", END)
        graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
        call = {"name": tool, "args": {**good, "priority": "high"}, "id": "call-1", "type": "tool_call"}
        out = graph.invoke({"messages": [AIMessage("", tool_calls=[call])]}, CONFIG)
        answer = out["messages"][-1]
        assert isinstance(answer, ToolMessage)
        assert answer.status == "error"
        assert "unknown argument(s) 'priority'" in answer.content
        assert takes in answer.content
        assert "Nothing was done" in answer.content
        assert answer.content.count("Error:") == 1
        assert not out.get("plan")
        assert not out.get("run_memory")
