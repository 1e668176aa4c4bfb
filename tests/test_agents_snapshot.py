"""A snapshot of memory handed to a sub-agent (issue 38 item 2): ``memory.snapshot(config)`` and
``memory.agent(name).restore(snapshot)`` — the sub-agent reads memory as it was at the hand-off,
never what is written after it, and writes nothing there; everything else stays live."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import AgentRules, Memory
from langmem_plugin.errors import AgentAccessError, CompartmentError, ConfigurationError
from langmem_plugin.services.snapshot import MemorySnapshot, SnapshotStore
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call
from tests.counting_stores import STORE_KINDS, opened_store

CONFIG: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
USER = ("memories", "user", "u1")
SESSION = ("memories", "session", "t1")


def _contents(store: BaseStore, namespace: tuple[str, ...]) -> list[str]:
    return sorted(str(item.value["content"]) for item in store.search(namespace, limit=100))


def _save(memory: Memory, content: str, compartment: str = "user") -> str:
    save = next(t for t in memory.tools if t.name == "save_memory")
    return str(save.invoke({"content": content, "compartment": compartment}, CONFIG))


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_restored_sub_agent_reads_memory_as_it_was_at_the_hand_off(kind: str, tmp_path: Path) -> None:
    with opened_store(kind, tmp_path, 64) as store:
        memory = Memory(store)
        _save(memory, "The user is allergic to peanuts")
        _save(memory, "We are planning the Lisbon offsite", compartment="session")
        snapshot = memory.snapshot(CONFIG)
        _save(memory, "The user is allergic to peanuts and now also to kiwi")  # after the hand-off
        store.delete(USER, next(i.key for i in store.search(USER) if i.value["content"][-7:] == "peanuts"))

        assert sorted(snapshot.contents()) == [
            "The user is allergic to peanuts",
            "We are planning the Lisbon offsite",
        ]
        assert snapshot.compartments == ("user", "session")
        researcher = memory.agent("researcher").restore(snapshot)
        recalled = researcher.recall("Is the user allergic to peanuts or kiwi?", CONFIG)
        assert [item.content for item in recalled.items if item.compartment == "user"] == [
            "The user is allergic to peanuts"
        ]
        found = next(t for t in researcher.tools if t.name == "search_memory").invoke(
            {"query": "allergic"}, CONFIG
        )
        assert "peanuts" in str(found)
        assert "kiwi" not in str(found)
        # the live memory moved on; the root sees it
        assert [i.content for i in memory.recall("allergic kiwi", CONFIG).items if "kiwi" in i.content]
        # it writes nothing there: the tool answers with the error, the store is unchanged
        before = _contents(store, USER)
        assert _save(researcher, "The user likes kiwi").startswith("Error:")
        assert _contents(store, USER) == before


def test_a_deep_agent_hands_its_sub_agent_a_snapshot_while_others_keep_writing() -> None:
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    memory = Memory(store, agents=AgentRules(results="isolated"))
    researcher_model = ScriptedChatModel(
        [
            tool_call("search_memory", query="budget offsite"),
            tool_call("save_memory", content="Budget is 9000 euros"),
            "The budget is 5000 euros.",
        ]
    )

    @tool
    def research(question: str, config: RunnableConfig) -> str:
        """Ask the researcher, who works from memory as it is now."""
        snapshot = memory.snapshot(config)
        _save(memory, "Correction: the offsite budget is 7000 euros")  # another worker, meanwhile
        restored = memory.agent("researcher").restore(snapshot)
        sub = create_agent(
            researcher_model, tools=restored.tools, middleware=[restored.middleware()], name="researcher"
        )
        return str(sub.invoke({"messages": [HumanMessage(question)]}, config)["messages"][-1].content)

    main_model = ScriptedChatModel(
        [
            tool_call("save_memory", content="The offsite budget is 5000 euros"),
            tool_call("research", question="What is the offsite budget?"),
            "5000 euros, per the researcher.",
        ]
    )
    main = create_agent(
        main_model,
        tools=[*memory.tools, research],
        middleware=[memory.middleware()],
        checkpointer=InMemorySaver(),
    )
    out = main.invoke({"messages": [HumanMessage("What is the offsite budget?")]}, CONFIG)

    assert out["messages"][-1].content == "5000 euros, per the researcher."
    system = researcher_model.calls[0][0]
    assert isinstance(system, SystemMessage)
    assert "5000 euros" in str(system.content)
    assert "7000" not in str(system.content)
    searched, refused = (m for m in researcher_model.calls[2] if isinstance(m, ToolMessage))
    assert "5000" in str(searched.content)
    assert "7000" not in str(searched.content)
    assert str(refused.content).startswith("Error:")
    assert "read-only to the agent 'researcher'" in str(refused.content)
    shared = _contents(store, USER)
    assert not any("9000" in c for c in shared)
    assert not any("The budget is 5000 euros." in c for c in shared)  # the researcher's exchange: not kept
    assert any("7000" in c for c in shared)  # the live memory kept the other worker's write


def test_the_snapshot_view_refuses_writes_there_and_leaves_the_rest_live() -> None:
    store = InMemoryStore()
    memory = Memory(store, embeddings=FakeEmbeddings())
    _save(memory, "The user likes green tea")
    snapshot = memory.snapshot(CONFIG)
    view = SnapshotStore(store, snapshot)
    with pytest.raises(AgentAccessError, match="read-only here"):
        view.put(USER, "k", {"content": "changed"})
    with pytest.raises(AgentAccessError):
        view.put(("memories", "user", "u2"), "k", {"content": "another user's, same compartment"})
    assert store.search(("memories", "user", "u2")) == []
    # another user's or thread's namespace of the snapshot's compartments reads empty, not live
    store.put(("memories", "user", "u2"), "k", {"content": "u2's"})
    assert view.search(("memories", "user", "u2")) == []
    assert view.get(("memories", "user", "u2"), "k") is None
    # knowledge and an agent's own compartments are the store's, read and written
    view.put(("memories", "agent", "researcher", "user", "u1"), "n", {"content": "own note"})
    assert store.get(("memories", "agent", "researcher", "user", "u1"), "n") is not None
    assert ("memories", "agent", "researcher", "user", "u1") in view.list_namespaces(prefix=("memories",))
    assert USER in view.list_namespaces(prefix=("memories",))
    assert ("memories", "user", "u2") not in view.list_namespaces(prefix=("memories",))
    with pytest.raises(ConfigurationError, match="spans a snapshot"):
        view.search(("memories",))
    # a filter selects as LangGraph's stores do
    assert [i.value["content"] for i in view.search(USER, filter={"category": "general"})] == [
        "The user likes green tea"
    ]
    assert view.search(USER, filter={"category": "work"}) == []
    # a value read from the view is a copy: changing it changes nothing
    (item,) = view.search(USER)
    item.value["content"] = "mutated"
    assert view.search(USER)[0].value["content"] == "The user likes green tea"


def test_restore_is_for_a_named_sub_agent_and_takes_a_snapshot() -> None:
    memory = Memory(InMemoryStore(), embeddings=FakeEmbeddings())
    snapshot = memory.snapshot(CONFIG)
    with pytest.raises(ConfigurationError, match=r"memory\.agent\('researcher'\)\.restore"):
        memory.restore(snapshot)
    with pytest.raises(ConfigurationError, match=r"takes what memory\.snapshot"):
        memory.agent("researcher").restore({"items": []})  # type: ignore[arg-type]
    with pytest.raises(CompartmentError):
        memory.snapshot(CONFIG, compartments=["run"])
    with pytest.raises(ConfigurationError, match="at least one compartment"):
        memory.snapshot(CONFIG, compartments=[])
    own = Memory(InMemoryStore(), embeddings=FakeEmbeddings(), agents=AgentRules(user="isolated"))
    private = own.agent("writer").snapshot(CONFIG)
    with pytest.raises(ConfigurationError, match="an agent's own user memory"):
        own.agent("reader").restore(private)
    restored = memory.agent("researcher").restore(snapshot)
    assert restored.restored is snapshot
    assert memory.restored is None
    assert restored.agent_name == "researcher"
    assert restored.agent("other").restored is None  # another agent: the live memory


def test_a_snapshot_without_a_thread_holds_user_memory_only() -> None:
    memory = Memory(InMemoryStore(), embeddings=FakeEmbeddings())
    snapshot = memory.snapshot({"configurable": {"user_id": "u1"}})
    assert isinstance(snapshot, MemorySnapshot)
    assert snapshot.compartments == ("user",)
    assert len(snapshot) == 0


def test_the_async_path_reads_the_same_snapshot() -> None:
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    memory = Memory(store)
    _save(memory, "The user prefers window seats")

    async def run() -> tuple[list[str], Any]:
        snapshot = await memory.asnapshot(CONFIG)
        _save(memory, "The user prefers window seats except at night")
        restored = memory.agent("helper").restore(snapshot)
        recalled = await restored.arecall("window seats", CONFIG)
        save = next(t for t in restored.tools if t.name == "save_memory")
        return [i.content for i in recalled.items], await save.ainvoke({"content": "x"}, CONFIG)

    recalled, refused = asyncio.run(run())
    assert recalled == ["The user prefers window seats"]
    assert str(refused).startswith("Error:")
