"""Intents: an operation that spans several store batches, recorded before its first write.

Every store applies one batch whole (or not at all), but ``forget_user`` and
``delete_idle_threads`` write many: a user's thousands of items go in pages. Killed
between two pages (or failing on one: a store error, a full disk), such an operation
would leave part of it done — and what it had read to decide the rest (the thread
index that lists a user's threads) may be gone with the first pages, so a rerun
would no longer know where to look.

So before its first write the operation records its *intent* in the store itself:
one small item under :data:`INTENTS` (``("memory_meta", "intents")``, not embedded)
that names the operation and what it needs to be run again — the user id and every
thread it found, the thread ids — and the last batch of the operation deletes it. A
retry of the operation reads it back (:func:`intents_steps`) and so knows every
thread the first run knew; :func:`pending_steps` lists what is left unfinished, and
``Memory`` finishes it on first use (``Memory.resume``, and the first recall of a
``Memory`` on a store). The operations are idempotent: run again, each removes what
is left and nothing else.

An intent names ids (a user, threads), never the text being forgotten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_plugin.services.store_steps import StoreSteps

__all__ = ["INTENTS", "Intent", "begin_op", "end_op", "intents_steps", "pending_steps"]

#: Where intents live (one item per unfinished operation).
INTENTS: tuple[str, ...] = ("memory_meta", "intents")
_PAGE = 100


@dataclass(frozen=True)
class Intent:
    """An operation recorded before its first write: ``kind`` (``"forget_user"``, ``"delete_threads"``),
    the ``target`` it works on (a user id; for thread deletions a hash of the thread ids) and
    ``args``, what running it again needs."""

    kind: str
    target: str
    args: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""

    @property
    def key(self) -> str:
        """The intent's key: one per operation and target (a rerun writes the same key)."""
        return f"{self.kind}:{self.target}"


def begin_op(intent: Intent) -> PutOp:
    """The write that records ``intent`` (the first write of its operation)."""
    value = {
        "kind": intent.kind,
        "target": intent.target,
        "args": intent.args,
        "started_at": intent.started_at or datetime.now(UTC).isoformat(),
    }
    return PutOp(INTENTS, intent.key, value, index=False)


def end_op(intent: Intent) -> PutOp:
    """The write that removes ``intent`` (in the last batch of its operation)."""
    return PutOp(INTENTS, intent.key, None)


def _read(value: dict[str, Any]) -> Intent | None:
    kind, target, args = value.get("kind"), value.get("target"), value.get("args")
    if not isinstance(kind, str) or not isinstance(target, str) or not isinstance(args, dict):
        return None  # not one of ours: left alone
    return Intent(kind, target, args, str(value.get("started_at") or ""))


def pending_steps(kinds: Sequence[str] = ()) -> StoreSteps[list[Intent]]:
    """Every unfinished intent (of ``kinds``; every kind when empty), oldest first."""
    intents: list[Intent] = []
    offset = 0
    while True:
        (page,) = yield [SearchOp(INTENTS, limit=_PAGE, offset=offset, refresh_ttl=False)]
        intents.extend(i for item in page if (i := _read(item.value)) and (not kinds or i.kind in kinds))
        if len(page) < _PAGE:
            return sorted(intents, key=lambda i: i.started_at)
        offset += _PAGE


def intents_steps(kind: str, target: str) -> StoreSteps[Intent | None]:
    """The unfinished intent of ``kind`` on ``target``, if a run left one."""
    (found,) = yield [GetOp(INTENTS, Intent(kind, target).key)]
    return _read(found.value) if found is not None else None
