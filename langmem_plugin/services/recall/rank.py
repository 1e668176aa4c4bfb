"""Recall: what the model should know before it answers, fitted into token budgets.

One recall, as data:

1. **query** — the last user message, plus the plan's goal when the state has a plan;
2. **candidates** — one hybrid search per compartment (user and session memory;
   agent knowledge when it does not fit whole), all in one request to the store,
   through :func:`search_candidates`: the store's dense and BM25 candidates fused
   by score with the neighbour and session lifts (:mod:`.retrieval`);
3. **rank** — ``relevance × w_relevance + priority × w_priority + recency × w_recency``,
   with relevance the fused score divided by the best candidate's,
   priority scaled from 1–10 to 0–1 and recency halving every
   ``recency_half_life_days``; candidates under ``min_relevance`` are dropped (a memory
   whose source exchange passed takes that exchange's score instead, :mod:`.sources`),
   duplicates (same id or same text) are merged, at most ``max_items`` are kept; with
   ``RecallConfig.reranker``, a model of the user's then reorders them (:mod:`.rerank`);
4. **fit** — each section (memories, knowledge, plan, run memory) is filled in
   rank order up to its own token budget, counted with the configured model's
   tokenizer (:mod:`langmem_plugin.core.tokens`);
5. **render** — one system-prompt block fenced by ``<memory_context>`` tags. Every
   stored text is quoted as a one-line JSON string with ``<`` and ``>`` escaped,
   so a memory can neither close the fence nor start a line of its own that
   would look like an instruction. Every field shown (content, id, compartment,
   category, tags, source, plan goal and steps, run notes) goes through the one
   quoting path, :mod:`langmem_plugin.core.fence`.

The answer is a :class:`Recall`: the prompt text, and a JSON-able record of
what was injected (ids, scores, tokens per section) for graph state.

When every candidate comes back without a score (a store without an embedding
index), relevance is unknown: the threshold is skipped and rank falls back to
priority and recency.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.documents import BaseDocumentCompressor
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langgraph.store.base import SearchOp

from langmem_plugin.core.fence import FENCE_CLOSE, FENCE_OPEN, fence, quote
from langmem_plugin.core.fence import entry as fenced_entry
from langmem_plugin.core.record import MemoryRecord, utc_now
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.times import TimeLike, read_time
from langmem_plugin.core.tokens import count_lines_tokens, count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.layout import Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.operations import StoredMemory, access_ops, to_stored, write_steps
from langmem_plugin.services.plan import plan_prompt_lines
from langmem_plugin.services.recall.answer import Considered, Recall, RecalledItem, TokenBudgets
from langmem_plugin.services.recall.fit import (
    FitConfig,
    Fitter,
    MemoriesFitter,
    knowledge_line,
    part_of,
)
from langmem_plugin.services.recall.learned import LearnedRanker, default_ranker
from langmem_plugin.services.recall.pool import (
    _considered,
    _searchable,
    _written_by,
    pool_limit,
    search_candidates,
)
from langmem_plugin.services.recall.rerank import RERANKED_OUT, Rerank, reranked
from langmem_plugin.services.recall.rerank import documents as rerank_documents
from langmem_plugin.services.recall.retrieval import RetrievalConfig, RetrievedItem
from langmem_plugin.services.recall.sources import current_at, inherited_score, source_scores
from langmem_plugin.services.store_steps import StoreSteps

__all__ = [
    "FENCE_CLOSE",
    "FENCE_OPEN",
    "RECALL_PRESETS",
    "RecallConfig",
    "fence",
    "query_from_state",
    "quote",
    "recall_steps",
    "render_plan_text",
    "run_section",
    "search_candidates",
]

_SPACE = re.compile(r"\s+")

#: The names :meth:`RecallConfig.preset` takes.
RECALL_PRESETS: tuple[str, ...] = ("fast", "default", "best")
#: The names :attr:`RecallConfig.ranker` takes (or a :class:`~.learned.LearnedRanker`).
RANKERS: tuple[str, ...] = ("fusion", "learned")
_PRESET_RETRIEVAL: dict[str, dict[str, Any]] = {
    "fast": {"candidates": 30, "time_weight": 0.0},
    "default": {},
    "best": {"candidates": 100},
}


@dataclass(frozen=True)
class RecallConfig:
    """How recall searches, ranks and fits.

    Attributes:
        compartments: compartments searched for the memories section.
        knowledge: whether agent knowledge is recalled.
        max_items: the most memories and knowledge chunks injected (together).
        min_relevance: the least relevance a candidate needs (``None``: no threshold). With
            ``retrieval`` (the default) it is the cosine similarity a candidate that shares no
            word with the query must reach (0.2 suits MiniLM). With ``retrieval=None`` it
            applies to the store's own scores: cosine for LangGraph's InMemoryStore and dense
            search; a store that fuses ranks with RRF scores at most ``2 / (k + 1)``, so give it
            ``None`` or a matching value.
        candidates: how many candidates each compartment search returns.
        w_relevance: weight of the store's relevance score.
        w_priority: weight of the record's priority (1–10 scaled to 0–1).
        w_recency: weight of recency (1 now, halving every ``recency_half_life_days``).
        recency_half_life_days: see ``w_recency``.
        budgets: token budget per section.
        model: the chat model whose tokenizer counts the budgets (``None``: o200k_base).
        knowledge_whole_max_chunks: knowledge of at most this many chunks is injected whole
            when it fits its budget; more is recalled by search.
        track_access: add one to ``access_count`` of each injected memory. Off by default:
            recall runs before every model call, and each count is a write (one that no store
            embeds again, docs/stores.md; ``langmem-plugin bench memory`` measures the cost);
            the memory tools count their reads.
        retrieval: how candidates are searched: a
            :class:`~langmem_plugin.services.recall.retrieval.HybridRetriever` with this config
            (default: the store's dense and BM25 candidates fused by score, with
            the neighbour and session lifts), or ``None`` for the store's own ``search``.
        ranker: what orders the candidates before they are fitted: ``"learned"`` (the default:
            the model shipped in the package over the candidates' signals, reading the
            candidates fusion reads; :mod:`~langmem_plugin.services.recall.learned`), ``"fusion"``
            (the fused score of ``retrieval`` alone, its weights set by hand), or a
            :class:`~langmem_plugin.services.recall.learned.LearnedRanker` of your own, which
            needs ``retrieval``. With ``retrieval=None`` there are no signals to learn from: the
            store's own scores order the candidates whichever name is given.
        fit: how the memories section spends its budget (:class:`~.fit.FitConfig`: a wide
            question's share and items, near duplicates).
        reranker: a model that reads each candidate against the question, after the ranking: any
            LangChain document compressor (``BaseDocumentCompressor``: ``CohereRerank``,
            ``FlashrankRerank``, ...; :mod:`~langmem_plugin.services.recall.rerank`). Its order
            is the one fitted; what it leaves out is not injected; when it raises, recall keeps
            its own order. ``None`` (the default): no call.
    """

    compartments: tuple[Compartment, ...] = (Compartment.USER, Compartment.SESSION)
    knowledge: bool = True
    max_items: int = 20
    min_relevance: float | None = 0.2
    candidates: int = 20
    w_relevance: float = 0.75
    w_priority: float = 0.15
    w_recency: float = 0.10
    recency_half_life_days: float = 30.0
    budgets: TokenBudgets = field(default_factory=TokenBudgets)
    model: str | None = None
    knowledge_whole_max_chunks: int = 64
    track_access: bool = False
    retrieval: RetrievalConfig | None = field(default_factory=RetrievalConfig)
    ranker: str | LearnedRanker = "learned"
    fit: FitConfig = field(default_factory=FitConfig)
    reranker: BaseDocumentCompressor | None = None

    def __post_init__(self) -> None:
        comps = tuple(parse_compartment(c) for c in self.compartments)
        if Compartment.RUN in comps or Compartment.KNOWLEDGE in comps:
            raise ConfigurationError(
                "RecallConfig.compartments lists the searched memory compartments ('user', 'session'); "
                "knowledge is switched with knowledge=True and run memory is always injected"
            )
        object.__setattr__(self, "compartments", comps)
        if self.max_items < 1 or self.candidates < 1:
            raise ConfigurationError("max_items and candidates must be at least 1")
        if self.recency_half_life_days <= 0:
            raise ConfigurationError("recency_half_life_days must be > 0")
        if self.retrieval is not None and not isinstance(self.retrieval, RetrievalConfig):
            raise ConfigurationError(
                f"RecallConfig.retrieval must be a RetrievalConfig or None, got {self.retrieval!r}"
            )
        if not isinstance(self.ranker, LearnedRanker) and self.ranker not in RANKERS:
            raise ConfigurationError(
                f"RecallConfig.ranker must be one of {', '.join(map(repr, RANKERS))} or a LearnedRanker, "
                f"got {self.ranker!r}"
            )
        if self.reranker is not None and not isinstance(self.reranker, BaseDocumentCompressor):
            raise ConfigurationError(
                f"RecallConfig.reranker must be a LangChain document compressor (BaseDocumentCompressor), "
                f"got {self.reranker!r}. Fix: pass e.g. CohereRerank(...) or FlashrankRerank(...), "
                "or subclass langchain_core.documents.BaseDocumentCompressor; None for no reranker"
            )
        if isinstance(self.ranker, LearnedRanker) and self.retrieval is None:
            raise ConfigurationError(
                f"RecallConfig(ranker={self.ranker!r}) reads the fused search's signals, and "
                "retrieval=None has none. Fix: keep the default retrieval, or use ranker='fusion'"
            )

    @property
    def learned_ranker(self) -> LearnedRanker | None:
        """The model :attr:`ranker` names (``None``: the fusion orders the candidates)."""
        if isinstance(self.ranker, LearnedRanker):
            return self.ranker
        return default_ranker() if self.ranker == "learned" and self.retrieval is not None else None

    @property
    def threshold(self) -> float | None:
        """``min_relevance`` on the store's own scores (``retrieval=None``); else ``None``: the
        fused search applies it to each candidate's dense similarity instead."""
        return None if self.retrieval is not None else self.min_relevance

    @classmethod
    def preset(cls, name: str, **changes: Any) -> RecallConfig:
        """A named trade of quality for speed (:data:`RECALL_PRESETS`), with ``changes`` on top.

        - ``"fast"``: 30 candidates per signal and no time read in the question (no date
          parsing): the quickest recall, a little less found;
        - ``"default"``: ``RecallConfig()``;
        - ``"best"``: 100 candidates per signal: more found by the lifts, a slower recall.

        What each costs and finds on LoCoMo and REALTALK is in ``docs/benchmarks.md``.

        >>> RecallConfig.preset("fast").retrieval.candidates
        30
        >>> RecallConfig.preset("best", max_items=10).max_items
        10
        """
        if name not in RECALL_PRESETS:
            raise ConfigurationError(
                f"unknown recall preset {name!r}; use one of {', '.join(map(repr, RECALL_PRESETS))}"
            )
        retrieval = RetrievalConfig(**_PRESET_RETRIEVAL[name])
        return cls(**{"retrieval": retrieval, **changes})


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def render_plan_text(plan: Any) -> tuple[str | None, list[str]]:
    """``(goal, steps)`` of a plan in state: a string (its goal) or a mapping with 'goal' and 'steps'."""
    if plan is None:
        return None, []
    if isinstance(plan, str):
        return (plan.strip() or None), []
    if isinstance(plan, Mapping):
        goal = plan.get("goal") or plan.get("objective")
        steps: list[str] = []
        for step in plan.get("steps") or plan.get("todos") or []:
            if isinstance(step, str):
                steps.append(step)
            elif isinstance(step, Mapping):
                text = str(step.get("content") or step.get("description") or step.get("step") or "")
                status = step.get("status")
                if text:
                    steps.append(f"[{status}] {text}" if status else text)
        return (str(goal) if goal else None), steps
    return str(plan), []


def query_from_state(messages: Sequence[AnyMessage | BaseMessage], plan: Any = None) -> str:
    """The recall query: the last user message, plus the plan's goal when there is one."""
    query = ""
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", None) == "human":
            query = _text(message).strip()
            break
    goal, _ = render_plan_text(plan)
    if goal and goal not in query:
        query = f"{query}\n{goal}".strip()
    return query


def _recency(record: MemoryRecord, now: datetime, half_life_days: float) -> float:
    """1 for a memory changed at ``now``, halving every ``half_life_days`` before it (a change
    after ``now``, seen from an ``as_of`` in the past, counts from when it was written)."""
    changed = record.updated_at if record.updated_at <= now else record.created_at
    age_days = max((now - changed).total_seconds(), 0.0) / 86400.0
    return math.pow(0.5, age_days / half_life_days)


def _rank(
    candidates: list[StoredMemory],
    config: RecallConfig,
    now: datetime,
    dropped: list[tuple[StoredMemory, str]] | None = None,
    as_of: datetime | None = None,
) -> list[tuple[float, float | None, StoredMemory]]:
    scores = [c.score for c in candidates if c.score is not None]
    scored = bool(scores)
    top = max(scores) if scores and max(scores) > 0 else 1.0  # relevance is scaled to the best match
    ranked: list[tuple[float, float | None, StoredMemory]] = []
    seen_ids: set[tuple[tuple[str, ...], str]] = set()
    seen_text: set[str] = set()
    seen_pieces: set[tuple[tuple[str, ...], str, str]] = set()
    ordered = sorted(candidates, key=lambda c: -(c.score if c.score is not None else -1.0))
    threshold = config.threshold
    passed = [c for c in candidates if threshold is None or (c.score is not None and c.score >= threshold)]
    sourced = source_scores(passed, as_of)  # a memory under the threshold keeps its source's score
    for memory in ordered:
        identity = (memory.namespace, memory.id)
        text = _SPACE.sub(" ", memory.record.content.strip().lower())
        part = part_of(memory)
        piece = None if part is None else (memory.namespace, part.episode, part.number)
        current = current_at(memory.record, as_of)
        if identity in seen_ids or text in seen_text or piece in seen_pieces or not current:
            if (
                dropped is not None
            ):  # a duplicate, or a fact superseded by a later one (still found by search)
                dropped.append((memory, "superseded" if not current else "duplicate"))
            continue
        relevance = memory.score
        if scored and threshold is not None and (relevance is None or relevance < threshold):
            relevance = inherited_score(memory.record, sourced)
        if scored and threshold is not None and relevance is None:
            if dropped is not None:
                dropped.append((memory, "below threshold"))
            continue
        seen_ids.add(identity)
        seen_text.add(text)
        if piece is not None:
            seen_pieces.add(piece)
        rel = min(max((relevance or 0.0) / top, 0.0), 1.0)
        score = (
            config.w_relevance * rel
            + config.w_priority * (memory.record.priority - 1) / 9
            + config.w_recency * _recency(memory.record, now, config.recency_half_life_days)
        )
        ranked.append((score, relevance, memory))
    ranked.sort(key=lambda r: -r[0])
    return ranked


def _run_texts(run_memory: Sequence[Any] | None) -> list[str]:
    texts: list[str] = []
    for entry in run_memory or []:
        if isinstance(entry, str):
            texts.append(entry)
        elif isinstance(entry, Mapping) and entry.get("content"):
            texts.append(str(entry["content"]))
    return texts


def run_section(run_memory: Sequence[Any] | None, budget: int, model: str | None = None) -> str:
    """The notes of this run as a prompt section within ``budget`` tokens, the newest kept first
    when they do not all fit, shown oldest first ('' without notes)."""
    run_fit = Fitter("[notes of this run]", budget, model)
    kept: list[str] = []
    for text in reversed(_run_texts(run_memory)):
        line = fenced_entry(text)
        if run_fit.add(line) is None:
            break
        kept.append(line)
    run_fit.lines = list(reversed(kept))
    return run_fit.text()


def _not_shown(
    candidates: list[StoredMemory], shown: set[str], dropped: list[tuple[StoredMemory, str]]
) -> list[StoredMemory]:
    """``candidates`` without the exchanges whose messages the model sees anyway (to ``dropped``)."""
    kept = []
    for memory in candidates:
        ids = str(memory.record.metadata.get("message_ids") or "").split()
        if ids and shown.issuperset(ids):
            dropped.append((memory, "in the conversation"))
        else:
            kept.append(memory)
    return kept


def recall_steps(
    scope: Scope,
    layout: MemoryLayout,
    messages: Sequence[AnyMessage | BaseMessage],
    *,
    config: RecallConfig | None = None,
    plan: Any = None,
    run_memory: Sequence[Any] | None = None,
    query: str | None = None,
    now: datetime | None = None,
    as_of: TimeLike | None = None,
    shown: Collection[str] | None = None,
) -> StoreSteps[Recall]:
    """Search, rank and fit what the model should see before it answers.

    Args:
        scope: whose memory (from the run's config).
        layout: the compartments' namespaces.
        messages: the conversation; the last user message is the query.
        config: search, rank and budget settings.
        plan: the plan in graph state, if any (its goal joins the query; it gets its own section).
        run_memory: notes of the current run (always injected, newest kept first when over budget).
        query: use this query instead of the one taken from ``messages``.
        now: the time recency is measured from (tests; default: now).
        as_of: recall as it would have been at this time (evaluations, backfills): recency is
            measured from it, and what was written after it (``created_at``) is left out, as
            if it were not stored; a fact superseded after it is still current. A ``datetime``
            (naive: UTC) or anything :func:`~langmem_plugin.core.times.read_time` reads.
        shown: the ids of the messages the model will see with this recall: an exchange whose
            messages are all among them is left out (``"in the conversation"``), so the model is
            never sent the same exchange twice.

    Raises:
        ScopeError: the scope lacks the ids of every searched compartment (a compartment it
            cannot name is skipped when another one can be searched: a run without a user id
            recalls its session memory, where remember writes for it).
        InvalidTimeError: ``as_of`` is not a time (raised before the store is asked).
    """
    config = config or RecallConfig()
    when = None if as_of is None else read_time(as_of, what="as_of", where="recall")
    now = when or now or utc_now()
    budgets = config.budgets
    query = query if query is not None else query_from_state(messages, plan)

    knowledge_mode = "off"
    whole: list[StoredMemory] = []
    knowledge_ns: tuple[str, ...] | None = None
    if config.knowledge and budgets.knowledge:
        knowledge_ns = layout.namespace(Compartment.KNOWLEDGE, scope)
        (listing,) = yield [
            SearchOp(knowledge_ns, limit=config.knowledge_whole_max_chunks + 1, refresh_ttl=False)
        ]
        chunks = [
            m for i in listing if (m := to_stored(i, Compartment.KNOWLEDGE)) and _written_by(m.record, when)
        ]
        if chunks and len(listing) <= config.knowledge_whole_max_chunks:
            chunks.sort(
                key=lambda m: (m.record.metadata.get("source", ""), int(m.record.metadata.get("chunk", "0")))
            )
            total = count_tokens(
                "\n".join(["[agent knowledge]", *(knowledge_line(m) for m in chunks)]) + "\n",
                model=config.model,
            )
            if total <= budgets.knowledge:
                whole, knowledge_mode = chunks, "whole"
        if chunks and knowledge_mode == "off":
            knowledge_mode = "retrieved"

    searches: list[tuple[Compartment, tuple[str, ...]]] = []
    if budgets.memories:
        searches = _searchable(layout, scope, config.compartments)
    if knowledge_mode == "retrieved" and knowledge_ns is not None:
        searches.append((Compartment.KNOWLEDGE, knowledge_ns))
    candidates: list[StoredMemory] = []
    signals: dict[tuple[tuple[str, ...], str], RetrievedItem] = {}
    unranked: list[Considered] = []
    learned = config.learned_ranker
    if query and searches:
        pool = config.candidates
        if learned is not None and config.retrieval is not None:
            pool = pool_limit(config.retrieval)
        candidates = yield from search_candidates(
            searches,
            query,
            limit=pool,
            retrieval=config.retrieval,
            min_similarity=config.min_relevance,
            signals=signals,
            dropped=unranked,
            as_of=when,
            now=now,
            ranker=learned,
            keep=config.candidates,
        )
    dropped: list[tuple[StoredMemory, str]] = []
    if shown:
        candidates = _not_shown(candidates, set(shown), dropped)
    ranked = _rank(candidates, config, now, dropped, when)
    if config.reranker is not None and ranked:
        sent = rerank_documents(ranked)
        answer = yield Rerank(config.reranker, query, sent)
        reordered = reranked(ranked, sent, answer)
        if reordered is not None:
            ranked, left = reordered
            dropped.extend((memory, RERANKED_OUT) for memory in left)

    memories = MemoriesFitter(budgets.memories, config.model, query, config.fit)
    max_items = memories.item_limit(config.max_items)
    knowledge = Fitter("[agent knowledge]", budgets.knowledge, config.model)
    items: list[RecalledItem] = []
    injected: list[StoredMemory] = []
    considered: list[Considered] = []
    for place, (score, relevance, memory) in enumerate(ranked, 1):
        hit = signals.get((memory.namespace, memory.id))
        rank = {"score": round(score, 4), "rank": place}
        if len(items) >= max_items:
            considered.append(
                _considered(memory.id, memory.compartment, memory.record, "max items", hit, relevance, **rank)
            )
            continue
        is_knowledge = memory.compartment is Compartment.KNOWLEDGE
        cost = knowledge.add(knowledge_line(memory)) if is_knowledge else memories.add(memory)
        outcome = "injected" if cost is not None else "over budget" if is_knowledge else memories.refusal
        considered.append(
            _considered(
                memory.id, memory.compartment, memory.record, outcome, hit, relevance, **rank, tokens=cost
            )
        )
        if cost is None:
            continue
        section = "knowledge" if is_knowledge else "memories"
        items.append(
            RecalledItem(
                memory.id,
                memory.compartment.value,
                section,
                round(score, 4),
                None if relevance is None else round(relevance, 4),
                cost,
                memory.record.content,
            )
        )
        if not is_knowledge:
            injected.append(memory)
    for memory in whole:
        cost = knowledge.add(knowledge_line(memory))
        if cost is not None:
            items.append(
                RecalledItem(memory.id, "knowledge", "knowledge", 1.0, None, cost, memory.record.content)
            )

    plan_fit = Fitter("[plan]", budgets.plan, config.model)
    plan_fit.lines = plan_prompt_lines(plan, budget=budgets.plan, model=config.model, header=plan_fit.header)

    sections = {"memories": memories.text(), "knowledge": knowledge.text(), "plan": plan_fit.text()}
    sections["run"] = run_section(run_memory, budgets.run, config.model)
    prompt = fence([text for text in sections.values() if text])
    # counted from the lines the fitting counted already (exact: see count_lines_tokens)
    tokens = {
        name: count_lines_tokens(text, model=config.model) if text else 0 for name, text in sections.items()
    }
    tokens["total"] = count_lines_tokens(prompt, model=config.model) if prompt else 0

    for memory, outcome in dropped:
        hit = signals.get((memory.namespace, memory.id))
        considered.append(
            _considered(memory.id, memory.compartment, memory.record, outcome, hit, memory.score)
        )
    considered.extend(unranked)

    if config.track_access and injected:
        yield from write_steps(access_ops(injected))
    return Recall(prompt, query, items, tokens, knowledge_mode, budgets, tuple(considered))
