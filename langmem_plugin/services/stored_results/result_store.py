"""Where a tool result is stored, whose it is, and what of it a store can take.

**Owned.** A result belongs to the user and the thread of the run that stored it. Its namespace
is the layout's ``results`` namespace for the scope (``("memories", "results", "{thread_id}")``
by default, thread id exact) followed by the user: ``(..., "user", user_id)``, or
``(..., "no-user")`` for a run without one. Two users who share a thread id never share a
namespace, and a search of one never reaches the other's (no owner namespace is a prefix of
another). The record also carries an :func:`owner` fingerprint of ``(user_id, thread_id)``, and
every read (:mod:`~langmem_plugin.services.stored_results.result_reads`) checks it as well as the
namespace: a guessed or known id of another user's result reads as "no such result".

**Never fatal.** Whatever a tool returned, what is written is valid for every store of ours
(the validation boundary of ``langmem_plugin.stores``: 1 MiB of JSON, valid Unicode text):

- a lone surrogate becomes U+FFFD, and the record says how many were replaced (``cleaned``);
- a result longer than the compartment's ``max_chars``, or whose JSON would pass
  :data:`MAX_CONTENT_BYTES`, is stored cut to its first part, and the record says so
  (``truncated``, ``stored_chars``);
- a result a store still refuses is not stored: the model sees it as the tool returned it.

>>> from langmem_plugin.core.scope import Scope
>>> from langmem_plugin.services.layout import MemoryLayout
>>> results_namespace(MemoryLayout(), Scope(user_id="ada", thread_id="t1"))
('memories', 'results', 't1', 'user', 'ada')
>>> results_namespace(MemoryLayout(), Scope(thread_id="t1"))
('memories', 'results', 't1', 'no-user')
>>> fit_json_bytes("\\x00" * 10, 30)  # each NUL is 6 bytes of JSON (\\u0000)
'\\x00\\x00\\x00\\x00\\x00'
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import GetOp, Item, PutOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import InvalidRecordError, InvalidValueError
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.stored_results.patterns import without_surrogates

__all__ = [
    "MAX_CONTENT_BYTES",
    "PendingResult",
    "fit_json_bytes",
    "is_owned",
    "owner",
    "results_namespace",
    "store_results_steps",
]

logger = logging.getLogger(__name__)

#: The most bytes a stored result's content takes as JSON text (UTF-8, escapes counted): the
#: stores' validation boundary takes 1 MiB per value, and the rest of the record needs room.
MAX_CONTENT_BYTES = 900_000

_USER_LABEL = "user"
_NO_USER_LABEL = "no-user"


def results_namespace(layout: MemoryLayout, scope: Scope) -> tuple[str, ...]:
    """The namespace of the scope's own stored results: the layout's ``results`` one, then the user.

    Raises:
        ScopeError: the scope lacks what the template needs (``thread_id`` by default).
    """
    base = layout.namespace(Compartment.RESULTS, scope)
    if scope.user_id is None:
        return (*base, _NO_USER_LABEL)
    return (*base, _USER_LABEL, scope.user_id)


def owner(scope: Scope) -> str:
    """A fingerprint of the scope's ``(user_id, thread_id)``, kept in every stored result."""
    pair = json.dumps([scope.user_id, scope.thread_id], ensure_ascii=True)
    return hashlib.blake2b(pair.encode("ascii"), digest_size=16).hexdigest()


def is_owned(item: Item, namespace: tuple[str, ...], scope: Scope) -> bool:
    """Whether ``item`` is a result of the scope: in its exact namespace, with its fingerprint."""
    value = item.value
    metadata = value.get("metadata") if isinstance(value, Mapping) else None
    return (
        tuple(item.namespace) == namespace
        and isinstance(metadata, Mapping)
        and metadata.get("owner") == owner(scope)
    )


def _json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2  # less the quotes


