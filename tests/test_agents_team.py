"""Team memory (issue 38 item 3): promotion into a compartment a team's agents and users read,
recorded in history, refused for what is not the caller's, and forgotten with its original.

Real ``Memory``, real tools in a ``ToolNode`` called by a scripted model, real stores
(``tests/every_store.py``); the embedder is the fake one, failing on chosen calls for the bad day.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import AgentRules, Memory, MemoryLayout, MemoryState
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import (
    AgentAccessError,
    CompartmentError,
    ConfigurationError,
    EmbeddingsError,
    InvalidRecordError,
    MemoryNotFoundError,
    ScopeError,
)
from langmem_plugin.services import execute, store_steps
from langmem_plugin.services.intents import INTENTS
from langmem_plugin.services.operations import save_steps
from langmem_plugin.services.team import PROVENANCE, team_copy_key
from langmem_plugin.services.upkeep import delete_threads_steps, forgetting
from langmem_plugin.surfaces.memory import ToolsConfig
from langmem_plugin.surfaces.tools import create_memory_tools
from langmem_plugin.testing import FailingEmbeddings, FakeEmbeddings, ScriptedChatModel, tool_call
from tests.counting_stores import RUN_BATCH, FailingWrites
from tests.every_store import open_store
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)

TEAM = MemoryLayout(team=True)
INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
STORES = ["in-memory", "qdrant", "checkpointer-sqlite", "postgres"]


def _config(user: str, team: str | None = "acme", thread: str | None = None) -> RunnableConfig:
    configurable = {"user_id": user, "thread_id": thread or f"{user}-t"}
    if team is not None:
        configurable["team_id"] = team
    return {"configurable": configurable}


ALICE, BOB, CAROL, DAVE = _config("alice"), _config("bob"), _config("carol", "globex"), _config("dave", None)


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    with open_store(request.param, request, tmp_path, INDEX) as opened:
        yield opened


def _memory(store: BaseStore, **kwargs: Any) -> Memory:
    kwargs.setdefault("layout", TEAM)
    return Memory(store, **kwargs)


def _tools(memory: Memory, store: BaseStore) -> Any:
    builder = StateGraph(MemoryState)
    builder.add_node("tools", ToolNode(memory.tools))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(store=store)


def _call(graph: Any, config: RunnableConfig, name: str, **args: Any) -> str:
    out = graph.invoke({"messages": [tool_call(name, **args)]}, config)
    answer = out["messages"][-1]
    assert isinstance(answer, ToolMessage)
    return str(answer.content)


def _save(graph: Any, config: RunnableConfig, content: str) -> str:
    answer = _call(graph, config, "save_memory", content=content)
    assert answer.startswith("Saved memory "), answer
    return answer.split()[2]


def _everything(store: BaseStore) -> dict[tuple[tuple[str, ...], str], Any]:
    out: dict[tuple[tuple[str, ...], str], Any] = {}
    for namespace in store.list_namespaces(limit=10_000):
        for item in store.search(namespace, limit=10_000, refresh_ttl=False):
            if tuple(item.namespace) == namespace:
                out[(namespace, item.key)] = item.value
    return out


def _team(store: BaseStore, team: str = "acme") -> list[Any]:
    return [i for i in store.search(("memories", "team", team), limit=100) if i.namespace[-1] == team]


# -- the compartment --------------------------------------------------------------------------------


def test_the_team_compartment_is_one_namespace_per_team_from_the_run_and_never_written_directly() -> None:
    scope = Scope.from_config(ALICE)
    assert TEAM.namespace("team", scope) == ("memories", "team", "acme")
    with pytest.raises(ScopeError, match="team_id"):
        TEAM.namespace("team", Scope.from_config(DAVE))
    with pytest.raises(AgentAccessError, match="promot") as raised:
        TEAM.namespace("team", scope, write=True)
    assert raised.value.compartment == "team"
    assert not TEAM.writable("team", scope)
    with pytest.raises(CompartmentError, match=r"MemoryLayout\(team=True\)"):
        MemoryLayout().namespace("team", scope)
    with pytest.raises(ConfigurationError, match="'yes'"):
        MemoryLayout(team="yes")  # type: ignore[arg-type]
    # every agent of the run reads the same team memory, whatever its rules
    worker = Scope.from_config(ALICE).as_subagent("worker")
    isolated = MemoryLayout(team=True, agents=AgentRules(user="isolated", session="isolated"))
    assert isolated.namespace("team", worker) == ("memories", "team", "acme")


@pytest.mark.parametrize("team", [7, "", "a.b", "x\ny", b"acme"])
def test_a_team_id_that_cannot_be_a_label_is_a_scope_error_before_anything_is_read(team: Any) -> None:
    store = InMemoryStore()
    memory = _memory(store)
    with pytest.raises(ScopeError, match="team_id"):
        memory.recall("anything", {"configurable": {"user_id": "alice", "team_id": team}})
    with pytest.raises(ScopeError, match="team_id"):
        memory.promote("abc", {"configurable": {"user_id": "alice", "team_id": team}})
    assert _everything(store) == {}


def test_the_lean_default_is_unchanged_without_a_team_and_gains_promote_with_one() -> None:
    lean = ["save_memory", "search_memory", "get_memory", "update_memory", "delete_memory"]
    assert [t.name for t in Memory(InMemoryStore()).tools] == lean
    assert [t.name for t in _memory(InMemoryStore()).tools] == [*lean, "promote_memory"]
    full = [t.name for t in _memory(InMemoryStore(), tools="full").tools]
    assert full.count("promote_memory") == 1
    assert "promote_memory" not in [t.name for t in Memory(InMemoryStore(), tools="full").tools]
    assert [t.name for t in create_memory_tools(layout=TEAM, include="full")][-1] == "promote_memory"
    renamed = _memory(InMemoryStore(), tools=ToolsConfig(names={"promote_memory": "share"}))
    assert "share" in [t.name for t in renamed.tools]
    for bad in (
        lambda: create_memory_tools(include=["promote_memory"]),
        lambda: Memory(tools=["promote_memory"]),
    ):
        with pytest.raises(ConfigurationError, match=r"MemoryLayout\(team=True\)"):
            bad()


def test_the_model_names_only_the_memory_never_the_team_or_the_agent() -> None:
    (promote,) = [t for t in _memory(InMemoryStore()).tools if t.name == "promote_memory"]
    assert set(promote.tool_call_schema.model_json_schema()["properties"]) == {"id"}


# -- promotion, on every store ----------------------------------------------------------------------


def test_a_promoted_memory_is_read_by_the_team_recorded_in_history_and_forgotten_with_its_original(
    store: BaseStore,
) -> None:
    memory = _memory(store)
    graph = _tools(memory, store)
    original = _save(graph, ALICE, "The staging database lives on host kiwi")
    answer = _call(graph, ALICE, "promote_memory", id=original)
    copy = team_copy_key(("memories", "user", "alice"), original)
    assert answer.startswith(f"Promoted memory {original} to team memory as {copy}"), answer
    (item,) = _team(store)
    assert item.key == copy
    metadata = item.value["metadata"]
    assert json.loads(metadata["promoted_from"]) == ["memories", "user", "alice"]
    assert (metadata["promoted_from_key"], metadata["promoted_by_user"]) == (original, "alice")
    assert set(PROVENANCE) <= set(metadata)

    # promoting twice keeps one copy, and writes nothing
    before = _everything(store)
    assert "already" in _call(graph, ALICE, "promote_memory", id=original)
    assert _everything(store) == before

    # the team reads it; another team and a run without a team do not
    question = "Which host runs the staging database?"
    shown = memory.recall(question, BOB).prompt
    assert "host kiwi" in shown
    assert 'shared_by "team"' in shown  # the model is told it is the team's, not about bob
    assert "host kiwi" not in memory.recall(question, CAROL).prompt
    assert "host kiwi" not in memory.recall(question, DAVE).prompt
    assert "host kiwi" not in _call(graph, BOB, "search_memory", query="staging host")  # not bob's own

    # history: who promoted what, from where, to where
    (promoted,) = [e for e in memory.history(original, ALICE) if e.action == "PROMOTE"]
    assert promoted.source == "tool:promote_memory"
    assert promoted.details is not None
    assert promoted.details["from"] == ["memories", "user", "alice"]
    assert promoted.details["to"] == ["memories", "team", "acme"]
    assert (promoted.details["copy"], promoted.details["by_user"]) == (copy, "alice")
    assert [e.action for e in memory.history(copy, ALICE)] == ["ADD"]

    # forgetting the original forgets the copy in the same batch, and says so in history
    assert _call(graph, ALICE, "delete_memory", id=original).startswith("Deleted memory")
    assert _team(store) == []
    assert "host kiwi" not in memory.recall(question, BOB).prompt
    assert [e.action for e in memory.history(copy, ALICE)] == ["ADD", "DELETE"]
    assert "kiwi" not in json.dumps([e.as_dict() for e in memory.history(copy, ALICE)])  # redacted


def test_promoting_a_memory_changed_since_refreshes_its_one_copy(store: BaseStore) -> None:
    memory = _memory(store)
    graph = _tools(memory, store)
    original = _save(graph, ALICE, "Deploys happen on Tuesdays")
    memory.promote(original, ALICE)
    _call(graph, ALICE, "update_memory", id=original, content="Deploys happen on Thursdays")
    assert [i.value["content"] for i in _team(store)] == ["Deploys happen on Tuesdays"]
    refreshed = memory.promote(original, ALICE)
    assert refreshed.outcome == "refreshed"
    assert [i.value["content"] for i in _team(store)] == ["Deploys happen on Thursdays"]


def test_forget_about_and_forget_user_reach_every_copy_and_the_users_memory_in_every_agent(
    store: BaseStore,
) -> None:
    layout = MemoryLayout(
        team=True, agents=AgentRules(agents={"scout": {"user": "isolated", "session": "isolated"}})
    )
    memory = _memory(store, layout=layout)
    graph, scout = _tools(memory, store), _tools(memory.agent("scout"), store)
    alice_fact = _save(graph, ALICE, "The office wifi password is heron")
    scout_fact = _save(scout, ALICE, "The vendor portal login is alice at acme")
    session_note = _call(
        scout, ALICE, "save_memory", content="Scout looked at the portal", compartment="session"
    )
    assert session_note.startswith("Saved memory"), session_note
    bob_fact = _save(graph, BOB, "The office coffee machine is broken")
    for config, graph_, fact in (
        (ALICE, graph, alice_fact),
        (ALICE, scout, scout_fact),
        (BOB, graph, bob_fact),
    ):
        assert _call(graph_, config, "promote_memory", id=fact).startswith("Promoted"), fact
    scout_copy = next(i for i in _team(store) if i.value["metadata"]["promoted_by_agent"] == "scout")
    assert json.loads(scout_copy.value["metadata"]["promoted_from"]) == [
        "memories",
        "agent",
        "scout",
        "user",
        "alice",
    ]
    assert len(_team(store)) == 3

    # forget_about: the matching memory and its copy
    forgotten = memory.forget_about("wifi password", ALICE)
    assert alice_fact in forgotten.ids
    assert sorted(i.value["content"] for i in _team(store)) == [
        "The office coffee machine is broken",
        "The vendor portal login is alice at acme",
    ]

    # forget_user: her copies, and what every agent kept of her; bob's copy stays
    # (her thread is passed: only a turn records it in the thread index, and these were tool calls)
    report = memory.forget_user("alice", threads=["alice-t"])
    assert report.counts.get("team") == 1
    assert [i.value["content"] for i in _team(store)] == ["The office coffee machine is broken"]
    left = _everything(store)
    assert not [k for k in left if "alice" in json.dumps(k) and k[0] != INTENTS]
    assert not [k for k, v in left.items() if "heron" in json.dumps(v) or "portal" in json.dumps(v)]
    assert any(k[0] == ("memories", "user", "bob") for k in left)
    # a memory whose layout has no team compartment now still takes a forgotten user's copies
    Memory(store).forget_user("bob")
    assert _team(store) == []


def test_clear_memory_takes_the_copies_of_what_it_clears_in_its_batch() -> None:
    store = InMemoryStore(index=INDEX)
    memory = _memory(store, tools="full")
    graph = _tools(memory, store)
    copies = []
    for text in ("Flight to Oslo on May 3", "Hotel Bristol in Oslo"):
        saved = _call(graph, ALICE, "save_memory", content=text, category="travel/oslo")
        copies.append(memory.promote(saved.split()[2], ALICE).copy.id)
    kept = _save(graph, ALICE, "Alice's team is platform")
    memory.promote(kept, ALICE)
    assert len(_team(store)) == 3
    answer = _call(graph, ALICE, "clear_memory", compartment="user", category="travel")
    assert answer.startswith("Removed 2 memories"), answer
    assert [i.value["content"] for i in _team(store)] == ["Alice's team is platform"]
    for copy in copies:  # the clear says so in history, without the text
        assert [e.action for e in memory.history(copy, ALICE)] == ["ADD", "DELETE"]
        assert "Oslo" not in json.dumps([e.as_dict() for e in memory.history(copy, ALICE)])


def test_deleting_a_thread_takes_what_sub_agents_kept_of_it() -> None:
    store = InMemoryStore(index=INDEX)
    layout = MemoryLayout(agents=AgentRules(session="isolated"))
    memory = Memory(store, layout=layout)
    scout = _tools(memory.agent("scout"), store)
    note = _call(scout, ALICE, "save_memory", content="Scout's note on this thread", compartment="session")
    assert note.startswith("Saved memory"), note
    other = _call(scout, BOB, "save_memory", content="Scout's note on bob's thread", compartment="session")
    assert other.startswith("Saved memory"), other
    counts = execute(store, delete_threads_steps(layout, ["alice-t"]))
    assert counts["session"] == 1
    assert [i.namespace for i in store.search(("memories", "agent"))] == [
        ("memories", "agent", "scout", "session", "bob-t")
    ]


def _saved_id(messages: list[Any]) -> AIMessage:
    """The scripted model's next step: promote the memory the last tool answer saved."""
    saved = next(str(m.content) for m in reversed(messages) if isinstance(m, ToolMessage))
    return tool_call("promote_memory", id=saved.split()[2])


