"""The data of ``bench stores``: clustered vectors, precomputed once, the same for every store.

:func:`make_data` builds ``size`` items in :data:`TARGET` among the other namespaces' items, the
queries, and :class:`Precomputed`, the lookup table that stands in for the embedder;
:meth:`StoresData.exact` gives the exact neighbours recall@10 is measured against.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langmem_plugin.bench.core import sample_sentences

__all__ = ["DIMS", "TARGET", "Precomputed", "StoresData", "index_config", "make_data"]

DIMS = 384
TARGET = ("bench", "target")


class Precomputed(Embeddings):
    """The same vectors for every store: a lookup table of texts (documents and queries).

    A query is found by its ``"query N:"`` label too, so the one recall embeds without its
    background words gets the query's vector.
    """

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.by_label = {t.split(":", 1)[0]: v for t, v in vectors.items() if t.startswith("query ")}
        self.dims = DIMS

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        found = self.vectors.get(text)
        return found if found is not None else self.by_label[text.split(":", 1)[0]]


@dataclass
class StoresData:
    """The load (every put, shuffled), the queries, the target's keys and the vectors of them all."""

    puts: list[PutOp]
    queries: list[str]
    keys: list[str]
    embeddings: Precomputed
    target: np.ndarray  # the target namespace's vectors, in the order of ``keys``

    def exact(self, query: str, k: int = 10) -> set[str]:
        """The keys of the ``k`` nearest target items by cosine (the vectors are unit length)."""
        scores = self.target @ np.asarray(self.embeddings.vectors[query], dtype=np.float32)
        return {self.keys[i] for i in np.argpartition(-scores, k)[:k]}


def make_data(size: int, queries: int, seed: int = 11, topics: int = 2000, others: int = 990) -> StoresData:
    """``size`` items in :data:`TARGET`, ``others`` in 99 other namespaces, and ``queries`` queries."""
    rng = np.random.default_rng(seed)
    texts = sample_sentences(size + others, seed=seed)
    picked = random.Random(seed).sample(range(len(texts)), queries)
    query_texts = [f"query {i}: {texts[j]}" for i, j in enumerate(picked)]
    # Clustered like sentence embeddings: each text near one of `topics` directions (cosine ≈ 0.85),
    # each query near the text it was drawn from.
    centres = rng.standard_normal((topics, DIMS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((len(texts), DIMS)).astype(np.float32)
    vectors = centres[rng.integers(0, topics, len(texts))] + 0.6 * noise / np.sqrt(DIMS)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    nudged = vectors[picked] + 0.5 * rng.standard_normal((queries, DIMS)).astype(np.float32) / np.sqrt(DIMS)
    nudged /= np.linalg.norm(nudged, axis=1, keepdims=True)
    table = {t: vectors[i].tolist() for i, t in enumerate(texts)}
    table.update({t: nudged[i].tolist() for i, t in enumerate(query_texts)})
    puts: list[PutOp] = []
    keys: list[str] = []
    for i, text in enumerate(texts):
        ns = TARGET if i < size else ("bench", f"other{i % 99}")
        key = f"m{i:07d}"
        if i < size:
            keys.append(key)
        puts.append(PutOp(ns, key, {"text": text, "kind": "fact" if i % 4 == 0 else "episode", "n": i % 10}))
    random.Random(seed).shuffle(puts)
    return StoresData(puts, query_texts, keys, Precomputed(table), vectors[:size])


def index_config(data: StoresData) -> dict[str, Any]:
    """The index every store is given: the precomputed vectors of ``text`` (BM25 over it too)."""
    return {"dims": DIMS, "embed": data.embeddings, "fields": ["text"], "text_fields": ["text"]}
