"""examples/langgraph_app: what ``langgraph dev`` loads from langgraph.json imports, and runs offline.

The server itself (``langgraph-cli[inmem]``) is not a dependency: this loads each graph the way
it does — the file named by ``graphs``, imported by path, its variable read — and runs it as the
server would, without a checkpointer of the graph's own.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "examples" / "langgraph_app"
CONFIG = json.loads((APP / "langgraph.json").read_text())


def _split(entry: str | dict[str, Any]) -> tuple[Path, str]:
    """A ``graphs`` entry (``"./agent.py:graph"`` or ``{"path": ...}``) as (file, variable)."""
    spec = entry if isinstance(entry, str) else entry["path"]
    path, _, variable = spec.rpartition(":")
    return (APP / path).resolve(), variable


@pytest.fixture(scope="module")
def app_module() -> Iterator[ModuleType]:
    """agent.py imported by path, offline, with a temporary memory; its memory closed after."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_API_KEY", raising=False)
        path, _ = _split(CONFIG["graphs"]["agent"])
        spec = importlib.util.spec_from_file_location("langgraph_app_agent", path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    try:
        yield module
    finally:
        module.memory.close()


def test_the_config_names_files_that_exist() -> None:
    assert CONFIG["graphs"], "langgraph.json serves no graph"
    for entry in CONFIG["graphs"].values():
        path, variable = _split(entry)
        assert path.is_file(), path
        assert variable.isidentifier(), entry
    for dependency in CONFIG["dependencies"]:
        assert (APP / dependency / "pyproject.toml").is_file(), dependency  # this package, installable
    index = CONFIG["store"]["index"]  # the server's store embeds what memory writes, offline
    path, variable = _split(index["embed"])
    assert path.is_file(), index
    assert variable.isidentifier(), index
    assert index["fields"] == ["content"]


def test_the_graph_is_compiled_without_a_checkpointer(app_module: ModuleType) -> None:
    graph = app_module.graph
    assert isinstance(graph, CompiledStateGraph)
    assert graph.checkpointer is None  # langgraph dev refuses a graph compiled with its own


def test_a_second_thread_recalls_what_the_first_saved(app_module: ModuleType) -> None:
    graph = app_module.graph
    first = graph.invoke(
        {"messages": [("user", "remember my favourite language is OCaml")]},
        {"configurable": {"user_id": "ada", "thread_id": "monday"}},
    )
    assert "Saved memory" in first["messages"][-1].content
    second = graph.invoke(
        {"messages": [("user", "Which language do I like?")]},
        {"configurable": {"user_id": "ada", "thread_id": "tuesday"}},
    )
    assert "OCaml" in second["messages"][-1].content
    assert any("OCaml" in item["content"] for item in second["memory_context"]["items"])


async def test_the_async_path_the_server_takes(app_module: ModuleType) -> None:
    graph = app_module.graph
    config = {"configurable": {"user_id": "grace", "thread_id": "async"}}
    out = await graph.ainvoke({"messages": [("user", "remember I write COBOL")]}, config)
    assert "Saved memory" in out["messages"][-1].content
    out = await graph.ainvoke(
        {"messages": [("user", "What do I write?")]},
        {"configurable": {"user_id": "grace", "thread_id": "async-2"}},
    )
    assert "COBOL" in out["messages"][-1].content