def test_a_sub_agent_called_as_a_tool_promotes_what_it_learned_and_a_teammates_agent_reads_it() -> None:
    store = InMemoryStore(index=INDEX)
    memory = _memory(store, layout=MemoryLayout(team=True, agents=AgentRules(user="isolated")))
    researcher_model = ScriptedChatModel(
        [
            tool_call("save_memory", content="The vendor's SLA is 99.9 percent uptime"),
            _saved_id,
            "Saved and shared with the team.",
        ]
    )
    researcher = create_agent(
        researcher_model, tools=memory.tools, middleware=[memory.middleware()], name="researcher"
    )

    @tool
    def research(question: str, config: RunnableConfig) -> str:
        """Ask the researcher sub-agent."""
        out = researcher.invoke({"messages": [HumanMessage(question)]}, config)
        return str(out["messages"][-1].content)

    main = create_agent(
        ScriptedChatModel([tool_call("research", question="What is the vendor's SLA?"), "Done."]),
        tools=[*memory.tools, research],
        middleware=[memory.middleware()],
        checkpointer=InMemorySaver(),
        store=store,
    )
    main.invoke({"messages": [HumanMessage("Find the vendor's SLA")]}, ALICE)

    promoted = researcher_model.calls[2][-1]
    assert isinstance(promoted, ToolMessage)
    assert str(promoted.content).startswith("Promoted memory"), promoted.content
    (copy,) = _team(store)
    metadata = copy.value["metadata"]
    assert (metadata["promoted_by_user"], metadata["promoted_by_agent"]) == ("alice", "researcher")
    assert json.loads(metadata["promoted_from"]) == ["memories", "agent", "researcher", "user", "alice"]

    # bob's agent, in the same team, is shown it; carol's, in another team, is not
    for config, shown in ((BOB, True), (CAROL, False)):
        model = ScriptedChatModel(["Noted."])
        teammate = create_agent(model, tools=memory.tools, middleware=[memory.middleware()], store=store)
        teammate.invoke({"messages": [HumanMessage("What uptime does the vendor promise?")]}, config)
        system = str(model.calls[0][0].content)
        assert ("99.9 percent" in system) is shown, config


