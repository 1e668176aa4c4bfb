"""What one recall gives back: the items injected, every candidate weighed (:class:`Considered`),
the tokens per section within their :class:`TokenBudgets`, and the fenced prompt
(:class:`Recall`, which renders as HTML tables in a notebook).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from langmem_plugin.core.html import cell as html_cell
from langmem_plugin.core.html import table as html_table
from langmem_plugin.errors import ConfigurationError

__all__ = ["Considered", "Recall", "RecalledItem", "TokenBudgets"]


@dataclass(frozen=True)
class TokenBudgets:
    """Token budget of each section of the recalled context (0 turns a section off).

    Attributes:
        memories: user and session memories (with the fence around them, a full section comes to
            about 600 tokens).
        knowledge: agent knowledge (static documents).
        plan: the plan in graph state.
        run: run memory (notes of the current run).
    """

    memories: int = 550
    knowledge: int = 800
    plan: int = 300
    run: int = 300

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"token budget {name!r} must be a whole number >= 0, got {value!r}")


@dataclass(frozen=True)
class RecalledItem:
    """One injected memory or knowledge chunk.

    Attributes:
        score: recall's rank, 0 to 1: ``w_relevance`` × the relevance scaled to the best
            candidate's (0 at or below 0) + ``w_priority`` × priority + ``w_recency`` × recency.
        relevance: the search's score. With ``retrieval`` (the default): dense and BM25 fused, in
            standard deviations from the average candidate of the search (0 average, above 0
            better); with ``retrieval=None``: the store's own score. ``None``: the store gave none.
    """

    id: str
    compartment: str
    section: str
    score: float
    relevance: float | None
    tokens: int
    content: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-able, for graph state."""
        return asdict(self)


@dataclass(frozen=True)
class Considered:
    """A candidate recall weighed, and what became of it (for "why this and not that?").

    Attributes:
        id: the memory's id.
        compartment: where it lives.
        content: its text.
        outcome: ``"injected"``; ``"over budget"`` (its section's tokens were spent);
            ``"max items"`` (``max_items`` were injected before it); ``"below threshold"``
            (no word shared with the query and a dense similarity under ``min_relevance``, or
            a store score under the threshold); ``"duplicate"`` (the same id, text or passage
            ranked higher); ``"superseded"`` (a later fact made it no longer true); ``"in the
            conversation"`` (an exchange whose messages the model is shown anyway); ``"reranked
            out"`` (``RecallConfig.reranker`` left it out).
        relevance: the search's fused score (as :attr:`RecalledItem.relevance`).
        dense: the store's dense similarity (``None``: not among the dense candidates).
        lexical: the BM25 score (``None``: no word shared with the query).
        lifts: what each lift added to ``relevance`` (``("neighbours", 0.31)``...).
        score: recall's rank score (``None``: dropped before ranking).
        rank: the position in rank order, 1 first (``None``: dropped before ranking).
        tokens: what it cost in the prompt (``None``: not injected).
    """

    id: str
    compartment: str
    content: str
    outcome: str
    relevance: float | None = None
    dense: float | None = None
    lexical: float | None = None
    lifts: tuple[tuple[str, float], ...] = ()
    score: float | None = None
    rank: int | None = None
    tokens: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        out = asdict(self)
        out["lifts"] = {name: value for name, value in self.lifts}
        return out


@dataclass(frozen=True)
class Recall:
    """The outcome of one recall.

    Attributes:
        prompt: the fenced system-prompt block ('' when there is nothing to inject).
        query: the query searched with.
        items: what was injected from the store, in rank order.
        tokens: tokens per section ('memories', 'knowledge', 'plan', 'run') and 'total'.
        knowledge_mode: 'whole', 'retrieved' or 'off'.
        considered: every candidate the search found, in rank order then the dropped ones,
            with its signals and what became of it (not part of :meth:`record`).
    """

    prompt: str
    query: str
    items: list[RecalledItem]
    tokens: dict[str, int]
    knowledge_mode: str
    budgets: TokenBudgets
    considered: tuple[Considered, ...] = ()

    def _repr_html_(self) -> str:
        """In a notebook: every candidate weighed and what became of it, then the fenced prompt."""
        rows = [
            (
                c.rank,
                c.outcome,
                c.compartment,
                c.score,
                c.relevance,
                c.dense,
                c.lexical,
                ", ".join(f"{name} {value:+.2f}" for name, value in c.lifts),
                c.tokens,
                c.content,
            )
            for c in self.considered
        ]
        headers = ("rank", "outcome", "compartment", "score", "relevance", "dense", "lexical", "lifts")
        caption = f"recall of {self.query!r}: {self.tokens.get('total', 0)} tokens injected"
        prompt = f"<pre style='white-space:pre-wrap'>{html_cell(self.prompt, limit=20_000)}</pre>"
        return html_table((*headers, "tokens", "content"), rows, caption=caption) + prompt

    def record(self) -> dict[str, Any]:
        """What was injected, JSON-able, for ``state["memory_context"]``."""
        return {
            "query": self.query,
            "items": [item.as_dict() for item in self.items],
            "tokens": dict(self.tokens),
            "budgets": asdict(self.budgets),
            "knowledge_mode": self.knowledge_mode,
        }
