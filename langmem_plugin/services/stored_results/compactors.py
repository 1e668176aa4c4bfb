"""Deterministic compactors and transforms of a stored tool result's text (no LLM, no I/O).

A *compactor* turns a tool result into a short description for the citation the
model sees once the result is compacted. :func:`compact` picks one by tool name
(a mapping you give), else by the text's shape:

- JSON (object or list): :func:`compact_json` — the keys, the length, the first items;
- a table (CSV, TSV or a Markdown table): :func:`compact_table` — the columns and the row count;
- text or a web page: :func:`compact_text` — the title and the lead.

The *transforms* are what ``retrieve_result`` hands back: :func:`page_of` (the
full text, a page of tokens at a time), :func:`excerpt`, :func:`first_n` /
:func:`last_n` (lines, or items of a JSON list), :func:`filtered` (lines or JSON
items matching a pattern, or the values at a simple JSON path) and
:func:`extractive_summary`. A request the model can fix (a bad pattern, a page
past the end) raises :class:`~langmem_plugin.errors.InvalidFilterError`, whose
message says what to do.

Everything here takes bounded time over any text: patterns (the model's and ours over tool
output) run on RE2 (:mod:`~langmem_plugin.services.stored_results.patterns`), JSON is read only when
it nests at most 100 levels (:mod:`~langmem_plugin.services.stored_results.json_text`; deeper is
text), and a description reads only the start of a long text.

>>> compact('[{"name": "a", "size": 1}, {"name": "b", "size": 2}]', 200)
'JSON list of 2 items; item keys: name, size; first: {"name": "a", "size": 1}'
>>> compact("name,size\\na,1\\nb,2\\nc,3", 200)
'table of 3 rows; columns: name, size; first row: a, 1'
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Literal

from langmem_plugin.core.tokens import encoding_for_model
from langmem_plugin.errors import InvalidFilterError
from langmem_plugin.services.stored_results.json_text import dump as _dump
from langmem_plugin.services.stored_results.json_text import json_path, parse_path, walk
from langmem_plugin.services.stored_results.json_text import parse_json as _parse_json
from langmem_plugin.services.stored_results.patterns import (
    fixed_pattern,
    matching,
    model_pattern,
    without_surrogates,
)

__all__ = [
    "Compactor",
    "Shape",
    "compact",
    "compact_json",
    "compact_table",
    "compact_text",
    "excerpt",
    "extractive_summary",
    "filtered",
    "first_n",
    "head_tokens",
    "json_path",
    "last_n",
    "page_of",
    "shape_of",
    "token_pages",
]

#: A compactor: ``(text, max_chars) -> a description of at most max_chars characters``.
Compactor = Callable[[str, int], str]
Shape = Literal["json", "table", "text"]

_TABLE_DELIMITERS = (",", "\t", "|", ";")
# Python's re where it cannot backtrack far (fixed-width lookarounds, one class repeated) ...
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_WORD = re.compile(r"\w+", re.UNICODE)
# ... and RE2 where Python's would take quadratic time over hostile output ("<title>" * 100_000)
_TAG = fixed_pattern(r"<[^>]+>")
_TITLE = fixed_pattern(r"<title[^>]*>(.*?)</title>", case_sensitive=False, dot_nl=True)
_BLOCK = fixed_pattern(
    r"<script[^>]*>.*?</script>|<style[^>]*>.*?</style>", case_sensitive=False, dot_nl=True
)
#: How much of a text its description reads: a title and a lead are at its start.
_DESCRIBED_CHARS = 100_000


def _clip(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= max_chars else text[: max(0, max_chars - 1)].rstrip() + "…"


def _table_delimiter(lines: list[str]) -> str | None:
    if len(lines) < 3:
        return None
    for delimiter in _TABLE_DELIMITERS:
        counts = [line.count(delimiter) for line in lines[:50]]
        if counts[0] >= 1 and sum(c == counts[0] for c in counts) >= 0.8 * len(counts):
            return delimiter
    return None


def shape_of(text: str) -> Shape:
    """``"json"``, ``"table"`` or ``"text"``: the shape :func:`compact` reads ``text`` as."""
    if _parse_json(text) is not None:
        return "json"
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "table" if _table_delimiter(lines) is not None else "text"


def compact_json(text: str, max_chars: int) -> str:
    """The shape of a JSON text: its keys (of an object or of a list's items), its length, its first items."""
    value = _parse_json(text)
    if isinstance(value, list):
        parts = [f"JSON list of {len(value)} items"]
        keys = list(dict.fromkeys(k for item in value[:20] if isinstance(item, dict) for k in item))
        if keys:
            parts.append("item keys: " + ", ".join(str(k) for k in keys[:20]))
        if value:
            parts.append("first: " + _dump(value[0]))
        return _clip("; ".join(parts), max_chars)
    if isinstance(value, dict):
        described = []
        for key, item in list(value.items())[:20]:
            if isinstance(item, list):
                described.append(f"{key} (list of {len(item)})")
            elif isinstance(item, dict):
                described.append(f"{key} (object of {len(item)} keys)")
            else:
                described.append(f"{key}={_clip(_dump(item), 60)}")
        return _clip(f"JSON object of {len(value)} keys: " + ", ".join(described), max_chars)
    return compact_text(text, max_chars)


def compact_table(text: str, max_chars: int) -> str:
    """The columns and the row count of a CSV, TSV or Markdown table (the first line is the header)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    delimiter = _table_delimiter(lines)
    if delimiter is None:
        return compact_text(text, max_chars)
    rows = [[cell.strip() for cell in line.strip().strip("|").split(delimiter)] for line in lines]
    rows = [row for row in rows if not all(set(cell) <= set("-: ") for cell in row)]  # Markdown rule line
    header, body = rows[0], rows[1:]
    summary = f"table of {len(body)} rows; columns: {', '.join(header)}"
    if body:
        summary += f"; first row: {', '.join(body[0])}"
    return _clip(summary, max_chars)


def _title_and_body(text: str) -> tuple[str | None, str]:
    text, _ = without_surrogates(text)  # RE2 reads Unicode text only
    found = _TITLE.search(text)
    title = " ".join(_TAG.sub(" ", found.group(1)).split()) if found else None
    if "<" in text and ">" in text:
        text = _TAG.sub(" ", _BLOCK.sub(" ", text))
    lines = [line.strip() for line in text.splitlines()]
    if title is None:
        first = next((i for i, line in enumerate(lines) if line), None)
        if first is not None and (lines[first].startswith("#") or len(lines[first]) <= 120):
            title = lines[first].lstrip("#").strip()
            lines = lines[first + 1 :]
    return title or None, "\n".join(lines)


def compact_text(text: str, max_chars: int) -> str:
    """The title (an HTML ``<title>``, a heading or a short first line) and the lead of a text or page."""
    title, body = _title_and_body(text[:_DESCRIBED_CHARS])
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body) if p.strip()]
    lead = " ".join(paragraphs[:2])
    summary = f"{title} — {lead}" if title and lead else (title or lead)
    return _clip(summary, max_chars)


def compact(
    text: str, max_chars: int, *, tool: str | None = None, compactors: Mapping[str, Compactor] | None = None
) -> str:
    """A description of ``text`` in at most ``max_chars``: the compactor of ``tool``, else one by shape."""
    chosen = (compactors or {}).get(tool or "")
    if chosen is not None:
        return _clip(chosen(text, max_chars), max_chars)
    shape = shape_of(text)
    if shape == "json":
        return compact_json(text, max_chars)
    if shape == "table":
        return compact_table(text, max_chars)
    return compact_text(text, max_chars)


# -- transforms ---------------------------------------------------------------------------------


def token_pages(text: str, page_tokens: int, *, model: str | None = None) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of ``text`` cut every ``page_tokens`` tokens.

    The pages joined give ``text`` back exactly.
    """
    if page_tokens < 1:
        raise InvalidFilterError(f"page_tokens must be at least 1, got {page_tokens}")
    encoding = encoding_for_model(model)
    tokens = encoding.encode(text, disallowed_special=())
    if not tokens:
        return [(0, len(text))]
    _, offsets = encoding.decode_with_offsets(tokens)
    starts = [min(offsets[i], len(text)) for i in range(0, len(tokens), page_tokens)]
    starts[0] = 0
    ends = [*starts[1:], len(text)]
    return list(zip(starts, ends, strict=True))


def head_tokens(text: str, max_tokens: int, *, model: str | None = None) -> str | None:
    """The first ``max_tokens`` tokens of ``text``, or ``None`` when it is not longer than that.

    Only a prefix of a long text is encoded: one holding at least twice ``max_tokens`` tokens,
    so the tokens cut at stand far from where the prefix ends.
    """
    if max_tokens < 1:
        raise InvalidFilterError(f"max_tokens must be at least 1, got {max_tokens}")
    encoding = encoding_for_model(model)
    chars = max_tokens * 8
    while True:
        prefix = text[:chars]
        tokens = encoding.encode(prefix, disallowed_special=())
        if len(prefix) == len(text) or len(tokens) > 2 * max_tokens:
            break
        chars *= 4
    if len(tokens) <= max_tokens:
        return None
    start = _token_start(encoding.decode_tokens_bytes(tokens[: max_tokens + 1]))
    return text[: min(start, len(text))]


def _token_start(token_bytes: list[bytes]) -> int:
    """The character where the last of ``token_bytes`` starts (the start of the character it is
    part of, when it begins inside one): tiktoken's ``decode_with_offsets`` without its strict
    decode, which raises when the tokens end inside a character (a cut through an emoji)."""
    chars = sum(1 for token in token_bytes[:-1] for byte in token if not 0x80 <= byte < 0xC0)
    return max(0, chars - (0x80 <= token_bytes[-1][0] < 0xC0))


def page_of(text: str, page: int, page_tokens: int, *, model: str | None = None) -> tuple[str, int]:
    """Page ``page`` (from 1) of ``text`` and the number of pages."""
    spans = token_pages(text, page_tokens, model=model)
    if not 1 <= page <= len(spans):
        raise InvalidFilterError(f"page {page} does not exist: the result has pages 1 to {len(spans)}")
    start, end = spans[page - 1]
    return text[start:end], len(spans)


def excerpt(text: str, start: int, length: int) -> str:
    """``length`` characters of ``text`` from character ``start``."""
    if start < 0 or length < 1:
        raise InvalidFilterError(
            f"excerpt needs start >= 0 and length >= 1, got start={start}, length={length}"
        )
    if start >= len(text):
        raise InvalidFilterError(f"start={start} is past the end: the result has {len(text)} characters")
    return text[start : start + length]


def _items_or_lines(text: str) -> tuple[list[Any] | None, list[str]]:
    value = _parse_json(text)
    return (value if isinstance(value, list) else None), text.splitlines()


def first_n(text: str, n: int) -> str:
    """The first ``n`` items of a JSON list (as JSON), else the first ``n`` lines."""
    if n < 1:
        raise InvalidFilterError(f"n must be at least 1, got {n}")
    items, lines = _items_or_lines(text)
    return _dump(items[:n]) if items is not None else "\n".join(lines[:n])


def last_n(text: str, n: int) -> str:
    """The last ``n`` items of a JSON list (as JSON), else the last ``n`` lines."""
    if n < 1:
        raise InvalidFilterError(f"n must be at least 1, got {n}")
    items, lines = _items_or_lines(text)
    return _dump(items[-n:]) if items is not None else "\n".join(lines[-n:])


def filtered(text: str, pattern: str | None = None, path: str | None = None) -> str:
    """Lines (or JSON items) matching the regular expression ``pattern``, or the values at a JSON ``path``.

    With ``path`` the text must be JSON; with both, only the values at ``path`` whose JSON matches.
    The pattern is RE2 syntax, case-insensitive (:func:`~.patterns.model_pattern`): matching takes
    linear time whatever the pattern. At most :data:`~.patterns.MAX_MATCHES` matches come back,
    from at most :data:`~.patterns.MAX_SCAN_CHARS` characters scanned; a note says when it stopped
    early.

    Raises:
        InvalidFilterError: neither a pattern nor a path, a pattern that is not RE2 syntax (or too
            long), a path that cannot be read, or a path over a result that is not JSON.
    """
    if not pattern and not path:
        raise InvalidFilterError("filtered needs a pattern (a regular expression), a JSON path, or both")
    regex = model_pattern(pattern) if pattern else None
    parts = parse_path(path) if path else None
    value = _parse_json(text)
    if parts is not None:
        if value is None:
            raise InvalidFilterError(
                "a JSON path needs a JSON result; this one is text (or JSON nested too deep to read): "
                "use pattern alone"
            )
        items = walk(value, parts)
    elif isinstance(value, list) or regex is None:
        items = value if isinstance(value, list) else []
    else:
        lines = matching(regex, enumerate(text.splitlines(), 1), lambda pair: pair[1])
        shown = "\n".join(f"{i}: {line}" for i, line in lines.found)
        return (shown or "No line matches.") + lines.note()
    if regex is None:
        return _dump(items) if items else "No item matches."
    kept = matching(regex, items, _dump)
    return (_dump(kept.found) if kept.found else "No item matches.") + kept.note()


def extractive_summary(text: str, max_sentences: int = 5) -> str:
    """The ``max_sentences`` most central sentences of ``text``, in their order (word frequency; no LLM)."""
    _, body = _title_and_body(text)
    sentences = [" ".join(s.split()) for s in _SENTENCE.split(body) if s.strip()]
    if len(sentences) <= max_sentences:
        return " ".join(sentences)
    words = [w.lower() for w in _WORD.findall(body) if len(w) > 3]
    frequency = Counter(words)

    def score(item: tuple[int, str]) -> float:
        position, sentence = item
        found: list[int] = [frequency[w.lower()] for w in _WORD.findall(sentence) if len(w) > 3]
        lead = 1.5 if position == 0 else 1.0
        return lead * sum(found) / (math.sqrt(len(found)) + 1)

    ranked = sorted(enumerate(sentences), key=lambda item: (-score(item), item[0]))[:max_sentences]
    return " ".join(sentence for _, sentence in sorted(ranked))
