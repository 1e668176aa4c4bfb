"""Where a surface finds its store and its scope at call time."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError

__all__ = ["current_runtime", "resolve_scope_and_store"]


def current_runtime() -> Any:
    """The LangGraph ``Runtime`` of the current graph run, or ``None`` outside a graph."""
    from langgraph.runtime import get_runtime

    try:
        return get_runtime()
    except RuntimeError:  # called outside a runnable context
        return None


def resolve_scope_and_store(
    config: RunnableConfig | None, store: BaseStore | None, *, runtime: Any = None, what: str = "memory"
) -> tuple[Scope, BaseStore]:
    """The scope (from config and runtime context only) and the store (explicit, else the graph's).

    Raises:
        ConfigurationError: no store was passed and the graph was compiled without one.
    """
    runtime = runtime if runtime is not None else current_runtime()
    scope = Scope.from_runtime(runtime, config) if runtime is not None else Scope.from_config(config)
    found = store if store is not None else getattr(runtime, "store", None)
    if found is None:
        raise ConfigurationError(
            f"{what} has no store: compile the graph with a store (builder.compile(store=...)) "
            "or pass one explicitly (Memory(store=...) / create_memory_tools(store=...))."
        )
    return scope, found
