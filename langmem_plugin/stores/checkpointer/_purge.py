"""Purging history as steps: items keep only their current version in the log; emptied namespaces go.

Pure, like ``_batch``: the steps yield requests from ``_log`` and ``_store`` carries them out.

A purge of an item removes every record of it but the current one from the log: each
checkpoint that holds an old version of it (or its deletion, when it is deleted) is
written again without that record — under its own id and parent, so the rest of the
log is as it was and other items keep their history — or deleted when nothing is left
in it. A namespace left with nothing (no item, no version) loses its thread and its
registration. Versions are found in the folded state (:class:`~._state.StoreState`), so
only the checkpoints that hold a purged record are read and written.

By saver:

- **a SqliteSaver on a file** (the store's SQLite writer, ``_sqlite``): one exclusive
  section, a SQLite write transaction — catch up with what other writers added to the
  namespaces, plan, rewrite and delete, unregister — committed together or not at all.
  The connection zeroes what it deletes (``secure_delete``) and the WAL is emptied after.
- **any other saver**: the checkpoints are written again one by one, oldest first. The
  newest record of every item is never touched, so at every step each item reads as it
  did: a purge that stops part-way (an error, a crash) leaves the current items, and
  purging again finishes it. An emptied namespace's thread is deleted
  (``delete_thread``; its items are all deleted already), then its registration.

A thread with a write in flight (minted, not yet acknowledged) keeps its namespace even
when it looks empty: the write is landing there.

What a rewritten checkpoint leaves: ``InMemorySaver`` and ``PostgresSaver`` keep each value
as a separate blob, which a checkpoint written again does not delete, so a removed version (and
a removed namespace's registry entry) stays in their storage, out of reach of every read, until
its thread is deleted (an emptied namespace's is). On a SQLite file, copies SQLite made inside
pages earlier (the slack a page split leaves) go only with a ``VACUUM`` of the file.

A write to a namespace while it is purged is kept; a namespace with a write in flight
keeps its thread. Over savers other than a SQLite file, a write that starts in an
emptied namespace just as its thread is deleted can be lost from the saver (this
process still reads it): purge a namespace nothing is writing to (``forget_user``
drops the user's pending writes first).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.base.id import uuid6

from langmem_plugin.core.steps import Steps
from langmem_plugin.stores._validation import validate_key, validate_namespace
from langmem_plugin.stores.checkpointer._batch import CheckpointerLogic
from langmem_plugin.stores.checkpointer._bounded import catch_up
from langmem_plugin.stores.checkpointer._log import (
    DeleteThread,
    DropCheckpoints,
    Exclusive,
    GetCheckpoint,
    HeldRequest,
    ListCheckpoints,
    Request,
    namespace_thread,
    registry_thread,
    rewrite_request,
    thread_config,
)
from langmem_plugin.stores.checkpointer._state import StoreState

__all__ = ["purge"]

Namespace = tuple[str, ...]


@dataclass
class _Plan:
    """What a purge removes: by namespace, each checkpoint's records to drop (by key)."""

    drops: dict[Namespace, dict[str, set[str]]] = field(default_factory=dict)
    removed: list[Namespace] = field(default_factory=list)  # left with nothing: thread and registration go
    registry_bound: str = ""  # an id minted with the plan: registry checkpoints minted later are left be
    versions: int = 0  # versions dropped
    deleted: dict[Namespace, int] = field(default_factory=dict)  # checkpoints deleted, by namespace
    done: set[tuple[Namespace, str]] = field(default_factory=set)  # (namespace, checkpoint) carried out


