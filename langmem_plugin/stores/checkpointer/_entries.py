"""What the store knows about one item: a live :class:`Entry`, the :class:`VersionRef` of each version.

Pure: no I/O. Both are folded from the records of the log (see ``_log``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from langgraph.store.base import Item, SearchItem

from langmem_plugin.stores._common import index_texts
from langmem_plugin.stores.checkpointer._log import parse_time

__all__ = [
    "Entry",
    "IndexArg",
    "Mode",
    "VersionRef",
    "copy_json",
    "entry_from_record",
    "lexical_text",
    "ref_from_record",
]

Mode = Literal["semantic", "lexical", "hybrid"]
IndexArg = Literal[False] | list[str] | None


def copy_json(obj: Any) -> Any:
    """A deep copy of a JSON value (faster than ``copy.deepcopy``)."""
    if isinstance(obj, dict):
        return {k: copy_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copy_json(v) for v in obj]
    return obj


def _leaves(obj: Any, out: list[str]) -> None:
    if isinstance(obj, dict):
        for v in obj.values():
            _leaves(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _leaves(v, out)
    elif isinstance(obj, str):
        out.append(obj)
    elif obj is not None and not isinstance(obj, bool):
        out.append(str(obj))


def lexical_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text BM25 indexes: the fields' texts, or every string/number in the value when no fields."""
    if not fields or list(fields) == ["$"]:
        out: list[str] = []
        _leaves(value, out)
        return "\n".join(out)
    return "\n".join(index_texts(value, fields))


@dataclass(slots=True)
class Entry:
    """A live item and what the indexes need to know about it."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    ttl: float | None
    index: IndexArg
    checkpoint_id: str
    slot: int = -1
    updated_ts: float = field(init=False)

    def __post_init__(self) -> None:
        self.updated_ts = self.updated_at.timestamp()

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def item(self) -> Item:
        return Item(
            value=copy_json(self.value),
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def search_item(self, score: float | None) -> SearchItem:
        return SearchItem(
            namespace=self.namespace,
            key=self.key,
            value=copy_json(self.value),
            created_at=self.created_at,
            updated_at=self.updated_at,
            score=score,
        )


@dataclass(frozen=True, slots=True)
class VersionRef:
    """One version of an item in the log: its checkpoint, whether it is a deletion, and when."""

    checkpoint_id: str
    deleted: bool
    at: datetime


def entry_from_record(
    namespace: tuple[str, ...],
    key: str,
    cid: str,
    record: Mapping[str, Any],
    value: dict[str, Any] | None = None,
) -> Entry:
    """The live entry a put record describes (``value``: the record's value already decoded)."""
    created = parse_time(record["created_at"])
    updated = parse_time(record["updated_at"])
    assert created is not None
    assert updated is not None
    return Entry(
        namespace=namespace,
        key=key,
        value=json.loads(record["value"]) if value is None else value,
        created_at=created,
        updated_at=updated,
        expires_at=parse_time(record.get("expires_at")),
        ttl=record.get("ttl"),
        index=record.get("index"),
        checkpoint_id=cid,
    )


def ref_from_record(cid: str, record: Mapping[str, Any]) -> VersionRef | None:
    """The version reference of a put or delete record (None for a TTL refresh)."""
    if record["op"] == "put":
        at = parse_time(record["updated_at"])
    elif record["op"] == "delete":
        at = parse_time(record["at"])
    else:
        return None
    assert at is not None
    return VersionRef(cid, record["op"] == "delete", at)
