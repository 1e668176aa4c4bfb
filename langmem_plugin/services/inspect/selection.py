"""Which memories a view of the inspector holds, read in bounded chunks, and in which order.

A view is one compartment's namespace for a scope, or :data:`THREAD`: everything a thread has
(its session memory, and for each user who spoke in it the user memory that came from it: the
exchanges remember stored there, and the memories the history says were added in it). A view
sorted by a column (:data:`SORTS`), filtered by text, or drawn from several namespaces reads at
most :data:`SCAN` items per namespace, newest change first, so a sort or a filter sees the newest
ones when a compartment holds more (the selection says so: it is ``bounded``). A selection holds
the stored items and sorts them by their stored values (as the rows would show them); rows are
made for the page shown only, so a sort costs no more than a text filter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import GetOp, Item, SearchOp

from langmem_plugin.core.record import DEFAULT_CATEGORY, MemoryKind
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.validity import INVALID_AT
from langmem_plugin.errors import ConfigurationError, ScopeError
from langmem_plugin.services.history import HISTORY_NAMESPACE
from langmem_plugin.services.inspect.catalog import ids_steps
from langmem_plugin.services.layout import Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.upkeep import THREAD_INDEX

__all__ = ["SCAN", "SORTS", "THREAD", "Selection", "parse_sort", "select_steps", "thread_users_steps"]

#: The view of a thread: its session memory and what its users' memory holds from it.
THREAD = "thread"
#: The columns a view sorts by (``sort="priority"``; a ``-`` in front sorts from the largest).
SORTS = ("id", "content", "kind", "category", "priority", "created", "updated", "current", "reads")
#: How many stored items a filtered, sorted or thread view reads at most per namespace.
SCAN = 20_000
_CHUNK = 500
_GETS = 1000

_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _field(item: Item, name: str, kind: type, default: Any) -> Any:
    """The stored value's ``name`` when it is a ``kind``, else ``default`` (a record's default)."""
    value = item.value.get(name, default) if isinstance(item.value, dict) else default
    return value if isinstance(value, kind) and not isinstance(value, bool) else default


def _time(item: Item, name: str) -> datetime:
    text = _field(item, name, str, "")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return _EARLIEST
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _current(item: Item) -> bool:
    return INVALID_AT not in _field(item, "metadata", dict, {})


# What a row shows in each column, read from the stored value with the record's defaults.
_KEYS: dict[str, Callable[[Item], Any]] = {
    "id": lambda item: item.key,
    "content": lambda item: _field(item, "content", str, "").casefold(),
    "kind": lambda item: _field(item, "kind", str, MemoryKind.FACT.value),
    "category": lambda item: _field(item, "category", str, DEFAULT_CATEGORY).casefold(),
    "priority": lambda item: _field(item, "priority", int, 5),
    "created": lambda item: _time(item, "created_at"),
    "updated": lambda item: _time(item, "updated_at"),
    "current": _current,
    "reads": lambda item: _field(item, "access_count", int, 0),
}


def parse_sort(sort: str | None) -> tuple[str, bool] | None:
    """``sort`` as (column, descending); ``None`` or ``""``: the store's order.

    >>> parse_sort("-priority"), parse_sort("kind"), parse_sort(None)
    (('priority', True), ('kind', False), None)
    """
    if sort is None or sort == "":
        return None
    if not isinstance(sort, str) or sort.removeprefix("-") not in SORTS:
        raise ConfigurationError(
            f"sort is one of {', '.join(SORTS)} (a '-' in front sorts from the largest); got {sort!r}"
        )
    return sort.removeprefix("-"), sort.startswith("-")


@dataclass
class Selection:
    """The memories of a view, in order, as stored items.

    Attributes:
        items: what the view holds, in the store's order or the sort asked for.
        bounded: whether a namespace held more than :data:`SCAN` items (the view is of the
            newest ones).
        namespaces: the namespaces read.
        users: for a thread, each user who spoke in it and that user's namespace.
    """

    items: list[Item] = field(default_factory=list)
    bounded: bool = False
    namespaces: list[tuple[str, ...]] = field(default_factory=list)
    users: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _matches(item: Item, store_filter: dict[str, Any], needle: str | None) -> bool:
    """Whether ``item`` has the exact values of ``store_filter`` and holds ``needle`` (casefolded)."""
    value = item.value if isinstance(item.value, dict) else {}
    if any(value.get(name) != wanted for name, wanted in store_filter.items()):
        return False
    return _holds(item, needle)


def _holds(item: Item, needle: str | None) -> bool:
    """Whether ``item`` is a memory (its value has a text ``content``) holding ``needle``."""
    content = item.value.get("content") if isinstance(item.value, dict) else None
    return isinstance(content, str) and (needle is None or needle in content.casefold())


def collect_steps(
    namespace: tuple[str, ...],
    store_filter: dict[str, Any] | None,
    needle: str | None,
    enough: int | None = None,
) -> StoreSteps[tuple[list[Item], bool]]:
    """The memories directly in ``namespace`` that pass ``store_filter`` (the store filters) and
    hold ``needle`` (checked here, before a row is made of the text), in the store's order: all of
    them within :data:`SCAN` items read, or the first ``enough + 1``; and whether the reading
    stopped at the bound with items left."""
    found: list[Item] = []
    read = 0
    # All at once when all are wanted; else chunks that double: a store lists a page at an offset
    # by reading what comes before it, so equal chunks would read the first ones again and again.
    chunk = SCAN if enough is None else _CHUNK
    while read < SCAN:
        chunk = min(chunk, SCAN - read)
        (items,) = yield [
            SearchOp(namespace, filter=store_filter or None, limit=chunk, offset=read, refresh_ttl=False)
        ]
        read += len(items)
        found += [item for item in items if tuple(item.namespace) == namespace and _holds(item, needle)]
        if (enough is not None and len(found) > enough) or len(items) < chunk:
            return found, False
        chunk *= 2
    return found, True


def thread_users_steps(thread_id: str) -> StoreSteps[list[str]]:
    """The users who spoke in ``thread_id``: those whose thread index (remember keeps one per
    user, :data:`~langmem_plugin.services.upkeep.THREAD_INDEX`) holds it, sorted."""
    users = sorted((yield from ids_steps(THREAD_INDEX, len(THREAD_INDEX) - 1)))
    spoke: list[str] = []
    for start in range(0, len(users), _GETS):
        some = users[start : start + _GETS]
        got = yield [GetOp((*THREAD_INDEX[:-1], user), thread_id) for user in some]
        spoke += [user for user, item in zip(some, got, strict=True) if item is not None]
    return spoke


def _added_in_steps(scope: Scope, thread_id: str) -> StoreSteps[tuple[list[str], bool]]:
    """The ids of the memories the user's history says were added in ``thread_id``."""
    namespace = scope.namespace(HISTORY_NAMESPACE)
    ids: dict[str, None] = {}
    read = 0
    while read < SCAN:
        (items,) = yield [
            SearchOp(
                namespace,
                filter={"thread_id": thread_id, "action": "ADD"},
                limit=_CHUNK,
                offset=read,
                refresh_ttl=False,
            )
        ]
        read += len(items)
        ids.update((str(item.value.get("memory_id")), None) for item in items if item.value.get("memory_id"))
        if len(items) < _CHUNK:
            return list(ids), False
    return list(ids), True


