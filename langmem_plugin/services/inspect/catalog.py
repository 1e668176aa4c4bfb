"""Who and what a store holds: its users, threads and agents, read from the layout's namespaces
and the thread index remember keeps per user."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import ListNamespacesOp, MatchCondition, SearchOp

from langmem_plugin.core.scope import NamespaceTemplate
from langmem_plugin.services.layout import STORED_COMPARTMENTS, Compartment, MemoryLayout
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.upkeep import THREAD_INDEX

__all__ = ["Catalog", "catalog_steps", "ids_steps"]

_PAGE = 1000
_SLOT = {"{user_id}": "users", "{thread_id}": "threads", "{agent}": "agents"}


@dataclass(frozen=True)
class Catalog:
    """The users, threads and agents that have something in a store, sorted.

    Attributes:
        users: user ids with user memory.
        threads: thread ids with session memory or tool results, or that a user spoke in.
        agents: agents with knowledge.
        compartments: for each compartment, the ids it has memory for (a user, thread or agent id).
        user_threads: for each user, the threads remember recorded them in.
    """

    users: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    compartments: dict[str, list[str]] = field(default_factory=dict)
    user_threads: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            "users": self.users,
            "threads": self.threads,
            "agents": self.agents,
            "compartments": self.compartments,
            "user_threads": self.user_threads,
        }


def _slot(template: NamespaceTemplate) -> tuple[int, str] | None:
    """The position and kind of the first id slot of a compartment's template (``None``: no slot)."""
    for place, part in enumerate(template):
        if part in _SLOT:
            return place, _SLOT[part]
    return None


def ids_steps(template: NamespaceTemplate, place: int) -> StoreSteps[set[str]]:
    """The ids in slot ``place`` of the namespaces that fill ``template``, paged."""
    prefix = tuple(template[:place])
    ids: set[str] = set()
    offset = 0
    while True:
        (page,) = yield [
            ListNamespacesOp(
                match_conditions=(MatchCondition("prefix", prefix),) if prefix else None,
                max_depth=len(template),
                limit=_PAGE,
                offset=offset,
            )
        ]
        for namespace in page:
            if len(namespace) == len(template) and all(
                t == n or t.startswith("{") for t, n in zip(template, namespace, strict=True)
            ):
                ids.add(namespace[place])
        if len(page) < _PAGE:
            return ids
        offset += _PAGE


def catalog_steps(layout: MemoryLayout) -> StoreSteps[Catalog]:
    """The :class:`Catalog` of a store under ``layout``: one namespace listing per compartment and
    one of the thread index, paged, then each indexed user's threads."""
    found: dict[str, set[str]] = {"users": set(), "threads": set(), "agents": set()}
    compartments: dict[str, list[str]] = {}
    for compartment in STORED_COMPARTMENTS:
        template = layout.template(compartment)
        slot = _slot(template)
        if slot is None:
            continue
        place, kind = slot
        ids = yield from ids_steps(template, place)
        found[kind] |= ids
        compartments[Compartment(compartment).value] = sorted(ids)
    user_threads: dict[str, list[str]] = {}
    for user in sorted((yield from ids_steps(THREAD_INDEX, len(THREAD_INDEX) - 1))):
        threads: list[str] = []
        namespace = (*THREAD_INDEX[:-1], user)
        while True:
            (page,) = yield [SearchOp(namespace, limit=_PAGE, offset=len(threads), refresh_ttl=False)]
            threads.extend(item.key for item in page)
            if len(page) < _PAGE:
                break
        user_threads[user] = sorted(threads)
        found["threads"] |= set(threads)
    return Catalog(
        sorted(found["users"]),
        sorted(found["threads"]),
        sorted(found["agents"]),
        compartments,
        user_threads,
    )
