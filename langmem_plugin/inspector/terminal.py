"""``langmem-plugin memories``: what an :class:`~langmem_plugin.surfaces.inspector.Inspector` reads,
as plain-text tables for a terminal or as one JSON document.

Stored text is whatever users and models wrote, so every cell goes through :func:`visible`
first: a control character (an escape sequence, a carriage return, a newline, a bidi override)
is shown as its Python escape (``\\x1b``, ``\\n``, ``\\u202e``) and never reaches the terminal,
so a memory cannot move the cursor, clear the screen or forge a row. Cells too wide for their
column are cut with ``…``; the widest column (the content) takes what the terminal has left.
JSON is written ASCII-only (``\\u001b``), safe to print as well.

>>> print(table(["id", "content"], [["m1", "line one\\nline two \\x1b[2J"]], width=40))
id  content
──  ──────────────────────────
m1  line one\\nline two \\x1b[2J
"""

from __future__ import annotations

import json
import shutil
import textwrap
import unicodedata
from collections.abc import Sequence
from typing import Any

from langmem_plugin.errors import one_line
from langmem_plugin.services.history import HistoryEntry
from langmem_plugin.services.inspect import Catalog, MemoryDetail, MemoryPage
from langmem_plugin.services.recall import Recall

__all__ = [
    "catalog_text",
    "cut",
    "detail_text",
    "history_text",
    "json_text",
    "page_text",
    "recall_document",
    "recall_text",
    "table",
    "terminal_width",
    "visible",
]

_GAP = "  "
_MIN_FLEX = 16
_CAP = 28  # the widest a column other than the flexible one may be


def visible(value: object) -> str:
    """``value`` as one line of harmless text: every character that is not printable (controls,
    line breaks, format characters such as bidi overrides) as its escape, e.g. ``\\x1b``.

    >>> visible("ok\\x1b[2J\\r\\nnext\\u202e")
    'ok\\\\x1b[2J\\\\r\\\\nnext\\\\u202e'
    """
    return one_line("-" if value is None else value if isinstance(value, str) else str(value))


def _char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _width(text: str) -> int:
    return sum(_char_width(c) for c in text)


def cut(text: str, width: int) -> str:
    """``text`` (already :func:`visible`) in at most ``width`` columns, ending in ``…`` when cut.

    >>> cut("abcdefgh", 5), cut("abc", 5)
    ('abcd…', 'abc')
    """
    if _width(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        size = _char_width(char)
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept) + "…"


def _pad(text: str, width: int, right: bool) -> str:
    room = " " * max(0, width - _width(text))
    return room + text if right else text + room