def _thread_steps(
    layout: MemoryLayout, thread_id: str, store_filter: dict[str, Any], needle: str | None
) -> StoreSteps[Selection]:
    session = layout.namespace(Compartment.SESSION, Scope(thread_id=thread_id))
    items, bounded = yield from collect_steps(session, store_filter, needle)
    selection = Selection(items, bounded, [session])
    for user in (yield from thread_users_steps(thread_id)):
        try:
            scope = Scope(user_id=user, thread_id=thread_id)
            namespace = layout.namespace(Compartment.USER, scope)
        except ScopeError:  # an index entry no scope can name: not a user of this layout
            continue
        selection.users[user] = namespace
        selection.namespaces.append(namespace)
        said = {**store_filter, "metadata": {"thread_id": thread_id}}
        found, bounded = yield from collect_steps(namespace, said, needle)
        selection.bounded |= bounded
        seen = {item.key for item in found}
        added, bounded = yield from _added_in_steps(scope, thread_id)
        selection.bounded |= bounded
        missing = [key for key in added if key not in seen]
        for start in range(0, len(missing), _GETS):
            got = yield [GetOp(namespace, key) for key in missing[start : start + _GETS]]
            found += [item for item in got if item is not None and _matches(item, store_filter, needle)]
        selection.items += found
    # the store's order over every namespace: newest change first, then namespace and key
    selection.items.sort(key=lambda item: (item.namespace, item.key))
    selection.items.sort(key=lambda item: item.updated_at, reverse=True)
    return selection


def select_steps(
    layout: MemoryLayout,
    scope: Scope,
    view: Compartment | str,
    store_filter: dict[str, Any],
    needle: str | None,
    order: tuple[str, bool] | None,
    enough: int | None = None,
) -> StoreSteps[Selection]:
    """The memories of ``view`` (a compartment, or :data:`THREAD` for ``scope.thread_id``) that
    pass ``store_filter`` and hold ``needle``, sorted by ``order`` (see :func:`parse_sort`).

    ``enough``: a view of one namespace in the store's order may stop reading once it has
    ``enough + 1`` memories.
    """
    if view == THREAD:
        if scope.thread_id is None:
            raise ConfigurationError("the thread view needs a thread_id")
        selection = yield from _thread_steps(layout, scope.thread_id, store_filter, needle)
    else:
        namespace = layout.namespace(parse_compartment(view), scope)
        items, bounded = yield from collect_steps(
            namespace, store_filter, needle, enough if order is None else None
        )
        selection = Selection(items, bounded, [namespace])
    if order is not None:
        column, descending = order
        selection.items.sort(key=_KEYS[column], reverse=descending)
    return selection