# -- refused, with nothing written ------------------------------------------------------------------


def test_what_is_not_the_callers_is_refused_with_an_error_the_model_can_act_on_and_nothing_written() -> None:
    store = InMemoryStore(index=INDEX)
    layout = MemoryLayout(team=True, agents=AgentRules(agents={"scout": {"user": "isolated"}}))
    memory = _memory(store, layout=layout)
    graph = _tools(memory, store)
    bobs = _save(graph, BOB, "Bob's locker code is 4411")
    alices = _save(graph, ALICE, "Alice sits by the window")
    copy = memory.promote(alices, ALICE).copy.id
    scouts = _save(_tools(memory.agent("scout"), store), ALICE, "Scout's private lead: the vendor is late")
    auditor = _tools(memory.agent("auditor", user="read_only"), store)
    before = _everything(store)
    cases = [
        (graph, ALICE, bobs, "no memory of yours"),  # another user's
        (graph, ALICE, scouts, "no memory of yours"),  # another agent's private one
        (graph, ALICE, copy, "team memory already"),  # the team's own
        (graph, ALICE, "no-such-id", "no memory of yours"),
        (auditor, ALICE, alices, "may only read"),  # read-only to the agent
        (graph, DAVE, alices, "belongs to no team"),  # the run names no team
    ]
    for smuggled in ({"team_id": "globex"}, {"agent": "scout"}, {"user_id": "bob"}):  # never the model's
        answer = _call(graph, ALICE, "promote_memory", id=alices, **smuggled)
        assert answer.startswith("Error:"), answer
        assert "unknown argument" in answer, answer
    for graph_, config, memory_id, said in cases:
        answer = _call(graph_, config, "promote_memory", id=memory_id)
        assert answer.startswith("Error:"), (memory_id, answer)
        assert said in answer, (memory_id, answer)
        assert "Nothing was written" in answer
    with pytest.raises(MemoryNotFoundError):
        memory.promote(bobs, ALICE)
    with pytest.raises(AgentAccessError):
        memory.promote(copy, BOB)
    with pytest.raises(ScopeError, match="team_id"):
        memory.promote(alices, DAVE)
    for direct in ({"content": "x", "compartment": "team"},):
        answer = _call(graph, ALICE, "save_memory", **direct)
        assert answer.startswith("Error:"), answer
    assert _everything(store) == before


