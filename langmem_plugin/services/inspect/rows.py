"""A stored memory as the inspector shows it (:class:`MemoryRow`), and any stored item as the JSON
document a person can read or export (:func:`raw_item`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.store.base import Item

from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.core.validity import INVALID_AT, SUPERSEDED_BY, is_current
from langmem_plugin.services.layout import Compartment
from langmem_plugin.services.operations import read_record

__all__ = ["MemoryRow", "raw_item", "row_of"]


@dataclass(frozen=True)
class MemoryRow:
    """One stored memory as the inspector shows it.

    ``access_count`` counts the reads the memory tools made of it (``search_memory``,
    ``get_memory``), and recall's injections only where recall was configured to count them
    (``RecallConfig(track_access=True)``). ``superseded_by`` is the id of the memory that replaced
    it, when a later one did.
    """

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
    superseded_by: str | None = None

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


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)


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
        invalid_at=_text(record.metadata.get(INVALID_AT)),
        access_count=record.access_count,
        source=record.source,
        sources=list(record.sources),
        superseded_by=_text(record.metadata.get(SUPERSEDED_BY)),
    )


def raw_item(item: Item) -> dict[str, Any]:
    """``item`` as stored, JSON-able: its namespace, key, the store's timestamps and its value
    (what ``store.put(namespace, key, value)`` would write again)."""
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
        "value": item.value,
    }
