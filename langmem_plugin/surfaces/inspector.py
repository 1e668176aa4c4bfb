"""The inspector: browse what a store remembers, see why recall shows what it shows, fix a memory.

One facade over :mod:`langmem_plugin.services.inspect` for the three places a person looks: the
notebook (``memory.inspector()``; pages, details and recalls render as HTML tables), the terminal
(``langmem-plugin memories``) and the web page (``langmem-plugin inspect``).

>>> from langmem_plugin import Memory
>>> memory = Memory()
>>> _ = memory.import_history(
...     [("user", "My dog is called Rex"), ("assistant", "Noted.")],
...     {"configurable": {"thread_id": "t1", "user_id": "u1"}},
... )
>>> inspector = memory.inspector()
>>> inspector.catalog().users
['u1']
>>> [row.content for row in inspector.page(user_id="u1").rows]
['User: My dog is called Rex\\nAssistant: Noted.']
>>> [(c.outcome, c.rank) for c in inspector.explain("what is my dog called?", user_id="u1").considered]
[('injected', 1)]
>>> memory.close()

Reading never writes (an explained recall counts no access). :meth:`edit` and :meth:`forget` run
the memory tools' own steps (validated, recorded in history as the inspector's) and only when the
inspector was made with ``writable=True``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, ReadOnlyError
from langmem_plugin.services.agents import Sharing
from langmem_plugin.services.inspect import (
    THREAD,
    Catalog,
    MemoryDetail,
    MemoryPage,
    NamespacePage,
    catalog_steps,
    detail_steps,
    edit_steps,
    explain_steps,
    export_steps,
    namespace_export_steps,
    namespace_steps,
    page_steps,
    remove_steps,
)
from langmem_plugin.services.layout import Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.operations import StoredMemory
from langmem_plugin.services.recall import Recall, RecallConfig
from langmem_plugin.services.store_steps import execute
from langmem_plugin.surfaces._arguments import memory_id_of

__all__ = ["Inspector"]


class Inspector:
    """Read (and, when ``writable``, change) the memory in ``store``.

    Args:
        store: any ``BaseStore`` memory was written to.
        layout: the compartments' namespaces (the agent's; default: the package's).
        recall: the agent's recall settings, so :meth:`explain` ranks as the agent does.
        writable: whether :meth:`edit` and :meth:`forget` may change the store.
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        layout: MemoryLayout | None = None,
        recall: RecallConfig | None = None,
        writable: bool = False,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(f"Inspector needs a LangGraph BaseStore, got {type(store).__name__}")
        self.store = store
        self.layout = layout or MemoryLayout()
        self.recall_config = recall or RecallConfig()
        self.writable = writable

    def __repr__(self) -> str:
        mode = "writable" if self.writable else "read-only"
        return f"Inspector({type(self.store).__name__}, {mode})"

    @staticmethod
    def _scope(user_id: str | None, thread_id: str | None, agent: str | None = None) -> Scope:
        return Scope(user_id=user_id, thread_id=thread_id, agent=agent)

    def _own(
        self, compartment: Compartment | str, scope: Scope, subagent: str | None
    ) -> tuple[MemoryLayout, Scope]:
        """The layout and scope of ``subagent``'s own ``compartment`` (as an ``isolated`` rule gives
        it, whatever the rules say now), or this inspector's and ``scope`` without one."""
        if subagent is None:
            return self.layout, scope
        if compartment == THREAD:
            raise ConfigurationError(
                "subagent= lists one compartment of a sub-agent's own; the thread view has none. "
                "Fix: page('user' or 'session' or 'results', subagent=...)."
            )
        comp = parse_compartment(compartment)
        rules = self.layout.agents.with_agent(subagent, {comp.value: Sharing.ISOLATED})
        return dataclasses.replace(self.layout, agents=rules), scope.as_subagent(subagent)

    def catalog(self) -> Catalog:
        """The users, threads and agents the store has memory for."""
        return execute(self.store, catalog_steps(self.layout))

    def page(
        self,
        compartment: Compartment | str = Compartment.USER,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
        agent: str | None = None,
        subagent: str | None = None,
        offset: int = 0,
        limit: int = 50,
        kind: str | None = None,
        category: str | None = None,
        contains: str | None = None,
        sort: str | None = None,
    ) -> MemoryPage:
        """A page of one compartment's memories (``user_id`` for user memory, ``thread_id`` for
        session memory and results, ``agent`` for knowledge), or with ``"thread"`` everything of
        ``thread_id`` (its session memory, and what its users' memory holds from it); see
        :func:`~langmem_plugin.services.inspect.page_steps` for the filters and ``sort``.
        ``subagent``: that sub-agent's own compartment instead (docs/agents.md)."""
        layout, scope = self._own(compartment, self._scope(user_id, thread_id, agent), subagent)
        return execute(
            self.store,
            page_steps(
                layout,
                scope,
                compartment,
                offset=offset,
                limit=limit,
                kind=kind,
                category=category,
                contains=contains,
                sort=sort,
            ),
        )

    def export(
        self,
        compartment: Compartment | str = Compartment.USER,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
        agent: str | None = None,
        subagent: str | None = None,
        kind: str | None = None,
        category: str | None = None,
        contains: str | None = None,
        sort: str | None = None,
    ) -> dict[str, Any]:
        """The whole view :meth:`page` pages through, as one JSON-able document whose ``items``
        are the memories as stored (namespace, key, timestamps, value)."""
        layout, scope = self._own(compartment, self._scope(user_id, thread_id, agent), subagent)
        return execute(
            self.store,
            export_steps(
                layout, scope, compartment, kind=kind, category=category, contains=contains, sort=sort
            ),
        )

    def namespaces(self, prefix: tuple[str, ...] = (), *, offset: int = 0, limit: int = 50) -> NamespacePage:
        """The namespaces one label under ``prefix`` and a page of the items stored under it, raw."""
        return execute(self.store, namespace_steps(prefix, offset=offset, limit=limit))

    def export_namespace(self, prefix: tuple[str, ...]) -> dict[str, Any]:
        """Every item stored under ``prefix``, as stored, in one JSON-able document."""
        return execute(self.store, namespace_export_steps(prefix))

    def explain(self, query: str, *, user_id: str | None = None, thread_id: str | None = None) -> Recall:
        """Recall ``query`` as the agent would for this user (and thread): the fenced prompt, its
        tokens, and every candidate with its dense and lexical scores, lifts, rank and outcome
        (:attr:`Recall.considered`). Nothing is written."""
        scope = self._scope(user_id, thread_id)
        return execute(self.store, explain_steps(self.layout, scope, query, self.recall_config))

    def show(
        self, memory_id: str, *, user_id: str | None = None, thread_id: str | None = None
    ) -> MemoryDetail:
        """One memory with its history (ADD, UPDATE, INVALIDATE, DELETE: when, by whom, in which
        thread) and the exchanges it came from.

        Raises:
            MemoryNotFoundError: no such memory in the user's or thread's memory.
        """
        scope = self._scope(user_id, thread_id)
        return execute(self.store, detail_steps(self.layout, scope, memory_id_of(memory_id)))

    def edit(
        self, memory_id: str, *, user_id: str | None = None, thread_id: str | None = None, **changes: Any
    ) -> StoredMemory:
        """Change ``content``, ``category``, ``tags`` or ``priority`` of a memory, as the
        ``update_memory`` tool does (validated; recorded in history as the inspector's).

        Raises:
            ReadOnlyError: the inspector is read-only.
            InvalidRecordError: a value the memory cannot hold; nothing is written.
            MemoryNotFoundError: no such memory.
        """
        self._writes("edit")
        scope = self._scope(user_id, thread_id)
        return execute(self.store, edit_steps(self.layout, scope, memory_id_of(memory_id), changes))

    def forget(
        self, memory_id: str, *, user_id: str | None = None, thread_id: str | None = None
    ) -> StoredMemory:
        """Forget a memory as the ``delete_memory`` tool does: with the exchanges it came from.

        Raises:
            ReadOnlyError: the inspector is read-only.
            MemoryNotFoundError: no such memory.
        """
        self._writes("forget")
        scope = self._scope(user_id, thread_id)
        return execute(self.store, remove_steps(self.layout, scope, memory_id_of(memory_id)))

    def _writes(self, what: str) -> None:
        if not self.writable:
            raise ReadOnlyError(
                f"this inspector is read-only: cannot {what}. Fix: Inspector(store, writable=True), "
                "or start `langmem-plugin inspect` with --allow-writes"
            )
