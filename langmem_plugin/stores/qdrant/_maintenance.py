"""The steps of a TTL sweep, of an export page and of an import (no I/O, like :mod:`._batch`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from langmem_plugin.core.steps import Steps
from langmem_plugin.stores._transfer import StoredItem
from langmem_plugin.stores._validation import validate_namespace, validate_value
from langmem_plugin.stores.qdrant._calls import Call, Delete, Scroll
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._filters import Filter, Range, live
from langmem_plugin.stores.qdrant._layout import NEVER_US, point_id, stored_item_of, to_us
from langmem_plugin.stores.qdrant._writes import Entry, upsert

__all__ = ["run_export_page", "run_import", "run_sweep"]


def run_sweep(now: datetime, *, page: int = 1000) -> Steps[Call, int]:
    """The steps of ``sweep_ttl``: delete every expired point; returns how many."""
    expired = Filter((Range("expires_us", lte=float(to_us(now))),))
    removed = 0
    while True:
        hits, _ = yield Scroll(expired, page, None, with_payload=False)
        if hits:
            yield Delete(tuple(h.id for h in hits))
            removed += len(hits)
        if len(hits) < page:
            return removed


def run_export_page(
    prefix: Sequence[str], now: datetime, offset: str | None, *, page: int = 500
) -> Steps[Call, tuple[list[StoredItem], str | None]]:
    """One page of live items under ``prefix`` with their TTL, and the offset of the next page."""
    hits, next_offset = yield Scroll(live(to_us(now), prefix), page, offset, with_payload=True)
    return [stored_item_of(hit.payload) for hit in hits], next_offset


def run_import(config: BatchConfig, items: Sequence[StoredItem], now: datetime) -> Steps[Call, int]:
    """Write exported items as they are (timestamps and expiry kept); expired ones are skipped."""
    now_us = to_us(now)
    entries: dict[str, Entry] = {}
    for item in items:
        namespace = validate_namespace(item.namespace)
        expires_us = to_us(item.expires_at) if item.expires_at is not None else NEVER_US
        if expires_us <= now_us:
            continue
        pid = point_id(namespace, item.key)
        entry = Entry(
            pid=pid,
            namespace=namespace,
            key=item.key,
            value=validate_value(item.value),
            index=None,
            created_us=to_us(item.created_at),
            updated_us=to_us(item.updated_at),
            ttl=item.ttl,
            expires_us=expires_us,
        )
        entries[pid] = entry  # the later of two lines for one key wins
    yield from upsert(config, list(entries.values()))
    return len(entries)
