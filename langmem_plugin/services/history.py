"""History: every change to a memory — by consolidation, the memory tools or forgetting — readable by id.

Each change is one item in the user's history namespace
(``("memory_meta", "history", "{user_id}")`` by default): when, which memory,
what was done (``ADD``, ``UPDATE``, ``INVALIDATE``, ``DELETE``, ``EVICT``, ``PROMOTE``), the
old and the new content, the run, thread and agent it happened in, and the reason the
decision gave. ``source`` says who made it: ``"consolidation"``, ``"forget"``, ``"promote"``,
or the memory tool (``"tool:save_memory"``, ``"tool:update_memory"``, ``"tool:delete_memory"``,
``"tool:clear_memory"``; :mod:`~langmem_plugin.services.operations` writes the entry in the
same batch as the change). A promotion into team memory (:mod:`langmem_plugin.services.team`)
is recorded in the promoter's history under the memory promoted and under its team copy, with
``details``: where it came from, where the copy went, and who promoted it. The same path works
on every BaseStore (CheckpointerStore keeps its own item history besides). :func:`history_steps`
reads the changes of one memory, oldest first; ``forget_user`` deletes a user's history with the rest.

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.core.scope import Scope
>>> from langmem_plugin.services.store_steps import execute
>>> store, scope = InMemoryStore(), Scope(user_id="u1", run_id="r1")
>>> store.batch(history_ops(scope, [Change("m1", "ADD", None, "Likes tea", "new")]))
[None]
>>> [(e.action, e.new, e.run_id) for e in execute(store, history_steps(scope, "m1"))]
[('ADD', 'Likes tea', 'r1')]
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from langgraph.store.base import PutOp, SearchOp

from langmem_plugin.core.record import utc_now
from langmem_plugin.core.scope import NamespaceTemplate, Scope
from langmem_plugin.services.store_steps import StoreSteps

__all__ = ["HISTORY_NAMESPACE", "Action", "Change", "HistoryEntry", "history_ops", "history_steps"]

#: Where a user's history lives, filled from the scope.
#: Beside the compartments, not under ``"memories"``: a listing of memories never shows history items.
HISTORY_NAMESPACE: NamespaceTemplate = ("memory_meta", "history", "{user_id}")

Action = Literal["ADD", "UPDATE", "INVALIDATE", "DELETE", "EVICT", "PROMOTE"]
_PAGE = 200


@dataclass(frozen=True)
class Change:
    """One change to a memory, before it is recorded.

    Attributes:
        memory_id: the memory's id.
        action: what was done.
        old: the content before (``None`` for ``ADD``).
        new: the content after (``None`` for ``DELETE``/``EVICT``).
        reason: why (the decision's words, or who asked).
        details: ids and namespaces the change links (a promotion: ``from``, ``to``, ``copy``).
    """

    memory_id: str
    action: Action
    old: str | None
    new: str | None
    reason: str | None = None
    details: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class HistoryEntry:
    """A recorded change: a :class:`Change` with when, in which run and thread, and by which agent
    (``None``: the config named none)."""

    memory_id: str
    action: str
    old: str | None
    new: str | None
    reason: str | None
    at: str
    run_id: str | None
    thread_id: str | None
    source: str
    agent: str | None = None
    details: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The entry as a JSON-able dict."""
        return asdict(self)


def history_ops(
    scope: Scope,
    changes: Sequence[Change],
    *,
    source: str = "consolidation",
    template: NamespaceTemplate = HISTORY_NAMESPACE,
) -> list[PutOp]:
    """The writes that record ``changes`` in the history of ``scope``'s user."""
    namespace = scope.namespace(template)
    ops = []
    for change in changes:
        at = utc_now().isoformat()
        entry = HistoryEntry(
            change.memory_id,
            change.action,
            change.old,
            change.new,
            change.reason,
            at,
            scope.run_id,
            scope.thread_id,
            source,
            scope.agent,
            dict(change.details) if change.details is not None else None,
        )
        key = f"{change.memory_id}-{at}-{uuid.uuid4().hex[:6]}"
        ops.append(PutOp(namespace, key, entry.as_dict(), index=False))
    return ops


def history_steps(
    scope: Scope, memory_id: str, *, template: NamespaceTemplate = HISTORY_NAMESPACE
) -> StoreSteps[list[HistoryEntry]]:
    """The recorded changes of ``memory_id`` in ``scope``'s user history, oldest first."""
    namespace = scope.namespace(template)
    entries: list[HistoryEntry] = []
    offset = 0
    while True:
        (page,) = yield [
            SearchOp(
                namespace, filter={"memory_id": memory_id}, limit=_PAGE, offset=offset, refresh_ttl=False
            )
        ]
        for item in page:
            value = item.value
            try:
                entries.append(HistoryEntry(**{k: value.get(k) for k in HistoryEntry.__dataclass_fields__}))
            except TypeError:  # pragma: no cover - an item written by something else
                continue
        if len(page) < _PAGE:
            break
        offset += _PAGE
    entries.sort(key=lambda e: e.at)
    return entries
