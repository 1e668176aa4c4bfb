"""The point layout: how one item is one Qdrant point, in either engine.

- id: ``uuid5`` of the JSON ``[namespace, key]``, so a get is a retrieve by id
  (:func:`point_id`);
- payload ``ns``: the namespace as a JSON array string (keyword index, used to
  list namespaces); ``ns_prefix``: every prefix of it, each a JSON array string
  (keyword index, tenant-aware), so "namespace starts with P" is one keyword
  match; ``key`` as given; ``value`` the item's value;
  ``created_us`` / ``updated_us`` / ``expires_us`` microseconds since the epoch
  (integer indexes; an item without TTL expires at :data:`NEVER_US`); ``ttl``
  in minutes, or null; ``indexed``: 1 when the item has a search vector, else 0;
  ``index_hash``: a hash of the texts the item is embedded and BM25-indexed by (a put
  with the same hash updates the payload only: :mod:`._writes`; absent on points written
  before it was recorded, which the next put writes whole);
- vectors: an item with one indexed text has the plain vector ``dense``, an item
  with several the multivector ``dense_multi`` (compared with MaxSim, which for a
  single query vector is LangGraph's max pooling over the item's fields)
  (:func:`dense_layout`); ``bm25`` holds the item's texts as a BM25 sparse vector
  whose IDF the engine applies.

This is format 2 of the on-disk layout (``store.json``). Format 1 (one
multivector ``dense`` per point) is no longer read: opening such a store is a
:class:`~langmem_plugin.errors.StoreConfigMismatchError` that says how to move
the items over.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from langgraph.store.base import Item, SearchItem

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._transfer import StoredItem

__all__ = [
    "DENSE",
    "DENSE_MULTI",
    "FORMAT",
    "NEVER_US",
    "SAFE_PART",
    "SPARSE",
    "FilterIndexType",
    "dense_layout",
    "filter_index_fields",
    "from_us",
    "item_of",
    "minutes_us",
    "namespace_of",
    "ns_fields",
    "ns_token",
    "point_id",
    "search_item_of",
    "stored_item_of",
    "tiebreak",
    "to_us",
]

#: The on-disk format of ``store.json`` and of the point layout.
FORMAT = 2

#: The plain vector of an item with one indexed text.
DENSE = "dense"
#: The MaxSim multivector of an item with several indexed texts.
DENSE_MULTI = "dense_multi"
SPARSE = "bm25"

#: ``expires_us`` of an item that never expires (far beyond any clock; exact as a float).
NEVER_US = 2**62

#: A payload key part that may be named in an engine filter or a payload index.
SAFE_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ID_NAMESPACE = uuid.UUID("5b0c1d0e-7a53-4f4e-9a55-6c616e676d65")
_ID_PREFIX = _ID_NAMESPACE.bytes

# --------------------------------------------------------------------------- ids and namespaces


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


@functools.lru_cache(maxsize=4096)
def ns_fields(namespace: tuple[str, ...]) -> tuple[str, list[str]]:
    """The ``ns`` and ``ns_prefix`` payload fields of a namespace."""
    return ns_token(namespace), [ns_token(namespace[:n]) for n in range(1, len(namespace) + 1)]


@functools.lru_cache(maxsize=4096)
def namespace_of(token: str) -> tuple[str, ...]:
    """The namespace of an ``ns`` payload field."""
    return tuple(json.loads(token))


# --------------------------------------------------------------------------- time


def to_us(moment: datetime) -> int:
    """Microseconds since the epoch (exact)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_us(micros: int) -> datetime:
    """The aware UTC datetime of :func:`to_us` (exact; cached: items written together share theirs)."""
    return _from_us(int(micros))


@functools.lru_cache(maxsize=4096)
def _from_us(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def minutes_us(minutes: float) -> int:
    """A TTL in minutes as microseconds."""
    return round(minutes * 60_000_000)


# --------------------------------------------------------------------------- vectors and indexes


def dense_layout(dense: list[list[float]] | None) -> dict[str, Any]:
    """The named dense vectors of a point with these texts' vectors.

    A single text's vector is the plain ``DENSE``, several are the multivector
    ``DENSE_MULTI`` (both engines search both).
    """
    if not dense:
        return {}
    return {DENSE: dense[0]} if len(dense) == 1 else {DENSE_MULTI: dense}


FilterIndexType = Literal["keyword", "integer", "float"]


def filter_index_fields(spec: Mapping[str, str] | None) -> tuple[tuple[str, FilterIndexType], ...]:
    """Payload indexes for value keys that filters use: ``{"kind": "keyword"}`` → ``(("value.kind", ...),)``.

    Raises:
        ConfigurationError: a key that is not a dot path of plain names, or an unknown index type.
    """
    out: list[tuple[str, FilterIndexType]] = []
    for key, kind in (spec or {}).items():
        if not isinstance(key, str) or not all(SAFE_PART.match(part) for part in key.split(".")):
            raise ConfigurationError(
                f"filter index key {key!r} must be a dot path of names (letters, digits, _), e.g. 'meta.lang'"
            )
        if kind not in ("keyword", "integer", "float"):
            raise ConfigurationError(
                f"filter index type {kind!r} for {key!r} is not one of 'keyword', 'integer', 'float'"
            )
        out.append(("value." + key, cast(FilterIndexType, kind)))
    return tuple(out)


# --------------------------------------------------------------------------- payload → item


def item_of(payload: Mapping[str, Any]) -> Item:
    """The LangGraph item of a point's payload."""
    return Item(
        value=payload["value"],
        key=payload["key"],
        namespace=namespace_of(payload["ns"]),
        created_at=from_us(payload["created_us"]),
        updated_at=from_us(payload["updated_us"]),
    )


def search_item_of(payload: Mapping[str, Any], score: float | None) -> SearchItem:
    """The LangGraph search result of a point's payload and its score."""
    return SearchItem(
        namespace=namespace_of(payload["ns"]),
        key=payload["key"],
        value=payload["value"],
        created_at=from_us(payload["created_us"]),
        updated_at=from_us(payload["updated_us"]),
        score=score,
    )


def stored_item_of(payload: Mapping[str, Any]) -> StoredItem:
    """The exported form of a point's payload: the item with its TTL and expiry."""
    expires = int(payload["expires_us"])
    return StoredItem(
        namespace=namespace_of(payload["ns"]),
        key=payload["key"],
        value=payload["value"],
        created_at=from_us(payload["created_us"]),
        updated_at=from_us(payload["updated_us"]),
        ttl=float(payload["ttl"]) if payload.get("ttl") is not None else None,
        expires_at=from_us(expires) if expires != NEVER_US else None,
    )


def tiebreak(payload: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """What orders points tied on their score or time: namespace, then key."""
    return namespace_of(payload["ns"]), payload["key"]
