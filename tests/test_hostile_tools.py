"""Issue 11, the memory tools under hostile arguments: errors the model can act on, never data loss.

- a bad category on search_memory / clear_memory is an error, and writes nothing;
- clear_memory never widens to the whole compartment by normalisation: that is ``all=true``;
- priority is a strict whole number (``True`` is not 1);
- a compartment's item limit holds under 8 threads and under 50 tasks.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import create_memory_tools
from langmem_plugin.core.record import CATEGORY_PATTERN
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import InvalidFilterError
from langmem_plugin.services import MemoryLayout, execute, save_steps, search_steps
from langmem_plugin.services.layout import CompartmentLimits
from langmem_plugin.services.operations import clear_steps
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings

DIMS = 16
CONFIG = {"configurable": {"user_id": "alice", "thread_id": "ta"}}
SCOPE = Scope(user_id="alice", thread_id="ta")
LAYOUT = MemoryLayout()
BAD_CATEGORIES = [
    "a b",
    "../x",
    "a//b",
    "a/../b",
    "a\x00b",
    "/",
    "//",
    "",
    " ",
    "/a",
    "a/",
    "é",
    "a\u2028b",
    "\ud800",
]


@pytest.fixture(params=["inmemory", "qdrant", "checkpointer"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    index: Any = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["content"]}
    if request.param == "inmemory":
        yield InMemoryStore(index=index)
    elif request.param == "qdrant":
        pytest.importorskip("qdrant_edge")
        from langmem_plugin.stores.qdrant import QdrantStore

        opened = QdrantStore(path=tmp_path / "q", index=index)
        yield opened
        opened.close()
    else:
        yield CheckpointerStore(InMemorySaver(), index=index)


def _graph(store: BaseStore, tools: list[BaseTool] | None = None) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools or create_memory_tools(include="full")))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(store=store)


def _call(graph: Any, name: str, args: dict[str, Any]) -> ToolMessage:
    call = AIMessage("", tool_calls=[{"name": name, "args": args, "id": "c1", "type": "tool_call"}])
    out = graph.invoke({"messages": [call]}, CONFIG)
    (answer,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    return answer


def _fill(store: BaseStore) -> list[str]:
    ids = []
    for i, category in enumerate(["work", "work/api", "home", "home/garden"]):
        ids.append(execute(store, save_steps(SCOPE, LAYOUT, f"memory {i}", category=category)).id)
    return ids


def _count(store: BaseStore) -> int:
    return len(
        execute(store, search_steps(SCOPE, LAYOUT, compartments=["user"], limit=100, track_access=False))
    )


@pytest.mark.parametrize("category", BAD_CATEGORIES, ids=repr)
@pytest.mark.parametrize("tool", ["search_memory", "clear_memory"])
def test_a_bad_category_is_an_error_the_model_can_act_on(store: BaseStore, tool: str, category: str) -> None:
    _fill(store)
    args: dict[str, Any] = {"category": category}
    if tool == "clear_memory":
        args["compartment"] = "user"
    answer = _call(_graph(store), tool, args)
    assert answer.status == "error"
    text = str(answer.content)
    assert "category" in text
    assert "e.g. 'project/rockbot'" in text  # says what a good one looks like
    if tool == "clear_memory":
        assert "all=true" in text  # and how to clear everything, if that was meant
    assert _count(store) == 4


@pytest.mark.parametrize("category", ["/", "//", "", " ", "///", " / "])
def test_clear_never_widens_to_the_whole_compartment(store: BaseStore, category: str) -> None:
    _fill(store)
    with pytest.raises(InvalidFilterError):
        execute(store, clear_steps(SCOPE, LAYOUT, "user", category=category))
    with pytest.raises(InvalidFilterError, match="all=true"):
        execute(store, clear_steps(SCOPE, LAYOUT, "user"))
    with pytest.raises(InvalidFilterError, match="all=true"):
        execute(store, clear_steps(SCOPE, LAYOUT, "user", tags=["", "  "]))
    graph = _graph(store)
    for args in (
        {"compartment": "user", "category": category},
        {"compartment": "user"},
        {"compartment": "user", "tags": []},
    ):
        assert _call(graph, "clear_memory", args).status == "error"
    assert _count(store) == 4


def test_clearing_a_whole_compartment_is_its_own_explicit_call(store: BaseStore) -> None:
    _fill(store)
    graph = _graph(store)
    both = _call(graph, "clear_memory", {"compartment": "user", "all": True, "category": "work"})
    assert both.status == "error"
    assert "not both" in str(both.content)
    assert _call(graph, "clear_memory", {"compartment": "user", "all": "yes"}).status == "error"
    assert _count(store) == 4
    narrowed = _call(graph, "clear_memory", {"compartment": "user", "category": "work"})
    assert narrowed.status == "success"
    assert _count(store) == 2
    everything = _call(graph, "clear_memory", {"compartment": "user", "all": True})
    assert everything.status == "success"
    assert str(everything.content).startswith("Removed 2 memories")
    assert _count(store) == 0


def test_the_clear_tool_tells_the_model_how_to_clear_everything() -> None:
    (clear,) = create_memory_tools(include=["clear_memory"])
    assert "all=true" in clear.description
    assert "all" in clear.args


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=12))
def test_any_category_filter_is_valid_or_refused(category: str) -> None:
    store = InMemoryStore()
    execute(store, save_steps(SCOPE, LAYOUT, "keep me", category="keep"))
    try:
        execute(store, clear_steps(SCOPE, LAYOUT, "user", category=category))
    except InvalidFilterError:
        assert not CATEGORY_PATTERN.fullmatch(category.strip())
    else:
        assert CATEGORY_PATTERN.fullmatch(category.strip())
    # only 'keep' (or a prefix of it: none is shorter but itself) can remove the memory
    assert _count(store) == (0 if category.strip() == "keep" else 1)


@pytest.mark.parametrize("priority", [True, False, "5", 5.0, 0, 11, -1])
def test_priority_is_a_strict_whole_number(priority: Any) -> None:
    store = InMemoryStore()
    graph = _graph(store)
    answer = _call(graph, "save_memory", {"content": "x", "priority": priority})
    assert answer.status == "error"
    assert "priority" in str(answer.content)
    assert _count(store) == 0
    saved = _call(graph, "save_memory", {"content": "x", "priority": 7})
    assert saved.status == "success"
    memory_id = str(saved.content).split()[2]
    updated = _call(graph, "update_memory", {"id": memory_id, "priority": True})
    assert updated.status == "error"
    assert "priority" in str(updated.content)


def test_search_limit_is_a_strict_whole_number() -> None:
    answer = _call(_graph(InMemoryStore()), "search_memory", {"query": "x", "limit": True})
    assert answer.status == "error"
    assert "limit" in str(answer.content)


LIMITED = MemoryLayout(limits={"user": CompartmentLimits(max_items=20)})


def _limited_tool(store: BaseStore) -> BaseTool:
    (save,) = create_memory_tools(store=store, layout=LIMITED, include=["save_memory"])
    return save


def test_the_item_limit_holds_under_8_threads(store: BaseStore) -> None:
    save = _limited_tool(store)
    start = threading.Barrier(8)
    answers: list[str] = []

    def fill(worker: int) -> None:
        start.wait()
        for i in range(5):
            answers.append(str(save.invoke({"content": f"worker {worker} memory {i}"}, CONFIG)))

    threads = [threading.Thread(target=fill, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = execute(
        store, search_steps(SCOPE, LIMITED, compartments=["user"], limit=100, track_access=False)
    )
    assert len(stored) == 20
    assert sum(a.startswith("Saved memory") for a in answers) == 20
    assert sum("full" in a for a in answers) == 20


async def test_the_item_limit_holds_under_50_tasks(store: BaseStore) -> None:
    save = _limited_tool(store)
    answers = await asyncio.gather(
        *(save.ainvoke({"content": f"task memory {i}"}, CONFIG) for i in range(50))
    )
    stored = execute(
        store, search_steps(SCOPE, LIMITED, compartments=["user"], limit=100, track_access=False)
    )
    assert len(stored) == 20
    assert sum(str(a).startswith("Saved memory") for a in answers) == 20


async def test_threads_and_tasks_share_one_limit() -> None:
    store = InMemoryStore()
    save = _limited_tool(store)

    def thread_fill() -> None:
        for i in range(15):
            save.invoke({"content": f"thread memory {i}"}, CONFIG)

    thread = threading.Thread(target=thread_fill)
    thread.start()
    await asyncio.gather(*(save.ainvoke({"content": f"task memory {i}"}, CONFIG) for i in range(15)))
    await asyncio.to_thread(thread.join)
    assert _count(store) == 20
