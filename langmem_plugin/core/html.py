"""HTML tables for notebooks (``_repr_html_``) and the inspector: every value escaped.

Stored text is hostile input: each cell goes through :func:`html.escape` (quotes too), so a memory
that holds ``<script>`` shows those characters and runs nothing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["cell", "table"]

_STYLE = (
    "border-collapse:collapse;font-size:0.9em;"
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
)


def cell(value: Any, *, limit: int = 300) -> str:
    """One value as escaped cell text (``None`` is empty; long text is cut with an ellipsis)."""
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.3f}"
    elif isinstance(value, list | tuple):
        text = ", ".join(str(v) for v in value)
    else:
        text = str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=True)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, caption: str | None = None) -> str:
    """An HTML table of ``rows`` under ``headers``, every value escaped."""
    head = "".join(f'<th style="text-align:left;padding:2px 8px">{cell(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td style="padding:2px 8px;vertical-align:top">{cell(v)}</td>' for v in row)
        + "</tr>"
        for row in rows
    )
    title = f"<caption style='text-align:left'>{cell(caption, limit=500)}</caption>" if caption else ""
    return f'<table style="{_STYLE}">{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
