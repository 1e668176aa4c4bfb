"""Where a ``Memory`` finds its store at call time: the one it was given, else the run's, else its own.

``Memory(store)`` uses ``store`` everywhere. ``Memory()`` — no store and no ``path`` — puts memory
where LangGraph looks for it: in the store the running graph has (``builder.compile(store=...)``,
the store ``langgraph dev`` and LangGraph Platform give every run, ``Runtime.store``), so Studio's
store view, the Store API and your own nodes see the memories; and only where a call has no such
store (outside a graph, or a graph compiled without one) in the default store, made at its first
use. ``Memory(path=...)`` asks for the default store at ``path``, run store or not.

Every store found goes through ``view`` first (for the package: BM25 beside a store that has no
lexical index, :func:`langmem_plugin.stores.lexical_view`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import current_runtime

__all__ = ["StoreSource"]


class StoreSource:
    """The store of each call (see the module docstring).

    Args:
        given: the store every call uses; ``None``: the run's, else the default.
        make_default: makes the default store (called once, at its first use).
        view: what every store found is seen through (the identity when ``None``).
        runtime_first: whether a run's store wins over the default (``Memory()``: yes;
            ``Memory(path=...)``: no).
    """

    def __init__(
        self,
        given: BaseStore | None,
        make_default: Callable[[], BaseStore],
        *,
        view: Callable[[BaseStore], BaseStore] | None = None,
        runtime_first: bool = True,
    ) -> None:
        self.given = given
        self._make_default = make_default
        self._view = view or (lambda store: store)
        self.runtime_first = runtime_first and given is None
        self._default: BaseStore | None = None
        self._lock = threading.Lock()

    #: The sub-agent whose surfaces use this source (``memory.agent(name)``); ``None``: the run says.
    agent: str | None = None

    def as_agent(self, agent: str) -> StoreSource:
        """This source for the surfaces of the sub-agent ``agent``: the same stores (the default made
        once, for both), and every scope resolved through it runs as ``agent``."""
        return _AgentSource(self, agent)

    @property
    def made(self) -> BaseStore | None:
        """The default store, if it was made (the one a ``Memory`` closes)."""
        return self._default

    def own(self) -> BaseStore:
        """The store given, else the default (made now if it was not): ``memory.store``."""
        if self.given is not None:
            return self.given
        with self._lock:
            if self._default is None:
                self._default = self._make_default()
            return self._default

    def for_run(self, runtime: Any = None) -> BaseStore:
        """The store a call in ``runtime`` (a LangGraph ``Runtime``, or ``None``) uses, as viewed."""
        found = getattr(runtime, "store", None) if self.runtime_first else None
        return self._view(found if isinstance(found, BaseStore) else self.own())

    def viewed(self, store: BaseStore) -> BaseStore:
        """``store`` as the calls of this source see it (``view`` applied)."""
        return self._view(store)

    def now(self) -> BaseStore:
        """:meth:`for_run` for the current LangGraph run, if the call is made inside one."""
        return self.for_run(current_runtime())

    def __repr__(self) -> str:
        if self.given is not None:
            return f"StoreSource({type(self.given).__name__})"
        return (
            "StoreSource(the run's store, else the default)"
            if self.runtime_first
            else "StoreSource(the default)"
        )


class _AgentSource(StoreSource):
    """A :class:`StoreSource` that is another's, for the surfaces of one sub-agent."""

    def __init__(self, parent: StoreSource, agent: str) -> None:
        super().__init__(
            parent.given, parent._make_default, view=parent._view, runtime_first=parent.runtime_first
        )
        self._parent = parent
        self.agent = agent

    @property
    def made(self) -> BaseStore | None:
        return self._parent.made

    def own(self) -> BaseStore:
        return self._parent.own()

    def as_agent(self, agent: str) -> StoreSource:
        return _AgentSource(self._parent, agent)

    def __repr__(self) -> str:
        return f"{self._parent!r} as the agent {self.agent!r}"
