"""One memory in full: its row, the item as stored, its history and the exchanges it came from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.store.base import GetOp

from langmem_plugin.core.html import cell, table
from langmem_plugin.core.record import parse_exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import MemoryNotFoundError, ScopeError
from langmem_plugin.services.history import HistoryEntry, history_steps
from langmem_plugin.services.inspect.rows import MemoryRow, raw_item, row_of
from langmem_plugin.services.layout import Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.operations import read_record
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.upkeep import exchange_namespaces

__all__ = ["Exchange", "MemoryDetail", "detail_html", "detail_steps"]


@dataclass(frozen=True)
class Exchange:
    """An exchange a memory came from (``text`` ``None``: it is no longer stored)."""

    link: str
    thread_id: str | None
    text: str | None


@dataclass(frozen=True)
class MemoryDetail:
    """One memory in full.

    Attributes:
        row: the memory as a row.
        history: every recorded change of it, oldest first.
        exchanges: the exchanges it came from.
        stored: the item as the store holds it (:func:`~langmem_plugin.services.inspect.raw_item`).
    """

    row: MemoryRow
    history: list[HistoryEntry]
    exchanges: list[Exchange]
    stored: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            "memory": self.row.as_dict(),
            "history": [entry.as_dict() for entry in self.history],
            "exchanges": [asdict(exchange) for exchange in self.exchanges],
            "stored": self.stored,
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
    hit = next(
        (
            (item, row)
            for (room, _), item in zip(places, found, strict=True)
            if item and (row := row_of(item, room))
        ),
        None,
    )
    if hit is None:
        where = ", ".join("/".join(ns) for _, ns in places) or "no compartment the scope can name"
        raise MemoryNotFoundError(memory_id, f"no memory {memory_id!r} in {where}")
    item, row = hit
    history: list[HistoryEntry] = []
    if scope.user_id is not None:
        history = yield from history_steps(scope, memory_id)
    exchanges: list[Exchange] = []
    if row.sources:
        spots = [(link, place) for link in row.sources for place in exchange_namespaces(scope, layout, link)]
        got = (yield [GetOp(ns, key) for _, (ns, key) in spots]) if spots else []
        texts: dict[str, str] = {}
        for (link, _), source in zip(spots, got, strict=True):
            if source is not None and link not in texts:
                record = read_record(source)
                if record is not None:
                    texts[link] = record.content
        exchanges = [Exchange(link, parse_exchange_link(link)[0], texts.get(link)) for link in row.sources]
    return MemoryDetail(row, history, exchanges, raw_item(item))


def detail_html(detail: MemoryDetail) -> str:
    """A memory, its history as a timeline and the exchanges it came from (every value escaped)."""
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
