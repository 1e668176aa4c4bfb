"""Reading stored tool results back: one by id, a filtered list, and the parts ``retrieve_result`` gives.

The results are written by :mod:`~langmem_plugin.services.context.results`; here they are
read, as store steps, from the scope's own results only: the namespace of its user and its
exact thread (:func:`~langmem_plugin.services.stored_results.result_store.results_namespace`), and of
the items there, only those whose owner fingerprint is the scope's. An id is taken exactly as
given (``r`` + 12 hex digits; no strip). An unknown, expired or someone else's id raises
:class:`~langmem_plugin.errors.MemoryNotFoundError` (the same answer for all three), a request
the model can fix :class:`~langmem_plugin.errors.InvalidFilterError`: the tools turn both into
messages the model can act on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.store.base import GetOp, Item, SearchOp

from langmem_plugin.core.fence import quote
from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import InvalidFilterError, MemoryNotFoundError
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.stored_results.compactors import (
    compact,
    excerpt,
    extractive_summary,
    filtered,
    first_n,
    head_tokens,
    last_n,
    page_of,
    shape_of,
)
from langmem_plugin.services.stored_results.result_store import is_owned, results_namespace

__all__ = ["StoredResult", "Transform", "get_result_steps", "list_results_steps", "transform_result"]

_ID = re.compile(r"r[0-9a-f]{12}")


@dataclass(frozen=True)
class StoredResult:
    """A stored tool result, read back."""

    id: str
    tool: str
    args: str
    content: str
    chars: int
    tokens: int
    created_at: datetime
    truncated: bool = False
    cleaned: str | None = None

    @classmethod
    def from_item(cls, item: Item) -> StoredResult | None:
        """The result an item holds, or ``None`` when the item is not a stored tool result."""
        value = item.value
        metadata = value.get("metadata") if isinstance(value, Mapping) else None
        if not isinstance(metadata, Mapping) or value.get("kind") != MemoryKind.TOOL_RESULT.value:
            return None
        content = value.get("content")
        created = value.get("created_at")
        try:
            created_at = datetime.fromisoformat(created) if isinstance(created, str) else item.created_at
            return cls(
                id=item.key,
                tool=str(metadata.get("tool", "")),
                args=str(metadata.get("args", "")),
                content=content if isinstance(content, str) else "",
                chars=int(metadata.get("chars", 0)),
                tokens=int(metadata.get("tokens", 0)),
                created_at=created_at if created_at.tzinfo else created_at.replace(tzinfo=UTC),
                truncated=metadata.get("truncated") == "true",
                cleaned=str(metadata["cleaned"]) if metadata.get("cleaned") else None,
            )
        except (TypeError, ValueError):
            return None

    def describe(self, preview_chars: int = 160) -> dict[str, Any]:
        """A short JSON description (``query_results``)."""
        return {
            "id": self.id,
            "tool": self.tool,
            "args": self.args,
            "chars": self.chars,
            "tokens": self.tokens,
            "created_at": self.created_at.isoformat(timespec="seconds"),
            "preview": compact(self.content, preview_chars),
        }


def _not_found(rid: str) -> MemoryNotFoundError:
    return MemoryNotFoundError(
        rid,
        f"no stored result {rid!r} in this conversation (it may have expired); "
        "query_results lists the stored results and their ids",
    )


def get_result_steps(scope: Scope, layout: MemoryLayout, rid: str) -> StoreSteps[StoredResult]:
    """The stored result ``rid`` of the scope's thread.

    Raises:
        MemoryNotFoundError: no such result (an id the model can fix).
    """
    if not isinstance(rid, str) or not _ID.fullmatch(rid):
        raise _not_found(rid[:40] if isinstance(rid, str) else repr(rid)[:40])
    namespace = results_namespace(layout, scope)
    (item,) = yield [GetOp(namespace, rid)]
    owned = item is not None and is_owned(item, namespace, scope)
    found = StoredResult.from_item(item) if item is not None and owned else None
    if found is None:
        raise _not_found(rid)
    return found


def _since(since: str | None) -> datetime | None:
    if not since:
        return None
    try:
        moment = datetime.fromisoformat(since.strip())
    except ValueError:
        raise InvalidFilterError(
            f"since must be an ISO date or time such as '2026-01-31' or '2026-01-31T12:00', got {since!r}"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def list_results_steps(
    scope: Scope,
    layout: MemoryLayout,
    *,
    tool: str | None = None,
    since: str | None = None,
    text: str | None = None,
    limit: int = 10,
    scan: int = 1000,
) -> StoreSteps[list[StoredResult]]:
    """The scope's stored results, newest first, of ``tool``, created ``since``, holding ``text``."""
    moment = _since(since)
    if not 1 <= limit <= 100:
        raise InvalidFilterError(f"limit must be from 1 to 100, got {limit}")
    namespace = results_namespace(layout, scope)
    (items,) = yield [SearchOp(namespace, limit=scan)]
    needle = text.lower() if text else None
    found: list[StoredResult] = []
    for item in items:
        result = StoredResult.from_item(item) if is_owned(item, namespace, scope) else None
        if result is None or (tool and result.tool != tool) or (moment and result.created_at < moment):
            continue
        if needle and needle not in f"{result.tool}\n{result.args}\n{result.content}".lower():
            continue
        found.append(result)
    found.sort(key=lambda r: r.created_at, reverse=True)
    return found[:limit]


#: The ways ``retrieve_result`` can read a stored result.
Transform = Literal["full", "excerpt", "first_n", "last_n", "filtered", "summary"]


def transform_result(
    result: StoredResult,
    transform: Transform = "full",
    *,
    page: int = 1,
    start: int = 0,
    length: int = 2000,
    n: int = 20,
    pattern: str | None = None,
    path: str | None = None,
    page_tokens: int = 2000,
    model: str | None = None,
) -> str:
    """What ``retrieve_result`` answers: a header, then the part of ``result`` asked for.

    Every answer holds at most ``page_tokens`` tokens of the result; ``full`` pages through it.

    Raises:
        InvalidFilterError: a request the model can fix (an unknown transform, a bad pattern or
            path, a page past the end).
    """
    text = result.content
    head = f"result {result.id} (tool {quote(result.tool)}, {result.chars} characters)"
    if result.truncated:
        head += f", stored cut to its first {len(text)} characters"
    if result.cleaned:
        head += f", cleaned: {result.cleaned}"
    if transform == "full":
        body, pages = page_of(text, page, page_tokens, model=model)
        more = f'; next: retrieve_result(id="{result.id}", page={page + 1})' if page < pages else ""
        return f"{head}, page {page} of {pages}{more}:\n{body}"
    if transform == "excerpt":
        body, label = excerpt(text, start, length), f"characters {start} to {min(start + length, len(text))}"
    elif transform == "first_n":
        body, label = first_n(text, n), f"first {n}"
    elif transform == "last_n":
        body, label = last_n(text, n), f"last {n}"
    elif transform == "filtered":
        body, label = filtered(text, pattern, path), "filtered"
    elif transform == "summary":
        body, label = extractive_summary(text) if shape_of(text) == "text" else compact(text, 2000), "summary"
    else:
        raise InvalidFilterError(
            f"unknown transform {transform!r}; use one of full, excerpt, first_n, last_n, filtered, summary"
        )
    shown = head_tokens(body, page_tokens, model=model)
    if shown is not None:
        body = f"{shown}\n[cut at {page_tokens} tokens: ask for a smaller part]"
    return f"{head}, {label}:\n{body}"
