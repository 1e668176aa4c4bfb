"""The room a bounded write makes in one namespace, counted and chosen inside its transaction.

``PostgresMemoryStore.write_bounded`` calls :func:`make_room` for each bound, under the
namespace's advisory lock, in the transaction that then writes: the count, the choice and the
write see the same rows.

A bound whose eviction reads a few fields (:attr:`~langmem_plugin.core.bounded.Bound.reads`)
lists the namespace with those fields of each value alone (``value -> 'kind'``, as JSON, so a
missing field stays missing and a number stays a number) and reads whole only the few items
:func:`~langmem_plugin.core.bounded.room_steps` would choose: a full namespace's values are not
sent, decoded and validated on every write that must evict. Any other bound lists whole values
(:func:`~langmem_plugin.core.bounded.room`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import PutOp

from langmem_plugin.core.bounded import Bound, BoundedWrite, Values, overflow, room, room_steps
from langmem_plugin.core.steps import run_steps
from langmem_plugin.stores.postgres._ops import item_of
from langmem_plugin.stores.postgres._sql import ITEM_COLUMNS, LIVE, namespace_text

__all__ = ["make_room"]

#: The listing's ``value``: the value's fields named in ``%(reads)s``, those it holds, as JSON.
_FIELDS_OF_VALUE = (
    "(SELECT coalesce(jsonb_object_agg(f, s.value -> f), '{}'::jsonb)"
    " FROM unnest(%(reads)s::text[]) AS f WHERE s.value ? f) AS value"
)


def make_room(cur: Any, write: BoundedWrite, bound: Bound, now: datetime) -> list[PutOp]:
    """The evictions that make room for ``write`` in ``bound``'s namespace, read on ``cur`` (a
    ``dict_row`` cursor in the write's transaction), or the bound's refusal."""
    reads = bound.reads
    params: dict[str, Any] = {"ns": namespace_text(bound.namespace), "now": now}
    if reads is None:
        columns = ITEM_COLUMNS
    else:
        columns = f"s.prefix, s.key, {_FIELDS_OF_VALUE}, s.created_at, s.updated_at"
        params["reads"] = list(reads)
    cur.execute(f"SELECT {columns} FROM store s WHERE s.prefix = %(ns)s AND {LIVE}", params, prepare=False)
    items = [item_of(r) for r in cur.fetchall()]
    final = write.final(tuple(bound.namespace))
    present = {i.key for i in items if i.key in final}
    over = overflow(write, bound, count=len(items), present=present)
    if reads is None or over <= 0:
        return room(write, bound, items, over)
    return run_steps(room_steps(write, bound, items, over), lambda keys: _whole(cur, bound, keys, now))


def _whole(cur: Any, bound: Bound, keys: Sequence[str], now: datetime) -> Values:
    """The whole values of ``keys`` in ``bound``'s namespace (a key no longer live: left out)."""
    cur.execute(
        f"SELECT {ITEM_COLUMNS} FROM store s WHERE s.prefix = %(ns)s AND s.key = ANY(%(keys)s) AND {LIVE}",
        {"ns": namespace_text(bound.namespace), "keys": list(keys), "now": now},
        prepare=False,
    )
    return {item.key: item.value for item in map(item_of, cur.fetchall())}