def _numeric(cells: Sequence[str]) -> bool:
    def number(cell: str) -> bool:
        try:
            float(cell)
        except ValueError:
            return cell == "-"
        return True

    # a column of "-" only (no reason given for any change) is text, aligned left
    return any(c != "-" for c in cells) and all(number(c) for c in cells)


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS`` when set; 160 when not a terminal), at least 60."""
    return max(60, shutil.get_terminal_size((160, 24)).columns)


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    width: int | None = None,
    flex: int = -1,
    cap: int = _CAP,
) -> str:
    """A plain-text table: a header, a rule, one line per row, columns two spaces apart.

    Every cell is :func:`visible`; a column is as wide as its widest cell, at most ``cap``
    columns (or its header's width), but for column ``flex`` (default the last), which takes what
    is left of ``width`` (default the terminal's). Columns of numbers are aligned right.
    """
    total = width or terminal_width()
    count = len(headers)
    flex %= count
    cells = [[visible(cell) for cell in row] for row in rows]
    widths = []
    for i, header in enumerate(headers):
        natural = max([_width(header), *(_width(row[i]) for row in cells)])
        widths.append(natural if i == flex else min(natural, max(cap, _width(header))))
    others = sum(w for i, w in enumerate(widths) if i != flex) + len(_GAP) * (count - 1)
    widths[flex] = max(min(widths[flex], total - others), _MIN_FLEX, _width(headers[flex]))
    right = [_numeric([row[i] for row in cells]) for i in range(count)]

    def line(row: Sequence[str], align: bool = True) -> str:
        parts = [_pad(cut(cell, widths[i]), widths[i], align and right[i]) for i, cell in enumerate(row)]
        return _GAP.join(parts).rstrip()

    rule = _GAP.join("─" * w for w in widths)
    return "\n".join([line(headers, align=False), rule, *(line(row) for row in cells)])


def json_text(document: Any) -> str:
    """One JSON document, indented, ASCII-only (control characters and the rest as ``\\u`` escapes)."""
    return json.dumps(document, indent=2, ensure_ascii=True, default=str)


def _fields(pairs: Sequence[tuple[str, object]]) -> list[str]:
    size = max(len(name) for name, _ in pairs)
    return [f"{name.ljust(size)}  {visible(value)}" for name, value in pairs]


def _block(text: str, width: int, indent: str = "  ") -> list[str]:
    """``text`` line by line, each made :func:`visible` and wrapped, indented (never at column 0)."""
    out = []
    for raw in text.split("\n"):
        wrapped = textwrap.wrap(visible(raw), max(20, width - len(indent)), drop_whitespace=False)
        out += [indent + part for part in wrapped or [""]]
    return out


def catalog_text(catalog: Catalog, *, store: str) -> str:
    """The users, threads and agents with memory in the store, and each user's threads."""

    def ids(values: Sequence[str]) -> str:
        return ", ".join(visible(v) for v in values) if values else "none"

    lines = [
        f"{visible(store)}: {len(catalog.users)} user(s), {len(catalog.threads)} thread(s), "
        f"{len(catalog.agents)} agent(s)",
        "",
        f"users    {ids(catalog.users)}",
        f"threads  {ids(catalog.threads)}",
        f"agents   {ids(catalog.agents)}",
    ]
    if catalog.user_threads:
        rows = [(user, ", ".join(threads)) for user, threads in sorted(catalog.user_threads.items())]
        lines += ["", table(["user", "threads"], rows)]
    lines += ["", "Next: langmem-plugin memories list --store STORE --user USER (or --thread THREAD)"]
    return "\n".join(lines)


def page_text(page: MemoryPage, *, width: int | None = None) -> str:
    """A page of memories: one row each, the content cut to the terminal."""
    where = "/".join(visible(part) for part in page.namespace)
    shown = f"{page.offset + 1}-{page.offset + len(page.rows)}" if page.rows else "none"
    filters = ", ".join(f"{k}={visible(v)}" for k, v in page.filters.items())
    head = f"{page.compartment} memory in {where}: rows {shown}" + (
        f" (filtered: {filters})" if filters else ""
    )
    rows = [
        (
            row.id,
            row.kind,
            row.category,
            row.updated_at[:19].replace("T", " "),
            "yes" if row.current else f"no, since {(row.invalid_at or '?')[:10]}",
            row.access_count,
            row.content,
        )
        for row in page.rows
    ]
    body = table(["id", "kind", "category", "updated", "current", "reads", "content"], rows, width=width)
    more = f"more: --offset {page.offset + len(page.rows)}" if page.more else "no more"
    return "\n".join([head, "", body if rows else "(no memories)", "", more])


def _number(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def recall_text(recall: Recall, *, width: int | None = None) -> str:
    """Every candidate recall weighed and what became of it, then the fenced prompt and its tokens."""
    rows = [
        (
            c.rank if c.rank is not None else "-",
            c.outcome,
            c.compartment,
            _number(c.score, ".3f"),
            _number(c.relevance, "+.2f"),
            _number(c.dense, ".3f"),
            _number(c.lexical, ".2f"),
            ", ".join(f"{name} {value:+.2f}" for name, value in c.lifts) or "-",
            c.tokens if c.tokens is not None else "-",
            c.content,
        )
        for c in recall.considered
    ]
    headers = ["rank", "outcome", "compartment", "score", "relevance", "dense", "lexical", "lifts", "tokens"]
    injected = sum(1 for c in recall.considered if c.outcome == "injected")
    lines = [
        f"recall of {visible(recall.query)}: {len(recall.considered)} candidate(s), {injected} injected",
        "",
        table([*headers, "content"], rows, width=width, cap=18) if rows else "(no candidates)",
        "",
        "the prompt block the model would get:" if recall.prompt else "nothing would be injected",
    ]
    lines += [visible(line) for line in recall.prompt.split("\n")] if recall.prompt else []
    tokens = ", ".join(f"{name} {count}" for name, count in recall.tokens.items())
    lines += ["", f"tokens: {tokens}"]
    return "\n".join(lines)


def recall_document(recall: Recall) -> dict[str, Any]:
    """What :func:`recall_text` shows, JSON-able."""
    return {
        **recall.record(),
        "prompt": recall.prompt,
        "considered": [c.as_dict() for c in recall.considered],
    }


def detail_text(detail: MemoryDetail, *, width: int | None = None) -> str:
    """One memory: its fields, its content in full, the exchanges it came from, how often it changed."""
    total = width or terminal_width()
    row = detail.row
    replaced = f", replaced by {row.superseded_by}" if row.superseded_by else ""
    lines = _fields(
        [
            ("id", row.id),
            ("compartment", row.compartment),
            ("namespace", "/".join(row.namespace)),
            ("kind", row.kind),
            ("category", row.category),
            ("tags", ", ".join(row.tags) or "-"),
            ("priority", row.priority),
            ("created", row.created_at),
            ("updated", row.updated_at),
            ("current", "yes" if row.current else f"no, since {row.invalid_at or '?'}{replaced}"),
            ("reads", f"{row.access_count} (by the memory tools; by recall only with track_access=True)"),
            ("source", row.source),
        ]
    )
    lines += ["content", *_block(row.content, total)]
    if detail.exchanges:
        lines += ["", "came from these exchanges:"]
        rows = [
            (e.link, e.thread_id, e.text if e.text is not None else "(no longer stored)")
            for e in detail.exchanges
        ]
        lines.append(table(["exchange", "thread", "text"], rows, width=total))
    else:
        lines += ["", "came from: no recorded exchange"]
    lines += ["", f"history: {len(detail.history)} recorded change(s) (memories history ... to see them)"]
    return "\n".join(lines)


def _change(entry: HistoryEntry) -> str:
    old = "" if entry.old is None else visible(entry.old)
    new = "" if entry.new is None else visible(entry.new)
    if old and new:
        return f"{old} → {new}"
    return f"→ {new}" if new else f"{old} →" if old else "-"


def history_text(detail: MemoryDetail, *, width: int | None = None) -> str:
    """The timeline of one memory: when, what, by whom, in which thread, old → new, why."""
    rows = [
        (
            entry.at[:19].replace("T", " "),
            entry.action,
            entry.source,
            entry.thread_id,
            _change(entry),
            entry.reason,
        )
        for entry in detail.history
    ]
    head = f"history of {visible(detail.row.id)}: {len(rows)} recorded change(s)"
    if not rows:
        return f"{head}\n\n(no change recorded for it)"
    body = table(["when", "action", "by", "thread", "old → new", "reason"], rows, width=width, flex=4)
    return f"{head}\n\n{body}"
