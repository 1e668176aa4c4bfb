"""The steps of a bounded write: count each bounded namespace, make room, then write the batch.

No I/O, like :mod:`._batch`. Atomic only when nothing else writes the data
while the steps run: ``QdrantStore.write_bounded`` runs them under the store's
writer lock, and only where the store is the data's one writer (embedded: the
directory lock admits one store per path, in one process; ``":memory:"``: the
store's own client). A server has other clients: the store refuses there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from langgraph.store.base import Item, PutOp

from langmem_plugin.core.bounded import BoundedWrite, overflow, room
from langmem_plugin.core.steps import Steps
from langmem_plugin.stores._validation import validate_namespace
from langmem_plugin.stores.qdrant._batch import run_batch
from langmem_plugin.stores.qdrant._calls import Call, Count, Hit, Retrieve, Scroll
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._filters import Filter, Match, live
from langmem_plugin.stores.qdrant._layout import NEVER_US, item_of, ns_token, point_id, to_us

__all__ = ["run_bounded"]

_PAGE = 1000


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
            items = yield from _all(exact)
            evictions.extend(room(write, bound, items, over))
    yield from run_batch(config, [*evictions, *write.ops], now)
    return evictions


def _all(exact: Filter) -> Steps[Call, Sequence[Item]]:
    items: list[Item] = []
    offset: str | None = None
    while True:
        hits, offset = yield Scroll(exact, _PAGE, offset)
        items.extend(item_of(h.payload) for h in hits)
        if offset is None:
            return items
