from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel

from langmem_plugin.core.scope import Scope, fill_namespace, resolve_scope, template_keys
from langmem_plugin.errors import ConfigurationError, InvalidNamespaceError, ScopeError


def test_from_config() -> None:
    scope = Scope.from_config(
        {
            "configurable": {"user_id": "u1", "thread_id": "t1", "agent": "helper", "tenant": "acme"},
            "run_id": "r1",
        }
    )
    assert (scope.user_id, scope.thread_id, scope.agent, scope.run_id) == ("u1", "t1", "helper", "r1")
    assert scope.get("tenant") == "acme"
    assert scope.namespace(("{tenant}", "memories", "{user_id}")) == ("acme", "memories", "u1")


def test_aliases_and_exact_values() -> None:
    scope = Scope.from_config({"configurable": {"assistant_id": "bot", "user_id": "42", "thread_id": "  "}})
    assert scope.agent == "bot"
    assert scope.user_id == "42"
    assert scope.thread_id == "  "  # exact: blank is an id of its own, not "missing"


@pytest.mark.parametrize("configurable", [{"user_id": 42}, {"thread_id": ""}, {"session_id": 7}])
def test_non_string_or_empty_ids_are_refused(configurable: dict[str, object]) -> None:
    with pytest.raises(ScopeError):
        Scope.from_config({"configurable": configurable})


def test_canonical_key_wins_over_alias() -> None:
    scope = Scope.from_config({"configurable": {"agent": "a", "assistant_id": "b"}})
    assert scope.agent == "a"


def test_internal_keys_are_ignored() -> None:
    scope = Scope.from_config({"configurable": {"__pregel_task_id": "x", "user_id": "u"}})
    assert "__pregel_task_id" not in scope.extra


@pytest.mark.parametrize(
    "context",
    [
        {"user_id": "ctx-user"},
        pytest.param("dataclass", id="dataclass"),
        pytest.param("pydantic", id="pydantic"),
    ],
)
def test_runtime_context_wins_over_configurable(context: object) -> None:
    @dataclass
    class DC:
        user_id: str

    class PM(BaseModel):
        user_id: str

    if context == "dataclass":
        context = DC(user_id="ctx-user")
    elif context == "pydantic":
        context = PM(user_id="ctx-user")
    runtime = Runtime(context=context)
    scope = Scope.from_runtime(runtime, {"configurable": {"user_id": "cfg-user", "thread_id": "t"}})
    assert scope.user_id == "ctx-user"
    assert scope.thread_id == "t"


def test_partial_labels() -> None:
    scope = Scope(user_id="u1", thread_id="t1")
    assert fill_namespace(("mem", "u-{user_id}", "t-{thread_id}"), scope) == ("mem", "u-u1", "t-t1")


@pytest.mark.parametrize("label", ["u-{user_id}-{thread_id}", "{user_id}{user_id}"])
def test_one_placeholder_per_label(label: str) -> None:
    with pytest.raises(ConfigurationError, match="placeholders"):
        template_keys(("mem", label))


def test_missing_value_names_the_key_and_the_fix() -> None:
    with pytest.raises(ScopeError) as info:
        Scope(thread_id="t").namespace(("memories", "{user_id}"))
    assert info.value.key == "user_id"
    message = str(info.value)
    assert "'user_id'" in message
    assert 'config={"configurable": {"user_id": ...}}' in message
    assert isinstance(info.value, KeyError)


def test_require() -> None:
    assert Scope(user_id="u").require("user_id") == "u"
    with pytest.raises(ScopeError, match="saving memories needs 'thread_id'"):
        Scope().require("thread_id", purpose="saving memories")


def test_id_with_a_dot_is_rejected() -> None:
    with pytest.raises(ScopeError, match=r"'\.'"):
        Scope(user_id="john.doe")
    with pytest.raises(ScopeError, match=r"'\.'"):
        Scope(extra={"tenant": "a.b"}).namespace(("memories", "{tenant}"))


def test_template_label_with_a_dot_is_rejected() -> None:
    with pytest.raises(InvalidNamespaceError, match=r"no '\.'"):
        Scope(user_id="u").namespace(("memories.v2", "{user_id}"))


@pytest.mark.parametrize("label", ["{user_id!r}", "{user_id:>10}", "{0}"])
def test_bad_placeholders(label: str) -> None:
    with pytest.raises(ConfigurationError, match="placeholder"):
        template_keys(("m", label))


def test_resolve_scope_outside_a_run_is_empty() -> None:
    assert resolve_scope() == Scope()


def test_resolve_scope_inside_a_real_graph() -> None:
    class State(TypedDict):
        seen: str

    @dataclass
    class Context:
        agent: str

    def node(state: State) -> dict[str, str]:
        scope = resolve_scope()
        return {"seen": f"{scope.user_id}/{scope.thread_id}/{scope.agent}/{scope.run_id is not None}"}

    builder = StateGraph(State, context_schema=Context)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    graph = builder.compile()
    out = graph.invoke(
        {"seen": ""},
        {
            "configurable": {"user_id": "u7", "thread_id": "t7"},
            "run_id": "0b3f3c38-7a6b-4d4e-9b1e-0f2a1c3d4e5f",
        },
        context=Context(agent="planner"),
    )
    assert out["seen"] == "u7/t7/planner/True"
