"""memory.wrap(model): every call path of a real chat model gets the fenced memory in its system
message, and the answer is remembered — invoke, ainvoke, stream, astream, batch, abatch, and a
graph node that calls the wrapped model without passing a config."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory
from langmem_plugin.core.fence import FENCE_OPEN
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call


def _config(thread: str) -> Any:
    return {"configurable": {"user_id": "ann", "thread_id": thread}}


def _memory() -> Memory:
    memory = Memory(InMemoryStore(index={"embed": FakeEmbeddings(64), "dims": 64, "fields": ["content"]}))
    memory.store.put(("memories", "user", "ann"), "tea", {"content": "Ann drinks oolong tea", "kind": "fact"})
    return memory


def _run(path: str, wrapped: Any, text: str, config: Any) -> list[Any]:
    """The answers of one call path (a batch asks twice)."""
    question: Any = [("user", text)]
    if path == "invoke":
        return [wrapped.invoke(question, config)]
    if path == "ainvoke":
        return [asyncio.run(wrapped.ainvoke(question, config))]
    if path == "stream":
        return list(wrapped.stream(question, config))
    if path == "astream":

        async def collect() -> list[Any]:
            return [chunk async for chunk in wrapped.astream(question, config)]

        return asyncio.run(collect())
    if path == "batch":
        return wrapped.batch([question, question], config)
    return asyncio.run(wrapped.abatch([question, question], config))


@pytest.mark.parametrize("path", ["invoke", "ainvoke", "stream", "astream", "batch", "abatch"])
def test_every_call_path_sees_the_memory_and_is_remembered(path: str) -> None:
    memory = _memory()
    model = ScriptedChatModel(["You like oolong.", "You like oolong."])
    wrapped = memory.wrap(model)
    try:
        answers = _run(path, wrapped, "What tea do I like?", _config("t1"))
        memory.flush(timeout=10)
        assert answers
        assert all("oolong" in str(a.content) for a in answers)
        assert model.calls
        for call in model.calls:  # every call the model got, on every path
            assert isinstance(call[0], SystemMessage)
            assert FENCE_OPEN in str(call[0].content)
            assert "Ann drinks oolong tea" in str(call[0].content)
        episodes = [i for i in memory.store.search(("memories", "user", "ann"), limit=50) if i.key != "tea"]
        assert episodes, "the exchange was remembered"
        assert any("What tea do I like?" in i.value["content"] for i in episodes)
    finally:
        memory.close()


def test_the_callers_system_message_stays_first_and_tool_calls_are_not_remembered() -> None:
    memory = _memory()

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    model = ScriptedChatModel([tool_call("weather", city="Oslo")])
    wrapped = memory.wrap(model).bind_tools([weather])
    try:
        answer = wrapped.invoke(
            [SystemMessage("Be brief."), HumanMessage("What tea do I like, and the weather in Oslo?")],
            _config("t2"),
        )
        memory.flush(timeout=10)
    finally:
        memory.close()
    assert isinstance(answer, AIMessage)
    assert answer.tool_calls
    system = str(model.calls[0][0].content)
    assert system.startswith("Be brief.")
    assert FENCE_OPEN in system
    assert sum(isinstance(m, SystemMessage) for m in model.calls[0]) == 1
    assert [i.key for i in memory.store.search(("memories", "user", "ann"), limit=50)] == ["tea"]


def test_in_a_graph_node_the_config_comes_from_the_run() -> None:
    memory = _memory()
    model = ScriptedChatModel(["Oolong, as always."])
    wrapped = memory.wrap(model)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [wrapped.invoke(state["messages"])]}  # no config passed: the node's

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    graph = builder.compile()
    try:
        out = graph.invoke({"messages": [("user", "Which tea?")]}, _config("t3"))
        memory.flush(timeout=10)
    finally:
        memory.close()
    assert out["messages"][-1].content == "Oolong, as always."
    assert "Ann drinks oolong tea" in str(model.calls[0][0].content)


def test_bad_input_and_a_missing_user_are_typed_errors() -> None:
    memory = _memory()
    wrapped = memory.wrap(ScriptedChatModel(["x"]))
    try:
        with pytest.raises(ConfigurationError, match="cannot read as messages"):
            wrapped.invoke([{"no": "role"}], _config("t4"))
        with pytest.raises(ConfigurationError, match="wrap"):
            memory.wrap("gpt-4o")  # type: ignore[arg-type]
    finally:
        memory.close()


class _StreamingModel(GenericFakeChatModel):
    """LangChain's streaming fake chat model (chunks word by word), recording what it received."""

    seen: list[list[Any]] = []  # noqa: RUF012 - set per instance in the test

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@pytest.mark.parametrize("path", ["stream", "astream"])
def test_a_model_that_streams_chunks_is_remembered_whole(path: str) -> None:
    memory = _memory()
    model = _StreamingModel(messages=iter([AIMessage("You like oolong tea, Ann.")]))
    model.seen = []
    try:
        chunks = _run(path, memory.wrap(model), "What tea do I like?", _config("t5"))
        memory.flush(timeout=10)
        stored = [i.value["content"] for i in memory.store.search(("memories", "user", "ann"), limit=50)]
    finally:
        memory.close()
    assert len(chunks) > 3  # streamed in pieces
    assert "Ann drinks oolong tea" in str(model.seen[0][0].content)
    assert any("You like oolong tea, Ann." in text for text in stored)
