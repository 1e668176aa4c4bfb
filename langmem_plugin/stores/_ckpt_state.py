"""The in-process side of :class:`~langmem_plugin.stores.checkpointer.CheckpointerStore`. Pure: no I/O.

- the record codec: what one item version looks like inside a checkpoint;
- :class:`StoreState`: the live items, every item's version references, and
  the search indexes (a numpy matrix of unit vectors, Qdrant's BM25), folded
  from the checkpoint log on open and kept in step with each write.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
from langgraph.store.base import Item, SearchItem

from langmem_plugin.core.lexical import BM25Index
from langmem_plugin.stores._common import index_texts, namespace_matches

__all__ = [
    "Entry",
    "Mode",
    "StoreState",
    "VectorIndex",
    "VersionRef",
    "copy_json",
    "decode_vectors",
    "encode_vectors",
    "lexical_text",
    "namespace_thread",
    "parse_time",
    "registry_thread",
]

Mode = Literal["semantic", "lexical", "hybrid"]
IndexArg = Literal[False] | list[str] | None

_THREAD_PREFIX = "langmem_plugin.store"
_RRF_K = 60.0


# --------------------------------------------------------------------------- mapping


def namespace_thread(name: str, namespace: Sequence[str]) -> str:
    """The reserved checkpoint thread that holds ``namespace``'s log.

    >>> namespace_thread("store", ("users", "u1"))
    'langmem_plugin.store:store:["users","u1"]'
    """
    return f"{_THREAD_PREFIX}:{name}:" + json.dumps(
        list(namespace), ensure_ascii=False, separators=(",", ":")
    )


def registry_thread(name: str) -> str:
    """The reserved thread that lists every namespace thread of the store called ``name``."""
    return f"{_THREAD_PREFIX}:{name}:registry"


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def encode_vectors(vectors: np.ndarray | None) -> bytes | None:
    return None if vectors is None else np.ascontiguousarray(vectors, dtype=np.float32).tobytes()


def decode_vectors(data: bytes | None, dims: int) -> np.ndarray | None:
    if not data:
        return None
    array = np.frombuffer(data, dtype=np.float32)
    if array.size % dims:
        return None
    return array.reshape(-1, dims)


def copy_json(obj: Any) -> Any:
    """A deep copy of a JSON value (faster than ``copy.deepcopy``)."""
    if isinstance(obj, dict):
        return {k: copy_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copy_json(v) for v in obj]
    return obj


def _leaves(obj: Any, out: list[str]) -> None:
    if isinstance(obj, dict):
        for v in obj.values():
            _leaves(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _leaves(v, out)
    elif isinstance(obj, str):
        out.append(obj)
    elif obj is not None and not isinstance(obj, bool):
        out.append(str(obj))


def lexical_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text BM25 indexes: the fields' texts, or every string/number in the value when no fields."""
    if not fields or list(fields) == ["$"]:
        out: list[str] = []
        _leaves(value, out)
        return "\n".join(out)
    return "\n".join(index_texts(value, fields))


# --------------------------------------------------------------------------- vectors


class VectorIndex:
    """Unit vectors in one growing float32 matrix; an item (slot) may own several rows (one per text)."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self._matrix = np.zeros((64, dims), dtype=np.float32)
        self._owner = np.full(64, -1, dtype=np.int64)
        self._size = 0
        self._free: list[int] = []
        self._rows: dict[int, list[int]] = {}

    def __contains__(self, slot: int) -> bool:
        return slot in self._rows

    def _allocate(self) -> int:
        if self._free:
            return self._free.pop()
        if self._size == len(self._owner):
            grow = len(self._owner)
            self._matrix = np.vstack([self._matrix, np.zeros((grow, self.dims), dtype=np.float32)])
            self._owner = np.concatenate([self._owner, np.full(grow, -1, dtype=np.int64)])
        self._size += 1
        return self._size - 1

    def set(self, slot: int, vectors: np.ndarray) -> None:
        """Index ``vectors`` (rows) for ``slot``, replacing what it had."""
        self.remove(slot)
        if vectors.size == 0:
            return
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms == 0, 1.0, norms)
        rows = []
        for vector in unit:
            row = self._allocate()
            self._matrix[row] = vector
            self._owner[row] = slot
            rows.append(row)
        self._rows[slot] = rows

    def remove(self, slot: int) -> None:
        for row in self._rows.pop(slot, ()):
            self._owner[row] = -1
            self._matrix[row] = 0.0
            self._free.append(row)

    def best(self, query: np.ndarray, slots: Sequence[int]) -> list[float | None]:
        """The best cosine of each slot's vectors with ``query`` (None for a slot without vectors)."""
        norm = float(np.linalg.norm(query))
        unit = (query / norm if norm else query).astype(np.float32)
        if not slots:
            return []
        indexed = [s for s in slots if s in self._rows]
        if len(indexed) * 4 < self._size:  # a narrow search: score only the candidates' rows
            rows = [row for s in indexed for row in self._rows[s]]
            owners = self._owner[rows]
            scores = self._matrix[rows] @ unit
        else:
            live = self._owner[: self._size] >= 0
            owners = self._owner[: self._size][live]
            scores = self._matrix[: self._size][live] @ unit
        best: dict[int, float] = {}
        for owner, score in zip(owners.tolist(), scores.tolist(), strict=True):
            if score > best.get(owner, -math.inf):
                best[owner] = score
        return [best.get(s) for s in slots]


