"""Export and import store items as JSON Lines, between any two LangGraph BaseStores.

The file: a header line ``{"format": "langmem-store-export", "version": 1}``,
then one item per line::

    {"namespace": ["users", "u1"], "key": "k1", "value": {...},
     "created_at": "2025-01-01T12:00:00+00:00", "updated_at": "...",
     "ttl": 30.0, "expires_at": "..."}

``ttl`` (minutes) and ``expires_at`` are null for items that never expire.

A store that implements :class:`TransferableStore` (``QdrantStore`` does)
exports its items with their TTL and imports them exactly: values, timestamps
and expiry are kept, so an export of it, imported into another such store, is
an exact copy. Any other ``BaseStore`` works too, through its public API:
exporting pages through ``search`` (no TTL is known there), importing with
``put`` — the target then sets the timestamps itself, and a TTL is kept only
when the target supports TTL. Expired items are never exported nor imported.

>>> import io
>>> from langgraph.store.memory import InMemoryStore
>>> source, target = InMemoryStore(), InMemoryStore()
>>> source.put(("users", "u1"), "k1", {"text": "likes green tea"})
>>> buffer = io.StringIO()
>>> export_jsonl(source, buffer)
1
>>> _ = buffer.seek(0)
>>> import_jsonl(target, buffer)
1
>>> target.get(("users", "u1"), "k1").value
{'text': 'likes green tea'}
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.errors import InvalidValueError
from langmem_plugin.stores._common import utc_clock
from langmem_plugin.stores._validation import validate_namespace, validate_value

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "StoredItem",
    "TransferableStore",
    "copy_items",
    "export_jsonl",
    "import_jsonl",
    "iter_items",
    "write_items",
]

EXPORT_FORMAT = "langmem-store-export"
EXPORT_VERSION = 1


@dataclass(frozen=True)
class StoredItem:
    """An item as exported: value, timestamps and TTL.

    Attributes:
        namespace: the item's namespace.
        key: its key.
        value: its value (a JSON object).
        created_at: when it was first written (aware UTC).
        updated_at: when it was last written (aware UTC).
        ttl: its TTL in minutes (None: never expires).
        expires_at: when it expires (None: never).
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl: float | None = None
    expires_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of one line."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "ttl": self.ttl,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }

    @classmethod
    def from_json(cls, data: Any, *, line: int = 0) -> StoredItem:
        """Parse and validate one line's object.

        Raises:
            InvalidValueError: a missing field or a bad value (the message names the line).
            InvalidNamespaceError: a namespace LangGraph's rules reject.
        """
        where = f"line {line}: " if line else ""
        if not isinstance(data, dict):
            raise InvalidValueError(f"{where}an exported item must be a JSON object, got {data!r:.80}")
        try:
            namespace = validate_namespace(data["namespace"])
            key = data["key"]
            if not isinstance(key, str) or not key:
                raise InvalidValueError(f"{where}the key must be a non-empty string, got {key!r}")
            ttl = data.get("ttl")
            if ttl is not None and not (isinstance(ttl, int | float) and ttl > 0):
                raise InvalidValueError(f"{where}ttl must be a positive number of minutes, got {ttl!r}")
            expires = data.get("expires_at")
            return cls(
                namespace=namespace,
                key=key,
                value=validate_value(data["value"]),
                created_at=_aware(data["created_at"], where),
                updated_at=_aware(data["updated_at"], where),
                ttl=float(ttl) if ttl is not None else None,
                expires_at=_aware(expires, where) if expires is not None else None,
            )
        except KeyError as exc:
            raise InvalidValueError(f"{where}an exported item lacks the field {exc.args[0]!r}") from None


