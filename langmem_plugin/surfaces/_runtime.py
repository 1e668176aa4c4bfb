"""Where a surface finds its scope and its store at call time: one function for every surface."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope, current_runtime, resolve_scope
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.errors import ConfigurationError

__all__ = ["resolve_agent_scope", "resolve_scope_and_store"]


def resolve_agent_scope(
    config: RunnableConfig | None,
    *,
    runtime: Any = None,
    metadata: Mapping[str, Any] | None = None,
    agent: str | None = None,
) -> Scope:
    """The scope (:func:`~langmem_plugin.core.scope.resolve_scope`), as the sub-agent ``agent`` when
    one is given (the surfaces of ``memory.agent(name)``), for a surface that needs no store."""
    scope = resolve_scope(config, runtime=runtime, metadata=metadata)
    return scope.as_subagent(agent) if agent is not None else scope


def resolve_scope_and_store(
    config: RunnableConfig | None,
    store: BaseStore | StoreSource | None,
    *,
    runtime: Any = None,
    metadata: Mapping[str, Any] | None = None,
    what: str = "memory",
) -> tuple[Scope, BaseStore]:
    """The scope (:func:`~langmem_plugin.core.scope.resolve_scope`) and the store (given, else the graph's).

    A :class:`~langmem_plugin.core.store_source.StoreSource` (a ``Memory``'s) chooses the store
    itself: its given store, else the run's, else its default; one made for a sub-agent
    (``memory.agent(name)``) makes the scope that agent's.

    Raises:
        ConfigurationError: no store was passed and the graph was compiled without one.
    """
    runtime = runtime if runtime is not None else current_runtime()
    agent = store.agent if isinstance(store, StoreSource) else None  # memory.agent(name)'s surfaces
    scope = resolve_agent_scope(config, runtime=runtime, metadata=metadata, agent=agent)
    if isinstance(store, StoreSource):
        return scope, store.for_run(runtime)
    found = store if store is not None else getattr(runtime, "store", None)
    if found is None:
        raise ConfigurationError(
            f"{what} has no store: compile the graph with a store (builder.compile(store=...)) "
            "or pass one explicitly (Memory(store=...) / create_memory_tools(store=...))."
        )
    return scope, found
