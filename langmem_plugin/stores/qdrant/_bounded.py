"""The steps of a bounded write: count each bounded namespace, make room, then write the batch.

No I/O, like :mod:`._batch`. Atomic only when nothing else writes the data
while the steps run: ``QdrantStore.write_bounded`` runs them under the store's
writer lock, and only where the store is the data's one writer (embedded: the
directory lock admits one store per path, in one process; ``":memory:"``: the
store's own client). A server has other clients: the store refuses there.

A namespace that must evict is listed with what its bound's eviction reads of each value
(:attr:`~langmem_plugin.core.bounded.Bound.reads`: a payload selector of a few fields), and the
few items the eviction would choose are read whole (:func:`~langmem_plugin.core.bounded.room_steps`):
a full namespace's values are not decoded on every write that must evict.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from langgraph.store.base import Item, PutOp

from langmem_plugin.core.bounded import BoundedWrite, Values, overflow, room_steps
from langmem_plugin.core.steps import Steps
from langmem_plugin.stores._validation import validate_namespace
from langmem_plugin.stores.qdrant._batch import run_batch
from langmem_plugin.stores.qdrant._calls import Call, Count, Hit, Payload, Retrieve, Scroll
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._filters import Filter, Match, live
from langmem_plugin.stores.qdrant._layout import NEVER_US, item_of, ns_token, point_id, to_us

__all__ = ["run_bounded"]

_PAGE = 1000
#: What a listing to choose evictions reads besides the value's fields: the rest of an item.
_ITEM_FIELDS = ("key", "ns", "created_us", "updated_us")


def run_bounded(config: BatchConfig, write: BoundedWrite, now: datetime) -> Steps[Call, list[PutOp]]:
    """Count each bound's namespace (listing it only when the write would overflow it), choose
    the evictions or raise the bound's refusal, then write evictions and ops as one batch."""
    for bound in write.bounds:
        validate_namespace(bound.namespace)
    now_us = to_us(now)
    evictions: list[PutOp] = []
    for bound in write.bounds:
        namespace = bound.namespace
        exact = live(now_us).and_(Match("ns", ns_token(namespace)))
        count: int = yield Count(exact)
        final = write.final(namespace)
        present: set[str] = set()
        if final:
            ids = {point_id(namespace, key): key for key in final}
            hits: list[Hit] = yield Retrieve(tuple(sorted(ids)))
            present = {ids[h.id] for h in hits if h.payload.get("expires_us", NEVER_US) > now_us}
        over = overflow(write, bound, count=count, present=present)
        if over > 0:
            items = yield from _all(exact, bound.reads)
            evictions.extend((yield from _whole(namespace, room_steps(write, bound, items, over))))
    yield from run_batch(config, [*evictions, *write.ops], now)
    return evictions


def _all(exact: Filter, reads: tuple[str, ...] | None) -> Steps[Call, Sequence[Item]]:
    """The items matching ``exact``; with ``reads``, their values hold these fields alone."""
    fields: Payload = True if reads is None else (*_ITEM_FIELDS, *(f"value.{f}" for f in reads))
    items: list[Item] = []
    offset: str | None = None
    while True:
        hits, offset = yield Scroll(exact, _PAGE, offset, with_payload=fields)
        items.extend(item_of(h.payload if "value" in h.payload else {**h.payload, "value": {}}) for h in hits)
        if offset is None:
            return items


def _whole(
    namespace: tuple[str, ...], choosing: Steps[tuple[str, ...], list[PutOp]]
) -> Steps[Call, list[PutOp]]:
    """Run :func:`~langmem_plugin.core.bounded.room_steps`: the keys it asks for are read whole."""
    try:
        keys = next(choosing)
        while True:
            ids = {point_id(namespace, key): key for key in keys}
            hits: list[Hit] = yield Retrieve(tuple(sorted(ids)), with_payload=("value",))
            values: Values = {ids[h.id]: h.payload["value"] for h in hits if "value" in h.payload}
            keys = choosing.send(values)
    except StopIteration as done:
        return cast(list[PutOp], done.value)
