"""A view's memories as rows, paged, filtered and sorted (:class:`MemoryPage`), and the same view
exported whole as the stored items (:func:`export_steps`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import SearchOp

from langmem_plugin.core.html import table
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.inspect.rows import MemoryRow, raw_item, row_of
from langmem_plugin.services.inspect.selection import THREAD, parse_sort, select_steps
from langmem_plugin.services.layout import Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.store_steps import StoreSteps

__all__ = ["MAX_PAGE", "MemoryPage", "export_steps", "page_html", "page_steps"]

#: The most rows one page holds.
MAX_PAGE = 500


@dataclass(frozen=True)
class MemoryPage:
    """One page of a view's memories (a compartment's, or a thread's).

    Attributes:
        compartment: which compartment, or ``"thread"`` for everything of a thread.
        namespace: its namespace for the scope (a thread's: its session memory's).
        rows: the memories of the page, newest change first unless sorted.
        offset: where the page starts among the matching memories.
        more: whether memories follow the page.
        filters: the filters that made it (``kind``, ``category``, ``contains``).
        sort: the column it is sorted by (``-`` in front: from the largest), or ``None``.
        complete: whether the whole view was read (``False``: a filter or a sort saw the newest
            :data:`~langmem_plugin.services.inspect.SCAN` items of a namespace that holds more).
        namespaces: every namespace the rows come from.
        users: for a thread, each user who spoke in it and that user's namespace.
    """

    compartment: str
    namespace: tuple[str, ...]
    rows: list[MemoryRow]
    offset: int
    more: bool
    filters: dict[str, str] = field(default_factory=dict)
    sort: str | None = None
    complete: bool = True
    namespaces: list[tuple[str, ...]] = field(default_factory=list)
    users: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            "compartment": self.compartment,
            "namespace": list(self.namespace),
            "offset": self.offset,
            "more": self.more,
            "filters": dict(self.filters),
            "sort": self.sort,
            "complete": self.complete,
            "namespaces": [list(ns) for ns in self.namespaces],
            "users": {user: list(ns) for user, ns in self.users.items()},
            "rows": [row.as_dict() for row in self.rows],
        }

    def _repr_html_(self) -> str:
        return page_html(self)


def _check_page(offset: Any, limit: Any) -> None:
    for name, value, least in (("offset", offset, 0), ("limit", limit, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigurationError(f"{name} must be a whole number of at least {least}, got {value!r}")
    if limit > MAX_PAGE:
        raise ConfigurationError(f"limit must be at most {MAX_PAGE}, got {limit!r}: page through with offset")


def _filters(
    kind: str | None, category: str | None, contains: str | None
) -> tuple[dict[str, Any], dict[str, str], str | None]:
    """The store filter, the filters as given, and the casefolded text to look for."""
    store_filter: dict[str, Any] = {}
    filters: dict[str, str] = {}
    for name, value in (("kind", kind), ("category", category)):
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise ConfigurationError(f"{name} must be a string, got {value!r}")
        store_filter[name] = value
        filters[name] = value
    needle = None
    if contains:
        if not isinstance(contains, str):
            raise ConfigurationError(f"contains must be a string, got {contains!r}")
        needle = contains.casefold()
        filters["contains"] = contains
    return store_filter, filters, needle


def _view(view: Compartment | str, scope: Scope) -> str:
    """The view's name: a compartment's value, or :data:`THREAD` (which needs a thread id)."""
    if view == THREAD:
        if scope.thread_id is None:
            raise ConfigurationError(
                "the thread view shows one thread's memory: give thread_id (e.g. thread_id='t1')"
            )
        return THREAD
    return parse_compartment(view).value


def _room(view: str) -> str:
    """The compartment of a view's own namespace (a thread's: its session memory)."""
    return Compartment.SESSION.value if view == THREAD else view


def page_steps(
    layout: MemoryLayout,
    scope: Scope,
    compartment: Compartment | str = Compartment.USER,
    *,
    offset: int = 0,
    limit: int = 50,
    kind: str | None = None,
    category: str | None = None,
    contains: str | None = None,
    sort: str | None = None,
) -> StoreSteps[MemoryPage]:
    """A page of the memories of ``compartment`` for ``scope``, or with ``"thread"`` of everything
    of ``scope.thread_id``: its session memory and, for each user who spoke in it, the exchanges
    stored in the user's memory from it and the memories added in it.

    ``kind`` and ``category`` are exact (the store filters on them); ``contains`` keeps the memories
    whose content holds it, case-insensitive; ``sort`` names a column
    (:data:`~langmem_plugin.services.inspect.SORTS`, a ``-`` in front for the largest first).
    Without a sort, memories come in the store's order (its newest change first). A text filter,
    a sort and the thread view read at most :data:`~langmem_plugin.services.inspect.SCAN` items
    of each namespace (``complete`` says whether that was all).

    Raises:
        ConfigurationError: a bad offset, limit, filter or sort.
        ScopeError: the scope lacks the id the compartment's namespace needs.
    """
    _check_page(offset, limit)
    order = parse_sort(sort)
    view = _view(compartment, scope)
    store_filter, filters, needle = _filters(kind, category, contains)
    namespace = layout.namespace(Compartment(_room(view)), scope)
    if needle is None and order is None and view != THREAD:
        room = Compartment(view)
        (items,) = yield [
            SearchOp(
                namespace, filter=store_filter or None, limit=limit + 1, offset=offset, refresh_ttl=False
            )
        ]
        rows = [r for i in items if tuple(i.namespace) == namespace and (r := row_of(i, room))]
        return MemoryPage(
            view, namespace, rows[:limit], offset, len(items) > limit, filters, namespaces=[namespace]
        )
    chosen = yield from select_steps(layout, scope, view, store_filter, needle, order, offset + limit)
    shown = chosen.items[offset : offset + limit]
    rooms = {ns: Compartment.USER for ns in chosen.users.values()}
    rows = [r for i in shown if (r := row_of(i, rooms.get(tuple(i.namespace), Compartment(_room(view)))))]
    return MemoryPage(
        view,
        namespace,
        rows,
        offset,
        len(chosen.items) > offset + limit or chosen.bounded,
        filters,
        sort or None,
        complete=not chosen.bounded,
        namespaces=chosen.namespaces,
        users=chosen.users,
    )


def export_steps(
    layout: MemoryLayout,
    scope: Scope,
    compartment: Compartment | str = Compartment.USER,
    *,
    kind: str | None = None,
    category: str | None = None,
    contains: str | None = None,
    sort: str | None = None,
) -> StoreSteps[dict[str, Any]]:
    """The whole view :func:`page_steps` pages through, as one JSON-able document: the view, its
    filters and sort, and every memory as stored (``items``: namespace, key, timestamps, value),
    at most :data:`~langmem_plugin.services.inspect.SCAN` per namespace (``complete`` says whether
    that was all)."""
    order = parse_sort(sort)
    view = _view(compartment, scope)
    store_filter, filters, needle = _filters(kind, category, contains)
    chosen = yield from select_steps(layout, scope, view, store_filter, needle, order)
    return {
        "view": view,
        "namespaces": [list(ns) for ns in chosen.namespaces],
        "filters": filters,
        "sort": sort or None,
        "complete": not chosen.bounded,
        "count": len(chosen.items),
        "items": [raw_item(item) for item in chosen.items],
    }


# -- notebook view (every value escaped) -------------------------------------------------------

_ROW_HEADERS = ("id", "kind", "category", "tags", "priority", "updated", "current", "reads", "content")


def page_html(page: MemoryPage) -> str:
    """A page of memories as one table."""
    rows = [
        (r.id, r.kind, r.category, r.tags, r.priority, r.updated_at, r.current, r.access_count, r.content)
        for r in page.rows
    ]
    where = "/".join(page.namespace)
    shown = f"{page.offset + 1}–{page.offset + len(page.rows)}" if page.rows else "none"
    caption = f"{page.compartment} memory {where}: {shown}{' (more follow)' if page.more else ''}"
    return table(_ROW_HEADERS, rows, caption=caption)
