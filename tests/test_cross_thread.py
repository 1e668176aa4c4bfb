"""Cross-thread memory out of the box: a user's episodes go to user memory, each keeping its thread."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, MemoryState, RememberConfig, WindowConfig
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import MemoryLimitError
from langmem_plugin.services import CompartmentLimits, MemoryLayout, execute, save_steps
from langmem_plugin.services.upkeep.consolidation import ConsolidationConfig, consolidate
from langmem_plugin.services.upkeep.extraction import Candidate
from langmem_plugin.services.upkeep.forgetting import delete_threads_steps
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel

TEA = "I like green tea"
TEA_EPISODE = "User: I like green tea\nAssistant: Noted!"


def _config(thread: str, user: str | None = "sam") -> Any:
    configurable = {"thread_id": thread, **({"user_id": user} if user else {})}
    return {"configurable": configurable}


def _graph(memory: Memory, answers: int = 4) -> Any:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Noted!"] * answers))
    return builder.compile(checkpointer=InMemorySaver(), store=memory.store)


def _ask(graph: Any, text: str, config: Any) -> list[str]:
    """The contents recalled for ``text`` in the run of ``config``."""
    out = graph.invoke({"messages": [HumanMessage(text)]}, config)
    return [item["content"] for item in out["memory_context"]["items"]]


def _memory(
    remember: RememberConfig | None = None, layout: MemoryLayout | None = None, *, window: int | None = None
) -> Memory:
    """``window``: the model sees this many last user turns, so a thread's own earlier exchange is
    recalled once the window has moved past it (never while the model sees it)."""
    context = ContextConfig(window=WindowConfig(max_turns=window)) if window else None
    return Memory(embeddings=FakeEmbeddings(), remember=remember, layout=layout, context=context)


def test_another_thread_of_the_same_user_recalls_what_was_said_by_default() -> None:
    memory = _memory()
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))

    assert _ask(graph, "Which tea do I like?", _config("2")) == [TEA_EPISODE]
    episodes = memory.store.search(("memories", "user", "sam"), filter={"kind": "episode"})
    by_thread = {e.value["metadata"]["thread_id"]: e.value["content"] for e in episodes}
    assert len(episodes) == 2
    assert by_thread["1"] == TEA_EPISODE  # each episode knows where it came from
    assert memory.store.search(("memories", "session", "1")) == []  # one copy, not two


def test_another_user_recalls_nothing() -> None:
    memory = _memory()
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))
    assert _ask(graph, "Which tea do I like?", _config("2", user="kim")) == []
    (kims,) = memory.store.search(("memories", "user", "kim"))  # only kim's own question
    assert kims.value["metadata"]["thread_id"] == "2"


def test_session_only_keeps_episodes_in_their_thread() -> None:
    memory = _memory(RememberConfig(compartments=("session",)), window=1)  # type: ignore[arg-type]
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))

    assert _ask(graph, "Which tea do I like?", _config("2")) == []
    assert _ask(graph, "Which tea do I like?", _config("1")) == [TEA_EPISODE]
    assert memory.store.search(("memories", "user", "sam")) == []
    first = min(memory.store.search(("memories", "session", "1")), key=lambda i: i.created_at)
    assert first.value["content"] == TEA_EPISODE


def test_a_run_without_a_user_writes_to_session_memory() -> None:
    memory = _memory()
    graph = _graph(memory)
    out = graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1", user=None))

    assert out["messages"][-1].content == "Noted!"
    assert out["memory_context"]["stored"]["compartments"] == ["session"]
    (episode,) = memory.store.search(("memories", "session", "1"))
    assert episode.value["content"] == TEA_EPISODE
    assert memory.writer.failed == []
    assert _ask(graph, "Which tea do I like?", _config("2", user=None)) == []  # never wider than the thread


def test_both_compartments_inject_the_episode_once() -> None:
    memory = _memory(RememberConfig(compartments=("user", "session")), window=1)  # type: ignore[arg-type]
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))
    assert len(memory.store.search(("memories", "user", "sam"))) == 1
    assert len(memory.store.search(("memories", "session", "1"))) == 1
    assert _ask(graph, "Which tea do I like?", _config("1")) == [TEA_EPISODE]  # two copies, one line


def test_the_current_threads_own_episode_is_recalled_once() -> None:
    memory = _memory(window=1)
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))
    assert _ask(graph, "Which tea do I like?", _config("1")) == [TEA_EPISODE]
    episodes = memory.store.search(("memories", "user", "sam"), filter={"kind": "episode"})
    assert sorted(e.value["metadata"]["position"] for e in episodes) == ["0", "1"]
    assert {e.value["metadata"]["thread_id"] for e in episodes} == {"1"}


def test_the_current_threads_own_episode_is_not_recalled_while_the_model_sees_it() -> None:
    memory = _memory()  # no window: the model sees the whole thread
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))
    assert _ask(graph, "Which tea do I like?", _config("1")) == []
    assert TEA_EPISODE in _ask(graph, "Which tea do I like?", _config("2"))  # another thread recalls it


def test_import_history_goes_to_user_memory_with_its_thread() -> None:
    memory = _memory()
    history = [{"role": "user", "content": TEA}, {"role": "assistant", "content": "Noted!"}]
    assert memory.import_history(history, _config("old")).written == 1
    (episode,) = memory.store.search(("memories", "user", "sam"))
    assert episode.value["metadata"]["thread_id"] == "old"
    assert _ask(_graph(memory), "Which tea do I like?", _config("new")) == [TEA_EPISODE]


def test_a_full_user_memory_makes_room_for_a_saved_memory_by_evicting_old_episodes() -> None:
    memory = _memory(layout=MemoryLayout(limits={"user": CompartmentLimits(max_items=3)}))
    scope = Scope(user_id="sam", thread_id="1")
    for n in range(3):
        memory.turn.after_model(
            {"messages": [HumanMessage(f"question {n}"), AIMessage(f"answer {n}")]}, scope, memory.store
        )
    execute(memory.store, save_steps(scope, memory.layout, "Sam is allergic to peanuts"))
    contents = sorted(i.value["content"] for i in memory.store.search(("memories", "user", "sam")))
    assert contents == [
        "Sam is allergic to peanuts",
        "User: question 1\nAssistant: answer 1",
        "User: question 2\nAssistant: answer 2",
    ]
    for n in range(2):
        execute(memory.store, save_steps(scope, memory.layout, f"fact {n}"))
    with pytest.raises(MemoryLimitError, match="user memory is full"):  # memories saved on purpose stay
        execute(memory.store, save_steps(scope, memory.layout, "one fact too many"))


def test_a_full_memory_gets_room_for_the_next_writes_too() -> None:
    """Room is made for 1/20 of the limit more than a write needs: the writes after it find room
    (and so do not list the namespace again)."""
    memory = _memory(layout=MemoryLayout(limits={"user": CompartmentLimits(max_items=40)}))
    scope = Scope(user_id="sam", thread_id="1")
    ns = ("memories", "user", "sam")

    def remember(n: int) -> None:
        messages = [HumanMessage(f"question {n}"), AIMessage(f"answer {n}")]
        memory.turn.after_model({"messages": messages}, scope, memory.store)

    for n in range(40):
        remember(n)
    assert len(memory.store.search(ns, limit=100)) == 40
    remember(40)  # full: the oldest 1 + 40 // 20 episodes go

    def questions() -> list[int]:
        return sorted(int(i.value["content"].split()[2]) for i in memory.store.search(ns, limit=100))

    assert questions() == list(range(3, 41))  # question 0, 1 and 2 went
    remember(41)
    remember(42)
    assert questions() == list(range(3, 43))  # room for both: nothing else went


def test_the_consolidation_cap_counts_and_evicts_no_episodes() -> None:
    # cosine scores, which ConsolidationConfig's match threshold is for (a hybrid store's are fused)
    store = InMemoryStore(index={"dims": 256, "embed": FakeEmbeddings(), "fields": ["content"]})
    memory = Memory(store)
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))
    scope = Scope(user_id="sam")
    config = ConsolidationConfig(max_memories=1)
    decider = ScriptedChatModel([])
    consolidate(memory.store, scope, [Candidate("Plays the cello")], model=decider, config=config)
    result = consolidate(memory.store, scope, [Candidate("Works as a nurse")], model=decider, config=config)
    assert len(result.evicted) == 1  # the cello, not the episode
    contents = sorted(i.value["content"] for i in memory.store.search(("memories", "user", "sam")))
    assert contents == [TEA_EPISODE, "Works as a nurse"]


def test_deleting_a_thread_keeps_what_the_user_said_in_it() -> None:
    memory = _memory()
    graph = _graph(memory)
    graph.invoke({"messages": [HumanMessage(TEA)]}, _config("1"))
    execute(memory.store, delete_threads_steps(memory.layout, ["1"]))
    assert memory.store.get(("memory_meta", "threads", "sam"), "1") is None
    assert _ask(graph, "Which tea do I like?", _config("2")) == [TEA_EPISODE]  # long-term memory stays
