"""Isolation that holds under concurrency (issue 38 item 4).

Workers that write at once — subgraphs fanned out with ``Send`` in one superstep, their tool calls
run in parallel by ``ToolNode``, and threads calling the same ``Memory`` as different agents —
never write into another agent's own compartment, never read it, and never lose a write; an
item limit holds per agent (``MemoryLayout`` limits apply per namespace, so per agent's own).
Hypothesis draws the agent ids (valid and not) and the schedules; examples are kept small.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Send

from langmem_plugin import AgentRules, CompartmentLimits, Memory, MemoryLayout, MemoryState
from langmem_plugin.errors import ScopeError
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel
from tests.counting_stores import STORE_KINDS, counting, opened_store

CONFIG: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
SHARED_USER = ("memories", "user", "u1")
ISOLATED = AgentRules(user="isolated", session="isolated")


def own(agent: str) -> tuple[str, ...]:
    return ("memories", "agent", agent, "user", "u1")


def contents(store: BaseStore, namespace: tuple[str, ...]) -> list[str]:
    return [str(item.value["content"]) for item in store.search(namespace, limit=1000)]


def saves(agent: str, n: int) -> AIMessage:
    """One model message with ``n`` save_memory calls: ToolNode runs them in parallel."""
    calls = [
        {
            "name": "save_memory",
            "args": {"content": f"{agent} fact {i}"},
            "id": f"{agent}-{i}",
            "type": "tool_call",
        }
        for i in range(n)
    ]
    return AIMessage("", tool_calls=calls)


def search(agent: str) -> AIMessage:
    call = {
        "name": "search_memory",
        "args": {"query": "fact", "limit": 50},
        "id": f"{agent}-s",
        "type": "tool_call",
    }
    return AIMessage("", tool_calls=[call])


# -- Send fan-out: subgraphs in one superstep, each writing in parallel --------------------------


@pytest.mark.parametrize("parent", [MessagesState, MemoryState], ids=["messages", "memory-state"])
def test_workers_fanned_out_with_send_write_and_read_only_their_own(parent: type[Any]) -> None:
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    memory = Memory(store, agents=ISOLATED)
    names, n = ["alpha", "beta", "gamma"], 6
    models = {name: ScriptedChatModel([saves(name, n), search(name), f"{name} done"]) for name in names}

    # a MemoryState parent takes the memory_prompt / memory_context each worker writes in the
    # same superstep (the last one written), as a MessagesState parent holds none of them
    builder = StateGraph(parent)
    for name in names:  # each worker a compiled subgraph: the agent named by its node
        worker = StateGraph(MemoryState)
        memory.add_to(worker, models[name])
        builder.add_node(name, worker.compile())
        builder.add_edge(name, END)

    def fan_out(state: MessagesState) -> list[Send]:
        return [Send(name, {"messages": [HumanMessage(f"{name}: record your facts")]}) for name in names]

    builder.add_conditional_edges(START, fan_out, names)
    builder.compile(checkpointer=InMemorySaver(), store=store).invoke(
        {"messages": [HumanMessage("go")]}, CONFIG
    )

    for name in names:
        facts = sorted(c for c in contents(store, own(name)) if " fact " in c and "\n" not in c)
        assert facts == sorted(f"{name} fact {i}" for i in range(n))  # every write, in its own place
        everything = " ".join(contents(store, own(name)))
        assert not [other for other in names if other != name and f"{other} fact" in everything]
        # what it read: its search answered its own facts only, while the others were writing
        found = next(
            m for m in models[name].calls[-1] if isinstance(m, ToolMessage) and m.name == "search_memory"
        )
        assert f"{name} fact" in str(found.content)
        assert not [other for other in names if other != name and f"{other} fact" in str(found.content)]
    assert contents(store, SHARED_USER) == []


# -- threads calling one Memory as different agents ----------------------------------------------

AGENT_IDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="."),
    min_size=1,
    max_size=10,
)
SCHEDULES = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 99)), min_size=1, max_size=12)


def _run_schedule(memory: Memory, agents: list[str], schedule: list[tuple[int, int]]) -> list[str]:
    """Each (agent, n) of ``schedule`` saves a note of its own as that agent, all at once; the answers
    (a note saved twice is stored once, by design: each step's note is told apart by its place)."""
    start = threading.Barrier(len(schedule))

    def one(k: int) -> str:
        agent, n = schedule[k]
        tool = next(t for t in memory.agent(agents[agent]).tools if t.name == "save_memory")
        start.wait()
        return str(tool.invoke({"content": f"note {n}/{k} by #{agent}"}, CONFIG))

    with ThreadPoolExecutor(max_workers=len(schedule)) as pool:
        return list(pool.map(one, range(len(schedule))))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agents=st.lists(AGENT_IDS, min_size=3, max_size=3, unique=True), schedule=SCHEDULES)