def test_no_exchange_summary_or_superseded_memory_is_promoted_and_a_sub_agents_promotion_names_it() -> None:
    store = InMemoryStore(index=INDEX)
    memory = _memory(store)
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Noted."]))
    builder.compile(checkpointer=InMemorySaver(), store=store).invoke(
        {"messages": [HumanMessage("We ship the beta on Friday.")]}, ALICE
    )
    memory.flush(timeout=20)
    (episode,) = [i for i in store.search(("memories", "user", "alice")) if i.value["kind"] == "episode"]
    answer = _call(_tools(memory, store), ALICE, "promote_memory", id=episode.key)
    assert answer.startswith("Error:"), answer
    assert "past exchange" in answer
    assert _team(store) == []

    scope = Scope.from_config(ALICE)
    summary = execute(
        store, save_steps(scope, TEAM, "Alice and Bob agreed", kind="summary", compartment="session")
    )
    stale = execute(
        store,
        save_steps(
            scope, TEAM, "Beta ships Monday", metadata={"invalid_at": "2026-01-01", "superseded_by": "m2"}
        ),
    )
    for refused, said in ((summary.id, "a summary"), (stale.id, "superseded by memory 'm2'")):
        with pytest.raises(InvalidRecordError, match=said):
            memory.promote(refused, ALICE)
    assert _team(store) == []

    writer = memory.agent("writer")
    fact = _save(_tools(writer, store), ALICE, "The beta ships on Friday")
    promoted = writer.promote(fact, ALICE)
    assert promoted.copy.record.metadata["promoted_by_agent"] == "writer"
    (entry,) = [e for e in writer.history(fact, ALICE) if e.action == "PROMOTE"]
    assert (entry.agent, entry.details and entry.details["by_agent"]) == ("writer", "writer")


