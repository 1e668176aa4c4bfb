"""A QdrantStore's embedding requests carried out, blocking or awaited.

The steps ask for vectors with :class:`~._calls.EmbedDocuments` (the texts a write stores) and
:class:`~._calls.EmbedQueries` (a search's queries); the store answers them here, with its
``Embeddings``, and every other call with its engine. A provider's failure comes out as an
:class:`~langmem_plugin.errors.EmbeddingsError` that says why the store called the embedder
(:func:`~langmem_plugin.core.embeddings.embedding_calls`).
"""

from __future__ import annotations

import asyncio

from langchain_core.embeddings import Embeddings

from langmem_plugin.core.embeddings import embedding_calls
from langmem_plugin.stores.qdrant._calls import EmbedDocuments, EmbedQueries

__all__ = ["EmbedCall", "aembed", "embed"]

#: The requests answered by the store's embedder, not by its engine.
EmbedCall = EmbedDocuments | EmbedQueries

_WRITE_REASON = "by a QdrantStore to embed the texts a write stores (nothing of the write was stored)"
_SEARCH_REASON = "by a QdrantStore to embed a search's query"


def embed(embeddings: Embeddings, call: EmbedCall) -> list[list[float]]:
    """The vectors ``call`` asks for, blocking."""
    if isinstance(call, EmbedDocuments):
        with embedding_calls(embeddings, _WRITE_REASON):
            return embeddings.embed_documents(list(call.texts))
    with embedding_calls(embeddings, _SEARCH_REASON):
        return [embeddings.embed_query(text) for text in call.texts]


async def aembed(embeddings: Embeddings, call: EmbedCall) -> list[list[float]]:
    """:func:`embed`, awaited (the queries concurrently)."""
    if isinstance(call, EmbedDocuments):
        with embedding_calls(embeddings, _WRITE_REASON):
            return await embeddings.aembed_documents(list(call.texts))
    with embedding_calls(embeddings, _SEARCH_REASON):
        return list(await asyncio.gather(*(embeddings.aembed_query(t) for t in call.texts)))
