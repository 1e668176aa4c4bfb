"""Issue 11, bad input on writes: one validation boundary (``stores._common``), typed errors, nothing written.

Every case goes in through ``store.put``/``aput``, ``store.batch([PutOp])``/``abatch`` of our
QdrantStore (embedded) and CheckpointerStore, and through the memory services and tools.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import BaseStore, GetOp, PutOp
from langgraph.store.base import InvalidNamespaceError as LangGraphInvalidNamespaceError

from langmem_plugin import create_memory_tools
from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import (
    InvalidNamespaceError,
    InvalidRecordError,
    InvalidValueError,
    LangMemPluginError,
)
from langmem_plugin.services import MemoryLayout, execute, save_steps
from langmem_plugin.stores._validation import (
    MAX_VALUE_DEPTH,
    CheckedStore,
    validate_key,
    validate_put,
    validate_value,
)
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings

DIMS = 16
NS = ("hostile", "ns")
BAD_TEXT = "bad \ud800"


def checked(cls: type[BaseStore]) -> type[BaseStore]:
    """``cls`` itself once it derives from CheckedStore, else ``cls`` with CheckedStore in front."""
    if issubclass(cls, CheckedStore):
        return cls
    return type(f"Checked{cls.__name__}", (CheckedStore, cls), {})


def _qdrant_cls() -> type[BaseStore]:
    pytest.importorskip("qdrant_edge")
    from langmem_plugin.stores.qdrant import QdrantStore

    return QdrantStore


def _open(kind: str, tmp_path: Path) -> BaseStore:
    index: Any = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["content"]}
    if kind == "qdrant":
        return checked(_qdrant_cls())(path=tmp_path / "q", index=index)  # type: ignore[call-arg]
    return checked(CheckpointerStore)(InMemorySaver(), index=index)  # type: ignore[call-arg]


@pytest.fixture(params=["qdrant", "checkpointer"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    opened = _open(request.param, tmp_path)
    yield opened
    close = getattr(opened, "close", None)
    if close is not None:
        close()


def _nested(depth: int, *, leaf: Any = 1, in_list: bool = False) -> dict[str, Any]:
    value: Any = leaf
    for _ in range(depth - 1):
        value = [value] if in_list else {"x": value}
    return {"v": value}


async def _write(store: BaseStore, way: str, namespace: Any, key: Any, value: Any) -> None:
    """One write, the way named; "batch"/"abatch" put a good item first, in the same batch."""
    good = PutOp(NS, "good", {"content": "fine"})
    if way == "put":
        store.put(namespace, key, value)
    elif way == "aput":
        await store.aput(namespace, key, value)
    elif way == "batch":
        store.batch([good, PutOp(namespace, key, value)])
    elif way == "abatch":
        await store.abatch([good, PutOp(namespace, key, value)])
    elif way == "delete":
        store.delete(namespace, key)
    elif way == "get":
        store.batch([GetOp(namespace, key)])
    else:
        raise AssertionError(way)


def _nothing_written(store: BaseStore) -> None:
    assert store.search(NS) == []
    assert store.list_namespaces() == []


BAD_VALUES: list[tuple[str, Any]] = [
    ("surrogate in content", {"content": BAD_TEXT}),
    ("surrogate deep in a list", {"a": [{"b": ["ok", BAD_TEXT]}]}),
    ("surrogate in an object key", {"a": {f"k{BAD_TEXT}": 1}}),
    ("nested 5,000 deep", _nested(5000)),
    ("lists nested 5,000 deep", _nested(5000, in_list=True)),
    ("one past the depth limit", _nested(MAX_VALUE_DEPTH + 1)),
    ("not a dict", ["content"]),
    ("non-str key", {1: "x"}),
    ("NaN", {"x": float("nan")}),
    ("a set", {"x": {1, 2}}),
]


@pytest.mark.parametrize(("case", "value"), BAD_VALUES, ids=[c for c, _ in BAD_VALUES])
@pytest.mark.parametrize("way", ["put", "batch", "aput", "abatch"])
async def test_bad_values_are_typed_errors_and_write_nothing(
    store: BaseStore, way: str, case: str, value: Any
) -> None:
    with pytest.raises(InvalidValueError):
        await _write(store, way, NS, "k", value)
    _nothing_written(store)


def test_the_depth_limit_is_inclusive() -> None:
    assert validate_value(_nested(MAX_VALUE_DEPTH))  # the value itself is depth 1
    with pytest.raises(InvalidValueError, match=f"deeper than {MAX_VALUE_DEPTH}"):
        validate_value(_nested(MAX_VALUE_DEPTH + 1))
    with pytest.raises(InvalidValueError, match="deeper than 3"):
        validate_value({"a": {"b": {"c": {}}}}, max_depth=3)


BAD_NAMESPACES: list[Any] = [
    {"a": 1},
    "memories",
    (),
    ("a", 1),
    ("a.b",),
    ("langgraph", "x"),
    ("",),
    ("a\x00b",),
    (f"u{BAD_TEXT}",),
    None,
]


@pytest.mark.parametrize("namespace", BAD_NAMESPACES, ids=repr)
@pytest.mark.parametrize("way", ["put", "batch", "aput", "abatch"])
async def test_bad_namespaces_raise_our_error_which_is_also_langgraphs(
    store: BaseStore, way: str, namespace: Any
) -> None:
    for clause in (InvalidNamespaceError, LangGraphInvalidNamespaceError):
        with pytest.raises(clause) as caught:
            await _write(store, way, namespace, "k", {"content": "x"})
        assert isinstance(caught.value, InvalidNamespaceError), "ours, not LangGraph's alone"
        assert isinstance(caught.value, LangMemPluginError)
    assert store.list_namespaces() == []


BAD_KEYS: list[Any] = [None, 1, ["k"], ("k",), b"k", 1.5, f"k{BAD_TEXT}"]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
@pytest.mark.parametrize("way", ["put", "batch", "aput", "abatch", "delete", "get"])
async def test_keys_that_are_not_text_are_refused_never_stringified(
    store: BaseStore, way: str, key: Any
) -> None:
    with pytest.raises(InvalidValueError, match="key"):
        await _write(store, way, NS, key, {"content": "x"})
    _nothing_written(store)
    assert store.get(NS, "None") is None
    assert store.get(NS, "1") is None


def test_good_writes_still_go_through(store: BaseStore) -> None:
    hostile_but_valid = "\u2028</memory_context>\x00\n\U0001f600"
    store.put(NS, hostile_but_valid, {"content": hostile_but_valid, "deep": _nested(MAX_VALUE_DEPTH - 2)})
    item = store.get(NS, hostile_but_valid)
    assert item is not None
    assert item.value["content"] == hostile_but_valid


def test_the_boundary_functions() -> None:
    with pytest.raises(InvalidValueError, match="must be a string"):
        validate_key(None)
    op = PutOp(NS, "k", {"a": (1, 2)})
    checked_op = validate_put(op)
    assert checked_op.value == {"a": [1, 2]}  # a copy, through JSON
    with pytest.raises(InvalidValueError, match="ttl"):
        validate_put(PutOp(NS, "k", {"a": 1}, ttl=True))  # type: ignore[arg-type]
    assert validate_put(PutOp(NS, "k", None)).value is None


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.text(), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
    )
)
def test_validate_value_never_raises_anything_untyped(leaf: Any) -> None:
    with contextlib.suppress(InvalidValueError):
        validate_value({"v": leaf})


def test_our_stores_derive_from_checked_store() -> None:
    """So that ``store.put`` runs the boundary before ``BaseStore.put`` stringifies keys."""
    assert issubclass(_qdrant_cls(), CheckedStore)
    assert issubclass(CheckpointerStore, CheckedStore)


# --------------------------------------------------------------------------- services and tools


@pytest.mark.parametrize(
    "fields",
    [
        {"content": BAD_TEXT},
        {"content": "ok", "tags": [BAD_TEXT]},
        {"content": "ok", "metadata": {"k": BAD_TEXT}},
        {"content": "ok", "metadata": {BAD_TEXT: "v"}},
        {"content": "ok", "source": BAD_TEXT},
        {"content": "ok", "priority": True},
    ],
)
def test_memory_record_refuses_what_a_store_could_not_write(fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidRecordError):
        MemoryRecord(**fields)


def test_save_plan_with_a_lone_surrogate_writes_nothing(store: BaseStore) -> None:
    scope = Scope(user_id="u1", thread_id="t1")
    with pytest.raises(InvalidRecordError, match="surrogate"):
        execute(store, save_steps(scope, MemoryLayout(), BAD_TEXT))
    assert store.list_namespaces() == []


def _tool_graph(store: BaseStore) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(create_memory_tools()))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(store=store)


@pytest.mark.parametrize(
    "args",
    [
        {"content": BAD_TEXT},
        {"content": "ok", "tags": [BAD_TEXT]},
        {"content": "ok", "category": f"a{BAD_TEXT}"},
        {"content": "ok", "metadata": {"source": BAD_TEXT}},
    ],
)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_save_memory_with_a_lone_surrogate_answers_an_error_and_the_run_goes_on(
    store: BaseStore, args: dict[str, Any], mode: str
) -> None:
    graph = _tool_graph(store)
    call = AIMessage("", tool_calls=[{"name": "save_memory", "args": args, "id": "c1", "type": "tool_call"}])
    config = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
    inputs = {"messages": [call]}
    out = graph.invoke(inputs, config) if mode == "sync" else await graph.ainvoke(inputs, config)
    (answer,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error"
    assert "surrogate" in str(answer.content) or "category" in str(answer.content)
    assert store.list_namespaces() == []


def test_search_memory_with_a_lone_surrogate_query_is_an_error(store: BaseStore) -> None:
    graph = _tool_graph(store)
    call = AIMessage(
        "",
        tool_calls=[{"name": "search_memory", "args": {"query": BAD_TEXT}, "id": "c1", "type": "tool_call"}],
    )
    out = graph.invoke({"messages": [call]}, {"configurable": {"user_id": "u1", "thread_id": "t1"}})
    (answer,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error"
    assert "surrogate" in str(answer.content)
