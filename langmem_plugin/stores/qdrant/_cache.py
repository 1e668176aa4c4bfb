"""The embedded engine's payload cache: the points it wrote or read, most recently used kept.

Reading payloads back is most of a search's cost in Qdrant Edge: measured at
100k items, a top-10 vector search takes ≈ 0.5 ms in the engine without
payloads and ≈ 0.8 ms with them (a LoCoMo top-50 over one conversation: 0.3 vs
1.5 ms). The embedded store is the only writer of its directory (the path lock
turns away any other opener, in this process or another), so a cache of the
payloads in this process cannot go stale: every write goes through the engine,
which updates the cache after the write has landed. Once most lookups find
their point here (:attr:`PayloadCache.warm`), searches ask the engine for ids
and scores only and take the payloads from here; what is missing is read in
one ``retrieve`` and kept. While the cache is cold, searches read payloads
with the ids, as without a cache, and fill it.

A reader that read payloads from the engine keeps them only when no write
landed while it read (a generation counter), so a slow read never puts back a
value that a concurrent write replaced or deleted.

Entries hold the value as its JSON text: every read decodes a fresh copy, so
nothing a caller does to a returned value reaches the cache. Keys are the
point UUIDs as integers (what ``uuid.UUID.int`` gives, the cheapest thing to
take from the engine's ids).

The cache is bounded by the bytes its entries take (:func:`entry_bytes`: the
strings an entry holds plus a fixed cost per entry), not by a number of points:
values range from a few words to passages of kilobytes, so a bound in points
would let a store of long texts grow the process without limit in practice.
Once the budget is reached, the least recently used entries make room.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import orjson

__all__ = ["CACHE_BYTES", "SELECTABLE", "PayloadCache", "entry_bytes", "uuid_key"]

#: The default budget, in bytes of the process's heap (64 MiB, as :func:`entry_bytes` counts them).
CACHE_BYTES = 64 * 2**20

# What an entry costs beyond its strings: the tuple, its numbers, the int key and the map's slot
# (tests/test_qdrant_cache.py compares the count with tracemalloc's).
_ENTRY_OVERHEAD = 240

# json.loads without its wrapper and whitespace checks (the text is json.dumps output).
_raw_decode = json.JSONDecoder().raw_decode


def _decode(text: str) -> Any:
    """The value of ``text`` (``json.dumps`` output): orjson's parser, about twice as fast as
    json's; what it refuses and json wrote (``NaN``, integers past 64 bits) is read by json."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _raw_decode(text)[0]


def uuid_key(point_id: str) -> int:
    """The cache key of a point id (a UUID string), as ``uuid.UUID(point_id).int`` but ≈ 8x faster."""
    return int(point_id.replace("-", ""), 16)


class Entry(NamedTuple):
    """One cached point: its id as the steps spell it, its value as JSON, the payload fields the steps read.

    The filter-only fields (``ns_prefix``, ``indexed``) are not kept.
    """

    id: str
    value_json: str
    ns: str
    key: str
    created_us: int
    updated_us: int
    expires_us: int
    ttl: float | None
    index_hash: str | None = None

    def payload(self) -> dict[str, Any]:
        """A fresh payload dict, as the engine would return it (minus the filter-only fields)."""
        return {
            "ns": self.ns,
            "key": self.key,
            "value": _decode(self.value_json),
            "created_us": self.created_us,
            "updated_us": self.updated_us,
            "expires_us": self.expires_us,
            "ttl": self.ttl,
            "index_hash": self.index_hash,
        }

    def select(self, fields: tuple[str, ...]) -> dict[str, Any]:
        """The payload's ``fields`` alone (each one of :data:`SELECTABLE`): the value is decoded only
        when it is one of them."""
        return {f: _decode(self.value_json) if f == "value" else getattr(self, f) for f in fields}


def entry_of(point_id: str, payload: Mapping[str, Any]) -> Entry:
    """The entry of a payload as written or read (its ``value`` encoded once, here)."""
    return Entry(
        point_id,
        json.dumps(payload["value"], ensure_ascii=False),
        sys.intern(payload["ns"]),  # one string per namespace, however many items it holds
        payload["key"],
        payload["created_us"],
        payload["updated_us"],
        payload["expires_us"],
        payload.get("ttl"),
        payload.get("index_hash"),
    )