def purge(
    logic: CheckpointerLogic,
    namespaces: Iterable[Namespace],
    keys: Iterable[tuple[Namespace, str]],
    *,
    transaction: bool,
) -> Steps[Request, int]:
    """The steps of ``CheckpointerStore.purge_history``: returns how many versions were dropped.

    ``namespaces``: each, and those below it, entirely; ``keys``: single items.
    ``transaction``: run in one SQLite write transaction (the saver is a SqliteSaver on a file).
    Everything is validated before the first request.
    """
    prefixes = [validate_namespace(ns) for ns in namespaces]
    items = [(validate_namespace(ns), validate_key(key)) for ns, key in keys]
    if not prefixes and not items:
        return 0
    yield from logic.load()
    state = logic.require_state()
    with logic.lock:
        targets = _targets(state, prefixes, items)
    if not targets:
        return 0
    if transaction:
        yield Exclusive(_catch_up_all(logic, state, targets), lock=False)  # most of the reading, unlocked
        section = cast(Generator[HeldRequest, Any, _Plan], _section(logic, state, targets))
        plan = cast(_Plan, (yield Exclusive(section, scrub=True)))  # committed whole, or it raised
        _forget(logic, state, plan, partial=False)
        return plan.versions
    with logic.lock:
        plan = _plan(logic, state, targets)
    try:
        yield from cast(Generator[Request, Any, None], _carry_out(logic, plan, transaction=False))
    finally:  # cut short too: the folded state forgets the records rewritten away so far
        _forget(logic, state, plan, partial=True)
    return plan.versions


def _forget(logic: CheckpointerLogic, state: StoreState, plan: _Plan, *, partial: bool) -> None:
    """The folded state forgets the versions the log no longer holds: every drop of the plan, or
    (``partial``) those carried out (``plan.done``)."""
    with logic.lock:
        for namespace, by_checkpoint in plan.drops.items():
            by_key: dict[str, set[str]] = {}
            for cid, dropped_keys in by_checkpoint.items():
                if partial and (namespace, cid) not in plan.done:
                    continue
                for key in dropped_keys:
                    by_key.setdefault(key, set()).add(cid)
            for key, cids in by_key.items():
                state.forget_versions(namespace, key, cids)
        for namespace, count in plan.deleted.items():
            state.dropped[namespace] = state.dropped.get(namespace, 0) + count
        for namespace in plan.removed:  # its thread is gone: every checkpoint folded was deleted
            if not partial or all((namespace, cid) in plan.done for cid in plan.drops.get(namespace, ())):
                state.dropped[namespace] = len(state.folded.get(namespace, ()))


def _targets(
    state: StoreState, prefixes: list[Namespace], items: list[tuple[Namespace, str]]
) -> dict[Namespace, set[str] | None]:
    """The namespaces to purge: ``None`` for all of a namespace, else the keys."""
    targets: dict[Namespace, set[str] | None] = {}
    if prefixes:
        known = state.registered | {ns for ns, _ in state.versions}
        for namespace in known:
            if any(namespace[: len(p)] == p for p in prefixes):
                targets[namespace] = None
    for namespace, key in items:
        if namespace in targets and targets[namespace] is None:
            continue
        chosen = targets.setdefault(namespace, set())
        assert chosen is not None
        chosen.add(key)
    return targets


def _plan(logic: CheckpointerLogic, state: StoreState, targets: dict[Namespace, set[str] | None]) -> _Plan:
    """Which records go, which namespaces go (called under the lock; it unregisters those)."""
    plan = _Plan(registry_bound=str(uuid6(clock_seq=0)))
    by_namespace: dict[Namespace, set[str]] = {}
    for namespace, key in state.versions:
        if namespace in targets:
            by_namespace.setdefault(namespace, set()).add(key)
    for namespace, chosen in sorted(targets.items()):
        every = by_namespace.get(namespace, set())
        keys = every if chosen is None else chosen & every
        drops: dict[str, set[str]] = {}
        for key in sorted(keys):
            entry = state.present(namespace, key)
            kept = entry.checkpoint_id if entry is not None else None
            for ref in state.history(namespace, key):
                if ref.checkpoint_id != kept:
                    drops.setdefault(ref.checkpoint_id, set()).add(key)
                    plan.versions += 1
        if drops:
            plan.drops[namespace] = drops
        thread = namespace_thread(logic.name, namespace)
        emptied = not state.items.get(namespace) and keys == every and not state.writing.get(thread)
        if emptied and (namespace in state.registered or every):
            plan.removed.append(namespace)
            state.registered.discard(namespace)  # a write from now on registers it again
            state.heads.pop(thread, None)
    return plan


