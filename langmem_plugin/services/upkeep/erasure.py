"""How ``forget_user`` and ``delete_threads`` write (:mod:`.forgetting` decides what): the intent,
the pages, the purge.

Their items go in several batches, so each records its intent first
(:mod:`~langmem_plugin.services.intents`): what running it again needs (the user and every thread
found; the threads and their users) and what its purge of old versions must reach
(:func:`purge_targets`: the namespaces it removes whole, and the key of each item deleted or
rewritten elsewhere — for ``forget_user`` a copy in team memory, another user's exchange stripped
of its quote, a shared thread's summary; for ``delete_threads`` the threads' index entries). An item
deleted by an earlier page is no longer found by a run that resumes after it, nor are its old
versions, but for the intent. ``forget_user``'s first batch holds, with the intent, what other users
see. The intent stays until the purge is done, and its removal leaves no old version of it
(:func:`~langmem_plugin.services.intents.erase_steps`): one that names a user being forgotten.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import PutOp

from langmem_plugin.services.intents import INTENTS, Intent, begin_op, end_op, erase_steps
from langmem_plugin.services.store_steps import PurgeHistory, StoreSteps

__all__ = ["intended_writes", "purge_targets", "within"]


def within(namespace: Sequence[str], places: Sequence[tuple[str, ...]]) -> bool:
    """Whether ``namespace`` is one of ``places`` or below one."""
    return any(tuple(namespace[: len(place)]) == place for place in places)


def purge_targets(
    prior: Intent | None, namespaces: Sequence[tuple[str, ...]], written: Sequence[PutOp]
) -> dict[str, list[Any]]:
    """What a purge after several batches must reach, as the operation's intent names it: the
    ``namespaces`` removed whole and the ``(namespace, key)`` of each item ``written`` elsewhere —
    with what a run that stopped part-way named (the items it deleted are no longer found, their
    old versions are)."""
    places = [list(ns) for ns in namespaces]
    keys = [{"namespace": list(op.namespace), "key": op.key} for op in written]
    if prior is not None:
        places += [p for p in prior.args.get("namespaces", ()) if isinstance(p, list) and p]
        keys += [
            k
            for k in prior.args.get("keys", ())
            if isinstance(k, dict) and isinstance(k.get("namespace"), list) and isinstance(k.get("key"), str)
        ]
    unique_places = {json.dumps(p): [str(label) for label in p] for p in places}
    unique_keys = {json.dumps([k["namespace"], k["key"]]): k for k in keys}
    return {"namespaces": list(unique_places.values()), "keys": list(unique_keys.values())}


def intended_writes(
    intent: Intent, first: Sequence[PutOp], rest: Sequence[PutOp], prior: Intent | None, *, page: int
) -> StoreSteps[int]:
    """Write an operation of several batches (``forget_user``, ``delete_threads``) and purge the
    old versions of what it removed; how many old versions went.

    The intent (what a rerun needs, what the purge must reach: ``intent.args["namespaces"]`` and
    ``["keys"]``, from :func:`purge_targets`) is recorded in the first batch with ``first`` —
    for ``forget_user`` the other users' exchanges stripped of their quote of the user, and what
    the user left where others read (team copies, a shared thread's summary): before any other
    delete, and in one batch, so another user sees either all of it or none of it, and an
    embedder that fails on a rewrite leaves everything as it was. ``rest`` (the operation's own
    places, what tells where to look — the thread index — last) follows in pages of ``page`` ops.
    The intent stays through the purge, so a run killed at any point is finished by a retry or the
    next resume; then :func:`~langmem_plugin.services.intents.erase_steps` removes it without
    leaving an old version of it. A run with nothing to write records no intent (``prior``: a
    stopped run's, finished here). On a store that keeps no history (the purge is answered
    ``None``) the intent simply goes.
    """
    if first or rest:
        if len(first) + len(rest) <= page:  # one batch, applied whole: with the intent all the same,
            yield [begin_op(intent), *first, *rest]  # for the purge after it
        else:
            yield [begin_op(intent), *first]
            for start in range(0, len(rest), page):
                yield list(rest[start : start + page])
    recorded = bool(first or rest) or prior is not None
    namespaces = [tuple(ns) for ns in intent.args["namespaces"]]
    keys = [(tuple(k["namespace"]), k["key"]) for k in intent.args["keys"]]
    keys += [(INTENTS, intent.key)] if recorded else []
    purged = yield PurgeHistory(tuple(dict.fromkeys(namespaces)), tuple(dict.fromkeys(keys)))
    if not recorded:
        return int(purged or 0)
    if purged is None:  # a store that keeps no history: the intent simply goes
        yield [end_op(intent)]
        return 0
    return int(purged) + (yield from erase_steps(intent))
