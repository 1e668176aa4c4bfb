"""The folded state of a :class:`~langmem_plugin.stores.checkpointer.CheckpointerStore`. Pure: no I/O.

:class:`StoreState` holds the live items, every item's version references, and
the search indexes (a numpy matrix of unit vectors, Qdrant's BM25), folded from
the checkpoint log on open and kept in step with each write.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from langmem_plugin.core.candidates import CandidateQuery, background_terms, without_background
from langmem_plugin.core.lexical import BM25Index
from langmem_plugin.stores._common import index_texts, namespace_matches
from langmem_plugin.stores.checkpointer._entries import (
    Entry,
    IndexArg,
    Mode,
    VersionRef,
    entry_from_record,
    lexical_text,
    ref_from_record,
)
from langmem_plugin.stores.checkpointer._log import parse_time
from langmem_plugin.stores.checkpointer._vectors import VectorIndex, rrf, top_indices

__all__ = ["SlotBM25Index", "StoreState"]

#: How many prefixes' namespaces :meth:`StoreState._spaces` keeps.
_PREFIXES_KEPT = 4096

Ranked = list[tuple[Entry, float]]


class SlotBM25Index(BM25Index):
    """The BM25 index of a store's items, keyed by slot, that also counts within a set of slots."""

    def doc_freqs(self, terms: Sequence[int], slots: np.ndarray) -> tuple[int, dict[int, int]]:
        """How many of ``slots`` are indexed, and how many of them hold each of ``terms``: each
        count walks ``slots`` or the term's posting, whichever is shorter, so it does not grow with
        what the rest of the store holds."""
        chosen = set(slots.tolist())
        with self._lock:
            docs = self._docs
            indexed = sum(1 for slot in chosen if slot in docs)
            freqs = {}
            for term in terms:
                posting = self._postings.get(term)
                if posting:
                    if len(posting) <= len(chosen):
                        freqs[term] = sum(1 for slot in posting if slot in chosen)
                    else:
                        freqs[term] = sum(1 for slot in chosen if slot in posting)
        return indexed, freqs


