"""Memory in the multi-agent shapes LangGraph users build (issue 38 item 2), end to end.

Each shape runs real graphs — LangGraph's own supervisor and swarm packages, ``create_agent``
sub-agents, a compiled ``StateGraph`` as a node — with the memory surfaces on (middleware or
recall/remember nodes, and the memory tools), a real checkpointer and a scripted model that emits
real tool calls and hand-offs. Each test says what every agent saw in its prompt and what it
wrote where, under the rules of ``AgentRules``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import AgentRules, ContextConfig, Memory, MemoryState
from langmem_plugin.services.context.results import ResultsConfig, result_id
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call
from tests.counting_stores import STORE_KINDS, opened_store

CONFIG: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
SHARED_USER = ("memories", "user", "u1")
SESSION = ("memories", "session", "t1")


def private(agent: str, compartment: str = "user", key: str = "u1") -> tuple[str, ...]:
    return ("memories", "agent", agent, compartment, key)


def contents(store: BaseStore, namespace: tuple[str, ...]) -> list[str]:
    return [str(item.value.get("content", "")) for item in store.search(namespace, limit=100)]


def prompt(model: ScriptedChatModel, call: int = 0) -> str:
    """The system prompt of the model's ``call``-th call ('' without one)."""
    first = model.calls[call][0]
    return str(first.content) if isinstance(first, SystemMessage) else ""


def answers(messages: list[BaseMessage], name: str) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage) and m.name == name]


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})


def _memory(store: BaseStore, rules: AgentRules, **kwargs: Any) -> Memory:
    return Memory(store, agents=rules, **kwargs)


# -- 1. a supervisor with two workers (langgraph-supervisor) -------------------------------------


@pytest.mark.filterwarnings(
    "ignore::langgraph.warnings.LangGraphDeprecatedSinceV10"
)  # its create_react_agent
def test_a_supervisor_and_two_workers_each_see_and_write_what_their_rules_say(store: InMemoryStore) -> None:
    from langgraph_supervisor import create_supervisor

    # flights keeps its own user memory; hotels reads the user's and writes nothing there
    rules = AgentRules(agents={"flights": {"user": "isolated"}, "hotels": {"user": "read_only"}})
    memory = _memory(store, rules)
    store.put(SHARED_USER, "seat", {"content": "The user wants an aisle seat on every trip"})

    flights_model = ScriptedChatModel(
        [
            tool_call("save_memory", content="Booked flight AF123 to Paris for the trip"),
            "Flight AF123 booked.",
        ]
    )
    hotels_model = ScriptedChatModel(
        [
            tool_call("save_memory", content="Hotel Lutetia booked for the trip"),
            tool_call("search_memory", query="flight AF123 trip"),
            "Hotel chosen; the user wants an aisle seat.",
        ]
    )
    supervisor_model = ScriptedChatModel(
        [tool_call("transfer_to_flights"), tool_call("transfer_to_hotels"), "Your trip is planned."]
    )
    flights = create_agent(
        flights_model, tools=memory.tools, middleware=[memory.middleware()], name="flights"
    )
    hotels_graph = StateGraph(MemoryState)  # a worker of your own: recall → model → tools → remember
    memory.add_to(hotels_graph, hotels_model)
    hotels = hotels_graph.compile(name="hotels")
    app = create_supervisor([flights, hotels], model=supervisor_model, tools=list[Any](memory.tools)).compile(
        checkpointer=InMemorySaver(), store=store
    )
    out = app.invoke({"messages": [HumanMessage("Plan my trip: which seat for the trip?")]}, CONFIG)

    assert out["messages"][-1].content == "Your trip is planned."
    # what each worker saw: flights its own user memory (nothing of the user's), hotels the user's
    # (read-only to it), each recalled when it was handed the conversation
    assert "aisle seat" not in prompt(flights_model)
    assert "aisle seat" in prompt(hotels_model)
    # hotels wrote nothing: its save was refused with an error it can act on, its search did not
    # reach flights' own memory
    (refused,), (found,) = (
        answers(hotels_model.calls[-1], "save_memory"),
        answers(hotels_model.calls[-1], "search_memory"),
    )
    assert refused.startswith("Error:")
    assert "read-only to the agent 'hotels'" in refused
    assert "aisle seat" in found
    assert "AF123" not in found
    # where things were written
    assert any("AF123" in c for c in contents(store, private("flights")))
    shared = contents(store, SHARED_USER)
    assert not any("AF123" in c or "Lutetia" in c for c in shared)
    assert not any("Hotel chosen" in c for c in shared)  # hotels' exchange: not kept (read-only)
    assert store.search(private("hotels")) == []


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_a_create_agent_worker_handed_the_conversation_recalls(store: InMemoryStore) -> None:
    from langgraph_supervisor import create_supervisor

    memory = _memory(store, AgentRules())
    store.put(SHARED_USER, "seat", {"content": "The user wants an aisle seat on every trip"})
    worker_model = ScriptedChatModel(["Aisle seat noted."])
    worker = create_agent(worker_model, tools=memory.tools, middleware=[memory.middleware()], name="flights")
    supervisor_model = ScriptedChatModel([tool_call("transfer_to_flights"), "Done."])
    app = create_supervisor([worker], model=supervisor_model).compile(
        checkpointer=InMemorySaver(), store=store
    )
    app.invoke({"messages": [HumanMessage("Which seat for my trip?")]}, CONFIG)
    assert "aisle seat" in prompt(worker_model)


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_create_supervisor_runs_the_supervisor_as_the_sub_agent_supervisor(store: InMemoryStore) -> None:
    from langgraph_supervisor import create_supervisor

    memory = _memory(store, AgentRules(agents={"supervisor": {"user": "isolated"}}))
    worker = create_agent(ScriptedChatModel(["Done."]), tools=memory.tools, name="flights")
    supervisor_model = ScriptedChatModel(
        [tool_call("save_memory", content="Routing: flights first"), "Planned."]
    )
    app = create_supervisor([worker], model=supervisor_model, tools=list[Any](memory.tools)).compile(
        checkpointer=InMemorySaver(), store=store
    )
    app.invoke({"messages": [HumanMessage("Plan my trip")]}, CONFIG)
    assert contents(store, private("supervisor")) == ["Routing: flights first"]
    assert contents(store, SHARED_USER) == []


