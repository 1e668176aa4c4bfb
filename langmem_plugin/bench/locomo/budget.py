"""Evidence against tokens (``bench locomo --budget-curve``): what recall injects at each budget.

Each conversation is imported once into ``Memory()`` (every default, as the ``product`` row) and
every question is recalled, from another thread of the same user, by each row of :data:`CURVE_ROWS`
at each total of :data:`CURVE_BUDGETS`: the memories budget is the total less
:data:`FENCE_TOKENS` (the fence and its preamble; the default 550 makes the 600 a default recall
comes to), and ``max_items`` and ``candidates`` grow with the budget (20 at 600, as the default:
ranked from 20 candidates, a recall injects at most 20 items however large its budget). A point is the
share of evidence turns injected (mean over questions, as the product row counts it) and the
tokens of the prompt injected (cl100k, mean over questions).

The rows are the presets of :meth:`~langmem_plugin.RecallConfig.preset` and ``fit before``: the
default with the budget spent as before :class:`~langmem_plugin.services.recall.FitConfig`
(:data:`~langmem_plugin.services.recall.FIT_BEFORE`: one share for every question), so the curve
shows what spending it by the question's shape gives at every budget. :data:`ANCHORS` are what
other memory systems inject per question (their own figures, not measured here), printed beside
the curve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from langmem_plugin.bench.locomo.data import TOKEN_MODEL, chosen, load_conversations
from langmem_plugin.bench.locomo.product import _turn_ids, history_of
from langmem_plugin.bench.report import format_table
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens

if TYPE_CHECKING:
    from langmem_plugin import RecallConfig

__all__ = [
    "ANCHORS",
    "CURVE_BUDGETS",
    "CURVE_ROWS",
    "FENCE_TOKENS",
    "BudgetCurve",
    "curve_config",
    "run_budget_curve",
]

#: The totals (prompt tokens injected) the curve is measured at.
CURVE_BUDGETS: tuple[int, ...] = (200, 400, 600, 1000, 2000)
#: The rows: each preset of ``RecallConfig.preset``, and the default fitted as before ``FitConfig``.
CURVE_ROWS: tuple[str, ...] = ("fast", "default", "best", "fit before")
#: What a total leaves the fence and its preamble: the memories budget is the total less this.
FENCE_TOKENS = 50
#: What other memory systems inject per question, by their own account (not measured here).
ANCHORS: tuple[tuple[str, str], ...] = (
    ("mem0, top 50 memories (its LoCoMo setting)", "≈ 1,700"),
    ("Zep, its context block", "≈ 4,000-6,000"),
)
_ITEMS_AT_600 = 20


def curve_config(row: str, total: int) -> RecallConfig:
    """The recall configuration of ``row`` (:data:`CURVE_ROWS`) at ``total`` tokens."""
    from langmem_plugin import RecallConfig
    from langmem_plugin.services.recall import FIT_BEFORE, TokenBudgets

    items = max(_ITEMS_AT_600, round(_ITEMS_AT_600 * total / 600))
    changes: dict[str, Any] = {
        "budgets": TokenBudgets(memories=max(total - FENCE_TOKENS, 0)),
        "max_items": items,
        "candidates": items,  # ranking is handed as many candidates as may be injected
    }
    if row == "fit before":
        return RecallConfig(fit=FIT_BEFORE, **changes)
    return RecallConfig.preset(row, **changes)


@dataclass
class _Point:
    shares: list[float] = field(default_factory=list)
    categories: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    items: list[int] = field(default_factory=list)

    def evidence(self, category: int | None = None) -> float:
        kept = [s for s, c in zip(self.shares, self.categories, strict=True) if category in (None, c)]
        return 100.0 * sum(kept) / len(kept) if kept else float("nan")

    def mean(self, values: Sequence[int]) -> float:
        return sum(values) / len(values) if values else float("nan")


@dataclass
class BudgetCurve:
    """The curve of one set: per row and total, the evidence injected and its tokens."""

    dataset: str
    categories: dict[int, str]
    conversations: int = 0
    points: dict[tuple[str, int], _Point] = field(default_factory=dict)

    def point(self, row: str, total: int) -> _Point:
        return self.points.setdefault((row, total), _Point())

    def evidence(self, row: str, total: int, category: int | None = None) -> float:
        """The percent of evidence turns injected by ``row`` at ``total`` (one category, or all)."""
        return self.point(row, total).evidence(category)

    def tokens(self, row: str, total: int) -> float:
        """The mean tokens ``row`` injected at ``total``."""
        point = self.point(row, total)
        return point.mean(point.tokens)

    def table(self) -> str:
        """Rows: each of :data:`CURVE_ROWS` overall, then on the first category (multi-hop), then
        the anchors; columns: each budget, ``evidence % (tokens, items)``."""
        headers = ["evidence injected, % (mean tokens, items)", *(f"{b} tokens" for b in CURVE_BUDGETS)]
        rows: list[list[str]] = []
        first = next(iter(self.categories), None)
        for category in (None, first) if first is not None else (None,):
            label = "overall" if category is None else f"{category} {self.categories[category]}"
            for row in CURVE_ROWS:
                cells = []
                for total in CURVE_BUDGETS:
                    point = self.point(row, total)
                    cells.append(
                        f"{point.evidence(category):.1f} ({point.mean(point.tokens):.0f}, "
                        f"{point.mean(point.items):.1f})"
                    )
                rows.append([f"{row}, {label}", *cells])
        blank = [""] * (len(CURVE_BUDGETS) - 1)
        rows.extend([f"anchor: {name}", f"injects {tokens} tokens", *blank] for name, tokens in ANCHORS)
        questions = len(self.point(CURVE_ROWS[0], CURVE_BUDGETS[0]).shares)
        note = (
            f"{self.dataset}, {self.conversations} conversations, {questions} questions: evidence turns "
            f"injected by Memory() (each conversation imported once) at each total; memories budget = "
            f"total - {FENCE_TOKENS}, max_items = candidates = {_ITEMS_AT_600} x total / 600 "
            f"(at least {_ITEMS_AT_600})"
        )
        return "\n".join([note, format_table(headers, rows)])


def run_budget_curve(
    data: str | Path,
    *,
    conversations: int | str | None = None,
    embeddings: Embeddings | None = None,
    progress: Callable[[str], None] | None = None,
    token_model: str = TOKEN_MODEL,
) -> BudgetCurve:
    """Measure the curve on the set at ``data`` (its first ``conversations``, or ``"FIRST-LAST"``;
    default all)."""
    from langmem_plugin import Memory

    say = progress or (lambda _line: None)
    dataset = load_conversations(data)
    samples = chosen(dataset.conversations, conversations)
    if embeddings is None:
        from langmem_plugin.core.embeddings import resolve_embeddings

        embeddings = resolve_embeddings()
    curve = BudgetCurve(dataset.name, dict(dataset.categories), len(samples))
    settings = [(row, total) for row in CURVE_ROWS for total in CURVE_BUDGETS]
    for conv in samples:
        user = conv.sample_id
        write: RunnableConfig = {"configurable": {"user_id": user, "thread_id": user}}
        ask: RunnableConfig = {"configurable": {"user_id": user, "thread_id": "q"}}
        scope = Scope(user_id=user, thread_id="q")
        with ExitStack() as stack:
            base = stack.enter_context(Memory(embeddings=embeddings))
            base.import_history(history_of(conv), write, per="message", progress=False)
            memories = [
                stack.enter_context(Memory(base.store, recall=curve_config(row, total)))
                for row, total in settings
            ]
            seen: dict[Any, set[str]] = {}
            for question in conv.questions:
                for (row, total), memory in zip(settings, memories, strict=True):
                    recall = memory.recall([HumanMessage(question.text)], ask)
                    injected = [i for i in recall.items if i.section == "memories"]
                    found: set[str] = set()
                    for item in injected:
                        found |= _turn_ids(memory, scope, item.compartment, item.id, seen)
                    point = curve.point(row, total)
                    point.shares.append(
                        sum(1 for e in question.evidence if e in found) / len(question.evidence)
                    )
                    point.categories.append(question.category)
                    point.tokens.append(
                        count_tokens(recall.prompt, model=token_model) if recall.prompt else 0
                    )
                    point.items.append(len(injected))
        say(f"budget curve {conv.sample_id}: {len(conv.questions)} questions at {len(settings)} settings")
    return curve
