"""The store logic, with no I/O: LangGraph ops in, engine calls out, results back.

:func:`run_batch` is a generator (a "sans-I/O" state machine). It yields one
:data:`Call` at a time — an engine request such as :class:`Query` or
:class:`Upsert`, or an embedding request — and receives that call's result
through ``send``. ``QdrantStore.batch`` drives it with blocking calls,
``QdrantStore.abatch`` with awaited ones, so the logic exists once and the two
paths differ only in how a call is carried out. The engines (Qdrant Edge,
qdrant-client) translate the engine-neutral calls of this module into their own
API and nothing more.

The point layout (one Qdrant point per item):

- id: ``uuid5`` of the JSON ``[namespace, key]``, so a get is a retrieve by id;
- payload ``ns``: the namespace as a JSON array string (keyword index, used to
  list namespaces); ``ns_prefix``: every prefix of it, each a JSON array string
  (keyword index, tenant-aware), so "namespace starts with P" is one keyword
  match; ``key`` as given; ``value`` the item's value;
  ``created_us`` / ``updated_us`` / ``expires_us`` microseconds since the epoch
  (integer indexes; an item without TTL expires at :data:`NEVER_US`); ``ttl``
  in minutes, or null; ``indexed``: 1 when the item has a search vector, else 0;
- vectors: ``dense``, one vector per indexed text (a multivector compared with
  MaxSim, which for a single query vector is LangGraph's max pooling over the
  item's fields), and ``bm25``, the item's texts as a BM25 sparse vector whose
  IDF the engine applies. The plan always speaks of one ``dense`` list of
  vectors; the embedded engine stores an item with one text as a plain vector
  and one with several as a multivector (``_edge``), which ranks the same.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langmem_plugin.core.lexical import BM25Encoder, SparseVector
from langmem_plugin.errors import ConfigurationError, InvalidValueError
from langmem_plugin.stores._common import (
    Condition,
    TTLSettings,
    apply_list_namespaces,
    final_puts,
    index_texts,
    parse_filter,
    validate_namespace,
    validate_op,
    validate_value,
)
from langmem_plugin.stores._transfer import StoredItem

__all__ = [
    "DENSE",
    "DENSE_MULTI",
    "NEVER_US",
    "SPARSE",
    "Call",
    "Delete",
    "EmbedDocuments",
    "EmbedQueries",
    "Facet",
    "Filter",
    "FilterIndexType",
    "Fused",
    "Fusion",
    "Hit",
    "Match",
    "MatchAny",
    "Nearest",
    "OrderBy",
    "PlanConfig",
    "PointData",
    "Query",
    "Range",
    "Retrieve",
    "Scroll",
    "SearchMode",
    "SetPayload",
    "Upsert",
    "dense_layout",
    "filter_index_fields",
    "from_us",
    "ns_token",
    "point_id",
    "run_batch",
    "run_export_page",
    "run_import",
    "run_sweep",
    "to_us",
]

DENSE = "dense"
#: Format 2: the MaxSim multivector of items with several indexed texts (single-text items use ``DENSE``).
DENSE_MULTI = "dense_multi"
SPARSE = "bm25"

#: ``expires_us`` of an item that never expires (far beyond any clock; exact as a float).
NEVER_US = 2**62

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ID_NAMESPACE = uuid.UUID("5b0c1d0e-7a53-4f4e-9a55-6c616e676d65")
_ID_PREFIX = _ID_NAMESPACE.bytes
_SAFE_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

SearchMode = Literal["hybrid", "dense", "lexical"]
Fusion = Literal["rrf", "dbsf"]

# --------------------------------------------------------------------------- point layout


def point_id(namespace: Sequence[str], key: str) -> str:
    """The point id of an item: a UUID derived from its namespace and key.

    It is ``uuid5`` of the JSON ``[namespace, key]``, computed without building
    ``uuid.UUID`` objects (a put's hot path; the namespace's JSON is cached).

    >>> point_id(("users", "u1"), "k1") == point_id(["users", "u1"], "k1")
    True
    >>> point_id(("users", "u1"), "k1") == str(uuid.uuid5(_ID_NAMESPACE, '[["users", "u1"], "k1"]'))
    True
    """
    name = f"[{_ns_json(tuple(namespace))}, {json.dumps(key, ensure_ascii=False)}]"
    digest = bytearray(hashlib.sha1(_ID_PREFIX + name.encode("utf-8")).digest()[:16])  # uuid5 is SHA-1
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@functools.lru_cache(maxsize=4096)
def _ns_json(namespace: tuple[str, ...]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False)


def ns_token(labels: Sequence[str]) -> str:
    """A namespace (or a prefix of one) as the keyword stored in the payload.

    >>> ns_token(("users", "u1"))
    '["users","u1"]'
    """
    return json.dumps(list(labels), ensure_ascii=False, separators=(",", ":"))


def to_us(moment: datetime) -> int:
    """Microseconds since the epoch (exact)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_us(micros: int) -> datetime:
    """The aware UTC datetime of :func:`to_us` (exact; cached: items written together share theirs)."""
    return _from_us(int(micros))