def entry_bytes(entry: Entry) -> int:
    """What ``entry`` takes of the heap, about: its own strings (the namespace is shared: not
    counted) plus a fixed cost per entry."""
    strings = sys.getsizeof(entry.value_json) + sys.getsizeof(entry.id) + sys.getsizeof(entry.key)
    if entry.index_hash is not None:
        strings += sys.getsizeof(entry.index_hash)
    return _ENTRY_OVERHEAD + strings


_KEPT = frozenset(Entry._fields) - {"id", "value_json"}

#: The payload fields an entry gives as the engine would (:meth:`Entry.select`; ``index_hash`` is
#: absent from some points, where an entry holds None).
SELECTABLE = (_KEPT - {"index_hash"}) | {"value"}

# A search asks for ids only once this share of recent lookups hit; each lookup moves the average 20%.
_WARM, _SMOOTHING = 0.5, 0.2


class PayloadCache:
    """A bounded, thread-safe LRU map of point key → :class:`Entry` with a write generation.

    Args:
        budget: how many bytes its entries may take (:func:`entry_bytes`; 0: keep none, every
            read goes to the engine). An entry larger than the whole budget is not kept.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._generation = 0
        self._bytes = 0  # entry_bytes of every entry held
        #: Lookups answered here, and lookups that went to the engine (for benchmarks and tests).
        self.hits = 0
        self.misses = 0
        self._recent = 0.0  # the share of recent lookups found here (a moving average)

    @property
    def generation(self) -> int:
        """Take it before reading payloads from the engine; :meth:`fill` keeps them only if unchanged."""
        return self._generation

    @property
    def warm(self) -> bool:
        """Whether most recent lookups were found here.

        While it is not (a store just reopened, a working set larger than the
        cache), searches read payloads with the ids in one engine call, as
        without a cache, and fill it from them: asking for ids first and
        payloads second would cost more than either.
        """
        return self._recent >= _WARM

    @property
    def enabled(self) -> bool:
        return self.budget > 0

    @property
    def bytes(self) -> int:
        """What the entries held take (:func:`entry_bytes`), at most :attr:`budget`."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, keys: Iterable[int]) -> tuple[list[Entry | None], int]:
        """The entries of ``keys`` (None where missing) and the generation to pass to :meth:`fill`."""
        with self._lock:
            entries = self._entries
            found: list[Entry | None] = []
            for key in keys:
                entry = entries.get(key)
                if entry is not None:
                    entries.move_to_end(key)
                found.append(entry)
            hit = sum(e is not None for e in found)
            self.hits += hit
            self.misses += len(found) - hit
            if found:
                self._recent += _SMOOTHING * (hit / len(found) - self._recent)
            return found, self._generation

    def fill(self, generation: int, entries: Iterable[tuple[int, Entry]]) -> None:
        """Keep entries read from the engine, unless a write landed since ``generation``."""
        with self._lock:
            if generation != self._generation:
                return
            self._put(entries)

    def written(self, entries: Iterable[tuple[int, Entry]]) -> None:
        """After an upsert landed: keep the points as written."""
        with self._lock:
            self._generation += 1
            self._put(entries)

    def updated(self, keys: Iterable[int], fields: Mapping[str, Any]) -> None:
        """After a payload update landed: merge ``fields`` into the entries held."""
        changes = {k: v for k, v in fields.items() if k in _KEPT}
        if "value" in fields:
            changes["value_json"] = json.dumps(fields["value"], ensure_ascii=False)
        with self._lock:
            self._generation += 1
            held = self._entries
            for key in keys:
                entry = held.get(key)
                if entry is not None:
                    new = held[key] = entry._replace(**changes)
                    self._bytes += entry_bytes(new) - entry_bytes(entry)
            self._evict()

    def dropped(self, keys: Iterable[int]) -> None:
        """After a delete landed (or a write that may have landed in part failed): forget the points."""
        with self._lock:
            self._generation += 1
            for key in keys:
                entry = self._entries.pop(key, None)
                if entry is not None:
                    self._bytes -= entry_bytes(entry)

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()
            self._bytes = 0

    def _put(self, entries: Iterable[tuple[int, Entry]]) -> None:
        if not self.budget:
            return
        held = self._entries
        for key, entry in entries:
            old = held.get(key)
            if old is not None:
                self._bytes -= entry_bytes(old)
            held[key] = entry
            held.move_to_end(key)
            self._bytes += entry_bytes(entry)
            self._evict()  # within the loop: a big batch never holds more than the budget

    def _evict(self) -> None:
        """The least recently used entries go until the rest fit the budget."""
        held = self._entries
        while self._bytes > self.budget:
            _, entry = held.popitem(last=False)
            self._bytes -= entry_bytes(entry)
