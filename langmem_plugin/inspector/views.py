"""How the inspector's web page writes values: the templates' environment, times a person reads at
a glance, and JSON documents that cannot reorder what shows them.

- Every ``{{ value }}`` is escaped and revealed through :mod:`langmem_plugin.core.html`; stored
  text is isolated besides (``|bdi`` in an element, ``|plain`` in the tab's title); ``|exact``
  keeps a form field's value as it is, so a save does not write the escapes back.
- ``|when`` writes a stored time as ``2026-11-28 14:05`` (UTC, to the minute); the page puts the
  full ISO time in the element's ``title``.
- :func:`json_text` writes JSON whose invisible characters (bidi controls, zero-width and other
  format characters, controls, lone surrogates) are ``\\u`` escapes: the same document, shown
  safely by a browser or a terminal.
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import quote, unquote

import jinja2
from markupsafe import Markup, escape

from langmem_plugin.core import html
from langmem_plugin.inspector.requests import Refused, segment

__all__ = ["browse_url", "environment", "json_text", "labels_param", "read_labels", "short_time"]

_LIST_CHARS = 600
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone one cannot be sent as UTF-8
_NOT_PLAIN = re.compile("[^\x20-\x7e\n]")  # what json_text looks at, once per distinct character
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_JOINERS = frozenset("\u200c\u200d")


def short_time(value: Any) -> str:
    """A stored ISO time as ``YYYY-MM-DD HH:MM`` in UTC; anything else as it is.

    >>> short_time("2026-11-28T14:05:09.123456+00:00"), short_time("2026-11-28T15:05:09+01:00")
    ('2026-11-28 14:05', '2026-11-28 14:05')
    >>> short_time("soon"), short_time(None)
    ('soon', '')
    """
    if value is None:
        return ""
    text = str(value)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return text
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d %H:%M")


@lru_cache(maxsize=4096)
def _json_char(char: str) -> str:
    if char in _JOINERS or unicodedata.category(char) not in _HIDDEN:
        return char
    code = ord(char)
    if code > 0xFFFF:  # a JSON escape is UTF-16: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_text(value: Any) -> str:
    """``value`` as indented JSON (non-ASCII letters as they are) whose invisible characters are
    ``\\u`` escapes; ``json.loads`` reads back the same value.

    >>> json_text({"id": "m\\u202e1", "text": "é"})
    '{\\n  "id": "m\\\\u202e1",\\n  "text": "é"\\n}'
    """
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    # outside strings JSON has only ASCII; inside, json.dumps escaped the controls below U+0020
    return _NOT_PLAIN.sub(lambda found: _json_char(found.group()), text)


def labels_param(labels: tuple[str, ...] | list[str]) -> str:
    """A namespace as one query value: each label percent-encoded (``/`` too), joined by ``/``.

    >>> labels_param(("memories", "user", "a/b"))
    'memories/user/a%2Fb'
    """
    return "/".join(quote(label.encode("utf-8", "surrogatepass"), safe="") for label in labels)


def read_labels(name: str, text: str) -> tuple[str, ...]:
    """The namespace :func:`labels_param` wrote (``""``: the root); an empty label is a 400."""
    if text == "":
        return ()
    labels = tuple(unquote(part, errors="surrogatepass") for part in text.split("/"))
    if "" in labels:
        raise Refused(400, f"{name} holds an empty label ({text!r}): open the links the pages give")
    return labels


def browse_url(labels: tuple[str, ...] | list[str]) -> str:
    """The address of the namespace page of ``labels`` (``()``: the store's root).

    >>> browse_url(("memories", "user", "a/b")), browse_url(())
    ('/namespaces?prefix=memories%2Fuser%2Fa%252Fb', '/namespaces')
    """
    return "/namespaces?prefix=" + quote(labels_param(labels), safe="") if labels else "/namespaces"


def _cut(text: str, limit: int = _LIST_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def environment() -> jinja2.Environment:
    """The templates' environment (``templates/``), every value escaped (see the module)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("langmem_plugin.inspector", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.finalize = lambda value: value if isinstance(value, Markup) else Markup(html.escape(value))
    env.filters["bdi"] = lambda value: Markup(html.isolated(value))
    env.filters["plain"] = lambda value: Markup(html.isolated_plain(value))
    env.filters["exact"] = lambda value: escape(_SURROGATE.sub("\ufffd", str(value)))
    env.filters["labels"] = lambda parts: Markup("/".join(html.isolated(part) for part in parts))
    env.filters["q"] = lambda value: segment(str(value))
    env.filters["num"] = lambda value: "" if value is None else f"{value:.3f}"
    env.filters["cut"] = _cut
    env.filters["when"] = short_time
    env.filters["json"] = json_text
    env.filters["browse"] = browse_url
    return env