@functools.lru_cache(maxsize=4096)
def _from_us(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


FilterIndexType = Literal["keyword", "integer", "float"]


def filter_index_fields(spec: Mapping[str, str] | None) -> tuple[tuple[str, FilterIndexType], ...]:
    """Payload indexes for value keys that filters use: ``{"kind": "keyword"}`` → ``(("value.kind", ...),)``.

    Raises:
        ConfigurationError: a key that is not a dot path of plain names, or an unknown index type.
    """
    out: list[tuple[str, FilterIndexType]] = []
    for key, kind in (spec or {}).items():
        if not isinstance(key, str) or not all(_SAFE_PART.match(part) for part in key.split(".")):
            raise ConfigurationError(
                f"filter index key {key!r} must be a dot path of names (letters, digits, _), e.g. 'meta.lang'"
            )
        if kind not in ("keyword", "integer", "float"):
            raise ConfigurationError(
                f"filter index type {kind!r} for {key!r} is not one of 'keyword', 'integer', 'float'"
            )
        out.append(("value." + key, cast(FilterIndexType, kind)))
    return tuple(out)


# --------------------------------------------------------------------------- engine-neutral filters


@dataclass(frozen=True, slots=True)
class Match:
    """The payload field equals ``value`` (or, for an array, contains it)."""

    key: str
    value: str | int | bool


@dataclass(frozen=True, slots=True)
class MatchAny:
    """The payload field equals (or contains) one of ``values``."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Range:
    """The numeric payload field is within the given bounds."""

    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


Cond = Match | MatchAny | Range


@dataclass(frozen=True, slots=True)
class Filter:
    """All of ``must`` hold."""

    must: tuple[Cond, ...] = ()

    def and_(self, *more: Cond) -> Filter:
        return Filter((*self.must, *more))


# --------------------------------------------------------------------------- calls


@dataclass(frozen=True, slots=True)
class PointData:
    """A point to upsert."""

    id: str
    payload: dict[str, Any]
    dense: list[list[float]] | None
    sparse: SparseVector | None


def dense_layout(dense: list[list[float]] | None, format: int) -> dict[str, Any]:
    """The named dense vectors of a point with these texts' vectors, in a layout ``format``.

    Format 1: one multivector ``DENSE``. Format 2: a single text's vector as the plain
    ``DENSE``, several as the multivector ``DENSE_MULTI`` (both engines search both).
    """
    if not dense:
        return {}
    if format == 1:
        return {DENSE: dense}
    return {DENSE: dense[0]} if len(dense) == 1 else {DENSE_MULTI: dense}


@dataclass(frozen=True, slots=True)
class Hit:
    """A point read back: its id, payload and (for scored queries) score."""

    id: str
    payload: dict[str, Any]
    score: float | None = None


@dataclass(frozen=True, slots=True)
class OrderBy:
    """Order by a numeric payload field, descending."""

    key: str


@dataclass(frozen=True, slots=True)
class Nearest:
    """Nearest neighbours on one named vector (dense: a list of vectors, compared with MaxSim)."""

    using: str
    vector: list[list[float]] | SparseVector
    score_threshold: float | None = None


@dataclass(frozen=True, slots=True)
class Fused:
    """Several :class:`Nearest` prefetches, each of ``prefetch_limit``, fused by the engine.

    ``fusion``: ``"rrf"`` (reciprocal rank fusion with ``k``) or ``"dbsf"``
    (distribution-based score fusion: each prefetch's scores normalised by
    their mean ± 3 standard deviations, then summed; ``k`` unused).
    """

    parts: tuple[Nearest, ...]
    prefetch_limit: int
    k: int
    fusion: Fusion


@dataclass(frozen=True, slots=True)
class Retrieve:
    """Points by id (missing ids are left out) → ``list[Hit]``."""

    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Upsert:
    """Insert or replace points → ``None``."""

    points: tuple[PointData, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete points by id → ``None``."""

    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SetPayload:
    """Merge ``payload`` into the payload of the points → ``None``."""

    ids: tuple[str, ...]
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Query:
    """The first ``limit`` points matching ``filter`` in the order of ``rank`` → ``list[Hit]``."""

    filter: Filter
    rank: OrderBy | Nearest | Fused
    limit: int


@dataclass(frozen=True, slots=True)
class Scroll:
    """A page of points matching ``filter``, in id order, from id ``offset`` on.

    → ``(list[Hit], next_offset)``; ``next_offset`` is None after the last page.
    """

    filter: Filter
    limit: int
    offset: str | None = None
    with_payload: bool = True


@dataclass(frozen=True, slots=True)
class Facet:
    """Distinct values of a keyword field among points matching ``filter`` → ``list[str]``."""

    key: str
    filter: Filter
    limit: int


@dataclass(frozen=True, slots=True)
class EmbedDocuments:
    """Embed texts as documents → ``list[list[float]]`` (done by the store, not the engine)."""

    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EmbedQueries:
    """Embed texts as queries → ``list[list[float]]`` (done by the store, not the engine)."""

    texts: tuple[str, ...]


EngineCall = Retrieve | Upsert | Delete | SetPayload | Query | Scroll | Facet
Call = EngineCall | EmbedDocuments | EmbedQueries
Plan = Generator[Call, Any, list[Result]]

# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class PlanConfig:
    """What the store logic needs to know about the store's configuration.

    Attributes:
        dims: dense vector dimension; None when the store has no IndexConfig (lexical search only).
        fields: the IndexConfig's fields (None: the whole value, ``"$"``).
        lexical_fields: the fields whose text BM25 indexes (None: the embedded texts).
        mode: how a query ranks: ``"hybrid"`` (dense + BM25 fused by the engine), ``"dense"`` or
            ``"lexical"``.
        score_threshold: drop query results scoring below this (cosine for dense and for the dense
            half of hybrid; BM25 for lexical).
        candidates: the size of each prefetch that hybrid search fuses (pages past it may shift).
        rrf_k: the k of reciprocal rank fusion, ``1 / (k + rank)``.
        fusion: how hybrid search fuses its two halves: ``"dbsf"`` (by score) or ``"rrf"`` (by rank).
        ttl: the store's TTL settings.
        encoder: the BM25 encoder (the engine applies IDF).
    """

    dims: int | None = None
    fields: tuple[str, ...] | None = None
    lexical_fields: tuple[str, ...] | None = None
    mode: SearchMode = "hybrid"
    score_threshold: float | None = None
    candidates: int = 100
    rrf_k: int = 60
    fusion: Fusion = "dbsf"
    ttl: TTLSettings = field(default_factory=TTLSettings)
    encoder: BM25Encoder = field(default_factory=BM25Encoder)


# --------------------------------------------------------------------------- helpers


def _live(now_us: int, prefix: Sequence[str] = ()) -> Filter:
    """Items under ``prefix`` that have not expired (the expiry condition comes last)."""
    conditions: list[Cond] = [Range("expires_us", gt=float(now_us))]
    if prefix:
        conditions.insert(0, Match("ns_prefix", ns_token(prefix)))
    return Filter(tuple(conditions))


def _native(conditions: Iterable[Condition]) -> tuple[Cond, ...]:
    """Engine conditions implied by the filter (a superset of its matches: results are re-checked)."""
    out: list[Cond] = []
    for c in conditions:
        if not all(_SAFE_PART.match(part) for part in c.path):
            continue
        key = "value." + ".".join(c.path)
        operand = c.operand
        number = isinstance(operand, int | float) and not isinstance(operand, bool)
        if c.op == "$eq":
            if isinstance(operand, str):  # not bools: Qdrant Edge reads a Python bool as an integer
                out.append(Match(key, operand))
            elif number:
                out.append(Range(key, gte=float(operand), lte=float(operand)))
        elif c.op == "$in" and operand and all(isinstance(o, str) for o in operand):
            out.append(MatchAny(key, tuple(operand)))
        elif c.op in ("$gt", "$gte", "$lt", "$lte") and number:
            out.append(Range(key, **{c.op[1:]: float(operand)}))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _ns_fields(namespace: tuple[str, ...]) -> tuple[str, list[str]]:
    """The ``ns`` and ``ns_prefix`` payload fields of a namespace."""
    return ns_token(namespace), [ns_token(namespace[:n]) for n in range(1, len(namespace) + 1)]


@functools.lru_cache(maxsize=4096)
def _namespace_of(token: str) -> tuple[str, ...]:
    return tuple(json.loads(token))


def _ns_of(hit: Hit) -> tuple[str, ...]:
    return _namespace_of(hit.payload["ns"])


def _item_of(hit: Hit) -> Item:
    p = hit.payload
    return Item(
        value=p["value"],
        key=p["key"],
        namespace=_ns_of(hit),
        created_at=from_us(p["created_us"]),
        updated_at=from_us(p["updated_us"]),
    )


def _search_item_of(hit: Hit, score: float | None) -> SearchItem:
    p = hit.payload
    return SearchItem(
        namespace=_ns_of(hit),
        key=p["key"],
        value=p["value"],
        created_at=from_us(p["created_us"]),
        updated_at=from_us(p["updated_us"]),
        score=score,
    )


def _tiebreak(hit: Hit) -> tuple[tuple[str, ...], str]:
    return _ns_of(hit), hit.payload["key"]


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [text for v in value.values() for text in _string_leaves(v)]
    if isinstance(value, list):
        return [text for v in value for text in _string_leaves(v)]
    return []


def _texts_for(
    config: PlanConfig, index: Literal[False] | list[str] | None, value: Mapping[str, Any]
) -> list[str]:
    """The texts an item is indexed by (empty: not indexed)."""
    if index is False:
        return []
    fields = list(index) if index is not None else config.fields
    if config.dims is None and fields is None:
        return _string_leaves(value)  # lexical only: the words, not the JSON keys
    return index_texts(value, fields)


_ALL = 1_000_000  # "every match" for a query whose filter already bounds the result


def _fetch(
    make: Callable[[int], Query],
    need: int,
    check: Callable[[Hit], bool],
    primary: Callable[[Hit], float],
    tied: Callable[[float], Query] | None = None,
) -> Generator[Call, Any, tuple[list[Hit], bool]]:
    """Fetch hits in the engine's order until ``need`` of them pass ``check`` (the exact filter).

    Also makes sure the group of hits tied with the ``need``-th one on
    ``primary`` is complete, so that sorting ties by namespace and key gives the
    same order whatever the page size: pagination stays stable. ``tied(value)``,
    when given, queries that whole group at once (items written by one batch
    share their timestamp); otherwise the fetch grows until the group ends.
    Returns the hits that pass and whether the engine had no more.
    """
    if need <= 0:
        return [], False
    fetch = need + 1
    while True:
        hits: list[Hit] = yield make(fetch)
        kept = [h for h in hits if check(h)]
        if len(hits) < fetch:
            return kept, True
        if len(kept) >= need:
            boundary = primary(kept[need - 1])
            if primary(hits[-1]) != boundary:
                return kept, False
            if tied is not None:
                group: list[Hit] = yield tied(boundary)
                above = [h for h in kept if primary(h) != boundary]  # all better: the engine's order
                return above + [h for h in group if check(h)], False
        fetch *= 2


# --------------------------------------------------------------------------- the batch


@dataclass
class _Refresh:
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
            SetPayload(tuple(ids), {"expires_us": now_us + _minutes_us(ttl)}) for ttl, ids in by_ttl.items()
        ]


