"""A reranker of your own after recall's ranking: ``RecallConfig(reranker=...)``.

Recall orders its candidates with what it computes offline (the learned ranker over the dense,
BM25, time, speaker and neighbour signals). A model that reads each candidate against the
question — a cross-encoder, a hosted rerank API, a chat model — can order them better, at the
price of a call per recall. LangChain's interface for such a model is the document compressor
(``langchain_core.documents.BaseDocumentCompressor``: ``CohereRerank``, ``FlashrankRerank``,
``JinaRerank``, ``VoyageAIRerank``, ...); recall takes any of them.

What recall does with it, as one :class:`Rerank` request of its store steps (so the node, the
middleware and the callback handler all have it, sync and async):

1. the ranked candidates (duplicates and superseded facts already dropped) go to the compressor
   as ``Document`` objects: the memory's text as ``page_content``; its id, compartment, kind and
   ``created_at`` in ``metadata``;
2. the documents it returns, in its order, are what recall then fits into the budget: a
   candidate it leaves out is not injected (``Considered.outcome == "reranked out"``), so a
   compressor's ``top_n`` caps the items. Its ``metadata["relevance_score"]`` becomes the item's
   score when it is a number; otherwise the score falls from 1 with the position;
3. a document that is not one recall sent (new text, or a sent one's text changed) is ignored:
   a reranker can reorder and drop memories, never add text to the prompt;
4. a compressor that raises, or answers something that is not a list of documents, leaves
   recall's own order (a warning is logged, ``langmem_plugin.services.recall.rerank``): a
   rerank service that is down costs the ordering, not the turn.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document

from langmem_plugin.services.operations import StoredMemory
from langmem_plugin.services.store_steps import Outside

__all__ = ["RERANKED_OUT", "Rerank", "reranked"]

logger = logging.getLogger(__name__)

#: The outcome (:class:`~.answer.Considered`) of a candidate the reranker left out.
RERANKED_OUT = "reranked out"
_SENT = "langmem_plugin_candidate"  # the metadata key a sent document is found back by

Ranked = tuple[float, float | None, StoredMemory]
#: What a :class:`Rerank` answers when the compressor raised (the warning is logged already).
RAISED = object()


@dataclass(frozen=True)
class Rerank(Outside):
    """The reranker's call for one recall: ``query`` and the candidates' documents, in rank order.

    Answers what the compressor answered, or :data:`RAISED` when it raised (logged).
    """

    reranker: BaseDocumentCompressor
    query: str
    documents: tuple[Document, ...]

    def run(self) -> Any:
        try:
            return self.reranker.compress_documents(list(self.documents), self.query)
        except Exception as exc:  # any service's error: recall keeps its own order
            _failed(self.reranker, exc)
            return RAISED

    async def arun(self) -> Any:
        try:
            return await self.reranker.acompress_documents(list(self.documents), self.query)
        except Exception as exc:
            _failed(self.reranker, exc)
            return RAISED


def _failed(reranker: BaseDocumentCompressor, exc: Exception) -> None:
    logger.warning(
        "recall's reranker %s raised %s: %s; the candidates keep recall's own order",
        type(reranker).__name__,
        type(exc).__name__,
        exc,
    )


def documents(ranked: Sequence[Ranked]) -> tuple[Document, ...]:
    """The documents the reranker is given: one per ranked candidate, in rank order."""
    return tuple(
        Document(
            page_content=memory.record.content,
            metadata={
                "id": memory.id,
                "compartment": memory.compartment.value,
                "kind": memory.record.kind.value,
                "created_at": memory.record.created_at.isoformat(),
                _SENT: place,
            },
        )
        for place, (_, _, memory) in enumerate(ranked)
    )


def reranked(
    ranked: Sequence[Ranked], sent: Sequence[Document], answer: Any
) -> tuple[list[Ranked], list[StoredMemory]] | None:
    """``ranked`` in the reranker's order with its scores, and the memories it left out; or
    ``None`` when the reranker raised or ``answer`` is not a list of documents (recall then
    keeps ``ranked``)."""
    if answer is RAISED:
        return None
    if isinstance(answer, (str, bytes)) or not isinstance(answer, Sequence):
        logger.warning(
            "recall's reranker answered %s, not a list of documents; the candidates keep recall's own order",
            type(answer).__name__,
        )
        return None
    order: list[tuple[int, float | None]] = []
    taken: set[int] = set()
    for doc in answer:
        place = _sent_place(doc, sent)
        if place is None or place in taken:
            continue  # not one recall sent (or its text changed), or sent twice: never injected
        taken.add(place)
        order.append((place, _score(doc)))
    kept: list[Ranked] = []
    for position, (place, score) in enumerate(order):
        _, relevance, memory = ranked[place]
        kept.append((1.0 - position / len(order) if score is None else score, relevance, memory))
    left = [memory for place, (_, _, memory) in enumerate(ranked) if place not in taken]
    return kept, left


def _sent_place(doc: Any, sent: Sequence[Document]) -> int | None:
    if not isinstance(doc, Document) or not isinstance(doc.metadata, dict):
        return None
    place = doc.metadata.get(_SENT)
    if isinstance(place, bool) or not isinstance(place, int) or not 0 <= place < len(sent):
        return None
    return place if doc.page_content == sent[place].page_content else None


def _score(doc: Document) -> float | None:
    score = doc.metadata.get("relevance_score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    return float(score) if math.isfinite(score) else None
