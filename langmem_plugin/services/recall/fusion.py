"""Fusion of retrieval signals: the pieces every hybrid ranking of ours shares.

- :func:`zscores`: a signal's scores standardised over its own candidate pool, so a
  dense and a lexical signal (cosine and BM25 live on different scales) can be added;
- :func:`field_text`: the text at a dot path into a stored value (what a lexical index
  or a lift reads from an item).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["field_text", "zscores"]

K = TypeVar("K")


@functools.lru_cache(maxsize=256)
def _path_parts(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def field_text(value: Mapping[str, Any], path: str) -> str:
    """The text at a dot path into ``value``: a string, or a list of strings joined; ``""`` if none.

    >>> field_text({"metadata": {"speaker": "Sam"}}, "metadata.speaker")
    'Sam'
    """
    node: Any = value
    for part in _path_parts(path):
        if not isinstance(node, dict | Mapping) or part not in node:
            return ""
        node = node[part]
    if isinstance(node, str):
        return node
    if isinstance(node, list | tuple):
        return " ".join(x for x in node if isinstance(x, str))
    return ""


def zscores(scores: Mapping[K, float], keys: Sequence[K]) -> list[float]:
    """z-scores of ``keys`` over the pool ``scores``; a key outside the pool gets the pool's lowest score.

    A pool without spread (one match, or ties only) still says something: being in it.
    Its members get 1 and the rest 0, so a lone lexical match (a rare name) is lifted.

    >>> zscores({"a": 3.0, "b": 1.0}, ["a", "b", "c"])
    [1.0, -1.0, -1.0]
    """
    if not scores:
        return [0.0] * len(keys)
    values = list(scores.values())
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if std <= 1e-12:
        return [1.0 if k in scores else 0.0 for k in keys]
    floor = min(values)
    get = scores.get
    return [(get(k, floor) - mean) / std for k in keys]