def _minutes_us(minutes: float) -> int:
    return round(minutes * 60_000_000)


def run_batch(config: PlanConfig, ops: Sequence[Op], now: datetime) -> Plan:
    """The plan of one ``batch``: yields calls, returns the results in op order.

    Every op is validated before the first call, so a bad op raises a typed
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
    refresh = _Refresh()

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
            results[i] = _item_of(hit)
            if config.ttl.refresh(op.refresh_ttl):
                refresh.add(hit)

    searches = [(i, op) for i, op in enumerate(ops) if isinstance(op, SearchOp)]
    query_vectors: dict[str, list[float]] = {}
    if config.dims is not None and config.mode != "lexical":
        queries = sorted({op.query for _, op in searches if op.query})
        if queries:
            vectors: list[list[float]] = yield EmbedQueries(tuple(queries))
            query_vectors = dict(zip(queries, (_checked(config, v) for v in vectors), strict=True))
    for i, op in searches:
        items, hits = yield from _search(config, op, now_us, query_vectors.get(op.query or ""))
        results[i] = items
        if config.ttl.refresh(op.refresh_ttl):
            for hit in hits:
                refresh.add(hit)

    for i, op in enumerate(ops):
        if isinstance(op, ListNamespacesOp):
            results[i] = yield from _list_namespaces(op, now_us)

    yield from refresh.calls(now_us)

    writes = [(put_ids[nk], op, values.get(i)) for nk, (i, op) in puts.items()]
    yield from _write(config, writes, existing, now_us)
    return results


def _checked(config: PlanConfig, vector: Any) -> list[float]:
    if len(vector) != config.dims:
        raise ConfigurationError(
            f"the embeddings returned vectors of {len(vector)} dimensions but the IndexConfig says "
            f"dims={config.dims}. Fix: set 'dims' to the embedder's dimension."
        )
    return vector if isinstance(vector, list) else [float(x) for x in vector]


@dataclass(frozen=True)
class _Entry:
    """An item to write, with its timestamps decided."""

    pid: str
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    index: Literal[False] | list[str] | None
    created_us: int
    updated_us: int
    ttl: float | None
    expires_us: int


def _write(
    config: PlanConfig,
    puts: Iterable[tuple[str, PutOp, dict[str, Any] | None]],
    existing: Mapping[str, Hit],
    now_us: int,
) -> Generator[Call, Any, None]:
    deletes: list[str] = []
    entries: list[_Entry] = []
    for pid, op, value in puts:
        if value is None:
            deletes.append(pid)
            continue
        old = existing.get(pid)
        ttl = float(op.ttl) if op.ttl is not None else None
        entries.append(
            _Entry(
                pid=pid,
                namespace=tuple(op.namespace),
                key=op.key,
                value=value,
                index=op.index,
                created_us=int(old.payload["created_us"]) if old is not None else now_us,
                updated_us=now_us,
                ttl=ttl,
                expires_us=now_us + _minutes_us(ttl) if ttl is not None else NEVER_US,
            )
        )
    if deletes:
        yield Delete(tuple(deletes))
    yield from _upsert(config, entries)


def _upsert(config: PlanConfig, entries: Sequence[_Entry]) -> Generator[Call, Any, None]:
    if not entries:
        return
    texts_of = [_texts_for(config, e.index, e.value) for e in entries]
    dense_of: dict[str, list[float]] = {}
    if config.dims is not None:
        unique = sorted({t for texts in texts_of for t in texts})
        if unique:
            vectors: list[list[float]] = yield EmbedDocuments(tuple(unique))
            if len(vectors) != len(unique):
                raise ConfigurationError(
                    f"the embeddings returned {len(vectors)} vectors for {len(unique)} texts"
                )
            dense_of = dict(zip(unique, (_checked(config, v) for v in vectors), strict=True))
    points: list[PointData] = []
    for e, texts in zip(entries, texts_of, strict=True):
        token, prefixes = _ns_fields(e.namespace)
        # With lexical_fields, BM25 reads other fields than the embedded ones — of indexed items
        # only, so that an item is either scored by both halves or listed unscored.
        words = texts
        if config.lexical_fields and texts:
            words = index_texts(e.value, list(config.lexical_fields))
        sparse = config.encoder.encode_document("\n".join(words)) if words else None
        dense = [dense_of[t] for t in texts] if config.dims is not None and texts else None
        payload = {
            "ns": token,
            "ns_prefix": prefixes,
            "key": e.key,
            "value": e.value,
            "created_us": e.created_us,
            "updated_us": e.updated_us,
            "expires_us": e.expires_us,
            "ttl": e.ttl,
            "indexed": int(bool(dense) if config.dims is not None else bool(sparse)),
        }
        points.append(PointData(e.pid, payload, dense, sparse if sparse else None))
    yield Upsert(tuple(points))


def _search(
    config: PlanConfig, op: SearchOp, now_us: int, dense_query: list[float] | None
) -> Generator[Call, Any, tuple[list[SearchItem], list[Hit]]]:
    conditions = parse_filter(op.filter)
    # Expiry is checked here rather than by the engine: a range condition on every
    # candidate costs a vector search more than re-checking the few hits it returns.
    base = Filter(_live(now_us, op.namespace_prefix).must[:-1]).and_(*_native(conditions))

    def check(hit: Hit) -> bool:
        if int(hit.payload["expires_us"]) <= now_us:
            return False
        value = hit.payload["value"]
        return all(c.matches(value) for c in conditions)

    limit, offset = max(op.limit, 0), max(op.offset, 0)
    need = offset + limit
    if not op.query:
        hits, _ = yield from _fetch(
            lambda n: Query(base, OrderBy("updated_us"), n), need, check, _updated, _tied(base)
        )
        hits.sort(key=lambda h: (-_updated(h), *_tiebreak(h)))
        window = hits[offset:need]
        return [_search_item_of(h, None) for h in window], window

    rank = _rank(config, op.query, dense_query)
    scored: list[Hit] = []
    exhausted = True
    if rank is not None:
        scored, exhausted = yield from _fetch(
            lambda n: Query(base, _with_candidates(rank, n), n), need, check, _score
        )
        scored.sort(key=lambda h: (-_score(h), *_tiebreak(h)))
    unscored: list[Hit] = []
    if exhausted and len(scored) < need:
        # Items that have no search vector (index=False, or no text) come after the scored ones,
        # newest first, with score None — as LangGraph's InMemoryStore lists them.
        rest, _ = yield from _fetch(
            lambda n: Query(base.and_(Match("indexed", 0)), OrderBy("updated_us"), n),
            need - len(scored),
            check,
            _updated,
            _tied(base.and_(Match("indexed", 0))),
        )
        rest.sort(key=lambda h: (-_updated(h), *_tiebreak(h)))
        unscored = rest
    ranked: list[tuple[Hit, float | None]] = [(h, h.score) for h in scored] + [(h, None) for h in unscored]
    page = ranked[offset:need]
    return [_search_item_of(h, s) for h, s in page], [h for h, _ in page]


def _tied(base: Filter) -> Callable[[float], Query]:
    def tied(updated: float) -> Query:
        return Query(base.and_(Range("updated_us", gte=updated, lte=updated)), OrderBy("updated_us"), _ALL)

    return tied


def _updated(hit: Hit) -> float:
    return float(hit.payload["updated_us"])


def _score(hit: Hit) -> float:
    return hit.score if hit.score is not None else float("-inf")


def _rank(config: PlanConfig, query: str, dense_query: list[float] | None) -> Nearest | Fused | None:
    threshold = config.score_threshold
    sparse = config.encoder.encode_query(query) if config.mode != "dense" or dense_query is None else None
    lexical = Nearest(SPARSE, sparse, threshold if dense_query is None else None) if sparse else None
    if dense_query is None:
        return lexical
    dense = Nearest(DENSE, [dense_query], threshold)
    if config.mode == "dense" or lexical is None:
        return dense
    return Fused((dense, lexical), config.candidates, config.rrf_k, config.fusion)


def _with_candidates(rank: Nearest | Fused, fetch: int) -> Nearest | Fused:
    if isinstance(rank, Fused):
        return Fused(rank.parts, max(rank.prefetch_limit, fetch), rank.k, rank.fusion)
    return rank


def _list_namespaces(op: ListNamespacesOp, now_us: int) -> Generator[Call, Any, list[tuple[str, ...]]]:
    prefix = _plain_prefix(op.match_conditions or ())
    flt = _live(now_us, prefix)
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


def run_sweep(now: datetime, *, page: int = 1000) -> Generator[Call, Any, int]:
    """The plan of ``sweep_ttl``: delete every expired point; returns how many."""
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
) -> Generator[Call, Any, tuple[list[StoredItem], str | None]]:
    """One page of live items under ``prefix`` with their TTL, and the offset of the next page."""
    hits, next_offset = yield Scroll(_live(to_us(now), prefix), page, offset, with_payload=True)
    items = []
    for hit in hits:
        p = hit.payload
        expires = int(p["expires_us"])
        items.append(
            StoredItem(
                namespace=_ns_of(hit),
                key=p["key"],
                value=p["value"],
                created_at=from_us(p["created_us"]),
                updated_at=from_us(p["updated_us"]),
                ttl=float(p["ttl"]) if p.get("ttl") is not None else None,
                expires_at=from_us(expires) if expires != NEVER_US else None,
            )
        )
    return items, next_offset


def run_import(config: PlanConfig, items: Sequence[StoredItem], now: datetime) -> Generator[Call, Any, int]:
    """Write exported items as they are (timestamps and expiry kept); expired ones are skipped."""
    now_us = to_us(now)
    entries: dict[str, _Entry] = {}
    for item in items:
        namespace = validate_namespace(item.namespace)
        expires_us = to_us(item.expires_at) if item.expires_at is not None else NEVER_US
        if expires_us <= now_us:
            continue
        pid = point_id(namespace, item.key)
        entry = _Entry(
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
    yield from _upsert(config, list(entries.values()))
    return len(entries)