def _aware(text: Any, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise InvalidValueError(f"{where}{text!r} is not an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        raise InvalidValueError(f"{where}timestamp {text!r} has no timezone; exports are in UTC")
    return moment.astimezone(UTC)


@runtime_checkable
class TransferableStore(Protocol):
    """A store that exports and imports items with their timestamps and TTL, exactly."""

    def export_items(self, prefix: tuple[str, ...] = ()) -> Iterator[StoredItem]:
        """Every live item under ``prefix``, with its TTL."""
        ...

    def import_items(self, items: Iterable[StoredItem]) -> int:
        """Write ``items`` as they are (timestamps and expiry kept); returns how many were written."""
        ...


def iter_items(
    store: BaseStore, prefix: tuple[str, ...] = (), *, page_size: int = 500
) -> Iterator[StoredItem]:
    """Every live item of ``store`` under ``prefix`` (with TTL when the store can tell)."""
    if isinstance(store, TransferableStore):
        yield from store.export_items(prefix)
        return
    offset = 0
    while True:
        page = store.search(prefix, limit=page_size, offset=offset, refresh_ttl=False)
        for item in page:
            yield StoredItem(
                namespace=tuple(item.namespace),
                key=item.key,
                value=item.value,
                created_at=item.created_at.astimezone(UTC),
                updated_at=item.updated_at.astimezone(UTC),
            )
        if len(page) < page_size:
            return
        offset += page_size


@contextmanager
def _opened(target: str | os.PathLike[str] | IO[str], mode: str) -> Iterator[IO[str]]:
    if isinstance(target, str | os.PathLike):
        with open(Path(target), mode, encoding="utf-8") as handle:
            yield handle
    else:
        yield target


def export_jsonl(
    store: BaseStore, file: str | os.PathLike[str] | IO[str], prefix: tuple[str, ...] = ()
) -> int:
    """Write every live item under ``prefix`` to ``file`` (a path or a text file); returns how many."""
    count = 0
    with _opened(file, "w") as out:
        out.write(json.dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION}) + "\n")
        for item in iter_items(store, prefix):
            out.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
            count += 1
    return count


def _read(lines: Iterable[str]) -> Iterator[StoredItem]:
    header_seen = False
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidValueError(f"line {number} is not JSON: {exc}") from None
        if not header_seen:
            if not (isinstance(data, dict) and data.get("format") == EXPORT_FORMAT):
                raise InvalidValueError(
                    f"line {number} is not a {EXPORT_FORMAT!r} header: "
                    "this file was not written by export_jsonl"
                )
            if data.get("version") != EXPORT_VERSION:
                raise InvalidValueError(
                    f"export version {data.get('version')!r} is not supported (this version reads "
                    f"{EXPORT_VERSION}). Fix: upgrade langmem-plugin."
                )
            header_seen = True
            continue
        yield StoredItem.from_json(data, line=number)


def import_jsonl(store: BaseStore, file: str | os.PathLike[str] | IO[str], *, batch_size: int = 500) -> int:
    """Write the items of an export into ``store``; returns how many were written.

    Every line is validated before anything is written, so a bad file raises
    :class:`~langmem_plugin.errors.InvalidValueError` (naming the line) and
    leaves the store as it was.
    """
    with _opened(file, "r") as handle:
        items = list(_read(handle))
    return write_items(store, items, batch_size=batch_size)


def copy_items(source: BaseStore, target: BaseStore, prefix: tuple[str, ...] = ()) -> int:
    """Copy every live item under ``prefix`` from ``source`` to ``target`` (no file); returns how many."""
    return write_items(target, list(iter_items(source, prefix)))


def write_items(store: BaseStore, items: list[StoredItem], *, batch_size: int = 500) -> int:
    """Write ``items`` exactly into a :class:`TransferableStore`, else through ``batch`` of puts."""
    if isinstance(store, TransferableStore):
        return store.import_items(items)
    now = utc_clock()
    live = [item for item in items if item.expires_at is None or item.expires_at > now]
    for start in range(0, len(live), batch_size):
        store.batch(
            [
                PutOp(
                    item.namespace,
                    item.key,
                    item.value,
                    ttl=item.ttl if store.supports_ttl else None,
                )
                for item in live[start : start + batch_size]
            ]
        )
    return len(live)
