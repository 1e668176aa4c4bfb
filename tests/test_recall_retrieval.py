"""Recall through HybridRetriever in real graphs: saved, updated and deleted memories are never stale.

The retriever keeps no copy of the store, so there is nothing to go stale: every search asks
the store (here QdrantStore, whose candidate lists carry both signals).
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import Memory, MemoryState
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services import MemoryLayout, RecallConfig, execute, recall_steps, save_steps
from langmem_plugin.services.recall.retrieval import HybridRetriever, RetrievalConfig
from langmem_plugin.services.store_steps import CandidateSearch
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

USER_NS = ("memories", "user", "alice")


def _config(thread: str) -> Any:
    return {"configurable": {"user_id": "alice", "thread_id": thread}}


def _memory(mode: str) -> Memory:
    recall = RecallConfig(retrieval=RetrievalConfig(mode=mode))  # type: ignore[arg-type]
    index: Any = {"dims": 256, "embed": FakeEmbeddings(), "fields": ["content"]}
    memory = Memory(QdrantStore(":memory:", index=index), recall=recall, tokenizer_model="gpt-4o-mini")
    scope = Scope(user_id="alice")
    for k in range(40):  # more than the dense search returns: some hits are lexical-only
        execute(
            memory.store, save_steps(scope, memory.layout, f"Neighbour number {k} owns a dog called Rex{k}")
        )
    return memory


def _system_text(messages: list[Any]) -> str:
    return messages[0].content if messages and isinstance(messages[0], SystemMessage) else ""


async def _turn(graph: Any, text: str, thread: str, mode: str) -> dict[str, Any]:
    inputs = {"messages": [HumanMessage(text)]}
    config = _config(thread)
    out = graph.invoke(inputs, config) if mode == "sync" else await graph.ainvoke(inputs, config)
    return dict(out)


def _recalled(out: dict[str, Any]) -> dict[str, str]:
    """The memories recalled, without the episodes of earlier exchanges (recalled in every thread
    of the user, they quote what was said then: here only what the tools wrote is checked)."""
    return {
        i["id"]: i["content"]
        for i in out["memory_context"]["items"]
        if i["section"] == "memories" and not i["id"].startswith("ep-")
    }


@pytest.mark.parametrize("retrieval", ["hybrid", "lexical"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tool_writes_are_recalled_as_they_are_now(retrieval: str, mode: str) -> None:
    memory = _memory(retrieval)
    ids: dict[str, str] = {}

    def saved_id(messages: list[Any]) -> str:
        ids["cat"] = messages[-1].content.split()[2].rstrip(":")
        return "Saved."

    model = ScriptedChatModel(
        [
            tool_call("save_memory", content="The user's cat is called Zorblax", category="pets"),
            saved_id,
            lambda m: "Zorblax!" if "Zorblax" in _system_text(m) else "No idea.",
            lambda m: tool_call("update_memory", id=ids["cat"], content="The user's cat is called Quibble"),
            "Updated.",
            "Your cat is Quibble.",
            lambda m: tool_call("delete_memory", id=ids["cat"]),
            "Deleted.",
            "I know no cat.",
        ]
    )
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model)
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)

    await _turn(graph, "Remember that my cat is called Zorblax.", "t1", mode)
    assert memory.store.get(USER_NS, ids["cat"]) is not None
    assert memory.retriever is not None
    assert memory.retriever.store is memory.store

    second = await _turn(graph, "What is my cat called? Zorblax?", "t2", mode)
    assert _recalled(second).get(ids["cat"]) == "The user's cat is called Zorblax"
    assert second["messages"][-1].content == "Zorblax!"

    await _turn(graph, "My cat is now called Quibble, update it.", "t3", mode)
    fourth = await _turn(graph, "Is my cat called Zorblax or Quibble?", "t4", mode)
    recalled = _recalled(fourth)
    assert recalled.get(ids["cat"]) == "The user's cat is called Quibble"
    assert not any("Zorblax" in text for text in recalled.values())

    await _turn(graph, "Forget my cat.", "t5", mode)
    sixth = await _turn(graph, "What is my cat called? Zorblax or Quibble?", "t6", mode)
    assert ids["cat"] not in _recalled(sixth)
    assert not any("cat" in text for text in _recalled(sixth).values())
    assert model.remaining == 0


@pytest.mark.parametrize("retrieval", ["hybrid", "lexical"])
async def test_writes_straight_into_the_store_are_never_recalled_stale(retrieval: str) -> None:
    memory = _memory(retrieval)
    config = _config("t1")
    first = memory.recall([HumanMessage("Who owns a dog called Rex7?")], config)  # builds the index
    assert any("Rex7" in i.content for i in first.items)
    target = next(
        key
        for key, v in ((i.key, i.value) for i in memory.store.search(USER_NS, limit=100))
        if "Rex7" in v["content"]
    )

    value = dict(memory.store.get(USER_NS, target).value)  # type: ignore[union-attr]
    memory.store.put(USER_NS, target, {**value, "content": "Neighbour number 7 owns a parrot called Polly"})
    for recall in (
        memory.recall([HumanMessage("Who owns a dog called Rex7?")], config),
        await memory.arecall([HumanMessage("Who owns a dog called Rex7?")], config),
    ):
        assert not any("Rex7" in i.content for i in recall.items)
    polly = memory.recall([HumanMessage("Who owns a parrot called Polly?")], config)
    assert [i.content for i in polly.items if i.id == target] == [
        "Neighbour number 7 owns a parrot called Polly"
    ]

    memory.store.delete(USER_NS, target)
    for recall in (
        memory.recall([HumanMessage("parrot Polly")], config),
        await memory.arecall([HumanMessage("parrot Polly")], config),
    ):
        assert target not in [i.id for i in recall.items]


def test_default_recall_is_the_fused_search_in_one_request_with_no_retriever_to_keep() -> None:
    assert isinstance(Memory(embeddings=FakeEmbeddings()).retriever, HybridRetriever)
    assert RecallConfig().retrieval == RetrievalConfig()
    assert Memory(embeddings=FakeEmbeddings(), recall=RecallConfig(retrieval=None)).retriever is None
    with pytest.raises(ConfigurationError, match="RetrievalConfig"):
        RecallConfig(retrieval="hybrid")  # type: ignore[arg-type]
    steps = recall_steps(
        Scope(user_id="u", thread_id="t"),
        MemoryLayout(),
        [HumanMessage("hi")],
        config=RecallConfig(knowledge=False),
    )
    request = next(steps)  # user and session memory: one request, no retriever object needed
    assert isinstance(request, CandidateSearch)
    assert [q.namespace_prefix for q in request.queries] == [
        ("memories", "user", "u"),
        ("memories", "session", "t"),
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_episodes_remembered_in_a_thread_are_recalled_by_bm25_alone(mode: str) -> None:
    memory = _memory("lexical")
    model = ScriptedChatModel(
        ["Neptune it is.", lambda m: "Neptune!" if "Neptune" in _system_text(m) else "?"]
    )
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model)
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    first = await _turn(graph, "My favourite planet is Neptune.", "t9", mode)
    assert first["memory_context"]["items"] == []  # the session index was built, empty
    # another thread (in t9 the model still sees the exchange, so recall leaves it out)
    second = await _turn(graph, "Which planet do I like? Neptune?", "t10", mode)
    assert any("Neptune" in i["content"] for i in second["memory_context"]["items"])
    assert second["messages"][-1].content == "Neptune!"
