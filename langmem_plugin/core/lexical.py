"""BM25 lexical scoring: sparse vectors for hybrid search, and an in-process index.

Which BM25, and why: the engine's own. ``qdrant-edge-py`` (already our
embedded engine) ships Qdrant's BM25 embedder, the same Rust code that a Qdrant
server runs for its built-in ``qdrant/bm25`` inference: Unicode word
tokenizer, lowercasing, English stopwords, Snowball stemming, hashed term ids.
Using it everywhere means

- a document indexed by the embedded engine, by qdrant-client against a
  server, or by our in-process index gets the *same* term ids and weights, so a
  store can move between engines without re-encoding;
- encoding costs about 4 µs per sentence (no Python tokenizing loop).

Documents are encoded with BM25's term-frequency saturation and length
normalisation (``k``, ``b``, ``avg_len``); queries as each unique term with
weight 1. The IDF factor is corpus-dependent, so it is applied where the corpus
is: by Qdrant (sparse vectors with ``Modifier.IDF``) or by :class:`BM25Index`.

>>> enc = BM25Encoder()
>>> doc = enc.encode_document("Dogs were running in the park")
>>> query = enc.encode_query("dog runs")
>>> sorted(set(query.indices) - set(doc.indices))
[]
"""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np
import qdrant_edge

__all__ = ["BM25Encoder", "BM25Index", "SparseVector"]


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Term ids and their weights, ids ascending."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.indices)

    def as_dict(self) -> dict[int, float]:
        """``{term_id: weight}``."""
        return dict(zip(self.indices, self.values, strict=True))


class BM25Encoder:
    """Qdrant's BM25 embedder (from ``qdrant-edge-py``), with the engine's defaults.

    Args:
        k: term-frequency saturation (1.2).
        b: length normalisation, 0 to 1 (0.75).
        avg_len: the expected document length in tokens; memories are short, so
            the default is 32 rather than Qdrant's 256.
        language: stopwords and stemmer (``"english"``).
    """

    def __init__(self, *, k: float = 1.2, b: float = 0.75, avg_len: float = 32.0, language: str = "english"):
        self.k, self.b, self.avg_len, self.language = k, b, avg_len, language
        config = qdrant_edge.Bm25Config(k=k, b=b, avg_len=avg_len, language=language)
        self._model = qdrant_edge.Bm25(config)

    def encode_document(self, text: str) -> SparseVector:
        """A document's BM25 term weights (IDF not applied)."""
        vector = self._model.embed_document(text)
        return SparseVector(tuple(vector.indices), tuple(vector.values))

    def encode_query(self, text: str) -> SparseVector:
        """A query's terms, each with weight 1."""
        vector = self._model.embed_query(text)
        return SparseVector(tuple(vector.indices), tuple(vector.values))

    def __repr__(self) -> str:
        return f"BM25Encoder(k={self.k}, b={self.b}, avg_len={self.avg_len}, language={self.language!r})"


