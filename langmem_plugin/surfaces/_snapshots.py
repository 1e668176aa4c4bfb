"""``Memory.snapshot`` and ``restore``: memory handed to a sub-agent as it was at the hand-off.

(:mod:`langmem_plugin.services.snapshot` says what a snapshot holds and what its view refuses.)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Any, Self

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services import aexecute, execute
from langmem_plugin.services.layout import Compartment
from langmem_plugin.services.snapshot import DEFAULT_SNAPSHOT, MemorySnapshot, SnapshotStore, snapshot_steps
from langmem_plugin.surfaces._agents import AgentMethods

__all__ = ["SnapshotMethods"]


class SnapshotMethods(AgentMethods):
    """Mixed into :class:`~langmem_plugin.Memory`: :class:`AgentMethods` and a sub-agent's snapshot."""

    def snapshot(
        self,
        config: RunnableConfig | None = None,
        *,
        compartments: Iterable[Compartment | str] = DEFAULT_SNAPSHOT,
    ) -> MemorySnapshot:
        """The memories of ``compartments`` (default: user and session) that ``config``'s scope reads
        now, frozen: hand it to a sub-agent with ``memory.agent(name).restore(snapshot)``.

        Raises:
            CompartmentError: a compartment that is not stored (``run``) or does not exist.
            ScopeError: the config names none of the compartments (no ``user_id``, no ``thread_id``).
        """
        steps = snapshot_steps(self._scope_of(config), self.layout, compartments)
        return execute(self._source.now(), steps)

    async def asnapshot(
        self,
        config: RunnableConfig | None = None,
        *,
        compartments: Iterable[Compartment | str] = DEFAULT_SNAPSHOT,
    ) -> MemorySnapshot:
        """Async :meth:`snapshot`."""
        steps = snapshot_steps(self._scope_of(config), self.layout, compartments)
        return await aexecute(self._source.now(), steps)

    def restore(self, snapshot: MemorySnapshot) -> Self:
        """This sub-agent's memory reading ``snapshot`` (``memory.agent("researcher").restore(snap)``):
        its surfaces read the snapshot's compartments as they were when it was taken, and change
        nothing there — each is ``read_only`` to the agent; every other compartment (knowledge,
        its own isolated ones) is the live store's. Compile the graph with the live store
        (``memory.store``) as usual.

        Raises:
            ConfigurationError: this memory is no sub-agent's (restore on ``memory.agent(name)``),
                ``snapshot`` is no :class:`MemorySnapshot`, or it holds an agent's own compartment
                (taken by ``memory.agent(other)`` with an ``isolated`` rule).
        """
        name = self.agent_name
        if name is None:
            raise ConfigurationError(
                "restore gives a sub-agent a snapshot; this memory runs as no named agent. "
                "Fix: memory.agent('researcher').restore(snapshot)."
            )
        if not isinstance(snapshot, MemorySnapshot):
            raise ConfigurationError(
                f"restore takes what memory.snapshot(config) returns, got {type(snapshot).__name__}. "
                "Fix: snapshot = memory.snapshot(config); memory.agent(name).restore(snapshot)."
            )
        for compartment, template in zip(snapshot.compartments, snapshot.templates, strict=True):
            if template != self.layout.template(compartment):
                raise ConfigurationError(
                    f"the snapshot holds an agent's own {compartment} memory ({template!r}), which "
                    f"the agent {name!r} would not read. Fix: take the snapshot where the shared "
                    "memory is read (the root's memory.snapshot(config))."
                )
        view = self.agent(name, **dict.fromkeys(snapshot.compartments, "read_only"))
        view._source = _SnapshotSource(view._source, snapshot)
        view.turn = view.turn.for_agent(view._source, view.layout)
        return view

    @property
    def restored(self) -> MemorySnapshot | None:
        """The snapshot this memory's surfaces read (:meth:`restore`), or ``None``."""
        source = self._source
        return source.snapshot if isinstance(source, _SnapshotSource) else None


class _SnapshotSource(StoreSource):
    """Another source's stores, each seen through a :class:`SnapshotStore` of one snapshot."""

    def __init__(self, parent: StoreSource, snapshot: MemorySnapshot) -> None:
        super().__init__(
            parent.given, parent._make_default, view=parent._view, runtime_first=parent.runtime_first
        )
        self._parent = parent
        self.agent = parent.agent
        self.snapshot = snapshot
        self._views: weakref.WeakKeyDictionary[BaseStore, SnapshotStore] = weakref.WeakKeyDictionary()
        self._views_lock = threading.Lock()

    @property
    def made(self) -> BaseStore | None:
        return self._parent.made

    def own(self) -> BaseStore:
        return self._parent.own()

    def _seen(self, live: BaseStore) -> BaseStore:
        with self._views_lock:  # one view per store: its BM25 index is built once
            view = self._views.get(live)
            if view is None:
                view = self._views[live] = SnapshotStore(live, self.snapshot)
            return view

    def for_run(self, runtime: Any = None) -> BaseStore:
        return self._seen(self._parent.for_run(runtime))

    def viewed(self, store: BaseStore) -> BaseStore:
        return self._seen(self._parent.viewed(store))

    def as_agent(self, agent: str) -> StoreSource:
        return self._parent.as_agent(agent)  # another agent: the live memory, no snapshot

    def __repr__(self) -> str:
        return f"{self._parent!r} with a snapshot of {len(self.snapshot)} memories"
