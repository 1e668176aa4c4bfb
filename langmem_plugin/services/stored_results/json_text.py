"""JSON in tool results, read within bounds: no ``RecursionError``, whatever the text or the path.

A tool result is read as JSON (:func:`parse_json`) only when it parses and nests at most
:data:`MAX_JSON_DEPTH` levels; anything deeper or malformed — ``"[" * 100_000``, a number of
5000 digits, a stray byte — is read as text instead, never raised. What is parsed is then dumped
(:func:`dump`) and walked (:func:`json_path`) without recursion past that depth.

A JSON path a model writes is bounded too: at most :data:`MAX_PATH_CHARS` characters and
:data:`MAX_PATH_PARTS` parts, parsed and walked with loops (no recursion); a path that cannot be
read is refused with :class:`~langmem_plugin.errors.InvalidFilterError`, whose message shows
how to write one.

>>> parse_json('{"items": [{"name": "x"}]}')
{'items': [{'name': 'x'}]}
>>> parse_json("[" * 100_000 + "]" * 100_000) is None  # too deep: read as text
True
>>> json_path({"items": [{"name": "x"}, {"name": "y"}]}, "$.items[*].name")
['x', 'y']
"""

from __future__ import annotations

import json
import re
from typing import Any

from langmem_plugin.errors import InvalidFilterError, shown

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_PATH_CHARS",
    "MAX_PATH_PARTS",
    "depth_of",
    "dump",
    "json_path",
    "parse_json",
    "parse_path",
    "walk",
]

#: The deepest a tool result may nest objects and lists to be read as JSON (deeper: as text).
MAX_JSON_DEPTH = 100
#: The longest JSON path a model may pass.
MAX_PATH_CHARS = 1000
#: The most parts (keys, indexes, wildcards) of a JSON path.
MAX_PATH_PARTS = 100

_PATH_PART = re.compile(r"\.?([^.\[\]]+)|\[(\d{1,18}|\*)\]")
_PATH_EXAMPLES = "write it like '$.items[*].name', 'items[0].title' or 'data.*'"


def depth_of(value: Any, *, stop_above: int = MAX_JSON_DEPTH) -> int:
    """How deep ``value`` nests lists and objects (a scalar is 0), counted with a loop.

    Counting stops once it passes ``stop_above`` (the answer is then ``stop_above + 1``).
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > stop_above:
            return stop_above + 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def parse_json(text: str) -> Any:
    """``text`` as a JSON object or list, or ``None`` when it is not one (or nests too deep).

    Never raises: malformed JSON, JSON nested past :data:`MAX_JSON_DEPTH` (``json.loads`` itself
    raises ``RecursionError`` on a deep enough one) and numbers Python will not read are all
    "not JSON".
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict | list) or depth_of(value) > MAX_JSON_DEPTH:
        return None
    return value


def dump(value: Any) -> str:
    """``value`` (as :func:`parse_json` gives it, or a part of it) as compact JSON text.

    A value too deep to dump (not one :func:`parse_json` gave) is shown as its type instead.
    """
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} nested too deep to show>"


def parse_path(path: str) -> list[str | int]:
    """The parts of a JSON path: keys, indexes and ``"*"``.

    Raises:
        InvalidFilterError: a path that cannot be read, or is too long (the message shows the syntax).
    """
    if not isinstance(path, str):
        raise InvalidFilterError(f"a JSON path must be text, got {type(path).__name__}")
    said = shown(path)
    if len(path) > MAX_PATH_CHARS:
        raise InvalidFilterError(
            f"the JSON path {said} is {len(path)} characters; a path takes at most {MAX_PATH_CHARS}. "
            f"Fix: {_PATH_EXAMPLES}."
        )
    rest = path.strip()
    rest = rest[1:] if rest.startswith("$") else rest
    parts: list[str | int] = []
    position = 0
    while position < len(rest):
        match = _PATH_PART.match(rest, position)
        if match is None or match.end() == position:
            at = rest[position : position + 40]
            raise InvalidFilterError(f"cannot read the JSON path {said} at {at!r}; {_PATH_EXAMPLES}")
        key, index = match.group(1), match.group(2)
        parts.append(key if key is not None else ("*" if index == "*" else int(index)))
        if len(parts) > MAX_PATH_PARTS:
            raise InvalidFilterError(
                f"the JSON path {said} has more than {MAX_PATH_PARTS} parts; {_PATH_EXAMPLES}"
            )
        position = match.end()
    return parts


def json_path(value: Any, path: str) -> list[Any]:
    """The values at a simple JSON path: ``$.a.b``, ``items[0].name``, ``items[*].name``, ``a.*``.

    Raises:
        InvalidFilterError: a path that cannot be read, or is too long (the message shows the syntax).
    """
    return walk(value, parse_path(path))


def walk(value: Any, parts: list[str | int]) -> list[Any]:
    """The values at the path of ``parts`` (:func:`parse_path`), found with loops."""
    found = [value]
    for part in parts:
        step: list[Any] = []
        for node in found:
            if part == "*":
                step.extend(
                    node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
                )
            elif isinstance(part, int):
                if isinstance(node, list) and part < len(node):
                    step.append(node[part])
            elif isinstance(node, dict) and part in node:
                step.append(node[part])
        found = step
    return found
