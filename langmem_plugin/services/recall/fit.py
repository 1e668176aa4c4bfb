"""Fitting recall into its budgets: each section filled line by line, counting real tokens.

:class:`MemoriesFitter` fills the memories section: memories first, then excerpts of past
exchanges grouped by day, each cut to the part of the text that matches the query
(:func:`~langmem_plugin.services.recall.passages.focus_window`); :func:`part_of` says which
part of a long exchange a memory is, so that one piece is never shown twice. How it spends the
budget is a :class:`FitConfig`: a question that aggregates or hops (:mod:`.shape`) gets more items
and shorter ones, and a near duplicate of what is already shown takes no slot.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

from langmem_plugin.core.fence import entry as fenced_entry
from langmem_plugin.core.fence import group
from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.context import head_tokens
from langmem_plugin.services.operations import StoredMemory
from langmem_plugin.services.recall.features import text_terms
from langmem_plugin.services.recall.passages import focus_window
from langmem_plugin.services.recall.shape import QuestionShape, question_shape

__all__ = [
    "EXCERPTS_HEADER",
    "FIT_BEFORE",
    "FIT_SHAPED",
    "MEMORIES_HEADER",
    "FitConfig",
    "Fitter",
    "MemoriesFitter",
    "Part",
    "knowledge_line",
    "part_of",
    "said_order",
]

MOST_SHARE = 5  # no memory shows more than this share of the memories budget
_MIN_TERMS = 6  # a text of fewer words is never a near duplicate (only an exact one): in a short
# exchange the question and its answer share most words ("Which tea do I like?", "I like green tea")


@dataclass(frozen=True)
class FitConfig:
    """How the memories section spends its token budget.

    Attributes:
        most_share: no memory shows more than ``1 / most_share`` of the budget; of a longer one the
            fence shows its window, the sentences that hold the most words of the question.
        wide_share: the same for a question that aggregates or hops
            (:func:`~langmem_plugin.services.recall.shape.question_shape`): its evidence is
            several pieces said at different times, so each gets less room and more of them fit.
        wide_items: a wide question may inject ``max_items`` times this many items.
        near_duplicate: a memory whose words (as BM25 reads them) overlap one already shown by at
            least this share (Jaccard, both of at least six words) is a near duplicate and is not
            shown (``"duplicate"``);
            ``None``: only exact duplicates are dropped. Two past exchanges are near duplicates
            only when said on the same day: the same words said another day are another event,
            which a question that counts needs.
        fill: the fewest tokens left in the budget for which a memory that does not fit whole is
            shown as its window in what is left (``0``: it is left out, as before).
        cut_saves: a memory is cut to its window only when that saves more than this many tokens
            of its text: a window adds an id and a ``cut`` field, so cutting a memory a little
            longer than its share would cost more than showing it whole.
    """

    most_share: int = MOST_SHARE
    wide_share: int = 10
    wide_items: float = 1.5
    near_duplicate: float | None = 0.9
    fill: int = 0
    cut_saves: int = 16

    def __post_init__(self) -> None:
        if self.most_share < 1 or self.wide_share < 1:
            raise ConfigurationError(
                f"FitConfig.most_share and wide_share must be at least 1 (a memory shows at most 1/share "
                f"of the budget), got {self.most_share} and {self.wide_share}"
            )
        if not 1 <= self.wide_items <= 10:
            raise ConfigurationError(
                f"FitConfig.wide_items must be between 1 and 10 (max_items is multiplied by it), "
                f"got {self.wide_items!r}"
            )
        if self.near_duplicate is not None and not 0 < self.near_duplicate <= 1:
            raise ConfigurationError(
                "FitConfig.near_duplicate must be a share in (0, 1] or None (off), "
                f"got {self.near_duplicate!r}"
            )
        if self.fill < 0 or self.cut_saves < 0:
            raise ConfigurationError(
                f"FitConfig.fill and cut_saves must be numbers of tokens >= 0, got {self.fill!r} and "
                f"{self.cut_saves!r}"
            )

    @property
    def reads_shape(self) -> bool:
        """Whether a wide question is fitted otherwise than a narrow one."""
        return self.wide_share != self.most_share or self.wide_items != 1


#: How the fence spent the budget before :class:`FitConfig` (one share for every question, every
#: memory over it cut, exact duplicates only): ``RecallConfig(fit=FIT_BEFORE)`` brings it back.
FIT_BEFORE = FitConfig(wide_share=MOST_SHARE, wide_items=1, near_duplicate=None, fill=0, cut_saves=0)
#: The default, ``FitConfig()``: a wide question's items at a tenth of the budget (a memory cut only
#: when that saves more than 16 tokens) and half as many more of them; near duplicates take no slot.
#: Measured against :data:`FIT_BEFORE` in ``docs/benchmarks.md`` ("Evidence against tokens").
FIT_SHAPED = FitConfig()


class Part(NamedTuple):
    """Which part of a long exchange a memory is: its exchange's key, its passage number (from
    0) and how many passages the exchange has, as stored (text: check before reading numbers)."""

    episode: str
    number: str
    passages: str
    head: bool  # the exchange's own record, which stands for its first passage


def part_of(memory: StoredMemory) -> Part | None:
    """The part of a long exchange ``memory`` is, or ``None`` for anything else.

    An episode that has passages is counted as its first passage: the fence shows the start of
    its head (at most its share of the budget), which is a part of that passage's text, so the two
    are one piece and only the better ranked of them is shown.
    """
    if memory.record.kind is not MemoryKind.EPISODE:
        return None
    meta = memory.record.metadata
    episode, count = meta.get("episode"), meta.get("passages", "")
    if episode:
        return Part(episode, meta.get("passage", ""), count, head=False)
    return Part(memory.id, "0", count, head=True) if count else None


class Fitter:
    """Fills one section line by line within its budget, counting real tokens."""

    def __init__(self, header: str, budget: int, model: str | None) -> None:
        self.header = header
        self.budget = budget
        self.model = model
        self.lines: list[str] = []
        self.used = count_tokens(header + "\n", model=model) if budget else 0

    def add(self, line: str) -> int | None:
        """Add ``line`` if it fits; its token cost, or ``None``."""
        if not self.budget:
            return None
        cost = count_tokens(line + "\n", model=self.model)
        if self.used + cost > self.budget:
            return None
        self.lines.append(line)
        self.used += cost
        return cost

    def text(self) -> str:
        return "\n".join([self.header, *self.lines]) if self.lines else ""


MEMORIES_HEADER = "[memories about this user and conversation]"
EXCERPTS_HEADER = "[past conversation, by date]"


class MemoriesFitter:
    """The memories section within its budget, counting real tokens.

    Saved memories come first, in rank order, each with its id and category (what the memory
    tools act on). Past exchanges (episodes and their passages) follow under
    :data:`EXCERPTS_HEADER`, grouped under a ``(date "...")`` line per day and in the order they
    were said: the date is shown once per day instead of once per line, and no id is shown (the
    memory tools' search gives it when the model needs one). Which memories make it in is
    decided in rank order; a line's cost includes the headers it is the first to need.

    No memory shows more than a share of the budget (:class:`FitConfig`: a fifth, a tenth for a
    question that aggregates or hops), so several fit however long they are: of a longer one,
    the fence shows the whole sentences that hold the most words of the query
    (:func:`~langmem_plugin.services.recall.passages.focus_window`), with its id and a
    ``cut "tokens A-B of M"`` field, so the best match is never left out for its length and the
    model can read the rest with the memory tools. A part of a long exchange (a passage, or the
    head of an exchange stored in passages) names its exchange's id and ``part "N of M"``. A
    memory that repeats one already shown (:attr:`FitConfig.near_duplicate`) is refused:
    :attr:`refusal` says why the last refused memory was.
    """

    def __init__(
        self, budget: int, model: str | None, query: str = "", config: FitConfig | None = None
    ) -> None:
        self.budget = budget
        self.model = model
        self.query = query
        self.config = config or FitConfig()
        self.shape = question_shape(query) if self.config.reads_shape else QuestionShape()
        self.used = 0
        self.facts: list[str] = []
        self.days: dict[str, list[tuple[tuple[Any, ...], str]]] = {}
        share = self.config.wide_share if self.shape.wide else self.config.most_share
        self.most = max(budget // share, 16)  # the most content tokens one memory shows
        self.refusal = ""  # why the last memory refused was: "over budget" or "duplicate"
        self._shown_terms: list[tuple[frozenset[int], str | None]] = []

    def item_limit(self, max_items: int) -> int:
        """The most items this question may inject, given ``RecallConfig.max_items``."""
        return max(int(max_items * self.config.wide_items), max_items) if self.shape.wide else max_items

    def _shown(self, memory: StoredMemory, fill: int | None = None) -> tuple[str, str | None]:
        """The memory's content, or the sentences of it (at most :attr:`most` tokens, or ``fill``:
        the tokens left, for a memory shown in what is left) that hold the most words of the
        query, and what the cut field says of them.

        The head of an exchange stored in passages is shown from its start: it stands for the
        first passage (:func:`part_of`), and a later part of it is another passage's to show.
        """
        most = self.most if fill is None else fill
        content = memory.record.content
        if len(content) <= most:  # a token is at least one character
            return content, None
        total = count_tokens(content, model=self.model)  # cached for short texts: most are not cut
        if total <= most + (self.config.cut_saves if fill is None else 0):
            return content, None
        part = part_of(memory)
        head = part is not None and part.head
        start, end = (0, len(content)) if head else focus_window(content, self.query, most)
        shown = content[start:end]
        shown = head_tokens(shown, most, model=self.model) or shown  # sentences counted apart
        first = count_tokens(content[:start], model=self.model) + 1 if start else 1
        last = min(first + count_tokens(shown, model=self.model) - 1, total)
        return shown, f"tokens {first}-{last} of {total}"

    @staticmethod
    def _excerpt(memory: StoredMemory, content: str, cut: str | None) -> str:
        """An exchange's line: no fields, unless it shows a part of a longer one, which it names:
        the episode's id and which of its passages (an episode's own head counts as the first),
        or where it was cut."""
        part = part_of(memory)
        if part is not None and part.passages.isdecimal() and part.number.isdecimal():
            # the head's own cut is not told: its token count is the head's, not the exchange's
            return fenced_entry(
                content,
                id=part.episode,
                part=f"{int(part.number) + 1} of {part.passages}",
                cut=None if part.head else cut,
            )
        return fenced_entry(content, id=memory.id, cut=cut) if cut else fenced_entry(content)

    def _cost(self, line: str) -> int:
        return count_tokens(line + "\n", model=self.model)

    @functools.cached_property
    def _excerpts_header(self) -> int:
        return self._cost(EXCERPTS_HEADER)

    @functools.cached_property
    def _memories_header(self) -> int:
        return self._cost(MEMORIES_HEADER)

    def _line(self, memory: StoredMemory, content: str, cut: str | None) -> tuple[str, int]:
        """The memory's line and its cost, with the headers it is the first to need."""
        record = memory.record
        if record.kind is MemoryKind.EPISODE:
            day = record.created_at.date().isoformat()
            line = self._excerpt(memory, content, cut)
            cost = self._cost(line)
            cost += 0 if self.days else self._excerpts_header
            cost += 0 if day in self.days else self._cost(group(date=day))
            return line, cost
        team = "team" if memory.compartment == "team" else None  # shared by the team (services.team)
        line = fenced_entry(
            content, id=memory.id, category=record.category, tags=record.tags, shared_by=team, cut=cut
        )
        return line, self._cost(line) + (0 if self.facts else self._memories_header)

    def _day(self, memory: StoredMemory) -> str | None:
        """The day an exchange was said (``None`` for a saved memory)."""
        record = memory.record
        return record.created_at.date().isoformat() if record.kind is MemoryKind.EPISODE else None

    def _repeats(self, terms: frozenset[int], day: str | None) -> bool:
        """Whether a text of ``terms`` said on ``day`` nearly repeats a memory already shown."""
        least = self.config.near_duplicate
        if least is None or len(terms) < _MIN_TERMS:
            return False
        for shown, shown_day in self._shown_terms:
            if day is not None and shown_day is not None and day != shown_day:
                continue  # the same words said another day: another event
            if len(shown) >= _MIN_TERMS and len(terms & shown) >= least * len(terms | shown):
                return True
        return False

    def add(self, memory: StoredMemory) -> int | None:
        """Add ``memory`` if it fits and repeats nothing shown; its token cost, or ``None``
        (:attr:`refusal` says why)."""
        self.refusal = "over budget"
        if not self.budget:
            return None
        content, cut = self._shown(memory)
        day = self._day(memory)
        terms = text_terms(content) if self.config.near_duplicate else frozenset()
        if self._repeats(terms, day):
            self.refusal = "duplicate"
            return None
        line, cost = self._line(memory, content, cut)
        if self.used + cost > self.budget:
            fitted = self._fill(memory, cost - count_tokens(content, model=self.model))
            if fitted is None:
                return None
            line, cost, content = fitted
            terms = text_terms(content) if self.config.near_duplicate else terms
        if day is not None:
            self.days.setdefault(day, []).append((said_order(memory), line))
        else:
            self.facts.append(line)
        if self.config.near_duplicate:
            self._shown_terms.append((terms, day))
        self.used += cost
        return cost

    def _fill(self, memory: StoredMemory, overhead: int) -> tuple[str, int, str] | None:
        """The memory shown as its window in what is left of the budget (its line, cost and
        text), when at least :attr:`FitConfig.fill` tokens are left for it; else ``None``."""
        left = self.budget - self.used - overhead - 12  # the cut field that a window adds
        if not self.config.fill or left < self.config.fill:
            return None
        for _ in range(3):  # the field's own tokens vary a little: shrink by the excess
            content, cut = self._shown(memory, left)
            if cut is None:
                return None  # it fits whole in what is left, yet its line did not: nothing to cut
            line, cost = self._line(memory, content, cut)
            if self.used + cost <= self.budget:
                return line, cost, content
            left -= self.used + cost - self.budget
            if left < self.config.fill:
                return None
        return None

    def text(self) -> str:
        lines = [MEMORIES_HEADER, *self.facts] if self.facts else []
        if self.days:
            lines.append(EXCERPTS_HEADER)
            for day in sorted(self.days):
                lines.append(group(date=day))
                lines.extend(line for _, line in sorted(self.days[day]))
        return "\n".join(lines)


def said_order(memory: StoredMemory) -> tuple[Any, ...]:
    """When an exchange was said: its time, then its place in its thread (a passage after its
    episode's head, in order)."""
    meta = memory.record.metadata

    def number(name: str) -> int:
        value = meta.get(name, "")
        return int(value) if value.isdecimal() else -1

    thread = meta.get("thread_id", "")
    return (memory.record.created_at, thread, number("position"), number("passage"), memory.id)


def knowledge_line(memory: StoredMemory) -> str:
    """A document chunk with the ``source``, ``page`` and ``title`` its loader gave it."""
    meta = memory.record.metadata
    return fenced_entry(
        memory.record.content,
        source=meta.get("source") or memory.record.category,
        page=meta.get("page"),
        title=meta.get("title"),
    )
