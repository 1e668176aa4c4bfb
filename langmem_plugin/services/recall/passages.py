"""Passages: a long text split into pieces an embedder sees whole, and joined back exactly.

A small embedder reads a bounded number of tokens (MiniLM: 256) and ignores the
rest, so a long message is stored as an episode plus passages: sentence-aware
pieces of at most ``max_tokens`` tokens (counted with
:func:`~langmem_plugin.core.tokens.count_tokens`), overlapping a little, each with
its offset, so :func:`join_passages` gives the original text back exactly.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.core.tokens import count_tokens

__all__ = ["Passage", "focus_window", "join_passages", "split_passages"]

_TERMS = BM25Encoder()  # reads words as the search's BM25 does: stems, no stopwords

_SENTENCE = re.compile(r"[^\n.!?]*(?:[.!?]+[\"')\]]*|\n|$)\s*")


@dataclass(frozen=True)
class Passage:
    """A part of an episode's text small enough for the embedder to read whole.

    ``text`` is ``full[offset : offset + len(text)]``; its first ``overlap`` characters repeat
    the end of the passage before it, so the passages rebuild the text exactly (:func:`join_passages`).
    """

    text: str
    offset: int
    overlap: int


def _atoms(text: str, max_tokens: int) -> list[tuple[int, int, int]]:
    """``text`` cut into sentences (or words, or characters when one is too long): (start, end, tokens)."""
    atoms: list[tuple[int, int, int]] = []

    def add(start: int, end: int, depth: int) -> None:
        if start >= end:
            return
        tokens = count_tokens(text[start:end])
        if tokens <= max_tokens:
            atoms.append((start, end, tokens))
        elif depth == 0:
            cuts = [m.end() for m in re.finditer(r"\s+", text[start:end])]
            bounds = [0, *(c for c in cuts if 0 < c < end - start), end - start]
            if len(bounds) > 2:
                for a, b in itertools.pairwise(bounds):
                    add(start + a, start + b, 1)
                return
            add(start, end, 1)
        else:
            step = max((end - start) * max_tokens // (tokens + 1), 1)
            for at in range(start, end, step):
                add(at, min(at + step, end), depth + 1)

    for match in _SENTENCE.finditer(text):
        add(match.start(), match.end(), 0)
    return atoms


def split_passages(text: str, *, max_tokens: int = 180, overlap_tokens: int = 24) -> list[Passage]:
    """``text`` as passages of at most about ``max_tokens`` tokens, cut between sentences, each
    starting with about ``overlap_tokens`` tokens (whole sentences) of the one before.

    A text that fits is one passage. ``join_passages(split_passages(t)) == t`` for every ``t``.

    >>> [p.text for p in split_passages("One two three. Four five six.", max_tokens=16)]
    ['One two three. Four five six.']
    """
    atoms = _atoms(text, max_tokens)
    if not atoms:
        return [Passage(text, 0, 0)]
    passages: list[Passage] = []
    first = 0  # index of the first atom of the passage being built
    previous_end = 0
    while first < len(atoms):
        last, tokens = first, atoms[first][2]
        while last + 1 < len(atoms) and tokens + atoms[last + 1][2] <= max_tokens:
            last += 1
            tokens += atoms[last][2]
        start = 0 if not passages else atoms[first][0]
        end = atoms[last][1] if last + 1 < len(atoms) else len(text)
        passages.append(Passage(text[start:end], start, max(previous_end - start, 0)))
        previous_end = end
        if last + 1 >= len(atoms):
            break
        nxt, back = last + 1, 0
        while nxt - 1 > first and back + atoms[nxt - 1][2] <= overlap_tokens:
            nxt -= 1
            back += atoms[nxt][2]
        first = nxt
    return passages


def join_passages(passages: Iterable[tuple[str, int]]) -> str:
    """The text that ``(text, overlap)`` passages (in order) were cut from."""
    return "".join(text[overlap:] for text, overlap in passages)


def focus_window(text: str, query: str, max_tokens: int) -> tuple[int, int]:
    """The ``(start, end)`` characters of the whole sentences of ``text``, at most about
    ``max_tokens`` tokens in all, that hold the most distinct words of ``query`` (as BM25
    reads words); the earliest such window, so a text that matches nowhere gives its head.

    >>> text = "We met in May. The weather was grey. My cat is called Miso."
    >>> start, end = focus_window(text, "what is my cat called?", 8)
    >>> text[start:end]
    'My cat is called Miso.'
    """
    atoms = _atoms(text, max_tokens)
    if not atoms:
        return 0, len(text)
    asked = frozenset(_TERMS.encode_query(query).indices)
    found = [asked.intersection(_TERMS.encode_query(text[a:b]).indices) for a, b, _ in atoms]
    best, best_first, best_last = -1, 0, 0
    for first in range(len(atoms)):
        last, tokens, words = first, atoms[first][2], set(found[first])
        while last + 1 < len(atoms) and tokens + atoms[last + 1][2] <= max_tokens:
            last += 1
            tokens += atoms[last][2]
            words |= found[last]
        if len(words) > best:
            best, best_first, best_last = len(words), first, last
        if last + 1 >= len(atoms):
            break  # every later window is a part of this one
    return (0 if best_first == 0 else atoms[best_first][0]), atoms[best_last][1]
