"""Reads of the embedded shard through the payload cache: points by id, queries, their payloads.

Searches ask the engine for ids and scores only and take payloads from the cache
(:mod:`._cache`) while it answers most lookups; until then they read whole payloads, which
fill it. No write is made here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import qdrant_edge as qe

from langmem_plugin.stores.qdrant._cache import SELECTABLE, Entry, PayloadCache, entry_of, uuid_key
from langmem_plugin.stores.qdrant._calls import Hit, OrderBy, Payload, Query
from langmem_plugin.stores.qdrant._edge_requests import READ, query_request

__all__ = ["EdgeReads"]


def _payload_of(entry: Entry, fields: tuple[str, ...] | None) -> dict[str, Any]:
    """A cached point's payload (a fresh copy), or these ``fields`` of it."""
    return entry.payload() if fields is None else entry.select(fields)


def _project(payload: dict[str, Any], fields: tuple[str, ...] | None) -> dict[str, Any]:
    """A payload read whole, or these ``fields`` of it."""
    return payload if fields is None else {f: payload[f] for f in fields if f in payload}


def _key_of(point_id: Any) -> int:
    """The cache key of an id the engine returned (a ``uuid.UUID``: our ids are UUIDs)."""
    return point_id.int if isinstance(point_id, uuid.UUID) else uuid_key(str(point_id))


def _ranked(point: Any, ordered: bool) -> tuple[float | None, float | None]:
    """The score and the order value of a point a query returned (ordered: by a payload field)."""
    return (None, point.order_value) if ordered else (float(point.score), None)


def _selection(fields: tuple[str, ...]) -> Any:
    """Edge's payload selector of these fields (no field: no payload)."""
    return list(fields) if fields else False


class EdgeReads:
    """The engine's reads, with ``cache``; ``has_multi``: the store holds multi-text items."""

    def __init__(self, cache: PayloadCache) -> None:
        self.cache = cache
        self.has_multi = False

    def retrieve(self, shard: qe.EdgeShard, ids: Sequence[str], with_payload: Payload) -> list[Hit]:
        """The points of ``ids`` that exist, from the cache or else the engine (in no set order)."""
        fields = with_payload if isinstance(with_payload, tuple) else None
        cached = self.cache.enabled and bool(with_payload) and (fields is None or set(fields) <= SELECTABLE)
        if not cached:
            read: Any = READ if with_payload is True else _selection(fields or ())
            records = shard.retrieve(list(ids), with_payload=read, with_vector=False)
            return [Hit(str(r.id), r.payload or {}) for r in records]
        entries, generation = self.cache.lookup(uuid_key(i) for i in ids)
        hits = [Hit(e.id, _payload_of(e, fields)) for e in entries if e is not None]
        missing = [i for i, e in zip(ids, entries, strict=True) if e is None]
        if missing:
            hits += (
                Hit(h.id, _project(h.payload, fields))
                for h in self._read(shard, missing, generation).values()
            )
        return hits

    def _read(self, shard: qe.EdgeShard, ids: list[Any], generation: int) -> dict[int, Hit]:
        """Read points with their payloads from the engine and offer them to the cache."""
        records = shard.retrieve(ids, with_payload=True, with_vector=False)
        read = {_key_of(r.id): Hit(str(r.id), r.payload or {}) for r in records}
        self.cache.fill(generation, ((key, entry_of(h.id, h.payload)) for key, h in read.items()))
        return read

    def _keep(self, hits: list[Hit], generation: int) -> None:
        """Offer the cache what a query read with its payloads (and count which it already held)."""
        keys = [uuid_key(h.id) for h in hits]
        entries, _ = self.cache.lookup(keys)
        fresh = [
            (k, entry_of(h.id, h.payload)) for k, h, e in zip(keys, hits, entries, strict=True) if e is None
        ]
        if fresh:
            self.cache.fill(generation, fresh)

    def _hydrate(
        self, shard: qe.EdgeShard, points: list[Any], *, ordered: bool, fields: tuple[str, ...] | None = None
    ) -> list[Hit]:
        """Hits for points a query returned without payloads, in the query's order, with their
        payloads (or these ``fields`` of them, each one of :data:`~._cache.SELECTABLE`).

        A point deleted between the query and the read of its payload is left out.
        """
        keys = [_key_of(p.id) for p in points]
        entries, generation = self.cache.lookup(keys)
        missing = [p.id for p, e in zip(points, entries, strict=True) if e is None]
        read = self._read(shard, missing, generation) if missing else {}
        hits: list[Hit] = []
        for p, key, e in zip(points, keys, entries, strict=True):
            score, order = _ranked(p, ordered)
            if e is not None:
                hits.append(Hit(e.id, _payload_of(e, fields), score, order))
            elif (h := read.get(key)) is not None:
                hits.append(Hit(h.id, _project(h.payload, fields), score, order))
        return hits

    def query(self, shard: qe.EdgeShard, call: Query) -> list[Hit]:
        ordered = isinstance(call.rank, OrderBy)
        if not call.with_payload:
            bare = query_request(call, has_multi=self.has_multi, with_payload=False)
            return [Hit(str(p.id), {}, *_ranked(p, ordered)) for p in shard.query(bare)]
        if isinstance(call.with_payload, tuple):
            return self._query_fields(shard, call, call.with_payload, ordered=ordered)
        ids_only = self.cache.enabled and self.cache.warm
        generation = self.cache.generation  # before the engine reads any payload
        read: Any = False if ids_only else READ
        request = query_request(call, has_multi=self.has_multi, with_payload=read)
        points = shard.query(request)
        if ids_only:
            return self._hydrate(shard, points, ordered=ordered)
        hits = [Hit(str(p.id), p.payload or {}, *_ranked(p, ordered)) for p in points]
        if self.cache.enabled:
            self._keep(hits, generation)
        return hits

    def _query_fields(
        self, shard: qe.EdgeShard, call: Query, fields: tuple[str, ...], *, ordered: bool
    ) -> list[Hit]:
        """A query whose hits carry these payload ``fields`` only.

        The engine reads a point's payload whole whatever it returns of it (measured at 100k
        items: 150 ms for 50k ids, 350 ms with one small field), so where the cache holds the
        fields they are read as any query's payloads are: while it answers most lookups, ids from
        the engine and the fields from the cache; until then, whole payloads, which fill it.
        """
        if self.cache.enabled and set(fields) <= SELECTABLE:
            if self.cache.warm:
                bare = query_request(call, has_multi=self.has_multi, with_payload=False)
                return self._hydrate(shard, shard.query(bare), ordered=ordered, fields=fields)
            hits = self.query(shard, replace(call, with_payload=True))
            return [Hit(h.id, _project(h.payload, fields), h.score, h.order) for h in hits]
        request = query_request(call, has_multi=self.has_multi, with_payload=_selection(fields))
        return [Hit(str(p.id), p.payload or {}, *_ranked(p, ordered)) for p in shard.query(request)]
