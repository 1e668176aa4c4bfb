"""Extraction, consolidation with time and forget_user on every kind of store: one path for all."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState
from langmem_plugin.services.upkeep.extraction import ExtractionConfig
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

STORES: dict[str, Callable[[], BaseStore]] = {
    "in-memory": lambda: InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}),
    "checkpointer-semantic": lambda: CheckpointerStore(
        InMemorySaver(), index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
    ),
    "checkpointer-lexical": lambda: CheckpointerStore(InMemorySaver()),
}


def _supersede(messages: list[BaseMessage]) -> AIMessage:
    prompt = str(messages[-1].content)
    (target,) = re.findall(r'EXISTING id=(\w+): "The user prefers coffee"', prompt)
    decision = {"candidate": 1, "action": "INVALIDATE", "target_id": target, "reason": "switched"}
    return tool_call("ConsolidationDecisions", decisions=[decision])


def _run(memory: Memory, user: str) -> None:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Coffee.", "Tea."]))
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    config = {"configurable": {"user_id": user, "thread_id": f"{user}-t"}}
    for text in ("I love coffee", "I switched to tea"):
        graph.invoke({"messages": [HumanMessage(text)]}, config)
        memory.flush(timeout=10)


@pytest.mark.parametrize("kind", list(STORES))
def test_a_superseded_preference_and_forget_user_on_every_store(kind: str) -> None:
    def preference(content: str) -> AIMessage:
        return tool_call("ExtractedMemories", memories=[{"content": content, "kind": "preference"}])

    extractor = ScriptedChatModel(
        [preference("The user prefers coffee"), preference("The user prefers tea"), _supersede] * 2
    )
    memory = Memory(STORES[kind](), extraction=ExtractionConfig(model=extractor, debounce=0))
    for user in ("alice", "bob"):
        _run(memory, user)
    reflector = memory.reflector
    assert reflector is not None
    assert reflector.failed == []
    assert extractor.remaining == 0

    current = {
        i.value["content"]: "invalid_at" not in i.value["metadata"]
        for i in memory.store.search(("memories", "user", "alice"), limit=50)
        if i.value["kind"] != "episode"  # what she said, kept beside what was extracted from it
    }
    assert current == {"The user prefers coffee": False, "The user prefers tea": True}
    recalled = memory.recall(
        [HumanMessage("what do I prefer?")], {"configurable": {"user_id": "alice", "thread_id": "x"}}
    )
    assert "The user prefers tea" in recalled.prompt
    assert "The user prefers coffee" not in recalled.prompt

    bob_before = _everything(memory.store, "bob")
    report = memory.forget_user("alice")
    assert report.counts["user"] == 4  # two memories and the two episodes they came from
    assert report.counts["history"] == 3  # ADD coffee, ADD tea, INVALIDATE coffee
    assert report.threads == ["alice-t"]
    assert _everything(memory.store, "alice") == {}
    assert _everything(memory.store, "bob") == bob_before
    memory.close()


def _everything(store: BaseStore, user: str) -> dict[tuple[tuple[str, ...], str], Any]:
    out = {}
    for namespace in store.list_namespaces(limit=1000):
        if namespace[-1] in (user, f"{user}-t"):
            for item in store.search(namespace, limit=1000):
                out[(tuple(item.namespace), item.key)] = item.value
    return out
