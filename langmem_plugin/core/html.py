"""Stored text as HTML: the one escaping path of the notebook tables (``_repr_html_``) and the
inspector's web page.

Stored text is hostile input, in two ways:

- **markup**: each value goes through :func:`html.escape` (quotes too), so a memory that holds
  ``<script>`` shows those characters and runs nothing;
- **invisible characters**: a bidi control (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F,
  U+061C) in a memory would reorder the page around it (an id that reads backwards, a row that
  seems to say what it does not), and other invisible characters hide text. :func:`reveal` shows
  each of them as its escape (``\\u202e``), as the terminal does; tab and newline stay (they lay
  text out), and so do the joiners U+200C/U+200D (Persian, Indic scripts and emoji need them).

On top of that :func:`isolated` puts the text in a ``<bdi>``, so even its right-to-left letters
cannot move the page's own text; :func:`isolated_plain` does the same where no tag can go (a
page's ``<title>``) with the isolating pair U+2068/U+2069. :func:`escape` alone is for attributes.

>>> isolated("id \\u202etxt.exe")
'<bdi>id \\\\u202etxt.exe</bdi>'
>>> cell("<b>\\u2066bold</b>")
'&lt;b&gt;\\\\u2066bold&lt;/b&gt;'
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

__all__ = ["BIDI_CONTROLS", "cell", "escape", "isolated", "isolated_plain", "reveal", "table"]

#: The characters that change the order text is shown in: embeddings and overrides
#: (U+202A-U+202E), isolates (U+2066-U+2069), the marks (U+200E, U+200F, U+061C).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

# Shown as escapes: controls (Cc) but tab and newline, format characters (Cf: bidi controls,
# zero-width characters, tag characters) but the joiners, surrogates (Cs), line and paragraph
# separators (Zl, Zp).
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_KEPT = frozenset("\t\n\u200c\u200d")
# Every character of those categories lies in one of these ranges (a test checks it against the
# running Python's Unicode tables); a match is then looked at once per distinct character.
_SUSPECT = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001-\U000e007f]"
)
_STYLE = (
    "border-collapse:collapse;font-size:0.9em;"
    "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
)


@lru_cache(maxsize=1024)
def _shown(char: str) -> str:
    if char in _KEPT or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return char
    return repr(char)[1:-1]  # '\x1b', '\u202e', '\U000e0001', '\ud800'


def reveal(text: str) -> str:
    """``text`` with every bidi control and other invisible character shown as its escape.

    >>> reveal("abc\\u202edef\\x1b[2J\\n")
    'abc\\\\u202edef\\\\x1b[2J\\n'
    """
    if _SUSPECT.search(text) is None:
        return text
    return _SUSPECT.sub(lambda found: _shown(found.group()), text)


def escape(value: Any) -> str:
    """``value``'s text (``None``: empty) revealed (:func:`reveal`) and HTML-escaped, quotes too:
    safe in an element and in a quoted attribute."""
    return "" if value is None else html.escape(reveal(str(value)), quote=True)


def isolated(value: Any) -> str:
    """``value`` escaped (:func:`escape`) in a ``<bdi>``: its direction cannot leak out."""
    return f"<bdi>{escape(value)}</bdi>"


def isolated_plain(value: Any) -> str:
    """``value`` escaped (:func:`escape`) between U+2068 and U+2069 (first-strong isolate, pop
    directional isolate): :func:`isolated` where no tag can go, such as a page's ``<title>``."""
    return "\u2068" + escape(value) + "\u2069"


def cell(value: Any, *, limit: int = 300) -> str:
    """One value as escaped cell text (``None`` is empty; long text is cut with an ellipsis);
    safe in an attribute too (isolate it with :func:`isolated` in an element)."""
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
    return escape(text)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, caption: str | None = None) -> str:
    """An HTML table of ``rows`` under ``headers``, every value escaped and isolated."""
    head = "".join(f'<th style="text-align:left;padding:2px 8px"><bdi>{cell(h)}</bdi></th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td style="padding:2px 8px;vertical-align:top"><bdi>{cell(v)}</bdi></td>' for v in row)
        + "</tr>"
        for row in rows
    )
    title = (
        f"<caption style='text-align:left'><bdi>{cell(caption, limit=500)}</bdi></caption>" if caption else ""
    )
    return f'<table style="{_STYLE}">{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
