"""Candidate lists: what a store answers for hybrid search, so the fusion is written once.

A store that has both a vector index and a lexical (BM25) index answers a
:class:`CandidateQuery` with :class:`Candidates`: the dense top-N with their
cosine similarities and the lexical top-N with their BM25 scores, raw and
unfused. :mod:`langmem_plugin.services.recall.retrieval` fuses them, for every store,
in one place. QdrantStore and CheckpointerStore implement
:class:`CandidateStore`; a store that does not (LangGraph's ``InMemoryStore``,
``PostgresStore``) gives its own search as the dense list and no lexical one.

Before the dense query is embedded, words found in at least
``background_df`` of the searched items are dropped from it
(:func:`without_background`): in a conversation those are the participants'
names, which carry no information there (BM25 already weighs them near zero)
but dominate a small embedder's vector. The rule needs document frequencies,
which only a store with a lexical index knows, so the store applies it.

>>> from langmem_plugin.core.lexical import BM25Encoder
>>> encoder = BM25Encoder()
>>> freq = {t: 90 for t in encoder.encode_query("Caroline").indices}
>>> without_background("What did Caroline paint?", encoder, freq.get, 100, 0.2, 20)
'What did paint?'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import SearchItem

from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.errors import ConfigurationError

__all__ = [
    "CandidateQuery",
    "CandidateStore",
    "Candidates",
    "background_terms",
    "check_background_df",
    "without_background",
]


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """One hybrid search's request for candidates.

    Attributes:
        namespace_prefix: the items searched are under this prefix.
        query: the query text (BM25 reads it whole; the dense half embeds it without background words).
        limit: how many candidates each signal returns, best first.
        filter: LangGraph's ``SearchOp`` filter, applied to both signals.
        background_df: drop from the embedded query the words found in at least this fraction
            of the searched items; ``None`` keeps the query as it is.
        background_min_docs: below this many searched items, nothing counts as background.
    """

    namespace_prefix: tuple[str, ...]
    query: str
    limit: int = 50
    filter: dict[str, Any] | None = None
    background_df: float | None = 0.2
    background_min_docs: int = 20

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise ConfigurationError(f"query must be a non-empty string, got {self.query!r}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ConfigurationError(f"limit must be a whole number of at least 1, got {self.limit!r}")
        check_background_df(self.background_df)


@dataclass(frozen=True, slots=True)
class Candidates:
    """A store's answer to a :class:`CandidateQuery`.

    Attributes:
        dense: the best items by the embedding, best first; ``score`` is the store's
            similarity (cosine for ours).
        lexical: the best items by BM25, best first; ``score`` is the BM25 score. Empty
            when ``lexical_index`` is False.
        dense_query: the text that was embedded (the query without its background words).
        lexical_index: whether the store has a lexical index (False: the lexical signal is missing,
            not empty).
        unscored: items a store with no search index at all listed for the query, unranked
            (newest first); empty whenever either list has an item.
    """

    dense: list[SearchItem] = field(default_factory=list)
    lexical: list[SearchItem] = field(default_factory=list)
    dense_query: str = ""
    lexical_index: bool = True
    unscored: list[SearchItem] = field(default_factory=list)


@runtime_checkable
class CandidateStore(Protocol):
    """A store that answers candidate lists (QdrantStore, CheckpointerStore)."""

    def search_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """One :class:`Candidates` per query, in order."""
        ...

    async def asearch_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """:meth:`search_candidates`, from async code."""
        ...


def check_background_df(value: float | None) -> None:
    """Raise :class:`~langmem_plugin.errors.ConfigurationError` unless ``value`` is None or in (0, 1]."""
    if value is not None and not 0.0 < value <= 1.0:
        raise ConfigurationError(
            f"background_df must be above 0 and at most 1 (or None to disable), got {value!r}"
        )


def without_background(
    query: str,
    encoder: BM25Encoder,
    doc_freq: Callable[[int], int | None],
    total: int,
    threshold: float | None,
    min_docs: int,
) -> str:
    """``query`` without the words whose every-term document frequency reaches ``threshold × total``.

    ``doc_freq`` gives how many of the ``total`` searched items hold a BM25 term (``None``: none).
    A word counts as background when one of its terms does; a query made of background words
    only is kept whole.
    """
    if threshold is None or total < min_docs:
        return query
    limit = threshold * total
    kept = []
    for word in query.split():
        terms = encoder.encode_query(word).indices
        if terms and max((doc_freq(t) or 0) for t in terms) >= limit:
            continue
        kept.append(word)
    return " ".join(kept) if kept else query


def background_terms(query: str, encoder: BM25Encoder) -> list[int]:
    """The BM25 terms of ``query`` whose document frequency :func:`without_background` asks for."""
    return list(dict.fromkeys(encoder.encode_query(query).indices))
