"""Agents (issue 38): run notes and the plan — the compartments that live in graph state.

A compiled subgraph that is a node of its parent shares the parent's ``run_memory`` and ``plan``
keys, so each agent's notes and plan must stay its own inside one state channel. Real graphs: a
compiled subgraph as a node, ``create_agent`` as a node, ``memory.agent(name)``'s nodes and
middleware at the top; a real checkpointer; scripted models that emit real tool calls.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.memory import InMemoryStore

from langmem_plugin import AgentRules, Memory, MemoryState
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import AgentAccessError
from langmem_plugin.services.context import RunNoteEntry, run_notes_reducer, visible_notes
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.plan import PlanConfig, check_plan_access, new_plan, visible_plan
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

CONFIG: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
SUB_DONE = "researcher: done"


def _memory(store: InMemoryStore, **kwargs: Any) -> Memory:
    return Memory(store, embeddings=FakeEmbeddings(), tools=["lean", "add_run_note"], **kwargs)


def _calls(*calls: tuple[str, dict[str, Any]], tag: str) -> AIMessage:
    """One model message with several tool calls (ids ``{tag}0``, ``{tag}1``, ...)."""
    return AIMessage(
        "",
        id=f"m-{tag}",
        tool_calls=[
            {"name": name, "args": args, "id": f"{tag}{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ],
    )


def _system(call: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in call if m.type == "system")


def _answers(messages: list[BaseMessage], name: str) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == name]


def _team(memory: Memory, lead: ScriptedChatModel, researcher: ScriptedChatModel) -> Any:
    """The lead (the root: recall, model, tools, remember) hands over to ``researcher``, a compiled
    subgraph with its own recall, model, tools and remember, as a node that shares the parent's
    state keys; then the lead goes on until it answers."""
    inner = StateGraph(MemoryState)
    memory.add_to(inner, researcher)
    builder = StateGraph(MemoryState)
    builder.add_node("recall", memory.recall_node)
    builder.add_node("lead", memory.model_node(lead))
    builder.add_node("lead_tools", ToolNode(memory.tools))
    builder.add_node("researcher", inner.compile())
    builder.add_node("remember", memory.remember_node)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "lead")
    builder.add_conditional_edges("lead", tools_condition, {"tools": "lead_tools", END: "remember"})

    def after_tools(state: dict[str, Any]) -> str:
        handed = any(isinstance(m, AIMessage) and m.content == SUB_DONE for m in state["messages"])
        return "lead" if handed else "researcher"

    builder.add_conditional_edges("lead_tools", after_tools, ["lead", "researcher"])
    builder.add_edge("researcher", "lead")
    builder.add_edge("remember", END)
    return builder.compile(checkpointer=InMemorySaver(), store=memory.store)


def _run(graph: Any, mode: str = "sync") -> tuple[dict[str, Any], dict[str, Any]]:
    """The final state, and what the researcher node handed back to the parent."""
    handed: dict[str, Any] = {}
    inputs = {"messages": [HumanMessage("write the report")]}
    if mode == "sync":
        for chunk in graph.stream(inputs, CONFIG, stream_mode="updates"):
            handed.update(chunk.get("researcher") or {})
        return graph.get_state(CONFIG).values, handed

    async def run() -> dict[str, Any]:
        async for chunk in graph.astream(inputs, CONFIG, stream_mode="updates"):
            handed.update(chunk.get("researcher") or {})
        values: dict[str, Any] = (await graph.aget_state(CONFIG)).values
        return values

    return asyncio.run(run()), handed


def _invoke(graph: Any, inputs: dict[str, Any], mode: str) -> dict[str, Any]:
    if mode == "sync":
        out: dict[str, Any] = graph.invoke(inputs, CONFIG)
        return out
    return asyncio.run(graph.ainvoke(inputs, CONFIG))


# -- run notes ------------------------------------------------------------------------------------


def test_the_reducer_clears_one_agents_notes_and_keeps_the_old_updates() -> None:
    mine = {"content": "b", "agent": "researcher"}
    other = {"content": "c", "agent": "writer"}
    assert run_notes_reducer(["a", mine, other], {"clear": "researcher"}) == ["a", other]
    assert run_notes_reducer(["a"], {"add": ["b", mine]}) == ["a", "b", mine]
    assert run_notes_reducer(["a", mine], ["x", other]) == ["x", other]  # a list replaces, entries kept
    assert run_notes_reducer(["a", mine], []) == []
    assert run_notes_reducer(["a"], None) == ["a"]


def test_each_agent_sees_its_own_notes_by_its_rule() -> None:
    notes = ["root", {"content": "own", "agent": "researcher"}, {"content": "w", "agent": "writer"}]
    rules = AgentRules(agents={"auditor": {"run": "read_only"}, "helper": {"run": "shared"}})
    layout = MemoryLayout(agents=rules)

    def seen(scope: Scope) -> list[Any]:
        return visible_notes(notes, scope, layout)

    assert seen(Scope()) == ["root"]
    assert seen(Scope(agent="support")) == ["root"]  # the root, named
    assert seen(Scope(agent="researcher", subagent=True)) == [notes[1]]
    assert seen(Scope(agent="auditor", subagent=True)) == ["root"]
    assert seen(Scope(agent="helper", subagent=True)) == ["root"]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("rule", ["isolated", "read_only", "shared"])
def test_a_subgraph_sub_agents_run_notes_follow_its_rule_and_its_end_keeps_the_roots(
    rule: str, mode: str
) -> None:
    store = InMemoryStore()
    memory = _memory(store, agents=AgentRules(run=rule))
    lead = ScriptedChatModel([tool_call("add_run_note", note="budget is 500 EUR"), "report written"])
    researcher = ScriptedChatModel([tool_call("add_run_note", note="source B is paywalled"), SUB_DONE])
    try:
        out, handed = _run(_team(memory, lead, researcher), mode)
    finally:
        memory.close()

    first, second = (_system(c) for c in researcher.calls)
    answer = _answers(out["messages"], "add_run_note")[-1]
    if rule == "isolated":
        assert "budget is 500 EUR" not in first + second  # the root's notes are not its
        assert "source B is paywalled" in second
        assert answer.status == "success"
        assert "(1 run note)" in str(answer.content)
        assert handed["run_memory"] == ["budget is 500 EUR"]  # its end cleared its own only
    elif rule == "read_only":
        assert "budget is 500 EUR" in first
        assert answer.status == "error"
        assert "read-only to the agent 'researcher'" in str(answer.content)
        assert "Nothing was added to run memory" in str(answer.content)
        assert handed["run_memory"] == ["budget is 500 EUR"]
    else:
        assert "budget is 500 EUR" in first
        assert "source B is paywalled" in second
        assert "(2 run notes)" in str(answer.content)
        assert handed["run_memory"] == ["budget is 500 EUR", "source B is paywalled"]
    lead_after = _system(lead.calls[1])
    assert "budget is 500 EUR" in lead_after  # a sub-agent's end never wipes the root's notes
    assert ("source B is paywalled" in lead_after) is (rule == "shared")
    assert out["run_memory"] == []  # the root's end clears them all


def test_a_create_agent_sub_agent_as_a_node_keeps_its_notes_and_the_roots_apart() -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=True)
    root_plan = new_plan("Ship the release", ["Tag the build"], plan_id="root1")
    model = ScriptedChatModel([tool_call("add_run_note", note="mirror 2 is down"), SUB_DONE])
    agent = create_agent(model, tools=memory.tools, middleware=[memory.middleware()], name="researcher")

    def seed(state: MemoryState) -> dict[str, Any]:
        return {"run_memory": ["deadline is Friday"], "plan": root_plan}

    builder = StateGraph(MemoryState)
    builder.add_node("seed", seed)
    builder.add_node("researcher", agent)
    builder.add_edge(START, "seed")
    builder.add_edge("seed", "researcher")
    graph = builder.compile(checkpointer=InMemorySaver(), store=store)
    try:
        out = graph.invoke({"messages": [HumanMessage("check the mirrors")]}, CONFIG)
    finally:
        memory.close()

    first, second = (_system(c) for c in model.calls)
    assert "deadline is Friday" not in first + second
    assert "Ship the release" not in first + second
    assert "mirror 2 is down" in second
    assert out["run_memory"] == ["deadline is Friday"]
    assert out["plan"]["id"] == "root1"
    assert "agent" not in out["plan"]


class _Parent(MessagesState):
    run_memory: Annotated[list[RunNoteEntry], run_notes_reducer]


def test_parallel_sub_agents_keep_their_notes_apart_and_leave_the_roots() -> None:
    store = InMemoryStore()
    memory = _memory(store)
    models = {
        name: ScriptedChatModel([tool_call("add_run_note", note=f"{name} found {name[0]}"), f"{name}: done"])
        for name in ("researcher", "writer")
    }
    builder = StateGraph(_Parent)  # MemoryState's memory_prompt takes one write per step
    builder.add_node("seed", lambda state: {"run_memory": ["deadline is Friday"]})
    for name, model in models.items():
        inner = StateGraph(MemoryState)
        memory.add_to(inner, model)
        builder.add_node(name, inner.compile())
        builder.add_edge("seed", name)
    builder.add_edge(START, "seed")
    graph: Any = builder.compile(checkpointer=InMemorySaver(), store=store)
    try:
        out = graph.invoke({"messages": [HumanMessage("go")]}, CONFIG)
    finally:
        memory.close()

    for name, model in models.items():
        other = "writer" if name == "researcher" else "researcher"
        seen = "\n".join(_system(c) for c in model.calls)
        assert f"{name} found" in _system(model.calls[1])
        assert f"{other} found" not in seen
        assert "deadline is Friday" not in seen
    assert out["run_memory"] == ["deadline is Friday"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "clear"]), st.sampled_from([None, "a", "b"]), st.integers(0, 9)),
        max_size=12,
    )
)
def test_clearing_one_agent_removes_its_notes_only_in_any_order(updates: list[tuple[str, Any, int]]) -> None:
    notes: list[Any] = []
    expected: list[tuple[str | None, str]] = []
    for kind, agent, n in updates:
        if kind == "add":
            entry = f"note {n}" if agent is None else {"content": f"note {n}", "agent": agent}
            notes = run_notes_reducer(notes, {"add": [entry]})
            expected.append((agent, f"note {n}"))
        elif agent is not None:
            notes = run_notes_reducer(notes, {"clear": agent})
            expected = [e for e in expected if e[0] != agent]
    assert [
        (n.get("agent") if isinstance(n, dict) else None, n["content"] if isinstance(n, dict) else n)
        for n in notes
    ] == expected


# -- the plan -------------------------------------------------------------------------------------


def test_an_isolated_sub_agent_neither_sees_nor_changes_the_roots_plan() -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=True)
    lead = ScriptedChatModel(
        [tool_call("create_plan", goal="Write the market report", steps=["Collect data"]), "report written"]
    )
    researcher = ScriptedChatModel(
        [
            _calls(
                ("create_plan", {"goal": "Scan sources", "steps": ["Scan"]}),
                ("update_plan_step", {"step_id": "s1", "status": "in_progress"}),
                ("get_plan", {}),
                tag="r",
            ),
            SUB_DONE,
        ]
    )
    try:
        out, handed = _run(_team(memory, lead, researcher))
    finally:
        memory.close()

    assert all("Write the market report" not in _system(c) for c in researcher.calls)
    answers = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id.startswith("r")]
    assert [a.status for a in answers] == ["error", "error", "error"]
    for answer in answers:
        text = str(answer.content)
        assert "the plan in this graph state is the root agent's" in text
        assert "Write the market report" not in text  # the error does not show it either
        assert "state of its own" in text
        assert "The plan did not change." in text
    assert handed["plan"]["goal"] == "Write the market report"
    assert handed["plan"]["steps"][0]["status"] == "pending"
    assert "agent" not in handed["plan"]
    assert "Write the market report" in _system(lead.calls[1])


def test_an_isolated_sub_agent_creates_its_own_plan_which_the_root_neither_sees_nor_changes() -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=True)
    lead = ScriptedChatModel(
        [
            tool_call("add_run_note", note="go"),
            tool_call("create_plan", goal="Root work", steps=["a"]),
            "report written",
        ]
    )
    researcher = ScriptedChatModel(
        [tool_call("create_plan", goal="Scan the sources", steps=["Scan A", "Scan B"]), SUB_DONE]
    )
    try:
        out, handed = _run(_team(memory, lead, researcher))
    finally:
        memory.close()

    created = _answers(out["messages"], "create_plan")
    assert created[0].status == "success"
    assert "Scan the sources" in _system(researcher.calls[1])  # its own plan, in its prompt
    assert handed["plan"]["agent"] == "researcher"
    assert all("Scan the sources" not in _system(c) for c in lead.calls)
    assert created[1].status == "error"
    assert "the agent 'researcher''s and kept apart from the root agent" in str(created[1].content)
    assert "Scan the sources" not in str(created[1].content)
    # the root's run ended: the researcher's plan (session lifetime, not complete) is left as it was
    assert out["plan"]["agent"] == "researcher"
    assert out["plan"]["goal"] == "Scan the sources"


def test_a_sub_agents_end_neither_archives_nor_clears_the_roots_completed_plan() -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=PlanConfig(lifetime="run"))
    lead = ScriptedChatModel(
        [
            _calls(
                ("create_plan", {"goal": "Book the venue", "steps": ["Call venues"]}),
                ("complete_plan", {"summary": "Venue booked"}),
                tag="l",
            ),
            "all booked",
        ]
    )
    researcher = ScriptedChatModel([SUB_DONE])
    try:
        out, handed = _run(_team(memory, lead, researcher))
        memory.writer.flush()
    finally:
        memory.close()

    assert handed["plan"]["goal"] == "Book the venue"
    assert handed["plan"]["is_complete"]
    assert out["plan"] is None  # the root's end archived and cleared it
    archived = [i for i in store.search(("memories",), limit=50) if i.value.get("kind") == "plan"]
    assert len(archived) == 1
    assert "Book the venue" in archived[0].value["content"]
    assert "agent" not in archived[0].value.get("metadata", {})


def test_an_isolated_sub_agents_own_completed_plan_is_archived_and_cleared_at_its_end() -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=True)
    lead = ScriptedChatModel([tool_call("add_run_note", note="go"), "done"])
    researcher = ScriptedChatModel(
        [
            _calls(
                ("create_plan", {"goal": "Scan the sources", "steps": ["Scan A"]}),
                ("complete_plan", {"summary": "Scanned"}),
                tag="r",
            ),
            SUB_DONE,
        ]
    )
    try:
        _, handed = _run(_team(memory, lead, researcher))
        memory.writer.flush()
    finally:
        memory.close()

    assert handed["plan"] is None
    (archived,) = [i for i in store.search(("memories",), limit=50) if i.value.get("kind") == "plan"]
    assert archived.value["metadata"]["agent"] == "researcher"


@pytest.mark.parametrize("rule", ["read_only", "shared"])
def test_a_sub_agent_that_reads_or_shares_the_roots_plan(rule: str) -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=PlanConfig(lifetime="run"), agents=AgentRules(plan=rule))
    lead = ScriptedChatModel(
        [tool_call("create_plan", goal="Write the market report", steps=["Collect data"]), "report written"]
    )
    researcher = ScriptedChatModel(
        [tool_call("update_plan_step", step_id="s1", status="in_progress"), SUB_DONE]
    )
    try:
        out, handed = _run(_team(memory, lead, researcher))
    finally:
        memory.close()

    assert "Write the market report" in _system(researcher.calls[0])
    answer = _answers(out["messages"], "update_plan_step")[0]
    status = handed["plan"]["steps"][0]["status"]  # its end does not clear the root's plan
    if rule == "read_only":
        assert answer.status == "error"
        assert "the plan is read-only to the agent 'researcher'" in str(answer.content)
        assert status == "pending"
    else:
        assert answer.status == "success"
        assert status == "in_progress"
    assert out["plan"] is None  # lifetime "run": the root's end clears it


# -- memory.agent(name) at the top of the graph -----------------------------------------------------


def _agent_graph(surface: str, memory: Memory, model: ScriptedChatModel, store: InMemoryStore) -> Any:
    if surface == "nodes":
        builder = StateGraph(MemoryState)
        memory.add_to(builder, model)
        return builder.compile(checkpointer=InMemorySaver(), store=store)
    return create_agent(
        model, tools=memory.tools, middleware=[memory.middleware()], checkpointer=InMemorySaver(), store=store
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("surface", ["nodes", "middleware"])
def test_memory_agent_surfaces_keep_to_the_agents_own_notes_and_plan(surface: str, mode: str) -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=True)
    researcher = memory.agent("researcher")
    root_plan = new_plan("Root goal", ["Root step"], plan_id="root1")
    others = ["root note", {"content": "writer note", "agent": "writer"}]
    model = ScriptedChatModel(
        [
            _calls(
                ("add_run_note", {"note": "my note"}),
                ("add_run_note", {"note": "my other note"}),
                ("update_plan_step", {"step_id": "s1", "status": "completed"}),
                ("add_run_note", {"note": "as the root", "agent": "root"}),  # names another agent
                tag="c",
            ),
            "done",
        ]
    )
    graph = _agent_graph(surface, researcher, model, store)
    try:
        out = _invoke(
            graph, {"messages": [HumanMessage("dig")], "run_memory": others, "plan": root_plan}, mode
        )
    finally:
        memory.close()

    first, second = (_system(c) for c in model.calls)
    for text in ("root note", "writer note", "Root goal"):
        assert text not in first + second
    assert "my note" in second
    assert "my other note" in second
    notes = _answers(out["messages"], "add_run_note")
    assert [n.status for n in notes] == ["success", "success", "error"]
    assert "(2 run notes)" in str(notes[1].content)  # counts its own notes only
    assert "agent" in str(notes[2].content)  # the argument it does not take is named
    (update,) = _answers(out["messages"], "update_plan_step")
    assert update.status == "error"
    assert "the root agent's" in str(update.content)
    assert out["run_memory"] == others  # its end cleared its own notes only
    assert out["plan"]["steps"][0]["status"] == "pending"


@pytest.mark.parametrize("surface", ["nodes", "middleware"])
def test_a_read_only_agent_sees_the_roots_notes_and_plan_and_changes_neither(surface: str) -> None:
    store = InMemoryStore()
    memory = _memory(store, plan=True)
    auditor = memory.agent("auditor", run="read_only", plan="read_only")
    root_plan = new_plan("Root goal", ["Root step"], plan_id="root1")
    model = ScriptedChatModel(
        [
            _calls(
                ("add_run_note", {"note": "mine"}),
                ("add_context_note", {"note": "audit passed"}),
                ("get_plan", {}),
                tag="a",
            ),
            "audited",
        ]
    )
    graph = _agent_graph(surface, auditor, model, store)
    try:
        out = graph.invoke(
            {"messages": [HumanMessage("audit")], "run_memory": ["root note"], "plan": root_plan}, CONFIG
        )
    finally:
        memory.close()

    assert "root note" in _system(model.calls[0])
    assert "Root goal" in _system(model.calls[0])
    note, context, shown = (m for m in out["messages"] if isinstance(m, ToolMessage))
    assert note.status == "error"
    assert "run memory is read-only to the agent 'auditor'" in str(note.content)
    assert context.status == "error"
    assert "the plan is read-only" in str(context.content)
    assert shown.status == "success"
    assert "Root goal" in str(shown.content)
    assert out["run_memory"] == ["root note"]  # a read-only agent's end leaves the root's notes
    assert out["plan"]["notes"] == []


def test_plan_access_for_each_rule() -> None:
    layout = MemoryLayout(agents=AgentRules(agents={"auditor": {"plan": "read_only"}}))
    root_plan = new_plan("Root goal", plan_id="r1")
    own = new_plan("Own goal", plan_id="o1", agent="researcher")
    researcher = Scope(agent="researcher", subagent=True)
    auditor = Scope(agent="auditor", subagent=True)
    assert visible_plan(own, researcher, layout) == own
    assert visible_plan(own, Scope(), layout) is None
    assert visible_plan(root_plan, auditor, layout) == root_plan
    check_plan_access(None, researcher, layout, write=True)  # it may create its own
    check_plan_access(root_plan, auditor, layout, write=False)
    with pytest.raises(AgentAccessError, match="read-only to the agent 'auditor'") as caught:
        check_plan_access(root_plan, auditor, layout, write=True)
    assert caught.value.compartment == "plan"
    with pytest.raises(AgentAccessError, match="the agent 'researcher''s"):
        check_plan_access(own, Scope(), layout, write=False)
    with pytest.raises(AgentAccessError, match="the root agent's"):
        check_plan_access(root_plan, researcher, layout, write=True)