def _catch_up_all(
    logic: CheckpointerLogic, state: StoreState, targets: dict[Namespace, set[str] | None]
) -> Generator[HeldRequest, Any, None]:
    for namespace in sorted(targets):
        yield from catch_up(logic, state, namespace)


def _section(
    logic: CheckpointerLogic, state: StoreState, targets: dict[Namespace, set[str] | None]
) -> Generator[HeldRequest | DeleteThread, Any, _Plan]:
    """Inside the write transaction: catch up (what landed since), plan, rewrite and delete."""
    yield from _catch_up_all(logic, state, targets)
    with logic.lock:
        plan = _plan(logic, state, targets)
    yield from _carry_out(logic, plan, transaction=True)
    return plan


def _carry_out(
    logic: CheckpointerLogic, plan: _Plan, *, transaction: bool
) -> Generator[HeldRequest | DeleteThread, Any, None]:
    """Rewrite the checkpoints that hold dropped records, oldest first; then the emptied namespaces'
    threads go, then their registrations."""
    removed = set(plan.removed)
    for namespace, by_checkpoint in plan.drops.items():
        if namespace in removed:
            continue  # its whole thread goes below
        thread = namespace_thread(logic.name, namespace)
        processed: list[str] = []
        try:
            emptied = yield from _rewrite(thread, by_checkpoint, transaction=transaction, processed=processed)
        finally:
            plan.done.update((namespace, cid) for cid in processed)
        if emptied:
            yield DropCheckpoints(thread, tuple(emptied))
            plan.deleted[namespace] = len(emptied)
    for namespace in plan.removed:
        thread = namespace_thread(logic.name, namespace)
        yield DropCheckpoints(thread) if transaction else DeleteThread(thread)
        plan.done.update((namespace, cid) for cid in plan.drops.get(namespace, ()))
    if plan.removed:
        yield from _unregister(logic, plan, transaction=transaction)


def _rewrite(
    thread: str, by_checkpoint: dict[str, set[str]], *, transaction: bool, processed: list[str]
) -> Generator[HeldRequest, Any, list[str]]:
    """Write each checkpoint of ``by_checkpoint`` again without its dropped records, oldest first;
    ``processed`` gets each checkpoint once it holds them no more.

    Returns the checkpoints left with nothing, to delete (in a transaction; elsewhere they are
    written again empty: a saver has no call that deletes one checkpoint).
    """
    emptied: list[str] = []
    for cid in sorted(by_checkpoint):
        saved = cast(CheckpointTuple | None, (yield GetCheckpoint(thread_config(thread, cid))))
        channels = saved.checkpoint["channel_values"] if saved is not None else {}
        left = {k: v for k, v in channels.items() if k not in by_checkpoint[cid]}
        if saved is None or len(left) == len(channels):  # purged already (a purge beside this one)
            processed.append(cid)
        elif left or not transaction:
            yield rewrite_request(thread, saved, left)
            processed.append(cid)
        else:
            emptied.append(cid)
            processed.append(cid)
    return emptied


def _unregister(
    logic: CheckpointerLogic, plan: _Plan, *, transaction: bool
) -> Generator[HeldRequest, Any, None]:
    """Drop the registrations of the emptied namespaces from the registry thread.

    Outside a transaction only the registry checkpoints minted before the plan are rewritten: one
    minted since registers a namespace again, for a write made meanwhile.
    """
    registry = registry_thread(logic.name)
    gone = set(plan.removed)
    saved_list = cast(list[CheckpointTuple], (yield ListCheckpoints(thread_config(registry))))
    emptied: list[str] = []
    for saved in sorted(saved_list, key=lambda t: t.checkpoint["id"]):
        cid = saved.checkpoint["id"]
        if not transaction and cid > plan.registry_bound:
            continue
        channels = saved.checkpoint["channel_values"]
        left = {t: labels for t, labels in channels.items() if tuple(labels) not in gone}
        if len(left) == len(channels):
            continue
        if left or not transaction:
            yield rewrite_request(registry, saved, left)
        else:
            emptied.append(cid)
    if emptied:
        yield DropCheckpoints(registry, tuple(emptied))
