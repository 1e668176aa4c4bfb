"""The result tables of ``bench locomo`` (and ``bench realtalk``): each row's numbers and how they print.

:class:`VariantResult` holds one row's recall, tokens and latency per question;
:class:`LocomoResult` holds every row of a run and formats it (:meth:`LocomoResult.table`,
:meth:`LocomoResult.summary`, and :meth:`LocomoResult.splits` for the tuning conversations
(:data:`TUNING`) beside the held-out ones). Recall and tokens are measured at each k of :data:`KS`. A
result knows its set (``dataset``) and that set's categories, so LoCoMo and REALTALK print the same
rows over their own category columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langmem_plugin.bench.locomo.data import CATEGORIES
from langmem_plugin.bench.report import format_table, percentile

if TYPE_CHECKING:
    from langmem_plugin.bench.locomo.misses import MissTable

__all__ = ["KS", "TUNING", "LocomoResult", "VariantResult"]

KS: tuple[int, ...] = (5, 10, 25)
#: The conversations the recipe's weights were tuned on; the others are held out.
TUNING = range(5)


@dataclass
class VariantResult:
    """One variant's numbers."""

    name: str
    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    categories: list[int] = field(default_factory=list)
    tokens: dict[int, list[int]] = field(default_factory=lambda: {k: [] for k in KS})
    seconds: list[float] = field(default_factory=list)
    conversations: list[int] = field(default_factory=list)  # the conversation of each question
    #: a product row: recall and tokens are of what recall injected (the same at every k)
    injected: bool = False
    items: list[int] = field(default_factory=list)  # product rows: the items injected per question
    imports: dict[int, Any] = field(default_factory=dict)  # product rows: ProductImport per conversation

    def only(self, conversations: Iterable[int]) -> VariantResult:
        """These numbers restricted to the questions of some conversations (0-based, in file order)."""
        keep = set(conversations)
        rows = [i for i, c in enumerate(self.conversations) if c in keep]
        return VariantResult(
            self.name,
            recall={k: [v[i] for i in rows] for k, v in self.recall.items()},
            categories=[self.categories[i] for i in rows],
            tokens={k: [v[i] for i in rows] for k, v in self.tokens.items()},
            seconds=[self.seconds[i] for i in rows],
            conversations=[self.conversations[i] for i in rows],
            injected=self.injected,
            items=[self.items[i] for i in rows] if self.items else [],
            imports={c: v for c, v in self.imports.items() if c in keep},
        )

    def mean_recall(self, k: int, category: int | None = None) -> float:
        """Mean recall@k in percent (over one category, or all questions)."""
        values = [r for r, c in zip(self.recall[k], self.categories, strict=True) if category in (None, c)]
        return 100.0 * sum(values) / len(values) if values else float("nan")

    def mean_tokens(self, k: int) -> float:
        values = self.tokens[k]
        return sum(values) / len(values) if values else 0.0

    def import_rate(self) -> float:
        """Product rows: turns imported per second, over every conversation (nan elsewhere)."""
        seconds = sum(i.seconds for i in self.imports.values())
        return sum(i.turns for i in self.imports.values()) / seconds if seconds else float("nan")

    def recall_cell(self, category: int | None = None) -> str:
        """``@5 / @10 / @25``, or one number for a product row (what recall injected)."""
        if self.injected:
            return f"{self.mean_recall(KS[0], category):.1f} (inj)"
        return " / ".join(f"{self.mean_recall(k, category):.1f}" for k in KS)

    def tokens_cell(self) -> str:
        """Mean tokens at each k, or injected (and the mean items injected) for a product row."""
        if self.injected:
            items = sum(self.items) / len(self.items) if self.items else 0.0
            return f"{self.mean_tokens(KS[0]):.0f} inj ({items:.1f} items)"
        return " / ".join(f"{self.mean_tokens(k):.0f}" for k in KS)


