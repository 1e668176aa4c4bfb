"""Fitting recall into its budgets: each section filled line by line, counting real tokens.

:class:`MemoriesFitter` fills the memories section: memories first, then excerpts of past
exchanges grouped by day, each cut to the part of the text that matches the query
(:func:`~langmem_plugin.services.recall.passages.focus_window`); :func:`part_of` says which
part of a long exchange a memory is, so that one piece is never shown twice.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from langmem_plugin.core.fence import entry as fenced_entry
from langmem_plugin.core.fence import group
from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.services.context import head_tokens
from langmem_plugin.services.operations import StoredMemory
from langmem_plugin.services.recall.passages import focus_window

__all__ = [
    "EXCERPTS_HEADER",
    "MEMORIES_HEADER",
    "Fitter",
    "MemoriesFitter",
    "Part",
    "knowledge_line",
    "part_of",
    "said_order",
]

MOST_SHARE = 5  # no memory shows more than this share of the memories budget


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
    its head (at most a fifth of the budget), which is a part of that passage's text, so the two
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

    No memory shows more than a fifth of the budget, so at least five fit however long they are:
    of a longer one, the fence shows the whole sentences that hold the most words of the query
    (:func:`~langmem_plugin.services.recall.passages.focus_window`), with its id and a
    ``cut "tokens A-B of M"`` field, so the best match is never left out for its length and the
    model can read the rest with the memory tools. A part of a long exchange (a passage, or the
    head of an exchange stored in passages) names its exchange's id and ``part "N of M"``.
    """

    def __init__(self, budget: int, model: str | None, query: str = "") -> None:
        self.budget = budget
        self.model = model
        self.query = query
        self.used = 0
        self.facts: list[str] = []
        self.days: dict[str, list[tuple[tuple[Any, ...], str]]] = {}
        self.most = max(budget // MOST_SHARE, 16)  # the most content tokens one memory shows

    def _shown(self, memory: StoredMemory) -> tuple[str, str | None]:
        """The memory's content, or the sentences of it (at most :attr:`most` tokens) that hold
        the most words of the query, and what the cut field says of them.

        The head of an exchange stored in passages is shown from its start: it stands for the
        first passage (:func:`part_of`), and a later part of it is another passage's to show.
        """
        content = memory.record.content
        if len(content) <= self.most:  # a token is at least one character
            return content, None
        total = count_tokens(content, model=self.model)  # cached for short texts: most are not cut
        if total <= self.most:
            return content, None
        part = part_of(memory)
        head = part is not None and part.head
        start, end = (0, len(content)) if head else focus_window(content, self.query, self.most)
        shown = content[start:end]
        shown = head_tokens(shown, self.most, model=self.model) or shown  # sentences counted apart
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

    def add(self, memory: StoredMemory) -> int | None:
        """Add ``memory`` if it fits; its token cost, or ``None``."""
        if not self.budget:
            return None
        record = memory.record
        content, cut = self._shown(memory)
        episode = record.kind is MemoryKind.EPISODE
        if episode:
            day = record.created_at.date().isoformat()
            line = self._excerpt(memory, content, cut)
            cost = self._cost(line)
            cost += 0 if self.days else self._excerpts_header
            cost += 0 if day in self.days else self._cost(group(date=day))
        else:
            line = fenced_entry(content, id=memory.id, category=record.category, tags=record.tags, cut=cut)
            cost = self._cost(line) + (0 if self.facts else self._memories_header)
        if self.used + cost > self.budget:
            return None
        if episode:
            self.days.setdefault(day, []).append((said_order(memory), line))
        else:
            self.facts.append(line)
        self.used += cost
        return cost

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