# --------------------------------------------------------------------------- state


@dataclass(slots=True)
class Entry:
    """A live item and what the indexes need to know about it."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    ttl: float | None
    index: IndexArg
    checkpoint_id: str
    slot: int = -1
    updated_ts: float = field(init=False)

    def __post_init__(self) -> None:
        self.updated_ts = self.updated_at.timestamp()

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def item(self) -> Item:
        return Item(
            value=copy_json(self.value),
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def search_item(self, score: float | None) -> SearchItem:
        return SearchItem(
            namespace=self.namespace,
            key=self.key,
            value=copy_json(self.value),
            created_at=self.created_at,
            updated_at=self.updated_at,
            score=score,
        )


@dataclass(frozen=True, slots=True)
class VersionRef:
    """One version of an item in the log: its checkpoint, whether it is a deletion, and when."""

    checkpoint_id: str
    deleted: bool
    at: datetime


def entry_from_record(namespace: tuple[str, ...], key: str, cid: str, record: Mapping[str, Any]) -> Entry:
    created = parse_time(record["created_at"])
    updated = parse_time(record["updated_at"])
    assert created is not None
    assert updated is not None
    return Entry(
        namespace=namespace,
        key=key,
        value=json.loads(record["value"]),
        created_at=created,
        updated_at=updated,
        expires_at=parse_time(record.get("expires_at")),
        ttl=record.get("ttl"),
        index=record.get("index"),
        checkpoint_id=cid,
    )


def ref_from_record(cid: str, record: Mapping[str, Any]) -> VersionRef | None:
    """The version reference of a put or delete record (None for a TTL refresh)."""
    if record["op"] == "put":
        at = parse_time(record["updated_at"])
    elif record["op"] == "delete":
        at = parse_time(record["at"])
    else:
        return None
    assert at is not None
    return VersionRef(cid, record["op"] == "delete", at)


class StoreState:
    """Live items, version references and search indexes of one store.

    Not thread-safe on its own: the store calls it under its lock.
    """

    def __init__(self, *, mode: Mode, dims: int | None, fields: list[str] | None) -> None:
        self.mode = mode
        self.fields = fields
        self.items: dict[tuple[str, ...], dict[str, Entry]] = {}
        self.versions: dict[tuple[tuple[str, ...], str], list[VersionRef]] = {}
        self.registered: set[tuple[str, ...]] = set()
        self.heads: dict[str, str] = {}  # thread -> newest checkpoint id written (the parent of the next)
        self.vectors = VectorIndex(dims) if dims and mode != "lexical" else None
        self.lexical = BM25Index() if mode != "semantic" else None
        self._slots: dict[tuple[tuple[str, ...], str], int] = {}
        self._free_slots: list[int] = []
        self._next_slot = 0

    # ----------------------------------------------------------------- indexing

    def fields_for(self, index: IndexArg) -> list[str] | None:
        """The field paths an item put with ``index`` is indexed on (``[]``: not indexed)."""
        if index is False:
            return []
        if index is None:
            return self.fields
        return list(index)

    def texts_for(self, value: Mapping[str, Any], index: IndexArg) -> list[str]:
        """The texts to embed for an item (empty when it has no vectors)."""
        if self.vectors is None:
            return []
        fields = self.fields_for(index)
        if fields == []:
            return []
        return index_texts(value, fields)

    def _slot(self, namespace: tuple[str, ...], key: str) -> int:
        slot = self._slots.get((namespace, key))
        if slot is None:
            slot = self._free_slots.pop() if self._free_slots else self._next_slot
            if slot == self._next_slot:
                self._next_slot += 1
            self._slots[(namespace, key)] = slot
        return slot

    def _index(self, entry: Entry, vectors: np.ndarray | None) -> None:
        entry.slot = self._slot(entry.namespace, entry.key)
        fields = self.fields_for(entry.index)
        if self.vectors is not None:
            if vectors is not None and len(vectors):
                self.vectors.set(entry.slot, vectors)
            else:
                self.vectors.remove(entry.slot)
        if self.lexical is not None:
            if fields == []:
                self.lexical.remove(entry.slot)
            else:
                self.lexical.add(entry.slot, lexical_text(entry.value, fields))

    def _unindex(self, namespace: tuple[str, ...], key: str) -> None:
        slot = self._slots.pop((namespace, key), None)
        if slot is None:
            return
        if self.vectors is not None:
            self.vectors.remove(slot)
        if self.lexical is not None:
            self.lexical.remove(slot)
        self._free_slots.append(slot)

    def has_vectors(self, entry: Entry) -> bool:
        return self.vectors is not None and entry.slot in self.vectors

    # ----------------------------------------------------------------- reading

    def live(self, namespace: tuple[str, ...], key: str, now: datetime) -> Entry | None:
        entry = self.items.get(namespace, {}).get(key)
        return None if entry is None or entry.expired(now) else entry

    def present(self, namespace: tuple[str, ...], key: str) -> Entry | None:
        """The entry, expired or not (a delete of an expired item still writes a tombstone)."""
        return self.items.get(namespace, {}).get(key)

    def live_namespaces(self, now: datetime) -> list[tuple[str, ...]]:
        return [ns for ns, entries in self.items.items() if any(not e.expired(now) for e in entries.values())]

    def candidates(
        self, prefix: tuple[str, ...], match: Callable[[Mapping[str, Any]], bool], now: datetime
    ) -> list[Entry]:
        found: list[Entry] = []
        for namespace, entries in self.items.items():
            if prefix and not namespace_matches(namespace, prefix=prefix):
                continue
            found.extend(e for e in entries.values() if not e.expired(now) and match(e.value))
        return found

    def rank(
        self,
        entries: list[Entry],
        query: str | None,
        query_vector: np.ndarray | None,
        *,
        limit: int,
        offset: int,
    ) -> list[tuple[Entry, float | None]]:
        """One page of ``entries``: by score when there is a query, else newest first (ties: ns, key)."""
        wanted = offset + limit
        if not query:
            page = heapq.nsmallest(wanted, entries, key=lambda e: (-e.updated_ts, e.namespace, e.key))
            return [(e, None) for e in page[offset:]]
        scores = self.scores(entries, query, query_vector)
        keyed = [
            (
                (0, -s, -e.updated_ts, e.namespace, e.key)
                if s is not None
                else (1, 0.0, -e.updated_ts, e.namespace, e.key),
                e,
                s,
            )
            for e, s in zip(entries, scores, strict=True)
        ]
        page_keyed = heapq.nsmallest(wanted, keyed, key=lambda t: t[0])
        return [(e, s) for _, e, s in page_keyed[offset:]]

    def scores(self, entries: list[Entry], query: str, query_vector: np.ndarray | None) -> list[float | None]:
        slots = [e.slot for e in entries]
        semantic: list[float | None] | None = None
        lexical: list[float | None] | None = None
        if self.vectors is not None and query_vector is not None:
            semantic = self.vectors.best(query_vector, slots)
        if self.lexical is not None:
            bm25 = self.lexical.scores(query)
            lexical = [bm25.get(s) for s in slots]
        if self.mode == "semantic" and semantic is not None:
            return semantic
        if self.mode == "lexical" and lexical is not None:
            return lexical
        if semantic is None or lexical is None:
            return semantic or lexical or [None] * len(entries)
        return _rrf(semantic, lexical)

    # ----------------------------------------------------------------- writing

    def apply(
        self,
        namespace: tuple[str, ...],
        key: str,
        cid: str,
        record: Mapping[str, Any],
        vectors: np.ndarray | None,
    ) -> None:
        """Apply one record written at checkpoint ``cid`` (an older one than the head only joins history)."""
        if record["op"] == "refresh":
            entry = self.items.get(namespace, {}).get(key)
            if entry is not None and entry.checkpoint_id == record["of"]:
                entry.expires_at = parse_time(record["expires_at"])
            return
        ref = ref_from_record(cid, record)
        assert ref is not None
        refs = self.versions.setdefault((namespace, key), [])
        position = bisect.bisect(refs, cid, key=lambda r: r.checkpoint_id)
        refs.insert(position, ref)
        if position != len(refs) - 1:
            return  # a concurrent newer write already landed
        if record["op"] == "delete":
            entries = self.items.get(namespace)
            if entries is not None and entries.pop(key, None) is not None:
                self._unindex(namespace, key)
                if not entries:
                    del self.items[namespace]
            return
        entry = entry_from_record(namespace, key, cid, record)
        self.items.setdefault(namespace, {})[key] = entry
        self._index(entry, vectors)

    def apply_many(self, writes: Iterable[tuple[tuple[str, ...], str, str, Mapping[str, Any], Any]]) -> None:
        for namespace, key, cid, record, vectors in writes:
            self.apply(namespace, key, cid, record, vectors)

    def history(self, namespace: tuple[str, ...], key: str) -> list[VersionRef]:
        return list(self.versions.get((namespace, key), ()))

    def keys_ever(self, namespace: tuple[str, ...]) -> list[str]:
        return sorted(k for (ns, k) in self.versions if ns == namespace)


def _rrf(semantic: list[float | None], lexical: list[float | None]) -> list[float | None]:
    """Reciprocal-rank fusion (k=60) of two score lists over the same candidates."""
    fused: list[float | None] = [None] * len(semantic)
    for scores in (semantic, lexical):
        ranked = sorted((i for i, s in enumerate(scores) if s is not None), key=lambda i: -(scores[i] or 0.0))
        for rank, i in enumerate(ranked):
            fused[i] = (fused[i] or 0.0) + 1.0 / (_RRF_K + rank + 1)
    return fused