class BM25Index:
    """An in-process inverted index that scores with BM25 (IDF applied at query time).

    For stores without a search engine (the checkpointer store, tests). Thread-safe.
    IDF is Qdrant's: ``ln(1 + (N - n + 0.5) / (n + 0.5))``, so scores agree with
    a Qdrant collection whose sparse vectors use ``Modifier.IDF``.

    >>> index = BM25Index()
    >>> index.add("a", "I adopted a cat named Luna")
    >>> index.add("b", "We went hiking in the Alps")
    >>> [key for key, _ in index.search("my cat")]
    ['a']
    """

    def __init__(self, encoder: BM25Encoder | None = None) -> None:
        self.encoder = encoder or BM25Encoder()
        self._postings: dict[int, dict[Hashable, float]] = defaultdict(dict)
        self._docs: dict[Hashable, tuple[int, ...]] = {}
        self._lock = threading.RLock()
        # For top(): each document's slot in a score array, and postings as (slots, weights)
        # arrays, built per term on first use and dropped on every write.
        self._slot: dict[Hashable, int] = {}
        self._slot_keys: list[Hashable] = []
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, key: object) -> bool:
        return key in self._docs

    def add(self, key: Hashable, text: str) -> None:
        """Index ``text`` under ``key`` (replacing what ``key`` had)."""
        vector = self.encoder.encode_document(text)
        with self._lock:
            self._remove(key)
            for term, weight in zip(vector.indices, vector.values, strict=True):
                self._postings[term][key] = weight
            self._docs[key] = vector.indices
            if key not in self._slot:
                self._slot[key] = len(self._slot_keys)
                self._slot_keys.append(key)

    def add_many(self, items: Iterable[tuple[Hashable, str]]) -> None:
        """Index several ``(key, text)`` pairs."""
        for key, text in items:
            self.add(key, text)

    def remove(self, key: Hashable) -> None:
        """Forget ``key`` (no error when it is not indexed)."""
        with self._lock:
            self._remove(key)

    def _remove(self, key: Hashable) -> None:
        self._arrays.clear()
        if key in self._docs and len(self._slot_keys) > 64 and len(self._slot_keys) > 2 * len(self._docs):
            self._reslot()
        for term in self._docs.pop(key, ()):
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(key, None)
                if not posting:
                    del self._postings[term]

    def doc_freq(self, term: int) -> int:
        """How many documents hold the term id ``term`` (an index of :meth:`BM25Encoder.encode_query`)."""
        posting = self._postings.get(term)
        return len(posting) if posting else 0

    def scores(self, query: str, keys: Iterable[Hashable] | None = None) -> dict[Hashable, float]:
        """BM25 score of every document that shares a term with ``query`` (restricted to ``keys``).

        IDF is the whole index's (as a search engine's collection statistics are). With ``keys``,
        each term walks its posting or the keys, whichever is shorter: the cost of scoring one
        user's documents does not grow with the other documents the index holds.
        """
        allowed = set(keys) if keys is not None else None
        terms = self.encoder.encode_query(query).indices
        with self._lock:
            total = len(self._docs)
            result: dict[Hashable, float] = {}
            get = result.get
            for term in terms:
                posting = self._postings.get(term)
                if not posting:
                    continue
                n = len(posting)
                idf = math.log(1.0 + (total - n + 0.5) / (n + 0.5))
                if allowed is None:
                    for key, weight in posting.items():
                        result[key] = get(key, 0.0) + idf * weight
                elif n <= len(allowed):
                    for key, weight in posting.items():
                        if key in allowed:
                            result[key] = get(key, 0.0) + idf * weight
                else:
                    held = posting.get
                    for key in allowed:
                        found = held(key)
                        if found is not None:
                            result[key] = get(key, 0.0) + idf * found
        return result

    def top(self, query: str, limit: int, keys: Iterable[Hashable] | None = None) -> dict[Hashable, float]:
        """The ``limit`` best-scoring documents of :meth:`scores`, as ``{key: score}`` (in no order).

        The same scores as :meth:`scores` (summed in the same order), computed over arrays: a
        query costs a few array operations per term instead of a dictionary update per posting.
        Ties at the cut are broken by indexing order (earliest first).

        >>> index = BM25Index()
        >>> index.add_many([("a", "green tea"), ("b", "black tea"), ("c", "coffee")])
        >>> sorted(index.top("green tea", 1))
        ['a']
        """
        if limit < 1:
            return {}
        terms = self.encoder.encode_query(query).indices
        with self._lock:
            total = len(self._docs)
            acc = np.zeros(len(self._slot_keys))
            for term in terms:
                arrays = self._term_arrays(term)
                if arrays is None:
                    continue
                slots, weights = arrays
                n = len(slots)
                acc[slots] += math.log(1.0 + (total - n + 0.5) / (n + 0.5)) * weights
            if keys is not None:
                allowed = np.zeros(len(acc), dtype=bool)
                allowed[[self._slot[k] for k in keys if k in self._slot]] = True
                acc[~allowed] = 0.0
            hits = np.flatnonzero(acc)
            if len(hits) > limit:
                scores = acc[hits]
                cut = np.partition(scores, len(hits) - limit)[len(hits) - limit]
                above = hits[scores > cut]
                ties = hits[scores == cut][: limit - len(above)]
                hits = np.concatenate([above, ties])
            slot_keys = self._slot_keys
            return {slot_keys[i]: float(acc[i]) for i in hits.tolist()}

    def _term_arrays(self, term: int) -> tuple[np.ndarray, np.ndarray] | None:
        arrays = self._arrays.get(term)
        if arrays is None:
            posting = self._postings.get(term)
            if not posting:
                return None
            slot = self._slot
            slots = np.fromiter((slot[k] for k in posting), dtype=np.intp, count=len(posting))
            arrays = self._arrays[term] = (slots, np.fromiter(posting.values(), dtype=np.float64))
        return arrays

    def _reslot(self) -> None:
        """Renumber the slots of the indexed documents (removals leave holes in the score array)."""
        self._slot_keys = list(self._docs)
        self._slot = {key: n for n, key in enumerate(self._slot_keys)}

    def search(
        self, query: str, *, limit: int = 10, keys: Iterable[Hashable] | None = None
    ) -> list[tuple[Hashable, float]]:
        """The ``limit`` best ``(key, score)`` pairs, highest score first."""
        scored = self.scores(query, keys)
        return sorted(scored.items(), key=lambda kv: (-kv[1], str(kv[0])))[:limit]