def fit_json_bytes(text: str, budget: int) -> str:
    """The longest prefix of ``text`` (valid Unicode) whose JSON string takes at most ``budget`` bytes."""
    if len(text) * 6 <= budget or _json_bytes(text) <= budget:  # a character costs 6 bytes at most
        return text
    low, high = 0, min(len(text), budget)  # and 1 at least
    while low < high:
        middle = (low + high + 1) // 2
        if _json_bytes(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


@dataclass(frozen=True)
class PendingResult:
    """A tool result to store: its ids, tool, arguments and text (``tool``, ``args`` and ``text``
    are valid Unicode; ``tool_call_id`` is the message's own, the key of its state entry).

    Attributes:
        cleaned: how many lone surrogates of what the tool returned became U+FFFD in ``text``.
        estimated: ``tokens`` is an estimate (a very long result is counted in part).
    """

    tool_call_id: str
    id: str
    tool: str
    args: str
    text: str
    tokens: int
    cleaned: int = 0
    estimated: bool = False

    def entry(self, stored_chars: int | None = None) -> dict[str, Any]:
        """What the ``tool_results`` state key keeps of it (small, JSON)."""
        entry: dict[str, Any] = {
            "id": self.id,
            "tool": self.tool,
            "args": self.args,
            "chars": len(self.text),
            "tokens": self.tokens,
        }
        if stored_chars is not None and stored_chars < len(self.text):
            entry["stored_chars"] = stored_chars
        if self.cleaned:
            entry["cleaned"] = self.cleaned
        if self.estimated:
            entry["estimated"] = True
        return entry

    def value(self, max_chars: int, scope: Scope) -> dict[str, Any] | None:
        """The store value, a ``tool_result`` memory record (``None``: nothing of it can be stored)."""
        content = fit_json_bytes(self.text[:max_chars], MAX_CONTENT_BYTES)
        if not content.strip():
            return None  # a record needs text; a result that starts with max_chars of blanks has none
        metadata = {
            "result_id": self.id,
            "owner": owner(scope),
            "tool": self.tool[:200],
            "tool_call_id": without_surrogates(self.tool_call_id[:500])[0],
            "args": self.args,
            "chars": str(len(self.text)),
            "tokens": str(self.tokens),
        }
        if len(content) < len(self.text):
            metadata["truncated"] = "true"
            metadata["stored_chars"] = str(len(content))
        if self.cleaned:
            metadata["cleaned"] = f"{self.cleaned} lone surrogates replaced with U+FFFD"
        try:
            record = MemoryRecord.validate_value(
                {
                    "content": content,
                    "category": "tool_results",
                    "kind": MemoryKind.TOOL_RESULT,
                    "source": f"tool:{self.tool[:200]}",
                    "metadata": metadata,
                },
                max_content_chars=max(max_chars, len(content)),
            )
        except InvalidRecordError as exc:
            logger.warning("tool result %s of %r not stored: %s", self.id, self.tool[:200], exc)
            return None
        return record.to_value()


def store_results_steps(
    scope: Scope,
    layout: MemoryLayout,
    pending: Sequence[PendingResult],
    *,
    max_chars: int,
    ttl: float | None = None,
) -> StoreSteps[dict[str, dict[str, Any]]]:
    """Write ``pending`` results that are not in the store yet; the ``tool_results`` entries.

    A result that cannot be stored gets no entry: the model sees it as the tool returned it — so
    too every result of an agent to which the results compartment is read-only.
    """
    if not pending or not layout.writable(Compartment.RESULTS, scope):
        return {}
    namespace = results_namespace(layout, scope)
    found: list[Item | None] = yield [GetOp(namespace, p.id, refresh_ttl=False) for p in pending]
    entries: dict[str, dict[str, Any]] = {}
    puts: list[tuple[PendingResult, PutOp]] = []
    for result, item in zip(pending, found, strict=True):
        if item is not None and is_owned(item, namespace, scope):
            stored = item.value.get("content")
            entries[result.tool_call_id] = result.entry(len(stored) if isinstance(stored, str) else None)
            continue
        value = result.value(max_chars, scope)
        if value is not None:
            puts.append((result, PutOp(namespace, result.id, value, index=False, ttl=ttl)))
    if puts:
        try:
            yield [put for _, put in puts]
            written = puts
        except (InvalidValueError, InvalidRecordError):  # a store refused one: write the others alone
            written = []
            for result, put in puts:
                try:
                    yield [put]
                except (InvalidValueError, InvalidRecordError) as exc:
                    logger.warning("tool result %s of %r not stored: %s", result.id, result.tool[:200], exc)
                else:
                    written.append((result, put))
        for result, put in written:
            content = put.value["content"] if put.value is not None else ""
            entries[result.tool_call_id] = result.entry(len(content))
    return {p.tool_call_id: entries[p.tool_call_id] for p in pending if p.tool_call_id in entries}