def test_apromote_and_the_tools_coroutine_are_promote() -> None:
    store = InMemoryStore(index=INDEX)
    memory = _memory(store)
    graph = _tools(memory, store)
    fact = _save(graph, ALICE, "Standup is at nine")
    promoted = asyncio.run(memory.apromote(fact, ALICE))
    assert promoted.outcome == "promoted"
    assert asyncio.run(memory.apromote(fact, ALICE)).outcome == "already"
    other = _save(graph, ALICE, "Retro is on Fridays")
    out = asyncio.run(graph.ainvoke({"messages": [tool_call("promote_memory", id=other)]}, ALICE))
    assert str(out["messages"][-1].content).startswith(f"Promoted memory {other}")
    refused = asyncio.run(graph.ainvoke({"messages": [tool_call("promote_memory", id=other)]}, BOB))
    assert str(refused["messages"][-1].content).startswith("Error: no memory of yours")
    assert len(_team(store)) == 2


def test_eight_promotions_of_one_memory_at_once_make_one_copy_and_one_promote_entry() -> None:
    store = InMemoryStore(index=INDEX)
    memory = _memory(store)
    fact = _save(_tools(memory, store), ALICE, "The release train leaves at noon")
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: memory.promote(fact, ALICE).outcome, range(8)))
    assert sorted(outcomes) == ["already"] * 7 + ["promoted"]
    assert len(_team(store)) == 1
    assert [e.action for e in memory.history(fact, ALICE)].count("PROMOTE") == 1