# -- 2. a swarm: agents hand off to each other (langgraph-swarm) ---------------------------------


def test_a_swarm_hands_off_and_each_agent_keeps_its_own_user_memory(store: InMemoryStore) -> None:
    from langgraph_swarm import create_handoff_tool, create_swarm

    memory = _memory(store, AgentRules(user="isolated"))
    alice_model = ScriptedChatModel(
        [
            tool_call("save_memory", content="Alice's private hunch: the duck pond is closed"),
            tool_call("save_memory", content="The team meets at the duck pond", compartment="session"),
            tool_call("transfer_to_bob"),
        ]
    )
    bob_model = ScriptedChatModel(
        [tool_call("search_memory", query="duck pond"), "We meet at the duck pond."]
    )
    alice = create_agent(
        alice_model,
        tools=[*memory.tools, create_handoff_tool(agent_name="bob")],
        middleware=[memory.middleware()],
        name="alice",
    )
    bob = create_agent(
        bob_model,
        tools=[*memory.tools, create_handoff_tool(agent_name="alice")],
        middleware=[memory.middleware()],
        name="bob",
    )
    app = create_swarm([alice, bob], default_active_agent="alice").compile(
        checkpointer=InMemorySaver(), store=store
    )
    out = app.invoke({"messages": [HumanMessage("Where does the team meet, duck pond?")]}, CONFIG)

    assert out["messages"][-1].content == "We meet at the duck pond."
    assert out["active_agent"] == "bob"
    # session memory is shared: bob finds what alice kept there, not her private hunch
    (found,) = answers(out["messages"], "search_memory")
    assert "The team meets at the duck pond" in found
    assert "hunch" not in found
    assert "hunch" not in prompt(bob_model)
    # alice's hunch is in her own user memory; bob's exchange in his; the user's shared one is empty
    assert any("hunch" in c for c in contents(store, private("alice")))
    assert any("We meet at the duck pond." in c for c in contents(store, private("bob")))
    assert not any("hunch" in c for c in contents(store, private("bob")))
    assert contents(store, SHARED_USER) == []
    assert contents(store, SESSION) == ["The team meets at the duck pond"]


# -- 3. a create_agent sub-agent called as a tool (deep-agent style) -----------------------------


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_sub_agent_called_as_a_tool_reads_the_users_memory_and_writes_none_of_it(
    kind: str, tmp_path: Path
) -> None:
    with opened_store(kind, tmp_path, 64) as store:
        _deep_agent(store)


