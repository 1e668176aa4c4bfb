"""Provenance of extracted memories: extraction links each memory to the exchanges it came from,
consolidation keeps the links through ADD and UPDATE, and an INVALIDATE marks the old memory's
exchanges superseded, so recall no longer shows the old statement as current."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState, RecallConfig
from langmem_plugin.core.record import exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.upkeep import Candidate, consolidate_steps
from langmem_plugin.services.upkeep.extraction import ExtractionConfig
from langmem_plugin.services.upkeep.reflection import run_requests
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
SAM = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
USER = ("memories", "user", "sam")


def _extracted(*contents: str) -> AIMessage:
    return tool_call("ExtractedMemories", memories=[{"content": c, "kind": "preference"} for c in contents])


def _supersede_coffee(messages: list[BaseMessage]) -> AIMessage:
    (target,) = re.findall(r'EXISTING id=(\w+): "Sam drinks coffee', str(messages[-1].content))
    decision = {"candidate": 1, "action": "INVALIDATE", "target_id": target, "reason": "switched"}
    return tool_call("ConsolidationDecisions", decisions=[decision])


def _graph(memory: Memory, answers: list[str]) -> Any:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(answers))
    return builder.compile(checkpointer=InMemorySaver(), store=memory.store)


def _exchanges(memory: Memory) -> dict[str, dict[str, Any]]:
    """The stored exchanges (not passages) of sam, by their first line."""
    items = memory.store.search(USER, filter={"kind": "episode"}, limit=100)
    return {i.value["content"].splitlines()[0]: {"key": i.key, **i.value} for i in items}


def _memories(memory: Memory) -> dict[str, dict[str, Any]]:
    items = memory.store.search(USER, limit=100)
    return {i.value["content"]: {"key": i.key, **i.value} for i in items if i.value["kind"] != "episode"}


def test_an_extracted_memory_links_to_its_exchange_and_invalidate_supersedes_the_old_one() -> None:
    extractor = ScriptedChatModel(
        [_extracted("Sam drinks coffee every morning"), _extracted("Sam drinks tea now"), _supersede_coffee]
    )
    memory = Memory(
        InMemoryStore(index=INDEX),
        extraction=ExtractionConfig(model=extractor, debounce=0),
        recall=RecallConfig(min_relevance=None),
    )
    graph = _graph(memory, ["Noted.", "Noted, tea it is."])
    for text in ("I drink coffee every morning.", "I switched to tea, no more coffee for me."):
        graph.invoke({"messages": [HumanMessage(text)]}, SAM)
        memory.flush(timeout=10)
    assert memory.reflector is not None
    assert memory.reflector.failed == []
    assert extractor.remaining == 0

    exchanges, memories = _exchanges(memory), _memories(memory)
    coffee_turn = exchanges["User: I drink coffee every morning."]
    tea_turn = exchanges["User: I switched to tea, no more coffee for me."]
    coffee, tea = memories["Sam drinks coffee every morning"], memories["Sam drinks tea now"]
    assert coffee["sources"] == [exchange_link("t1", coffee_turn["key"])]
    assert tea["sources"] == [exchange_link("t1", tea_turn["key"])]
    assert coffee["metadata"]["superseded_by"] == tea["key"]
    # the exchange that stated the old value is superseded by the new memory; the new one is current
    assert coffee_turn["metadata"]["superseded_by"] == tea["key"]
    assert "invalid_at" not in tea_turn["metadata"]

    recalled = memory.recall([HumanMessage("what does Sam drink in the morning?")], SAM).prompt
    assert "Sam drinks tea now" in recalled
    assert "I drink coffee every morning" not in recalled  # not shown as current

    memory.forget(tea["key"], SAM)  # forgetting the extracted memory reaches its exchange
    assert tea_turn["content"].splitlines()[0] not in _exchanges(memory)
    assert coffee_turn["content"].splitlines()[0] in _exchanges(memory)  # kept, still superseded


def test_each_memory_of_a_reflection_over_several_turns_links_to_the_turn_that_said_it() -> None:
    extractor = ScriptedChatModel(
        [_extracted("Sam keeps bees on the roof", "Sam's sister lives in Lisbon", "Sam seems cheerful")]
    )
    memory = Memory(InMemoryStore(index=INDEX), extraction=ExtractionConfig(model=extractor, debounce=600))
    graph = _graph(memory, ["Lovely.", "Nice."])
    for text in ("I keep bees on my roof.", "My sister moved to Lisbon."):
        graph.invoke({"messages": [HumanMessage(text)]}, SAM)
    assert memory.reflector is not None
    assert memory.reflector.pending == 1
    memory.flush(timeout=10)

    exchanges, memories = _exchanges(memory), _memories(memory)
    bees = exchange_link("t1", exchanges["User: I keep bees on my roof."]["key"])
    lisbon = exchange_link("t1", exchanges["User: My sister moved to Lisbon."]["key"])
    assert memories["Sam keeps bees on the roof"]["sources"] == [bees]
    assert memories["Sam's sister lives in Lisbon"]["sources"] == [lisbon]
    assert memories["Sam seems cheerful"]["sources"] == [bees, lisbon]  # no word in common: both


def test_an_update_keeps_the_sources_of_both_statements() -> None:
    store = InMemoryStore(index=INDEX)
    layout, scope = MemoryLayout(), Scope(user_id="sam", thread_id="t1")
    first = Candidate("Sam plays the cello", sources=("t1/ep-a",))
    run_requests(store, {}, consolidate_steps(scope, layout, [first]))
    (old,) = store.search(USER)

    def merge(messages: list[BaseMessage]) -> AIMessage:
        decision = {
            "candidate": 1,
            "action": "UPDATE",
            "target_id": old.key,
            "content": "Sam plays cello daily",
        }
        return tool_call("ConsolidationDecisions", decisions=[decision])

    again = Candidate("Sam plays the cello every day", sources=("t1/ep-b",))
    run_requests(
        store, {"consolidation": ScriptedChatModel([merge])}, consolidate_steps(scope, layout, [again])
    )
    (merged,) = store.search(USER)
    assert merged.value["content"] == "Sam plays cello daily"
    assert merged.value["sources"] == ["t1/ep-a", "t1/ep-b"]
