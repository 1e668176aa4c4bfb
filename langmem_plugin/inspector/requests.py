"""What a request to the inspector's web page says, read exactly or refused with a reason.

- **ids in the path**: an id (a user's, a thread's, an agent's, a memory's) is one path segment
  written by :func:`segment`; the app routes on the path as it was sent (:func:`route_path`), so
  the ``%2F`` of ``a/b`` stays inside the id, and :func:`id_in_path` reads the id back exactly;
- **query parameters**: :func:`query_text` and :func:`query_whole` take a value given once, of
  bounded length, without control characters, a number as ASCII digits within its bounds;
- **forms**: :func:`read_form` takes a small url-encoded form, :func:`form_changes` what it changes.

Anything else raises :class:`Refused`, which the app answers with an error page (400, 413, 415).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, unquote_to_bytes

from langmem_plugin.errors import ConfigurationError, shown

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = [
    "MAX_OFFSET",
    "Refused",
    "changeable",
    "form_changes",
    "id_in_path",
    "query_text",
    "query_whole",
    "read_form",
    "route_path",
    "segment",
]

#: The largest ``offset`` a page takes (what every store can page to).
MAX_OFFSET = 1_000_000_000
_MAX_TEXT = 1000  # characters of a text query parameter (q, contains, kind, ...)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_DOTS = re.compile(r"~*\.+")  # a segment a browser could take for '.' or '..', after any '~'
_LINE_BREAKS = re.compile("\r\n?")  # what a textarea shows as one line break
_FORM_TYPE = "application/x-www-form-urlencoded"
_MAX_BODY = 256 * 1024
_MAX_FIELDS = 20


class Refused(Exception):
    """A request answered with an error page: its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def segment(value: str) -> str:
    """``value`` (an id: a user's, a thread's, an agent's, a memory's) as one path segment.

    Percent-encoded whole (UTF-8; ``/``, ``%``, ``?``, ``#`` and spaces too), so the segment is
    the id and nothing else; an id made only of dots after any ``~`` (``.``, ``..``, ``~..``) takes
    one more ``~`` in front, since a browser resolves a ``.`` or ``..`` segment (``%2E`` as well)
    before it sends the address. The app reads it back exactly (:func:`id_in_path`).

    >>> segment("a/b"), segment("100% ?#"), segment(".."), segment("~bob")
    ('a%2Fb', '100%25%20%3F%23', '~..', '~bob')
    """
    text = quote(value.encode("utf-8", "surrogatepass"), safe="")
    return "~" + text if _DOTS.fullmatch(value) else text


def route_path(raw: bytes) -> str:
    """The path to route on: each segment of the path as sent, decoded, with the ``%`` and ``/``
    it holds escaped again, so a ``/`` inside an id never splits it (:func:`id_in_path` undoes it).

    Raises:
        UnicodeDecodeError: a segment is not UTF-8.
    """
    parts = (unquote_to_bytes(part).decode("utf-8", "surrogatepass") for part in raw.split(b"/"))
    return "/".join(part.replace("%", "%25").replace("/", "%2F") for part in parts)


def id_in_path(request: Request, name: str) -> str:
    """The id the path parameter ``name`` holds, as :func:`segment` wrote it."""
    text = unquote(request.path_params[name], errors="surrogatepass")
    return text[1:] if text.startswith("~") and _DOTS.fullmatch(text) else text


def query_text(request: Request, name: str) -> str:
    """The query parameter ``name`` (``""`` when absent): given once, at most ``_MAX_TEXT``
    characters, no control character; anything else is a 400 that says so."""
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise Refused(400, f"{name} is given {len(values)} times in the address: give it once")
    text = values[0] if values else ""
    if len(text) > _MAX_TEXT:
        raise Refused(400, f"{name} is longer than {_MAX_TEXT} characters ({len(text)}): shorten it")
    bad = _CONTROL.search(text)
    if bad is not None:
        raise Refused(
            400,
            f"{name} holds the control character U+{ord(bad.group()):04X} (at index {bad.start()}), "
            "which no id, filter or search holds: remove it",
        )
    return text


def query_whole(request: Request, name: str, default: int, least: int, most: int) -> int:
    """The query parameter ``name`` as a whole number from ``least`` to ``most`` (digits only)."""
    text = query_text(request, name)
    if text == "":
        return default
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(most)) and least <= int(text) <= most):
        raise Refused(400, f"{name} must be a whole number from {least} to {most}, got {shown(text)}")
    return int(text)


def changeable(memory_id: str) -> str:
    """``memory_id`` unless it has surrounding spaces: the memory tools' steps (which edit and forget
    run) take ids exactly and refuse those, so the page says why instead of "no such memory"."""
    if memory_id != memory_id.strip():
        raise Refused(
            400,
            f"the memory {shown(memory_id)} cannot be changed from the inspector: the memory tools take "
            "ids of letters, digits, '_' and '-' only, exactly as written. Fix: change it in the store",
        )
    return memory_id


async def read_form(request: Request) -> dict[str, str]:
    """An url-encoded form (what an HTML form posts) of at most ``_MAX_BODY`` bytes; nothing else."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_BODY:
            raise Refused(413, f"the form is larger than {_MAX_BODY} bytes")
    if not body:
        return {}
    if kind != _FORM_TYPE:
        raise Refused(415, f"a change is posted as {_FORM_TYPE}, got {kind or 'no content type'!r}")
    try:
        fields = parse_qs(
            body.decode("utf-8"), keep_blank_values=True, strict_parsing=True, max_num_fields=_MAX_FIELDS
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(400, f"the form cannot be read: {exc}") from None
    repeated = sorted(name for name, values in fields.items() if len(values) > 1)
    if repeated:
        raise Refused(400, f"the form repeats {', '.join(repeated)}")
    return {name: values[0] for name, values in fields.items()}


def form_changes(form: dict[str, str], **current: Any) -> dict[str, Any]:
    """The fields of ``form`` whose values differ from the memory's ``current`` ones.

    A field posted as the page showed it is no change, though a browser posts a textarea's line
    breaks as CRLF and drops those of an input's value: the memory keeps its exact text.
    """
    changes: dict[str, Any] = {}
    if "content" in form:
        content = form["content"].replace("\r\n", "\n")  # a textarea posts CRLF line breaks
        if content != _LINE_BREAKS.sub("\n", current["content"]):
            changes["content"] = content
    if "category" in form and form["category"] != current["category"]:
        changes["category"] = form["category"]
    if "tags" in form and form["tags"] != re.sub("[\r\n]", "", ", ".join(current["tags"])):
        tags = [tag.strip() for tag in form["tags"].split(",") if tag.strip()]
        if tags != list(current["tags"]):
            changes["tags"] = tags
    if "priority" in form:
        try:
            priority = int(form["priority"])
        except ValueError:
            raise ConfigurationError(
                f"priority must be a whole number from 1 to 10, got {form['priority']!r}"
            ) from None
        if priority != current["priority"]:
            changes["priority"] = priority
    return changes
