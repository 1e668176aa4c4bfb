"""The rows of ``bench locomo``: the retrieval recipe, its ablations, and a searcher per row.

:data:`VARIANTS` names the rows (:data:`_LABELS` their titles); :data:`LOCOMO_RETRIEVAL` is the
recipe measured (:data:`LOCOMO_RETRIEVAL_FAST` with fewer candidates, :data:`_ABLATIONS` without
parts of it), over a QdrantStore whose BM25 reads :data:`LOCOMO_LEXICAL_FIELDS` and whose dense
index embeds :data:`EMBEDDED_FIELDS`; :func:`_searchers` builds the stores and a searcher for each
row, with one embedder shared through :class:`_EmbedOnce`. The ``product`` rows are run by
:mod:`langmem_plugin.bench.locomo.product` instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore

from langmem_plugin.bench.locomo.data import MAX_PARTS
from langmem_plugin.bench.locomo.lifts import SalienceLift
from langmem_plugin.bench.locomo.product import PRODUCT_EXPERIMENTS, PRODUCT_PRESETS
from langmem_plugin.bench.locomo.salience import memory_salience
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.recall import HybridRetriever, RetrievalConfig

__all__ = [
    "ALL_VARIANTS",
    "EMBEDDED_FIELDS",
    "LOCOMO_LEXICAL_FIELDS",
    "LOCOMO_RETRIEVAL",
    "LOCOMO_RETRIEVAL_FAST",
    "VARIANTS",
    "Searcher",
]

#: What the dense index embeds: the turn, and each of its sentences and its photo's caption alone
#: (``metadata.part_1`` ... ; a turn scores its best vector).
EMBEDDED_FIELDS: tuple[str, ...] = ("content", *(f"metadata.part_{n}" for n in range(1, MAX_PARTS + 1)))

#: The retrieval recipe measured here: BM25 over date + previous turn + turn, dense over the turn and
#: its sentences, lifted by a strong neighbour, a strong session, the speaker the question names, the
#: date it names and how much the turn tells (:func:`~langmem_plugin.bench.locomo.salience.memory_salience`);
#: weights tuned on conversations 0-4 (see :mod:`langmem_plugin.bench.locomo`).
#: What the recipe's store indexes for BM25 (``QdrantIndexConfig.lexical_fields``): the session's
#: date, the turn before, the turn.
LOCOMO_LEXICAL_FIELDS: tuple[str, ...] = ("metadata.session_date", "metadata.context", "content")

LOCOMO_RETRIEVAL = RetrievalConfig(
    neighbours_field="metadata.neighbours",
    neighbour_weight=0.45,
    candidates=50,
    group_fields=("metadata.session_date",),
    group_weight=0.5,
    speaker_weight=1.2,
    time_weight=1.4,
    time_after_days=30.0,
    lifts=(SalienceLift(memory_salience, weight=1.2),),
)

#: The recipe with 30 candidates of each signal instead of 50: ≈ 1 point lower recall@10 (84.0 vs
#: 85.0) and ≈ 0.5 ms faster (p50 5.3 vs 5.8 ms, with QdrantStore's payload cache).
LOCOMO_RETRIEVAL_FAST = dataclasses.replace(LOCOMO_RETRIEVAL, candidates=30)

_UNLIFTED: dict[str, Any] = {"lifts": (), "speaker_weight": 0.0, "time_weight": 0.0}
#: Ablations of the recipe: without the lifts fitted on LoCoMo (speaker, date, salience); and
#: also without the background-word drop; and z-score fusion alone (no lifts at all).
_ABLATIONS: dict[str, RetrievalConfig] = {
    "qdrant-general": dataclasses.replace(LOCOMO_RETRIEVAL, **_UNLIFTED),
    "qdrant-general-nobg": dataclasses.replace(LOCOMO_RETRIEVAL, **_UNLIFTED, background_df=None),
    "qdrant-zfusion": dataclasses.replace(
        LOCOMO_RETRIEVAL, **_UNLIFTED, neighbour_weight=0.0, group_weight=0.0
    ),
}

Searcher = Callable[[tuple[str, ...], str, int], list[dict[str, Any]]]


def _store_searcher(store: BaseStore) -> Searcher:
    def search(namespace: tuple[str, ...], query: str, limit: int) -> list[dict[str, Any]]:
        return [item.value for item in store.search(namespace, query=query, limit=limit)]

    return search


def _retriever_searcher(retriever: HybridRetriever) -> Searcher:
    def search(namespace: tuple[str, ...], query: str, limit: int) -> list[dict[str, Any]]:
        return [hit.value for hit in retriever.search(namespace, query, limit=limit)]

    return search


class _EmbedOnce(Embeddings):
    """Embeds each distinct document text once per run (in memory), queries every time."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.dims = getattr(inner, "dims", None)
        self._docs: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._docs))
        if missing:
            self._docs.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self._docs[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


#: The rows over a store whose BM25 reads the turn only (the others: date + context + turn).
_PLAIN = ("qdrant-rrf", "qdrant-dbsf-plain", "bm25-turns", "dense")

VARIANTS: tuple[str, ...] = (
    "qdrant",
    "qdrant-fast",
    "qdrant-general",
    "qdrant-general-nobg",
    "qdrant-zfusion",
    "qdrant-rrf",
    "qdrant-dbsf-plain",
    "qdrant-lex-rrf",
    "qdrant-dbsf",
    "bm25",
    "bm25-turns",
    "dense",
    "dense-clean",
    "inmemory",
    "product",
    "product-qdrant",
    "product-inmemory",
    "product-sqlite",
    "product-postgres",
    "product-langgraph-postgres",
)
_LABELS = {
    "qdrant": "QdrantStore + HybridRetriever (recipe)",
    "qdrant-fast": "QdrantStore + HybridRetriever (recipe, 30 candidates)",
    "qdrant-general": "recipe without its LoCoMo-fitted lifts",
    "qdrant-general-nobg": "recipe without LoCoMo lifts, no background drop",
    "qdrant-zfusion": "z-score fusion only (no lifts)",
    "qdrant-rrf": "QdrantStore hybrid, RRF (old default)",
    "qdrant-dbsf-plain": "QdrantStore hybrid, DBSF (default)",
    "qdrant-lex-rrf": "QdrantStore hybrid, lexical_fields, RRF",
    "qdrant-dbsf": "QdrantStore hybrid, lexical_fields, DBSF",
    "bm25": "BM25 only (date + context + turn)",
    "bm25-turns": "BM25 only (turn text)",
    "dense": "dense only (MiniLM, query as is)",
    "dense-clean": "dense only (background words dropped)",
    "inmemory": "InMemoryStore + HybridRetriever (recipe; no BM25 there)",
    "product": "product: import_history + Memory.recall, Memory() (the default)",
    "product-qdrant": "product: the same, QdrantStore(path) embedded",
    "product-inmemory": "product: the same, LangGraph's InMemoryStore (its vectors + our BM25)",
    "product-sqlite": "product: the same, CheckpointerStore(SqliteSaver)",
    "product-postgres": "product: the same, PostgresMemoryStore (POSTGRES_URL, else a temporary server)",
    "product-langgraph-postgres": "product: the same, LangGraph's PostgresStore (pgvector + our BM25)",
}
_LABELS.update({name: label for name, (label, _) in PRODUCT_EXPERIMENTS.items()})
_LABELS.update(PRODUCT_PRESETS)
#: Every row ``--variants`` takes: :data:`VARIANTS` (the default run), the presets and the experiments.
ALL_VARIANTS: tuple[str, ...] = (*VARIANTS, *PRODUCT_PRESETS, *PRODUCT_EXPERIMENTS)


def _searchers(
    names: Sequence[str], embeddings: Embeddings, stack: ExitStack, *, qdrant_path: Path
) -> Iterator[tuple[str, BaseStore, Searcher]]:
    index: Any = {
        "dims": getattr(embeddings, "dims", None) or 384,
        "embed": embeddings,
        "fields": list(EMBEDDED_FIELDS),
    }
    qdrant: Any = None
    inmemory: Any = None
    if any(n in _PLAIN for n in names):
        from langmem_plugin.stores.qdrant import QdrantStore

        qdrant = stack.enter_context(QdrantStore(path=qdrant_path, index=index))
    lexical: Any = None
    if any(n.startswith(("qdrant", "bm25", "dense")) and n not in _PLAIN for n in names):
        from langmem_plugin.stores.qdrant import QdrantStore

        # the recipe's two signals in the engine: BM25 over date + context + content, dense over content
        lexical_index: Any = {**index, "lexical_fields": list(LOCOMO_LEXICAL_FIELDS)}
        lexical = stack.enter_context(
            QdrantStore(path=qdrant_path.with_name(qdrant_path.name + "-lexical"), index=lexical_index)
        )
    if "inmemory" in names:
        from langgraph.store.memory import InMemoryStore

        inmemory = InMemoryStore(index=index)
    for name in names:
        if name.startswith("product"):
            continue  # run by :func:`~langmem_plugin.bench.locomo.product.run_product`
        if name == "qdrant":
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, LOCOMO_RETRIEVAL))
        elif name == "qdrant-fast":
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, LOCOMO_RETRIEVAL_FAST))
        elif name in _ABLATIONS:
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, _ABLATIONS[name]))
        elif name == "qdrant-rrf":
            yield name, qdrant, _store_searcher(qdrant.with_search(fusion="rrf"))
        elif name == "qdrant-dbsf-plain":
            yield name, qdrant, _store_searcher(qdrant.with_search(fusion="dbsf"))
        elif name == "qdrant-lex-rrf":
            yield name, lexical, _store_searcher(lexical.with_search(fusion="rrf"))
        elif name == "qdrant-dbsf":
            yield name, lexical, _store_searcher(lexical.with_search(fusion="dbsf"))
        elif name == "bm25":
            yield (
                name,
                lexical,
                _retriever_searcher(HybridRetriever(lexical, RetrievalConfig(mode="lexical"))),
            )
        elif name == "bm25-turns":
            yield name, qdrant, _retriever_searcher(HybridRetriever(qdrant, RetrievalConfig(mode="lexical")))
        elif name == "dense":
            yield name, qdrant, _store_searcher(qdrant.with_search(mode="dense"))
        elif name == "dense-clean":
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, RetrievalConfig(mode="dense")))
        elif name == "inmemory":
            yield name, inmemory, _retriever_searcher(HybridRetriever(inmemory, LOCOMO_RETRIEVAL))
        else:
            raise ConfigurationError(f"unknown variant {name!r}; use some of {', '.join(VARIANTS)}")
