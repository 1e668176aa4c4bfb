"""The store as namespaces: what lies under a prefix (the namespaces one label deeper, and the items
stored under it, raw), paged, or exported whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.store.base import ListNamespacesOp, MatchCondition, SearchOp

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.inspect.rows import raw_item
from langmem_plugin.services.inspect.selection import SCAN
from langmem_plugin.services.store_steps import StoreSteps

__all__ = ["MAX_CHILDREN", "NamespacePage", "namespace_export_steps", "namespace_steps"]

#: The most namespaces one level of a listing shows.
MAX_CHILDREN = 1000
_CHUNK = 500


@dataclass(frozen=True)
class NamespacePage:
    """What lies under a namespace prefix.

    Attributes:
        prefix: the prefix (``()``: the store's root).
        children: the namespaces one label deeper that hold something, sorted (at most
            :data:`MAX_CHILDREN`); ``more_children`` says whether more follow.
        items: a page of the items stored under the prefix (in it or deeper), newest change first,
            each as stored (namespace, key, timestamps, value); none at the root.
        offset: where the page of items starts.
        more: whether items follow the page.
    """

    prefix: tuple[str, ...]
    children: list[tuple[str, ...]]
    items: list[dict[str, Any]]
    offset: int
    more: bool
    more_children: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {
            "prefix": list(self.prefix),
            "children": [list(child) for child in self.children],
            "more_children": self.more_children,
            "offset": self.offset,
            "more": self.more,
            "items": self.items,
        }


def check_prefix(prefix: Any) -> tuple[str, ...]:
    """``prefix`` as a tuple of labels: each a non-empty string."""
    if isinstance(prefix, str) or not isinstance(prefix, tuple | list):
        raise ConfigurationError(
            f"a namespace prefix is a tuple of labels such as ('memories',), got {prefix!r}"
        )
    labels = tuple(prefix)
    bad = [label for label in labels if not isinstance(label, str) or not label]
    if bad:
        raise ConfigurationError(
            f"each label of a namespace is a non-empty string; {labels!r} holds {bad[0]!r}"
        )
    return labels


def namespace_steps(prefix: Any = (), *, offset: int = 0, limit: int = 50) -> StoreSteps[NamespacePage]:
    """The namespaces one label under ``prefix`` and a page of the items stored under it.

    Raises:
        ConfigurationError: a prefix that is not a tuple of non-empty strings, a bad offset or limit.
    """
    labels = check_prefix(prefix)
    for name, value, least in (("offset", offset, 0), ("limit", limit, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigurationError(f"{name} must be a whole number of at least {least}, got {value!r}")
    listing = ListNamespacesOp(
        match_conditions=(MatchCondition("prefix", labels),) if labels else None,
        max_depth=len(labels) + 1,
        limit=MAX_CHILDREN + 2,  # the prefix itself may be one of them
    )
    if not labels:
        (found,) = yield [listing]
        items: list[Any] = []
    else:
        found, items = yield [listing, SearchOp(labels, limit=limit + 1, offset=offset, refresh_ttl=False)]
    children = sorted(tuple(ns) for ns in found if len(ns) == len(labels) + 1)
    return NamespacePage(
        labels,
        children[:MAX_CHILDREN],
        [raw_item(item) for item in items[:limit]],
        offset,
        len(items) > limit,
        len(children) > MAX_CHILDREN,
    )


def namespace_export_steps(prefix: Any) -> StoreSteps[dict[str, Any]]:
    """Every item stored under ``prefix`` (at most :data:`SCAN`: ``complete`` says whether that was all),
    as one JSON-able document."""
    labels = check_prefix(prefix)
    if not labels:
        raise ConfigurationError("export a namespace: give a prefix such as ('memories',), not the root")
    items: list[dict[str, Any]] = []
    complete = False
    chunk = _CHUNK
    while len(items) < SCAN:
        chunk = min(chunk, SCAN - len(items))  # doubling: a store reads what comes before an offset
        (found,) = yield [SearchOp(labels, limit=chunk, offset=len(items), refresh_ttl=False)]
        items += [raw_item(item) for item in found]
        if len(found) < chunk:
            complete = True
            break
        chunk *= 2
    return {"prefix": list(labels), "complete": complete, "count": len(items), "items": items}
