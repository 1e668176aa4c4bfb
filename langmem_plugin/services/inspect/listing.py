"""A compartment's memories as rows, paged and filtered, and one memory in full: its history and
the exchanges it came from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Item, SearchOp

from langmem_plugin.core.html import cell, table
from langmem_plugin.core.record import MemoryRecord, parse_exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.validity import is_current
from langmem_plugin.errors import ConfigurationError, MemoryNotFoundError, ScopeError
from langmem_plugin.services.history import HistoryEntry, history_steps
from langmem_plugin.services.layout import Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.operations import read_record
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.upkeep import exchange_namespaces

__all__ = [
    "MAX_PAGE",
    "Exchange",
    "MemoryDetail",
    "MemoryPage",
    "MemoryRow",
    "detail_html",
    "detail_steps",
    "page_html",
    "page_steps",
    "row_of",
]

#: The most rows one page holds.
MAX_PAGE = 500
#: How many stored items a text filter reads at most to fill one page.
_SCAN = 20_000
_CHUNK = 500


@dataclass(frozen=True)
class MemoryRow:
    """One stored memory as the inspector shows it."""

    id: str
    compartment: str
    namespace: tuple[str, ...]
    content: str
    kind: str
    category: str
    tags: list[str]
    priority: int
    created_at: str
    updated_at: str
    current: bool
    invalid_at: str | None
    access_count: int
    source: str | None
    sources: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        out = asdict(self)
        out["namespace"] = list(self.namespace)
        return out


def row_of(item: Item, compartment: Compartment) -> MemoryRow | None:
    """The row of a stored item (``None``: not a memory record)."""
    record = read_record(item)
    if record is None:
        return None
    return _row(item.key, compartment, tuple(item.namespace), record)


def _row(key: str, compartment: Compartment, namespace: tuple[str, ...], record: MemoryRecord) -> MemoryRow:
    return MemoryRow(
        id=key,
        compartment=compartment.value,
        namespace=namespace,
        content=record.content,
        kind=record.kind.value,
        category=record.category,
        tags=list(record.tags),
        priority=record.priority,
        created_at=record.created_at.isoformat(timespec="seconds"),
        updated_at=record.updated_at.isoformat(timespec="seconds"),
        current=is_current(record),
        invalid_at=record.metadata.get("invalid_at"),
        access_count=record.access_count,
        source=record.source,
        sources=list(record.sources),
    )


@dataclass(frozen=True)
class MemoryPage:
    """One page of a compartment's memories.

    Attributes:
        compartment: which compartment.
        namespace: its namespace for the scope.
        rows: the memories of the page, newest change first.
        offset: where the page starts among the matching memories.
        more: whether memories follow the page.
        filters: the filters that made it (``kind``, ``category``, ``contains``).
    """

    compartment: str
    namespace: tuple[str, ...]
    rows: list[MemoryRow]
    offset: int
    more: bool
    filters: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            "compartment": self.compartment,
            "namespace": list(self.namespace),
            "offset": self.offset,
            "more": self.more,
            "filters": dict(self.filters),
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
) -> StoreSteps[MemoryPage]:
    """A page of the memories of ``compartment`` for ``scope``.

    ``kind`` and ``category`` are exact (the store filters on them); ``contains`` keeps the memories
    whose content holds it, case-insensitive (read in chunks, at most a bounded number of items per
    page). Memories come in the store's order (its newest change first for a plain listing).

    Raises:
        ConfigurationError: a bad offset, limit or filter.
        ScopeError: the scope lacks the id the compartment's namespace needs.
    """
    _check_page(offset, limit)
    room = parse_compartment(compartment)
    namespace = layout.namespace(room, scope)
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
    if needle is None:
        (items,) = yield [
            SearchOp(
                namespace, filter=store_filter or None, limit=limit + 1, offset=offset, refresh_ttl=False
            )
        ]
        rows = [r for i in items if tuple(i.namespace) == namespace and (r := row_of(i, room))]
        return MemoryPage(room.value, namespace, rows[:limit], offset, len(items) > limit, filters)
    matched: list[MemoryRow] = []
    read = 0
    more = False
    chunk = _CHUNK
    while read < _SCAN:
        # Chunks double: a store lists a page at an offset by reading what comes before it, so
        # equal chunks would read the first ones again and again (20 times at the bound).
        chunk = min(chunk, _SCAN - read)
        (items,) = yield [
            SearchOp(namespace, filter=store_filter or None, limit=chunk, offset=read, refresh_ttl=False)
        ]
        read += len(items)
        for item in items:
            content = item.value.get("content") if isinstance(item.value, dict) else None
            if not isinstance(content, str) or needle not in content.casefold():
                continue  # the text is checked before a row is made of it
            row = row_of(item, room) if tuple(item.namespace) == namespace else None
            if row is not None:
                matched.append(row)
        if len(matched) > offset + limit:
            more = True
            break
        if len(items) < chunk:
            break
        chunk *= 2
    else:
        more = True  # the scan stopped at its bound: there may be more further on
    return MemoryPage(room.value, namespace, matched[offset : offset + limit], offset, more, filters)


@dataclass(frozen=True)
class Exchange:
    """An exchange a memory came from (``text`` ``None``: it is no longer stored)."""

    link: str
    thread_id: str | None
    text: str | None


@dataclass(frozen=True)
class MemoryDetail:
    """One memory in full: its row, every recorded change, and the exchanges it came from."""

    row: MemoryRow
    history: list[HistoryEntry]
    exchanges: list[Exchange]

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            "memory": self.row.as_dict(),
            "history": [entry.as_dict() for entry in self.history],
            "exchanges": [asdict(exchange) for exchange in self.exchanges],
        }

    def _repr_html_(self) -> str:
        return detail_html(self)


def detail_steps(
    layout: MemoryLayout,
    scope: Scope,
    memory_id: str,
    *,
    compartments: Sequence[Compartment | str] = (
        Compartment.USER,
        Compartment.SESSION,
        Compartment.KNOWLEDGE,
    ),
) -> StoreSteps[MemoryDetail]:
    """``memory_id`` in the first of ``compartments`` (those the scope can name) that holds it, with its
    history (in the scope's user history) and the exchanges of its ``sources``.

    Raises:
        MemoryNotFoundError: no such memory there.
    """
    places: list[tuple[Compartment, tuple[str, ...]]] = []
    for compartment in compartments:
        room = parse_compartment(compartment)
        try:
            places.append((room, layout.namespace(room, scope)))
        except ScopeError:  # a compartment the scope cannot name is not searched
            continue
    found = (yield [GetOp(ns, memory_id) for _, ns in places]) if places else []
    row = next(
        (r for (room, _), item in zip(places, found, strict=True) if item and (r := row_of(item, room))),
        None,
    )
    if row is None:
        where = ", ".join("/".join(ns) for _, ns in places) or "no compartment the scope can name"
        raise MemoryNotFoundError(memory_id, f"no memory {memory_id!r} in {where}")
    history: list[HistoryEntry] = []
    if scope.user_id is not None:
        history = yield from history_steps(scope, memory_id)
    exchanges: list[Exchange] = []
    if row.sources:
        spots = [(link, place) for link in row.sources for place in exchange_namespaces(scope, layout, link)]
        got = (yield [GetOp(ns, key) for _, (ns, key) in spots]) if spots else []
        texts: dict[str, str] = {}
        for (link, _), item in zip(spots, got, strict=True):
            if item is not None and link not in texts:
                record = read_record(item)
                if record is not None:
                    texts[link] = record.content
        exchanges = [Exchange(link, parse_exchange_link(link)[0], texts.get(link)) for link in row.sources]
    return MemoryDetail(row, history, exchanges)


# -- notebook views (every value escaped) ------------------------------------------------------

_ROW_HEADERS = ("id", "kind", "category", "tags", "priority", "updated", "current", "accessed", "content")


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


def detail_html(detail: MemoryDetail) -> str:
    """A memory, its history as a timeline and the exchanges it came from."""
    row = detail.row
    facts = table(
        ("field", "value"),
        [(name, value) for name, value in row.as_dict().items() if name != "content"],
        caption=f"memory {row.id}",
    )
    content = f"<blockquote>{cell(row.content, limit=20_000)}</blockquote>"
    history = table(
        ("when", "action", "by", "thread", "run", "old", "new", "reason"),
        [(e.at, e.action, e.source, e.thread_id, e.run_id, e.old, e.new, e.reason) for e in detail.history],
        caption="history",
    )
    sources = table(
        ("exchange", "thread", "text"),
        [
            (x.link, x.thread_id, x.text if x.text is not None else "(no longer stored)")
            for x in detail.exchanges
        ],
        caption="came from",
    )
    return facts + content + history + sources