@dataclass
class LocomoResult:
    """Everything one run measured, on one set (LoCoMo or REALTALK)."""

    variants: list[VariantResult]
    conversations: int
    questions: int
    skipped: int
    turns: int
    full_tokens: float
    load_seconds: float
    embed_p50_ms: float = float("nan")
    #: the set's name and what its question categories are called
    dataset: str = "LoCoMo"
    categories: dict[int, str] = field(default_factory=lambda: dict(CATEGORIES))
    #: the embedder of every dense row (its spec name)
    embedder: str = ""
    #: where the product row's misses are (``misses=True``), else ``None``
    misses: MissTable | None = None

    def only(self, conversations: Iterable[int]) -> LocomoResult:
        """The run restricted to some conversations (e.g. a tuning split and a held-out one)."""
        keep = sorted(set(conversations))
        variants = [v.only(keep) for v in self.variants]
        return dataclasses.replace(
            self,
            variants=variants,
            conversations=len(keep),
            questions=len(variants[0].categories) if variants else 0,
        )

    def splits(self, tuned_on: Iterable[int] = TUNING) -> str:
        """The tables of the tuning conversations (0-4) and of the held-out ones, when both were run.

        LoCoMo only: nothing was tuned on REALTALK, whose conversations are all held out.
        """
        if self.dataset != "LoCoMo":
            return ""
        ran = range(self.conversations)
        tuning = [c for c in ran if c in set(tuned_on)]
        held_out = [c for c in ran if c not in set(tuned_on)]
        if not tuning or not held_out:
            return ""
        return "\n".join(
            [
                f"Conversations {tuning[0]}-{tuning[-1]} (the recipe's weights were tuned on these):",
                self.only(tuning).table(),
                f"Conversations {held_out[0]}-{held_out[-1]} (held out):",
                self.only(held_out).table(),
            ]
        )

    def table(self) -> str:
        """Recall per category and overall (@5 / @10 / @25), tokens at k, latency."""
        headers = [
            "variant",
            *(f"{c} {n}" for c, n in self.categories.items()),
            "overall",
            "tokens @5/@10/@25",
            "p50 ms",
            "p95 ms",
        ]
        rows = []
        for v in self.variants:
            cells = [v.recall_cell(c) for c in [*self.categories, None]]
            tokens = v.tokens_cell()
            p50 = percentile(v.seconds, 50) * 1000 if v.seconds else float("nan")
            p95 = percentile(v.seconds, 95) * 1000 if v.seconds else float("nan")
            rows.append([v.name, *cells, tokens, f"{p50:.1f}", f"{p95:.1f}"])
        if self.dataset == "LoCoMo":
            blank = [""] * len(self.categories)
            rows.append(["anchor: DRAGON (LoCoMo paper)", *blank, "56.7 / 66.2 / 76.7", "", "", ""])
            rows.append(["anchor: plain BM25 over turns", *blank, "52.3 / 59.2 / 67.3", "", "", ""])
        table = format_table(headers, rows)
        imported = [v for v in self.variants if v.injected]
        if imported:
            notes = [
                f"{v.name}: import {v.import_rate():.1f} turns/s "
                f"({sum(i.turns for i in v.imports.values())} turns, "
                f"{sum(i.evicted for i in v.imports.values())} evicted, "
                f"{sum(i.failed for i in v.imports.values())} failed); (inj) = evidence recall of what "
                "Memory.recall injected with the default RecallConfig and budgets"
                for v in imported
            ]
            table = "\n".join([table, *notes])
        return table

    def summary(self) -> str:
        """One paragraph: what was run, and the whole-conversation token cost."""
        embedder = f"embedder {self.embedder}; " if self.embedder else ""
        return (
            f"{self.dataset}: {self.conversations} conversations, {self.turns} turns, {self.questions} "
            f"questions ({self.skipped} skipped: evidence that names no turn, or not only turns); "
            f"{embedder}recall@k in % (@5 / @10 / @25); "
            f"whole conversation as plain text: {self.full_tokens:,.0f} cl100k tokens on average; "
            f"storing every turn in every store took {self.load_seconds:.1f} s; "
            f"embedding one query alone: p50 {self.embed_p50_ms:.1f} ms (the floor of every dense row)."
        )
