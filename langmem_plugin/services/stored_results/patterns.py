"""Regular expressions over tool results in linear time: RE2, never Python's backtracking ``re``.

A pattern a model writes (``retrieve_result(transform="filtered", pattern=...)``) and the
patterns the compactors run over a tool's output are compiled by RE2 (``google-re2``), whose
matching time is linear in the text, whatever the pattern: ``(a+)+$`` over ``"a" * 50_000 + "!"``
answers at once instead of stalling the process. What a model may ask is bounded too:

- a pattern holds at most :data:`MAX_PATTERN_CHARS` characters, compiles to at most
  :data:`MAX_PROGRAM_SIZE` RE2 instructions within :data:`MAX_PATTERN_MEMORY` bytes, and
  captures nothing (so RE2 can match with its DFA);
- a search scans at most :data:`MAX_SCAN_CHARS` characters of a result — fewer for a larger
  pattern: RE2's worst case is the pattern's size times the text's, held under
  :data:`MAX_SCAN_WORK` — and returns at most :data:`MAX_MATCHES` matches, and says so when it
  stops early.

A pattern RE2 cannot take (a backreference such as ``\\1``, a lookaround such as ``(?=...)``,
a repeat count over 1000, a lone surrogate) is refused with
:class:`~langmem_plugin.errors.InvalidFilterError`, whose message tells the model how to write
it in RE2 syntax. Nothing falls back to ``re``.

>>> regex = model_pattern("(a+)+$")
>>> regex.search("a" * 50_000 + "!") is None
True
>>> model_pattern(r"(\\w)\\1")
Traceback (most recent call last):
...
langmem_plugin.errors.InvalidFilterError: the pattern ... is not a valid regular expression in RE2 syntax ...
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import re2

from langmem_plugin.core.record import text_problem
from langmem_plugin.errors import InvalidFilterError, shown

__all__ = [
    "MAX_MATCHES",
    "MAX_PATTERN_CHARS",
    "MAX_PATTERN_MEMORY",
    "MAX_PROGRAM_SIZE",
    "MAX_SCAN_CHARS",
    "MAX_SCAN_WORK",
    "Matches",
    "fixed_pattern",
    "matching",
    "model_pattern",
    "scan_budget",
    "without_surrogates",
]

#: The longest pattern a model may pass.
MAX_PATTERN_CHARS = 1000
#: The memory RE2 may use for one compiled pattern (its program and its matching caches).
MAX_PATTERN_MEMORY = 8 << 20
#: The largest compiled pattern (RE2 program instructions) a model may pass.
MAX_PROGRAM_SIZE = 2000
#: The most characters of a result one search scans.
MAX_SCAN_CHARS = 2_000_000
#: The most work one search may do: program instructions times characters scanned.
MAX_SCAN_WORK = 200_000_000
#: The most matches (lines or JSON items) one search returns.
MAX_MATCHES = 500

_RE2_SYNTAX = (
    "Use RE2 syntax (like Python's re, without backreferences such as \\1, lookaround such as (?=...), "
    "(?!...), (?<=...), (?<!...), atomic groups or possessive repeats; repeat counts up to 1000; "
    "\\z for the end of the text). To find a literal text, escape its special characters."
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD, and how many were replaced.

    A lone surrogate (a bad decode, ``json.loads('"\\\\ud800"')``) is not Unicode text: no store
    takes it and RE2 cannot read it.

    >>> without_surrogates("a\\ud800b")
    ('a\ufffdb', 1)
    """
    if text.isascii():
        return text, 0
    return _SURROGATE.subn("\ufffd", text)


def _options(*, case_sensitive: bool, dot_nl: bool = False, capture: bool = True) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # an invalid pattern is an answer to the model, not a log line
    options.max_mem = MAX_PATTERN_MEMORY
    options.case_sensitive = case_sensitive
    options.dot_nl = dot_nl
    options.never_capture = not capture  # without groups to fill, RE2 matches with its DFA
    return options


def fixed_pattern(pattern: str, *, case_sensitive: bool = True, dot_nl: bool = False) -> Any:
    """One of this package's own patterns, compiled by RE2 (run over tool output: never backtracks)."""
    return re2.compile(pattern, _options(case_sensitive=case_sensitive, dot_nl=dot_nl))


def model_pattern(pattern: str) -> Any:
    """A pattern a model wrote, compiled by RE2, case-insensitive.

    Raises:
        InvalidFilterError: the pattern is too long, holds a lone surrogate, or is not RE2 syntax;
            the message says how to write it.
    """
    if not isinstance(pattern, str):
        raise InvalidFilterError(f"a pattern must be text, got {type(pattern).__name__}")
    said = shown(pattern)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidFilterError(
            f"the pattern {said} is {len(pattern)} characters; a pattern takes at most "
            f"{MAX_PATTERN_CHARS}. Fix: search for a shorter distinctive part, or use a JSON path."
        )
    problem = text_problem(pattern)
    if problem is not None:
        raise InvalidFilterError(f"the pattern {said} {problem}. Fix: remove the character.")
    try:
        regex = re2.compile(pattern, _options(case_sensitive=False, capture=False))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidFilterError(
            f"the pattern {said} is not a valid regular expression in RE2 syntax ({reason}). {_RE2_SYNTAX}"
        ) from None
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise InvalidFilterError(
            f"the pattern {said} is too large: it compiles to {regex.programsize} RE2 instructions, more "
            f"than {MAX_PROGRAM_SIZE}. Fix: use fewer or smaller repeat counts ({{n}}), or a shorter pattern."
        )
    return regex


def scan_budget(regex: Any) -> int:
    """The most characters a search with ``regex`` scans: :data:`MAX_SCAN_CHARS`, or fewer for a
    large pattern (so that its size times the characters stays under :data:`MAX_SCAN_WORK`)."""
    size = max(1, int(getattr(regex, "programsize", 1)))
    return max(1, min(MAX_SCAN_CHARS, MAX_SCAN_WORK // size))


@dataclass(frozen=True)
class Matches:
    """What a bounded search found: the matches in order, and whether it stopped early (and why)."""

    found: list[Any]
    stopped: str | None = None

    def note(self) -> str:
        """A line saying where the search stopped, or ``""`` when it read everything."""
        return f"\n[{self.stopped}]" if self.stopped else ""


def matching(
    regex: Any,
    items: Iterable[Any],
    text_of: Callable[[Any], str] = str,
    *,
    scan_chars: int | None = None,
) -> Matches:
    """The ``items`` whose text (``text_of(item)``) the compiled ``regex`` finds a match in.

    Stops after :data:`MAX_MATCHES` matches, or once ``scan_chars`` characters were scanned
    (``None``: :func:`scan_budget`); an item longer than what is left is searched in its start.
    """
    budget = scan_budget(regex) if scan_chars is None else scan_chars
    found: list[Any] = []
    scanned = 0
    iterator: Iterator[Any] = iter(items)
    for item in iterator:
        text, _ = without_surrogates(text_of(item))
        left = budget - scanned
        if regex.search(text, 0, min(len(text), left)) is not None:
            if len(found) == MAX_MATCHES:
                return Matches(found, f"stopped at the first {MAX_MATCHES} matches: narrow the pattern")
            found.append(item)
        scanned += min(len(text), left)
        if scanned >= budget and (len(text) > left or next(iterator, None) is not None):
            return Matches(
                found,
                f"stopped after scanning {scanned:,} characters (the most this pattern may scan): "
                "narrow the part read (a JSON path, or excerpt with start=) or the pattern",
            )
    return Matches(found)