def test_threads_writing_as_different_agents_never_cross_and_never_lose_a_write(
    agents: list[str], schedule: list[tuple[int, int]]
) -> None:
    store = InMemoryStore()
    memory = Memory(store, embeddings=FakeEmbeddings(), agents=ISOLATED)
    answers = _run_schedule(memory, agents, schedule)
    assert not [a for a in answers if a.startswith("Error")], answers
    for i, agent in enumerate(agents):
        expected = Counter(f"note {n}/{k} by #{i}" for k, (a, n) in enumerate(schedule) if a == i)
        assert Counter(contents(store, own(agent))) == expected
    assert contents(store, SHARED_USER) == []


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_the_limit_holds_per_agent_when_agents_fill_theirs_at_once(kind: str, tmp_path: Path) -> None:
    layout = MemoryLayout(limits={"user": CompartmentLimits(max_items=4)}, agents=ISOLATED)
    with opened_store(kind, tmp_path, 64) as store:
        memory = Memory(store, layout=layout)
        agents = ["north", "south"]
        schedule = [(a, n) for n in range(7) for a in range(2)]  # 7 saves each, 14 threads at once
        answers = _run_schedule(memory, agents, schedule)
        for i, agent in enumerate(agents):
            mine = [answers[k] for k, (a, _) in enumerate(schedule) if a == i]
            assert sum(not a.startswith("Error") for a in mine) == 4  # its own limit, not a shared one
            assert all("full" in a for a in mine if a.startswith("Error"))
            assert len(contents(store, own(agent))) == 4
        assert contents(store, SHARED_USER) == []


@settings(max_examples=10, deadline=None)
@given(
    bad=st.one_of(
        st.just(""),
        st.text(min_size=0, max_size=4).map(lambda s: f"{s}.{s}"),
        st.sampled_from(["a\x00b", "line\nbreak", "\x7f", "tab\t"]),
        st.integers(),
        st.none().map(lambda _: b"bytes"),
    )
)
def test_an_agent_id_that_cannot_be_a_label_is_refused_before_anything_is_read(bad: Any) -> None:
    store: Any = counting(InMemoryStore)()
    memory = Memory(store, embeddings=FakeEmbeddings(), agents=ISOLATED)
    with pytest.raises(ScopeError):
        memory.agent(bad)
    with pytest.raises(ScopeError):
        AgentRules(agents={bad: {"user": "isolated"}})
    assert store.ops_seen == 0


def test_coroutines_writing_as_different_agents_at_once_keep_every_write_in_its_place() -> None:
    store = InMemoryStore()
    memory = Memory(store, embeddings=FakeEmbeddings(), agents=ISOLATED)
    agents = ["ada", "bea", "cy"]

    async def save(agent: str, n: int) -> str:
        tool = next(t for t in memory.agent(agent).tools if t.name == "save_memory")
        return str(await tool.ainvoke({"content": f"{agent} note {n}"}, CONFIG))

    async def run() -> list[str]:
        return await asyncio.gather(*(save(agent, n) for n in range(5) for agent in agents))

    answers = asyncio.run(run())
    assert not [a for a in answers if a.startswith("Error")]
    for agent in agents:
        assert sorted(contents(store, own(agent))) == [f"{agent} note {n}" for n in range(5)]


def test_workers_fanned_out_from_one_snapshot_read_it_while_the_root_writes() -> None:
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    memory = Memory(store, agents=AgentRules(results="isolated"))
    save = next(t for t in memory.tools if t.name == "save_memory")
    save.invoke({"content": "The launch fact is March 3"}, CONFIG)
    snapshot = memory.snapshot(CONFIG)
    names = ["east", "west"]
    models = {name: ScriptedChatModel([search(name), f"{name} done"]) for name in names}

    def root_writes(state: MessagesState) -> dict[str, Any]:
        save.invoke({"content": "The launch fact changed: March 9"}, CONFIG)  # while the workers run
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("root_writes", root_writes)
    for name in names:
        worker = StateGraph(MemoryState)
        memory.agent(name).restore(snapshot).add_to(worker, models[name])
        builder.add_node(name, worker.compile())
        builder.add_edge(name, END)
    builder.add_edge("root_writes", END)

    def fan_out(state: MessagesState) -> list[Send]:
        workers = [Send(name, {"messages": [HumanMessage("What is the launch fact?")]}) for name in names]
        return [*workers, Send("root_writes", {})]

    builder.add_conditional_edges(START, fan_out, [*names, "root_writes"])
    builder.compile(checkpointer=InMemorySaver(), store=store).invoke(
        {"messages": [HumanMessage("go")]}, CONFIG
    )

    for name in names:
        found = next(
            m for m in models[name].calls[-1] if isinstance(m, ToolMessage) and m.name == "search_memory"
        )
        assert "March 3" in str(found.content)
        assert "March 9" not in str(found.content)
    shared = contents(store, SHARED_USER)
    assert "The launch fact changed: March 9" in shared
    assert not [c for c in shared if "done" in c]  # the workers' exchanges: read-only to them, not kept