# -- a bad day --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["in-memory", "qdrant", "checkpointer-sqlite"])
def test_a_promotion_whose_embedding_fails_leaves_nothing_and_a_retry_makes_the_one_copy(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    embedder = FailingEmbeddings(FakeEmbeddings())
    index = {**INDEX, "embed": embedder}
    with open_store(kind, request, tmp_path, index) as store:
        memory = _memory(store)
        fact = _save(_tools(memory, store), ALICE, "The on-call phone is in the blue drawer")
        before = _everything(store)
        embedder.fail_from = embedder.calls + 1  # every embedding from now on fails
        with pytest.raises((TimeoutError, EmbeddingsError), match="injected"):  # as the store says it
            memory.promote(fact, ALICE)
        assert _everything(store) == before  # no copy, no history entry
        embedder.fail_from = None
        assert memory.promote(fact, ALICE).outcome == "promoted"
        assert len(_team(store)) == 1
        assert [e.action for e in memory.history(fact, ALICE)].count("PROMOTE") == 1


@pytest.mark.parametrize("kind", ["in-memory", "qdrant", "checkpointer-sqlite"])
def test_a_forget_whose_write_fails_keeps_the_original_and_its_copies_and_a_retry_takes_them(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(kind, request, tmp_path, INDEX) as store:
        memory = _memory(store)
        fact = _save(_tools(memory, store), ALICE, "The printer on floor 2 jams on A3")
        memory.promote(fact, ALICE)
        memory.promote(fact, _config("alice", "globex", "alice-t"))  # in both of alice's teams
        assert len(_team(store)) == len(_team(store, "globex")) == 1
        before = _everything(store)
        monkeypatch.setattr(store_steps, "run_batch", FailingWrites(1))
        with pytest.raises(OSError, match="injected"):
            memory.forget(fact, ALICE)
        monkeypatch.setattr(store_steps, "run_batch", RUN_BATCH)
        assert _everything(store) == before  # one batch: all of it, or none
        memory.forget(fact, ALICE)
        assert _team(store) == []
        assert _team(store, "globex") == []


@pytest.mark.parametrize("kind", ["in-memory", "checkpointer-sqlite"])
def test_forget_user_failing_at_any_batch_is_finished_by_a_retry_copies_and_agents_memory_included(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forgetting, "_PAGE", 2)  # several batches for a handful of items
    layout = MemoryLayout(team=True, agents=AgentRules(user="isolated"))
    n = 1
    while True:
        with open_store(kind, request, tmp_path, INDEX, name=f"s{n}") as store:
            memory = _memory(store, layout=layout)
            graph, scout = _tools(memory, store), _tools(memory.agent("scout"), store)
            for text in ("Alice's badge is 17", "Alice parks in row C", "Alice likes oolong"):
                memory.promote(_save(graph, ALICE, text), ALICE)
            memory.agent("scout").promote(_save(scout, ALICE, "Alice's desk is 3F"), ALICE)
            memory.promote(_save(graph, BOB, "Bob parks in row D"), BOB)
            failing = FailingWrites(n)
            monkeypatch.setattr(store_steps, "run_batch", failing)
            try:
                memory.forget_user("alice")
            except OSError:
                monkeypatch.setattr(store_steps, "run_batch", RUN_BATCH)
                memory.forget_user("alice")  # the retry finishes it
            else:
                monkeypatch.setattr(store_steps, "run_batch", RUN_BATCH)
                assert failing.writes >= 3
                return
            left = _everything(store)
            assert not [k for k, v in left.items() if "alice" in json.dumps([k, v]).lower()], n
            assert [i.value["content"] for i in _team(store)] == ["Bob parks in row D"]
        n += 1


# -- any schedule -----------------------------------------------------------------------------------

RUNS = {  # (user, team): who runs, in which team; scout is a sub-agent with its own user memory
    ("alice", "acme"): _config("alice", "acme", "a1"),
    ("alice", "globex"): _config("alice", "globex", "a2"),
    ("bob", "acme"): _config("bob", "acme", "b1"),
}
OPS = st.tuples(
    st.sampled_from(["save", "promote", "forget", "forget_user"]),
    st.sampled_from(sorted(RUNS)),
    st.sampled_from([None, "scout"]),
    st.integers(0, 3),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(OPS, max_size=14))
@example(
    [
        ("save", ("alice", "acme"), "scout", 0),
        ("promote", ("alice", "globex"), None, 0),
        ("forget", ("alice", "acme"), None, 0),
    ]
)
def test_any_schedule_of_saves_promotions_and_forgets_leaves_exactly_the_live_originals_copies(
    ops: list[tuple[str, tuple[str, str], str | None, int]],
) -> None:
    """A save is made by the agent drawn; a promotion or a forget picks one of the user's
    memories and runs as the agent that owns it, in the team of the run drawn."""
    store = InMemoryStore()
    layout = MemoryLayout(team=True, agents=AgentRules(agents={"scout": {"user": "isolated"}}))
    memory = Memory(store, layout=layout)
    saved: dict[str, list[tuple[str | None, tuple[str, ...], str]]] = {}  # a user's: (agent, ns, id)
    promoted: dict[tuple[tuple[str, ...], str], set[str]] = {}  # an original: the teams it is in
    for n, (op, run, agent, pick) in enumerate(ops):
        user, team = run
        config = RUNS[run]
        mine = saved.setdefault(user, [])
        if op == "save":
            scope = Scope.from_config(config)
            scope = scope.as_subagent(agent) if agent else scope
            stored = execute(store, save_steps(scope, layout, f"fact {n} of {user}"))
            mine.append((agent, stored.namespace, stored.id))
        elif op in ("promote", "forget") and mine:
            owner, namespace, key = mine[pick % len(mine)]
            acting = memory.agent(owner) if owner else memory
            if op == "promote":
                acting.promote(key, config)
                promoted.setdefault((namespace, key), set()).add(team)
            else:
                acting.forget(key, config)
                mine.remove((owner, namespace, key))
                promoted.pop((namespace, key), None)
        elif op == "forget_user":
            memory.forget_user(user)
            for _, namespace, key in saved.pop(user, []):
                promoted.pop((namespace, key), None)
        expected = {
            (team, team_copy_key(namespace, key))
            for (namespace, key), teams in promoted.items()
            for team in teams
        }
        found = {(i.namespace[2], i.key) for i in store.search(("memories", "team"), limit=1000)}
        assert found == expected, (n, op, run, agent)