class StoreState:
    """Live items, version references and search indexes of one store.

    Not thread-safe on its own: the store calls it under its lock. Besides the
    items it keeps, per slot (a small int per live item), ``updated_at`` and
    expiry as numpy arrays, and every live item in one list sorted by
    (newest first, namespace, key) — the order of a search without a query — so
    that such a search stops as soon as it has a page.
    """

    def __init__(
        self,
        *,
        mode: Mode,
        dims: int | None,
        fields: list[str] | None,
        lexical_fields: list[str] | None = None,
    ) -> None:
        self.mode = mode
        self.fields = fields
        self.lexical_fields = lexical_fields
        self.items: dict[tuple[str, ...], dict[str, Entry]] = {}
        self.versions: dict[tuple[tuple[str, ...], str], list[VersionRef]] = {}
        self.registered: set[tuple[str, ...]] = set()
        self.heads: dict[str, str] = {}  # thread -> newest checkpoint id written (the parent of the next)
        self.folded: dict[tuple[str, ...], set[str]] = {}  # namespace -> the ids of its checkpoints applied
        self.dropped: dict[tuple[str, ...], int] = {}  # namespace -> how many of those a purge deleted
        self.writing: dict[str, int] = {}  # thread -> its checkpoints written but not yet acknowledged
        self.writes = 0  # records applied so far: a selection of slots holds while this has not moved
        self.vectors = VectorIndex(dims) if dims and mode != "lexical" else None
        self.lexical = SlotBM25Index() if mode != "semantic" else None
        self._slots: dict[tuple[tuple[str, ...], str], int] = {}
        self._by_slot: dict[int, Entry] = {}
        self._free_slots: list[int] = []
        self._next_slot = 0
        self._slot_ts = np.zeros(64)
        self._slot_expiry = np.full(64, np.inf)
        self._order: list[tuple[float, tuple[str, ...], str]] = []
        self._ns_slots: dict[tuple[str, ...], np.ndarray] = {}
        # The namespaces under each prefix searched since the last namespace came or went: a
        # recall's searches do not match every namespace of the store against the user's prefix.
        self._prefix_spaces: dict[tuple[str, ...], tuple[tuple[str, ...], ...]] = {}
        self._loading = False
        self._vector_batch: dict[int, np.ndarray] | None = None
        self._pending_vectors: dict[tuple[tuple[str, ...], str], np.ndarray | None] = {}

    # ----------------------------------------------------------------- indexing

    def fields_for(self, index: IndexArg) -> list[str] | None:
        """The field paths an item put with ``index`` is indexed on (``[]``: not indexed)."""
        if index is False:
            return []
        if index is None:
            return self.fields
        return list(index)

    def lexical_fields_for(self, index: IndexArg) -> list[str] | None:
        """The field paths BM25 reads of an item put with ``index``: ``lexical_fields`` when set."""
        if index is False or self.lexical_fields is None:
            return self.fields_for(index)
        return self.lexical_fields

    def texts_for(self, value: Mapping[str, Any], index: IndexArg) -> list[str]:
        """The texts to embed for an item (empty when it has no vectors)."""
        if self.vectors is None:
            return []
        fields = self.fields_for(index)
        if fields == []:
            return []
        return index_texts(value, fields)

    def stored_vectors(self, namespace: tuple[str, ...], key: str, texts: list[str]) -> np.ndarray | None:
        """The vectors of the item at ``(namespace, key)`` when it is indexed by ``texts``, else None."""
        entry = self.present(namespace, key)
        if entry is None or self.vectors is None or self.texts_for(entry.value, entry.index) != texts:
            return None
        return self.vectors.rows(entry.slot)

    def _slot(self, namespace: tuple[str, ...], key: str) -> int:
        slot = self._slots.get((namespace, key))
        if slot is None:
            if self._free_slots:
                slot = self._free_slots.pop()
            else:
                slot = self._next_slot
                self._next_slot += 1
                if slot >= len(self._slot_ts):
                    grow = len(self._slot_ts)
                    self._slot_ts = np.concatenate([self._slot_ts, np.zeros(grow)])
                    self._slot_expiry = np.concatenate([self._slot_expiry, np.full(grow, np.inf)])
            self._slots[(namespace, key)] = slot
            self._ns_slots.pop(namespace, None)
        return slot

    def _index(self, entry: Entry, vectors: np.ndarray | None, previous: Entry | None) -> None:
        entry.slot = self._slot(entry.namespace, entry.key)
        self._by_slot[entry.slot] = entry
        self._slot_ts[entry.slot] = entry.updated_ts
        self._slot_expiry[entry.slot] = entry.expires_at.timestamp() if entry.expires_at else np.inf
        if self._loading:
            self._pending_vectors[(entry.namespace, entry.key)] = vectors
            return
        if previous is not None:
            self._order_remove(previous)
        bisect.insort(self._order, (-entry.updated_ts, entry.namespace, entry.key))
        fields = self.lexical_fields_for(entry.index)
        if self.vectors is not None:
            if vectors is not None and len(vectors):
                if self._vector_batch is not None:
                    self._vector_batch[entry.slot] = vectors
                else:
                    self.vectors.set(entry.slot, vectors)
            else:
                self.vectors.remove(entry.slot)
                if self._vector_batch is not None:
                    self._vector_batch.pop(entry.slot, None)
        if self.lexical is not None:
            if fields == []:
                self.lexical.remove(entry.slot)
            else:
                self.lexical.add(entry.slot, lexical_text(entry.value, fields))

    def _order_remove(self, entry: Entry) -> None:
        position = bisect.bisect_left(self._order, (-entry.updated_ts, entry.namespace, entry.key))
        if position < len(self._order) and self._order[position][1:] == (entry.namespace, entry.key):
            del self._order[position]

    def _unindex(self, entry: Entry) -> None:
        slot = self._slots.pop((entry.namespace, entry.key), None)
        self._ns_slots.pop(entry.namespace, None)
        if slot is None:
            return
        self._by_slot.pop(slot, None)
        self._slot_expiry[slot] = np.inf
        if self._loading:
            self._pending_vectors.pop((entry.namespace, entry.key), None)
        else:
            self._order_remove(entry)
        if self.vectors is not None:
            self.vectors.remove(slot)
            if self._vector_batch is not None:
                self._vector_batch.pop(slot, None)
        if self.lexical is not None:
            self.lexical.remove(slot)
        self._free_slots.append(slot)

    def begin_load(self) -> None:
        """Fold a log: apply records without indexing them one by one."""
        self._loading = True

    def finish_load(self) -> list[Entry]:
        """Index everything folded at once; returns the entries that need vectors and have none."""
        self._loading = False
        entries = list(self._by_slot.values())
        self._order = sorted((-e.updated_ts, e.namespace, e.key) for e in entries)
        missing: list[Entry] = []
        if self.vectors is not None:
            slots, groups = [], []
            for e in entries:
                vectors = self._pending_vectors.get((e.namespace, e.key))
                if vectors is not None and len(vectors):
                    slots.append(e.slot)
                    groups.append(vectors)
                elif self.texts_for(e.value, e.index):
                    missing.append(e)
            self.vectors.set_many(slots, groups)
        if self.lexical is not None:
            for e in entries:
                fields = self.lexical_fields_for(e.index)
                if fields != []:
                    self.lexical.add(e.slot, lexical_text(e.value, fields))
        self._pending_vectors.clear()
        return missing

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

    def search(
        self,
        prefix: tuple[str, ...],
        match: Callable[[Mapping[str, Any]], bool] | None,
        query: str | None,
        query_vector: np.ndarray | None,
        *,
        limit: int,
        offset: int,
        now: datetime,
    ) -> list[tuple[Entry, float | None]]:
        """One page of the live items under ``prefix`` that ``match``.

        By score with a query (unscored ones after), else newest first; ties by namespace, key.
        """
        wanted = offset + limit
        if wanted <= 0:
            return []
        if not query:
            spaces = self._spaces(prefix)
            size = sum(len(self.items[ns]) for ns in spaces)
            if size * 8 < len(self._order):  # a narrow prefix: gather its items
                found = [
                    e
                    for ns in spaces
                    for e in self.items[ns].values()
                    if not e.expired(now) and (match is None or match(e.value))
                ]
                page = heapq.nsmallest(wanted, found, key=lambda e: (-e.updated_ts, e.namespace, e.key))
            else:  # walk the whole store in search order; stop at a full page
                allowed = set(spaces)
                page = []
                for _, namespace, key in self._order:
                    if namespace not in allowed:
                        continue
                    e = self.items[namespace][key]
                    if e.expired(now) or (match is not None and not match(e.value)):
                        continue
                    page.append(e)
                    if len(page) == wanted:
                        break
            return [(e, None) for e in page[offset:]]
        slots = self.select(prefix, match, now)
        scores = self.scores(slots, query, query_vector)
        page_scored: list[tuple[Entry, float | None]] = list(self._ranked(slots, scores, wanted))
        if len(page_scored) < wanted:
            unscored = np.isnan(scores)
            rest = slots[unscored]
            recency = np.where(unscored, self._slot_ts[slots], np.nan)[unscored]
            chosen_rest = top_indices(recency, wanted - len(page_scored))
            tail = sorted(
                (self._by_slot[int(rest[i])] for i in chosen_rest.tolist()),
                key=lambda e: (-e.updated_ts, e.namespace, e.key),
            )[: wanted - len(page_scored)]
            page_scored += [(e, None) for e in tail]
        return page_scored[offset:]

    def candidates(
        self, slots: np.ndarray, query: CandidateQuery, query_vector: np.ndarray | None
    ) -> tuple[Ranked, Ranked]:
        """The dense and the lexical top ``query.limit`` of ``slots``, raw scores, best first.

        Ranked and tie-broken as :meth:`search` ranks in the matching mode; a list is empty
        when the store has no such index (or, for the dense one, no ``query_vector``).
        """
        dense = self._dense_scores(slots, query_vector)
        lexical = self._lexical_scores(slots, query.query)
        return (
            self._ranked(slots, dense, query.limit) if dense is not None else [],
            self._ranked(slots, lexical, query.limit) if lexical is not None else [],
        )

    def dense_query(self, slots: np.ndarray, query: CandidateQuery) -> str:
        """``query.query`` without its background words among ``slots`` (as is without a BM25 index).

        Document frequencies are exact over ``slots``: the items searched, not the whole store.
        """
        if self.lexical is None or query.background_df is None or len(slots) < query.background_min_docs:
            return query.query
        encoder = self.lexical.encoder
        total, freqs = self.lexical.doc_freqs(background_terms(query.query, encoder), slots)
        return without_background(
            query.query, encoder, freqs.get, total, query.background_df, query.background_min_docs
        )

    def select(
        self, prefix: tuple[str, ...], match: Callable[[Mapping[str, Any]], bool] | None, now: datetime
    ) -> np.ndarray:
        """The slots of the live items under ``prefix`` that ``match`` (what a search with a query ranks)."""
        spaces = self._spaces(prefix)
        if match is None:
            slots = self._slots_of(spaces)
            chosen: np.ndarray = slots[self._slot_expiry[slots] > now.timestamp()]
            return chosen
        return np.fromiter(
            (
                e.slot
                for ns in spaces
                for e in self.items[ns].values()
                if not e.expired(now) and match(e.value)
            ),
            dtype=np.int64,
        )

    def still_live(self, slots: np.ndarray, now: datetime) -> np.ndarray:
        """Those of ``slots`` not expired at ``now`` (a :meth:`select` made since the last write, later)."""
        live: np.ndarray = slots[self._slot_expiry[slots] > now.timestamp()]
        return live

    def _spaces(self, prefix: tuple[str, ...]) -> Sequence[tuple[str, ...]]:
        """The namespaces under ``prefix``, in the store's order; kept per prefix until a namespace
        comes or goes (at most :data:`_PREFIXES_KEPT` prefixes)."""
        if not prefix:
            return list(self.items)
        spaces = self._prefix_spaces.get(prefix)
        if spaces is None:
            if len(self._prefix_spaces) >= _PREFIXES_KEPT:
                self._prefix_spaces.clear()
            spaces = tuple(ns for ns in self.items if namespace_matches(ns, prefix=prefix))
            self._prefix_spaces[prefix] = spaces
        return spaces

    def _ranked(self, slots: np.ndarray, scores: np.ndarray, limit: int) -> Ranked:
        """The ``limit`` best scored slots (NaN: unscored), best first; ties newest, then namespace, key."""
        chosen = top_indices(scores, limit)
        ranked = sorted(
            (
                (-float(scores[i]), -self._slot_ts[slots[i]], self._by_slot[int(slots[i])])
                for i in chosen.tolist()
            ),
            key=lambda t: (t[0], t[1], t[2].namespace, t[2].key),
        )[:limit]
        return [(e, -negscore) for negscore, _, e in ranked]

    def _slots_of(self, spaces: Sequence[tuple[str, ...]]) -> np.ndarray:
        arrays = []
        for ns in spaces:
            cached = self._ns_slots.get(ns)
            if cached is None:
                cached = np.fromiter((e.slot for e in self.items[ns].values()), dtype=np.int64)
                self._ns_slots[ns] = cached
            arrays.append(cached)
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)

    def scores(self, slots: np.ndarray, query: str, query_vector: np.ndarray | None) -> np.ndarray:
        """Each slot's score for ``query`` by the store's mode (NaN: no score)."""
        semantic = self._dense_scores(slots, query_vector)
        lexical = self._lexical_scores(slots, query)
        if semantic is not None and lexical is not None:
            return rrf(semantic, lexical)
        if semantic is not None:
            return semantic
        if lexical is not None:
            return lexical
        return np.full(len(slots), np.nan)

    def _dense_scores(self, slots: np.ndarray, query_vector: np.ndarray | None) -> np.ndarray | None:
        """Each slot's cosine with ``query_vector`` (NaN: no vector); None without a vector index."""
        if self.vectors is None or query_vector is None:
            return None
        return self.vectors.best(query_vector, slots, self._next_slot)

    def _lexical_scores(self, slots: np.ndarray, query: str) -> np.ndarray | None:
        """Each slot's BM25 score (NaN: no shared term); None without a lexical index."""
        if self.lexical is None:
            return None
        keys = slots.tolist()
        bm25 = self.lexical.scores(query, keys)  # the slots' own postings: flat in the store's size
        if not bm25:
            return np.full(len(keys), np.nan)
        nan = math.nan
        return np.fromiter((bm25.get(slot, nan) for slot in keys), dtype=np.float64, count=len(keys))

    # ----------------------------------------------------------------- writing

    def apply(
        self,
        namespace: tuple[str, ...],
        key: str,
        cid: str,
        record: Mapping[str, Any],
        vectors: np.ndarray | None,
        value: dict[str, Any] | None = None,
    ) -> None:
        """Apply one record written at checkpoint ``cid`` (an older one than the head only joins history).

        ``value``: the put's value as a dict, when the caller has it (saves decoding the JSON).
        """
        self.writes += 1
        self.folded.setdefault(namespace, set()).add(cid)
        if record["op"] == "refresh":
            entry = self.items.get(namespace, {}).get(key)
            if entry is not None and entry.checkpoint_id == record["of"]:
                entry.expires_at = parse_time(record["expires_at"])
                self._slot_expiry[entry.slot] = entry.expires_at.timestamp() if entry.expires_at else np.inf
            return
        ref = ref_from_record(cid, record)
        assert ref is not None
        refs = self.versions.setdefault((namespace, key), [])
        position = bisect.bisect(refs, cid, key=lambda r: r.checkpoint_id)
        refs.insert(position, ref)
        if position != len(refs) - 1:
            return  # a concurrent newer write already landed
        entries = self.items.get(namespace)
        previous = entries.get(key) if entries is not None else None
        if record["op"] == "delete":
            if entries is not None and previous is not None:
                del entries[key]
                self._unindex(previous)
                if not entries:
                    del self.items[namespace]
                    self._prefix_spaces.clear()
            return
        entry = entry_from_record(namespace, key, cid, record, value)
        if entries is None:
            entries = self.items[namespace] = {}
            self._prefix_spaces.clear()
        entries[key] = entry
        self._index(entry, vectors, previous)

    def apply_many(
        self,
        writes: Iterable[tuple[tuple[str, ...], str, str, Mapping[str, Any], Any, dict[str, Any] | None]],
    ) -> None:
        """Apply several records; their vectors go into the matrix in one copy.

        A checkpoint already folded (read back from the log by a bounded write's catch-up
        while its writer had not applied it yet) is not applied twice.
        """
        fresh = [w for w in writes if w[2] not in self.folded.get(w[0], ())]
        self._vector_batch = {}
        try:
            for namespace, key, cid, record, vectors, value in fresh:
                self.apply(namespace, key, cid, record, vectors, value)
            if self.vectors is not None and self._vector_batch:
                live = {s: v for s, v in self._vector_batch.items() if s in self._by_slot}
                self.vectors.set_many(list(live), list(live.values()))
        finally:
            self._vector_batch = None

    def history(self, namespace: tuple[str, ...], key: str) -> list[VersionRef]:
        return list(self.versions.get((namespace, key), ()))

    def forget_versions(self, namespace: tuple[str, ...], key: str, checkpoint_ids: Collection[str]) -> None:
        """Drop the versions of an item held in ``checkpoint_ids`` (a purge removed them from the log).

        Their checkpoint ids stay in :attr:`folded`, so a write's record read back by a catch-up
        and then purged is not applied again when its writer applies it.
        """
        refs = [r for r in self.versions.get((namespace, key), ()) if r.checkpoint_id not in checkpoint_ids]
        if refs:
            self.versions[(namespace, key)] = refs
        else:
            self.versions.pop((namespace, key), None)

    def keys_ever(self, namespace: tuple[str, ...]) -> list[str]:
        return sorted(k for (ns, k) in self.versions if ns == namespace)
