"""Keywords that moved: an old spelling still works and warns once with the new one.

>>> import warnings
>>> moved = {"model": "tokenizer_model=..."}
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     renamed_keywords("Example", {"model": "gpt-4o-mini"}, moved)
...     renamed_keywords("Example", {"model": "gpt-4o-mini"}, moved)
{'model': 'gpt-4o-mini'}
{'model': 'gpt-4o-mini'}
>>> for warning in caught:
...     print(warning.message)
Example(model=...) is now Example(tokenizer_model=...); the old keyword still works for now
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["renamed_keywords"]

_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


def renamed_keywords(
    owner: str, given: Mapping[str, Any], moved: Mapping[str, str], *, stacklevel: int = 3
) -> dict[str, Any]:
    """``given`` (the old keywords a caller passed to ``owner``), checked: each warns once per
    process with its new spelling (``moved[name]``, e.g. ``"tokenizer_model=..."``); a keyword
    that never existed is the ``TypeError`` Python raises for one.

    ``stacklevel`` is :func:`warnings.warn`'s, counted from this function: the default points at
    the caller of the function that called it (the user's ``Owner(...)`` line).

    Returns:
        ``given`` as a dict, for the caller to map onto the new spelling.
    """
    unknown = sorted(set(given) - set(moved))
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    for name in given:
        with _lock:
            first = (owner, name) not in _warned
            _warned.add((owner, name))
        if first:
            warnings.warn(
                f"{owner}({name}=...) is now {owner}({moved[name]}); the old keyword still works for now",
                DeprecationWarning,
                stacklevel=stacklevel,
            )
    return dict(given)