def _deep_agent(store: BaseStore) -> None:
    memory = _memory(store, AgentRules(agents={"researcher": {"user": "read_only"}}))
    researcher_model = ScriptedChatModel(
        [
            tool_call("save_memory", content="The user is allergic to shellfish"),
            "No shellfish: try the vegetable risotto.",
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

    main_model = ScriptedChatModel(
        [
            tool_call("save_memory", content="The user is allergic to peanuts"),
            tool_call("research", question="Which dish suits someone allergic to peanuts?"),
            "Vegetable risotto it is.",
        ]
    )
    main = create_agent(
        main_model,
        tools=[*memory.tools, research],
        middleware=[memory.middleware()],
        checkpointer=InMemorySaver(),
        store=store,
    )
    out = main.invoke({"messages": [HumanMessage("Suggest a dinner, I am allergic")]}, CONFIG)

    assert out["messages"][-1].content == "Vegetable risotto it is."
    # the sub-agent recalled what the main agent saved a moment before (user memory, read-only to it)
    assert "allergic to peanuts" in prompt(researcher_model)
    (research_answer,) = answers(out["messages"], "research")
    assert research_answer == "No shellfish: try the vegetable risotto."
    # its own save was refused inside its run (it saw the error), and its exchange was not kept
    refusal = researcher_model.calls[1][-1]
    assert isinstance(refusal, ToolMessage)
    assert "read-only to the agent 'researcher'" in str(refusal.content)
    shared = contents(store, SHARED_USER)
    assert any("allergic to peanuts" in c for c in shared)
    assert not any("shellfish" in c for c in shared)
    assert any("Vegetable risotto it is." in c for c in shared)  # the main agent's exchange
    assert store.search(private("researcher")) == []


# -- 4. a compiled StateGraph as a node ----------------------------------------------------------

PAGE = "Findings\n\n" + "\n".join(f"Line {i}: the researcher found fact {i}." for i in range(300))


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return PAGE


def _subgraph_app(
    store: BaseStore, rules: AgentRules
) -> tuple[Any, ScriptedChatModel, ScriptedChatModel, str]:
    memory = _memory(store, rules, context=ContextConfig(results=ResultsConfig()))
    fetch = tool_call("fetch_page", url="https://example.org")
    rid = result_id(str(fetch.tool_calls[0]["id"]))
    inner_model = ScriptedChatModel([fetch, "The page lists 300 facts."])
    inner = StateGraph(MemoryState)
    memory.add_to(inner, inner_model, tools=[fetch_page])
    outer_model = ScriptedChatModel([tool_call("retrieve_result", id=rid, transform="first_n", n=3), "Done."])
    outer = StateGraph(MemoryState)
    outer.add_node("researcher", inner.compile())  # the subgraph as a node: the agent "researcher"
    memory.add_to(outer, outer_model, connect=False)
    outer.add_edge(START, "researcher")
    outer.add_edge("researcher", "recall")
    outer.add_edge("remember", END)
    return outer.compile(checkpointer=InMemorySaver(), store=store), inner_model, outer_model, rid


@pytest.mark.parametrize("results", ["shared", "isolated"])
def test_a_compiled_subgraph_as_a_node_is_the_agent_named_by_its_node(
    store: InMemoryStore, results: str
) -> None:
    app, _inner_model, _outer_model, rid = _subgraph_app(store, AgentRules(results=results))
    out = app.invoke({"messages": [HumanMessage("Find facts about example.org")]}, CONFIG)

    (retrieved,) = answers(out["messages"], "retrieve_result")
    own = store.search(private("researcher", "results", "t1"))
    if results == "isolated":
        # the researcher's stored result is its own: the parent cannot retrieve it
        assert retrieved.startswith("Error: no stored result")
        assert [item.key for item in own] == [rid]
        assert store.search(("memories", "results", "t1")) == []
    else:
        assert "Line 0: the researcher found fact 0." in retrieved
        assert own == []
    # user memory is shared by default: both the sub-agent's exchange and the parent's are the user's
    shared = contents(store, SHARED_USER)
    assert any("The page lists 300 facts." in c for c in shared)
    assert any("Done." in c for c in shared)


def test_a_subgraph_recalls_the_parents_memories_and_the_parent_recalls_its(store: InMemoryStore) -> None:
    # the subgraph of shape 4 on default rules, run twice: the second run's prompts hold the first's exchanges
    app, _inner_model, _outer_model, _ = _subgraph_app(store, AgentRules())
    app.invoke({"messages": [HumanMessage("Find facts about example.org")]}, CONFIG)
    app2, inner2, outer2, _ = _subgraph_app(store, AgentRules())
    app2.invoke(
        {"messages": [HumanMessage("What facts about example.org?")]},
        {"configurable": {"user_id": "u1", "thread_id": "t2"}},
    )
    assert "The page lists 300 facts." in prompt(inner2)
    assert "The page lists 300 facts." in prompt(outer2)


# -- who runs: the names a shape gives its agents ------------------------------------------------


def test_a_nested_subgraph_is_named_by_its_node_path(store: InMemoryStore) -> None:
    memory = _memory(store, AgentRules(user="isolated"))
    model = ScriptedChatModel([tool_call("save_memory", content="The writer drafts the report"), "Drafted."])
    writer = StateGraph(MemoryState)
    memory.add_to(writer, model)
    team = StateGraph(MemoryState)
    team.add_node("writer", writer.compile())
    team.add_edge(START, "writer")
    outer = StateGraph(MemoryState)
    outer.add_node("team", team.compile())
    outer.add_edge(START, "team")
    outer.compile(checkpointer=InMemorySaver(), store=store).invoke(
        {"messages": [HumanMessage("Draft the report")]}, CONFIG
    )
    # "team/writer" is one label: percent-encoded, so the namespace stays one level per label
    (namespace,) = [ns for ns in store.list_namespaces(prefix=("memories", "agent"))]
    assert namespace == private("team/writer")
    assert "The writer drafts the report" in contents(store, namespace)


def test_memory_agent_surfaces_in_a_plain_node_run_as_that_agent(store: InMemoryStore) -> None:
    # a worker node that is no subgraph: memory.agent(name) says who runs
    memory = _memory(store, AgentRules(user="isolated"))
    auditor = memory.agent("auditor")
    model = ScriptedChatModel([tool_call("save_memory", content="Audit: expenses look fine"), "Audited."])

    def work(state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        saved = auditor.tools[0].invoke({"content": "Audit log opened"}, config)
        return {"messages": [HumanMessage(f"auditor: {saved}")]}

    builder = StateGraph(MemoryState)
    builder.add_node("work", work)
    memory.add_to(builder, model, connect=False)
    builder.add_edge(START, "work")
    builder.add_edge("work", "recall")
    builder.add_edge("remember", END)
    builder.compile(checkpointer=InMemorySaver(), store=store).invoke(
        {"messages": [HumanMessage("Audit")]}, CONFIG
    )
    assert contents(store, private("auditor")) == ["Audit log opened"]
    assert "Audit: expenses look fine" in contents(store, SHARED_USER)  # the root's own save


# -- the inspector lists a sub-agent's own memories ----------------------------------------------


def test_the_inspector_lists_a_sub_agents_own_memories(store: InMemoryStore) -> None:
    from langmem_plugin.errors import ConfigurationError

    memory = _memory(store, AgentRules(user="isolated"))
    for agent, note in [("alice", "Alice keeps the minutes"), ("bob", "Bob books the room")]:
        memory.agent(agent).tools[0].invoke({"content": note}, CONFIG)
    memory.tools[0].invoke({"content": "The team meets on Mondays"}, CONFIG)
    inspector = memory.inspector()

    def listed(**kwargs: Any) -> list[str]:
        return [str(row.content) for row in inspector.page("user", user_id="u1", **kwargs).rows]

    assert listed(subagent="alice") == ["Alice keeps the minutes"]
    assert listed(subagent="bob") == ["Bob books the room"]
    assert listed() == ["The team meets on Mondays"]  # the shared user memory
    exported = inspector.export("user", user_id="u1", subagent="alice")
    assert [item["namespace"] for item in exported["items"]] == [list(private("alice"))]
    # whatever the rules say now, what is listed is what the agent kept as its own
    shared = _memory(store, AgentRules()).inspector()
    assert shared.page("user", user_id="u1", subagent="alice").rows[0].content == "Alice keeps the minutes"
    with pytest.raises(ConfigurationError, match="thread view"):
        inspector.page("thread", thread_id="t1", subagent="alice")
