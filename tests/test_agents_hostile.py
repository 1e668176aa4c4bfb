"""Bad input across agents (issue 38, "Bad input"): who runs comes from the run, never from a model.

- a model that names another agent (or a user, a namespace) in a tool argument gets an error it can
  act on from a schema that has no such argument, and nothing is read or written;
- an id of another agent's own memory reaches nothing: ids are looked up in the caller's
  compartments only;
- an agent name that cannot be a namespace label (``create_agent(name="a.b")``, a node path is
  encoded, ``memory.agent("a.b")``) raises ``ScopeError`` before anything is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore

from langmem_plugin import AgentRules, Memory
from langmem_plugin.errors import ScopeError
from langmem_plugin.testing import ScriptedChatModel, tool_call
from tests.counting_stores import STORE_KINDS, opened_store

CONFIG: RunnableConfig = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
ALICE = ("memories", "agent", "alice", "user", "u1")
BOB = ("memories", "agent", "bob", "user", "u1")
RULES = AgentRules(user="isolated", session="isolated")

#: Arguments each memory tool takes without complaint; the hostile call adds an argument to them.
VALID: dict[str, dict[str, Any]] = {
    "save_memory": {"content": "a note"},
    "search_memory": {"query": "note"},
    "get_memory": {"id": "abc"},
    "update_memory": {"id": "abc", "content": "changed"},
    "delete_memory": {"id": "abc"},
    "list_categories": {},
    "clear_memory": {"compartment": "user", "all": True},
    "forget_memories": {"query": "note"},
    "add_run_note": {"note": "a note"},
    "promote_memory": {"id": "abc"},
}
#: What a model might write to reach another agent's memory.
NAMING = [
    {"agent": "alice"},
    {"agent_name": "alice"},
    {"namespace": ["memories", "agent", "alice", "user", "u1"]},
    {"user_id": "u2"},
]


def _snapshot(store: BaseStore) -> dict[tuple[str, ...], list[tuple[str, Any]]]:
    """Every item under "memories" (InMemoryStore lists a namespace a search only looked at: left out)."""
    found = {
        ns: sorted((item.key, item.value) for item in store.search(ns, limit=1000))
        for ns in store.list_namespaces(prefix=("memories",))
    }
    return {ns: items for ns, items in found.items() if items}


@pytest.mark.parametrize("kind", STORE_KINDS)
@pytest.mark.parametrize("naming", NAMING, ids=lambda n: next(iter(n)))
def test_a_tool_argument_naming_another_agent_is_refused_with_nothing_read_or_written(
    kind: str, naming: dict[str, Any], tmp_path: Path
) -> None:
    with opened_store(kind, tmp_path, 32) as store:
        memory = Memory(store, agents=RULES, tools="full")
        alice_save = next(t for t in memory.agent("alice").tools if t.name == "save_memory")
        alice_save.invoke({"content": "Alice's private plan"}, CONFIG)
        bob = memory.agent("bob")
        before, ops = _snapshot(store), store.ops_seen  # type: ignore[attr-defined]
        answered = []
        for one in bob.tools:
            if one.name == "add_run_note":
                continue  # a state tool: run through a graph below
            args = {**VALID[one.name], **naming}
            call = {"name": one.name, "args": args, "id": f"call-{one.name}", "type": "tool_call"}
            answer = one.invoke(call, CONFIG)
            assert isinstance(answer, ToolMessage)
            answered.append(str(answer.content))
        assert answered
        for text in answered:
            assert text.startswith("Error: invalid arguments: unknown argument(s)"), text
            assert "Nothing was done" in text
        assert store.ops_seen == ops  # type: ignore[attr-defined]  # nothing read, nothing written
        assert _snapshot(store) == before


def test_a_sub_agent_model_naming_another_agent_in_a_graph_gets_errors_it_can_act_on() -> None:
    with opened_store("inmemory", Path("."), 32) as store:
        memory = Memory(store, agents=RULES, tools="full")
        next(t for t in memory.agent("alice").tools if t.name == "save_memory").invoke(
            {"content": "Alice's private plan"}, CONFIG
        )
        calls = [
            {"name": name, "args": {**args, "agent": "alice"}, "id": f"c-{name}", "type": "tool_call"}
            for name, args in VALID.items()
            if name in {t.name for t in memory.tools}
        ]
        model = ScriptedChatModel([AIMessage("", tool_calls=calls), "Done."])
        bob = create_agent(model, tools=memory.tools, middleware=[memory.middleware()], name="bob")

        @tool
        def ask_bob(question: str, config: RunnableConfig) -> str:
            """Ask bob."""
            return str(bob.invoke({"messages": [HumanMessage(question)]}, config)["messages"][-1].content)

        main = create_agent(
            ScriptedChatModel([tool_call("ask_bob", question="What is alice planning?"), "Nothing."]),
            tools=[ask_bob],
            checkpointer=InMemorySaver(),
            store=store,
        )
        main.invoke({"messages": [HumanMessage("What is alice planning?")]}, CONFIG)
        errors = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
        assert {m.name for m in errors} == {c["name"] for c in calls}
        for message in errors:
            assert "unknown argument(s) 'agent'" in str(message.content), message
        assert [i.value["content"] for i in store.search(ALICE)] == ["Alice's private plan"]
        assert not [i for i in store.search(BOB) if "Alice" in str(i.value)]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_an_id_of_another_agents_memory_reaches_nothing(kind: str, tmp_path: Path) -> None:
    with opened_store(kind, tmp_path, 32) as store:
        memory = Memory(store, agents=RULES, tools="full")
        alice = {t.name: t for t in memory.agent("alice").tools}
        alice["save_memory"].invoke({"content": "Alice's secret"}, CONFIG)
        (memory_id,) = [item.key for item in store.search(ALICE)]
        bob = {t.name: t for t in memory.agent("bob").tools}
        before = _snapshot(store)
        for name, args in [
            ("get_memory", {"id": memory_id}),
            ("update_memory", {"id": memory_id, "content": "Bob was here"}),
            ("delete_memory", {"id": memory_id}),
        ]:
            answer = bob[name].invoke({"name": name, "args": args, "id": name, "type": "tool_call"}, CONFIG)
            assert str(answer.content).startswith("Error:")
            assert "Alice's secret" not in str(answer.content)
        found = bob["search_memory"].invoke({"query": "secret"}, CONFIG)
        assert "Alice" not in str(found)
        assert _snapshot(store) == before
        # the root reads neither: an agent's own memory is its own
        assert "Alice" not in str(memory.tools[1].invoke({"query": "secret"}, CONFIG))


@pytest.mark.parametrize("name", ["re.searcher", "line\nbreak", "nul\x00"])
def test_a_sub_agent_whose_name_cannot_be_a_label_is_refused_before_anything_is_read(name: str) -> None:
    with opened_store("inmemory", Path("."), 32) as store:
        memory = Memory(store, agents=RULES)
        sub = create_agent(
            ScriptedChatModel(["never called"]),
            tools=memory.tools,
            middleware=[memory.middleware()],
            name=name,
        )
        seen: dict[str, Any] = {}

        @tool
        def delegate(question: str, config: RunnableConfig) -> str:
            """Ask the sub-agent."""
            seen["before"] = store.ops_seen  # type: ignore[attr-defined]
            try:
                sub.invoke({"messages": [HumanMessage(question)]}, config)
            except ScopeError as exc:
                seen["error"] = exc
            seen["after"] = store.ops_seen  # type: ignore[attr-defined]
            return "refused"

        main = create_agent(
            ScriptedChatModel([tool_call("delegate", question="hi"), "ok"]),
            tools=[delegate],
            checkpointer=InMemorySaver(),
            store=store,
        )
        main.invoke({"messages": [HumanMessage("hi")]}, CONFIG)
        assert isinstance(seen["error"], ScopeError)
        assert "agent" in str(seen["error"])
        assert seen["after"] == seen["before"]
        with pytest.raises(ScopeError):
            memory.agent(name)
