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
thread it found, the thread ids and their users — and the operation deletes it once done, after
its purge, whose places and keys it names too (:mod:`langmem_plugin.services.upkeep.erasure`). A
retry of the operation reads it back (:func:`intents_steps`) and so knows every
thread the first run knew; :func:`pending_steps` lists what is left unfinished, and
``Memory`` finishes it on first use (``Memory.resume``, and the first recall of a
``Memory`` on a store). The operations are idempotent: run again, each removes what
is left and nothing else.

A forget's last step is a purge (:func:`~langmem_plugin.services.store_steps.purge_history_steps`:
a store that keeps history drops the old versions of what was deleted; the embedded Qdrant store
scrubs its files). Killed between its delete batch and that purge, a forget would leave the old
text behind, and a retry finds nothing to forget, so nothing to purge. So the delete batch also
records a :data:`PURGE` intent naming the places and keys the purge must reach
(:func:`purge_intent`); :func:`purge_steps` purges them and then removes the intent, and the
same resume that finishes ``forget_user`` runs any purge left pending.

An intent names ids (a user, threads, namespaces and keys), never the text being forgotten. An
intent kept until its purge is done (``forget_user``'s, which names a user being forgotten, and
``delete_threads``') leaves no old version either: :func:`erase_steps` removes it with a purge of
the intents' own history, recorded as a :data:`PURGE` intent that names no one.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_plugin.services.store_steps import StoreSteps, purge_history_steps

__all__ = [
    "INTENTS",
    "PURGE",
    "Intent",
    "begin_op",
    "end_op",
    "erase_steps",
    "erasures_left_steps",
    "intents_steps",
    "pending_steps",
    "purge_intent",
    "purge_steps",
]

#: Where intents live (one item per unfinished operation).
INTENTS: tuple[str, ...] = ("memory_meta", "intents")
#: The kind of a forget's pending purge (:func:`purge_intent`).
PURGE = "purge_history"
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


def purge_intent(written: Iterable[PutOp], namespaces: Iterable[tuple[str, ...]] = ()) -> Intent:
    """The intent of the purge that follows a forget's delete batch: the keys of the items that
    batch deleted or rewrote (``written``) and the ``namespaces`` removed whole. Its write
    (:func:`begin_op`) goes in that batch; :func:`purge_steps` carries it out."""
    keys = [
        {"namespace": list(ns), "key": key}
        for ns, key in dict.fromkeys((tuple(op.namespace), op.key) for op in written)
    ]
    places = [list(ns) for ns in dict.fromkeys(tuple(ns) for ns in namespaces)]
    target = hashlib.sha256(json.dumps([keys, places], sort_keys=True).encode()).hexdigest()[:24]
    return Intent(PURGE, target, {"keys": keys, "namespaces": places})


def purge_steps(intent: Intent) -> StoreSteps[int]:
    """The purge ``intent`` names, the intent's own old versions with it, then the intent removed;
    how many old versions went. Run again (a resume after a kill), it purges again: idempotent."""
    keys = intent.args.get("keys")
    places = intent.args.get("namespaces")
    written = [
        PutOp(tuple(str(label) for label in k["namespace"]), str(k["key"]), None)
        for k in (keys if isinstance(keys, list) else [])
        if isinstance(k, dict) and isinstance(k.get("namespace"), list) and isinstance(k.get("key"), str)
    ]
    whole = [tuple(str(label) for label in ns) for ns in (places if isinstance(places, list) else []) if ns]
    purged = yield from purge_history_steps([*written, end_op(intent)], namespaces=whole)
    yield [end_op(intent)]
    return purged


def erase_steps(intent: Intent) -> StoreSteps[int]:
    """Remove ``intent`` and every old version of it (an intent that names a user being forgotten);
    how many old versions went.

    A store that keeps history keeps the value of a removed intent as an old version, so the
    removal is followed by a purge of the intents' namespace (each intent there keeps only its
    current version), and that purge is itself recorded in the removal's batch as a :data:`PURGE`
    intent, which names only the namespace: a run killed before it is done leaves it to the next
    resume. On a store without history, :func:`purge_steps` asks nothing of the store.
    """
    erase = Intent(PURGE, uuid.uuid4().hex[:24], {"keys": [], "namespaces": [list(INTENTS)]})
    yield [end_op(intent), begin_op(erase)]
    return (yield from purge_steps(erase))


def erasures_left_steps() -> StoreSteps[int]:
    """Carry out every purge :func:`erase_steps` recorded that a stopped run left undone (they name
    no one, so any run may finish them: a retry of the operation that left one); how many old
    versions went."""
    purged = 0
    for intent in (yield from pending_steps((PURGE,))):
        if intent.args.get("namespaces") == [list(INTENTS)] and not intent.args.get("keys"):
            purged += yield from purge_steps(intent)
    return purged
