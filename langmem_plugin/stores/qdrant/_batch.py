"""The steps of one ``batch``: LangGraph ops in, engine calls and embedding requests out, results back.

:func:`run_batch` is written once, with no I/O: it yields one request at a
time (an engine call such as :class:`~._calls.Query` or :class:`~._calls.Upsert`,
or an embedding request) and receives its result. ``QdrantStore.batch`` carries
the requests out with :func:`langmem_plugin.core.steps.run_steps`,
``QdrantStore.abatch`` with :func:`~langmem_plugin.core.steps.arun_steps`.

The order of a batch: validate every op; read the items that gets ask for and
that puts replace (one retrieve); embed the queries (one request); run the
searches (:mod:`._search`) and the namespace listings; embed the final puts'
texts; then write, as one :class:`~._calls.Writes` applied whole: the TTL of
what was read pushed, the deletes, the puts (:mod:`._writes`). So reads see the
state before the batch's writes, of two puts to one key the later wins, and an
embedder that raises leaves the store as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchOp

from langmem_plugin.core.steps import Steps
from langmem_plugin.errors import InvalidValueError
from langmem_plugin.stores._common import apply_list_namespaces
from langmem_plugin.stores._validation import final_puts, validate_namespace, validate_op, validate_value
from langmem_plugin.stores.qdrant._calls import Call, EmbedQueries, Facet, Hit, Retrieve, SetPayload
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._filters import live
from langmem_plugin.stores.qdrant._layout import NEVER_US, item_of, minutes_us, point_id, to_us
from langmem_plugin.stores.qdrant._search import search
from langmem_plugin.stores.qdrant._writes import checked, write

__all__ = ["run_batch"]


def run_batch(config: BatchConfig, ops: Sequence[Op], now: datetime) -> Steps[Call, list[Result]]:
    """The steps of one ``batch``: yields requests, returns the results in op order.

    Every op is validated before the first request, so a bad op raises a typed
    error and nothing is written. Reads see the state before the batch's
    writes; of two puts to one key the later wins.
    """
    values: dict[int, dict[str, Any]] = {}  # validated copies of the put values, by op index
    for i, op in enumerate(ops):
        if not isinstance(op, PutOp):
            validate_op(op)
            continue
        validate_namespace(op.namespace)
        if op.value is not None:
            values[i] = validate_value(op.value)
        if op.ttl is not None and not (
            isinstance(op.ttl, int | float) and not isinstance(op.ttl, bool) and op.ttl > 0
        ):
            raise InvalidValueError(f"ttl must be a positive number of minutes or None, got {op.ttl!r}")
    now_us = to_us(now)
    results: list[Result] = [None] * len(ops)
    refresh = Refresh()

    puts = final_puts((i, op) for i, op in enumerate(ops) if isinstance(op, PutOp))
    put_ids = {(ns, key): point_id(ns, key) for ns, key in puts}
    gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
    wanted = {point_id(op.namespace, op.key) for _, op in gets}
    wanted |= {put_ids[nk] for nk, (_, op) in puts.items() if op.value is not None}
    existing: dict[str, Hit] = {}
    if wanted:
        found: list[Hit] = yield Retrieve(tuple(sorted(wanted)))
        existing = {h.id: h for h in found if h.payload.get("expires_us", NEVER_US) > now_us}

    for i, op in gets:
        hit = existing.get(point_id(op.namespace, op.key))
        if hit is not None:
            results[i] = item_of(hit.payload)
            if config.ttl.refresh(op.refresh_ttl):
                refresh.add(hit)

    searches = [(i, op) for i, op in enumerate(ops) if isinstance(op, SearchOp)]
    query_vectors: dict[str, list[float]] = {}
    if config.dims is not None and config.mode != "lexical":
        queries = sorted({op.query for _, op in searches if op.query})
        if queries:
            vectors: list[list[float]] = yield EmbedQueries(tuple(queries))
            query_vectors = dict(zip(queries, (checked(config, v) for v in vectors), strict=True))
    for i, op in searches:
        items, hits = yield from search(config, op, now_us, query_vectors.get(op.query or ""))
        results[i] = items
        if config.ttl.refresh(op.refresh_ttl):
            for hit in hits:
                refresh.add(hit)

    for i, op in enumerate(ops):
        if isinstance(op, ListNamespacesOp):
            results[i] = yield from _list_namespaces(op, now_us)

    writes = [(put_ids[nk], op, values.get(i)) for nk, (i, op) in puts.items()]
    yield from write(config, writes, existing, now_us, before=refresh.calls(now_us))
    return results


@dataclass
class Refresh:
    """Items read with ``refresh_ttl``: their TTL (minutes) by point id."""

    ttl_by_id: dict[str, float] = field(default_factory=dict)

    def add(self, hit: Hit) -> None:
        ttl = hit.payload.get("ttl")
        if ttl is not None:
            self.ttl_by_id[hit.id] = float(ttl)

    def calls(self, now_us: int) -> list[SetPayload]:
        by_ttl: dict[float, list[str]] = {}
        for pid, ttl in self.ttl_by_id.items():
            by_ttl.setdefault(ttl, []).append(pid)
        return [
            SetPayload(tuple(ids), {"expires_us": now_us + minutes_us(ttl)}) for ttl, ids in by_ttl.items()
        ]


def _list_namespaces(op: ListNamespacesOp, now_us: int) -> Steps[Call, list[tuple[str, ...]]]:
    prefix = _plain_prefix(op.match_conditions or ())
    flt = live(now_us, prefix)
    limit = 10_000
    while True:
        values: list[str] = yield Facet("ns", flt, limit)
        if len(values) < limit:
            break
        limit *= 4
    return apply_list_namespaces((tuple(json.loads(v)) for v in values), op)


def _plain_prefix(conditions: Iterable[MatchCondition]) -> tuple[str, ...]:
    """The longest wildcard-free start of a prefix condition (to narrow the engine's facet)."""
    for condition in conditions:
        if condition.match_type == "prefix":
            labels: list[str] = []
            for label in condition.path:
                if label == "*":
                    break
                labels.append(label)
            return tuple(labels)
    return ()
