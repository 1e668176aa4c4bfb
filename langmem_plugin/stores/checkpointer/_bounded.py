"""A bounded write as steps: count each bounded namespace and write, in one exclusive section of the log.

Pure, like ``_batch``: the steps yield requests from ``_log`` and ``_store``
carries them out. The texts are embedded first, and the checkpoints other writers added are
read in, both outside the section; then one :class:`~._log.Exclusive` (a SQLite
write transaction, ``_sqlite``):

1. *catch up* (again: only what landed since): the ids of each bounded
   namespace's checkpoints are read, and every checkpoint this store has not
   folded — written by another store object or another process — is read and
   folded, so the count is the namespace as everyone wrote it;
2. *decide*: :func:`~langmem_plugin.core.bounded.overflow` and
   :func:`~langmem_plugin.core.bounded.room_steps` (the evictions, or the bound's
   refusal: nothing is written), from the folded state: the values are in memory, and
   only what the bound's eviction reads of each is copied (and the chosen ones whole);
3. *write*: one checkpoint per namespace (and one registering new namespaces),
   committed together when the section ends.

The folded state takes the writes once the transaction has committed; until
then it holds only what is committed.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, cast

import numpy as np
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.store.base import Item, PutOp

from langmem_plugin.core.bounded import Bound, BoundedWrite, overflow, room, room_steps
from langmem_plugin.core.steps import Steps, run_steps
from langmem_plugin.stores._validation import validate_namespace, validate_value
from langmem_plugin.stores.checkpointer._batch import CheckpointerLogic, embedded_puts
from langmem_plugin.stores.checkpointer._entries import Entry, copy_json
from langmem_plugin.stores.checkpointer._log import (
    CheckpointIds,
    Exclusive,
    GetCheckpoint,
    HeldRequest,
    PutCheckpoint,
    Request,
    Write,
    checkpoint_request,
    namespace_thread,
    registry_thread,
    thread_config,
)
from langmem_plugin.stores.checkpointer._state import StoreState

__all__ = ["bounded", "catch_up"]

Applied = list[tuple[tuple[str, ...], str, str, dict[str, Any], Any, dict[str, Any] | None]]


def bounded(logic: CheckpointerLogic, write: BoundedWrite) -> Steps[Request, list[PutOp]]:
    """The steps of ``CheckpointerStore.write_bounded``: returns the evictions made.

    Every op and bound is validated before the first request, so a bad one writes nothing.
    """
    puts: list[tuple[int, PutOp]] = []
    for i, op in enumerate(write.ops):
        validate_namespace(op.namespace)
        puts.append((i, op._replace(value=validate_value(op.value)) if op.value is not None else op))
    for bound in write.bounds:
        validate_namespace(bound.namespace)
    yield from logic.load()
    state = logic.require_state()
    winners, texts, vectors = yield from embedded_puts(state, puts, logic.lock)
    yield Exclusive(_catch_up_all(logic, state, write), lock=False)  # most of the reading, unlocked
    section = _section(logic, state, write, winners, texts, vectors)
    evictions, applied, heads, registered = yield Exclusive(section)
    with logic.lock:  # committed: now the folded state takes the writes
        state.registered.update(registered)
        for thread, cid in heads.items():
            state.heads[thread] = max(cid, state.heads.get(thread, cid))
        state.apply_many(applied)
    return cast(list[PutOp], evictions)


def catch_up(
    logic: CheckpointerLogic, state: StoreState, namespace: tuple[str, ...]
) -> Generator[HeldRequest, Any, None]:
    """Fold the checkpoints of ``namespace`` that this store has not seen (other writers')."""
    thread = namespace_thread(logic.name, namespace)
    with logic.lock:
        known = len(state.folded.get(namespace, ())) - state.dropped.get(namespace, 0)
    ids = cast(list[str], (yield CheckpointIds(thread, known)))
    with logic.lock:
        folded = state.folded.get(namespace, set())
        missing = sorted(cid for cid in ids if cid not in folded)
    for cid in missing:
        saved = cast(CheckpointTuple | None, (yield GetCheckpoint(thread_config(thread, cid))))
        if saved is None:
            continue
        with logic.lock:
            if cid not in state.folded.get(namespace, ()):
                logic.fold(state, namespace, saved)
            state.registered.add(namespace)
            state.heads[thread] = max(cid, state.heads.get(thread, cid))


def _catch_up_all(
    logic: CheckpointerLogic, state: StoreState, write: BoundedWrite
) -> Generator[HeldRequest, Any, None]:
    for bound in write.bounds:
        yield from catch_up(logic, state, bound.namespace)


def _section(
    logic: CheckpointerLogic,
    state: StoreState,
    write: BoundedWrite,
    winners: list[PutOp],
    texts: list[list[str]],
    vectors: np.ndarray | None,
) -> Generator[HeldRequest, Any, tuple[list[PutOp], Applied, dict[str, str], set[tuple[str, ...]]]]:
    """Inside the write transaction: catch up, decide, write (see the module docstring)."""
    yield from _catch_up_all(logic, state, write)
    with logic.lock:
        now = logic.clock()
        evictions: list[PutOp] = []
        for bound in write.bounds:
            entries = [e for e in state.items.get(bound.namespace, {}).values() if not e.expired(now)]
            final = write.final(bound.namespace)
            present = {key for key in final if state.live(bound.namespace, key, now) is not None}
            over = overflow(write, bound, count=len(entries), present=present)
            if over > 0:
                evictions.extend(_room(write, bound, entries, over))
        writes: list[Write] = []
        for op in evictions:
            evicted = logic.prepare_put(state, op, None, now, reason="evicted")
            if evicted is not None:
                writes.append(evicted)
        start = 0
        for op, group in zip(winners, texts, strict=True):
            chunk = None
            if vectors is not None and group:
                chunk = vectors[start : start + len(group)]
                start += len(group)
            prepared = logic.prepare_put(state, op, chunk, now)
            if prepared is not None:
                writes.append(prepared)
        requests, applied, heads, registered = _checkpoints(logic, state, writes)
    for request in requests:  # noqa: UP028 - run_steps sends each put's result: not `yield from` a list
        yield request
    return evictions, applied, heads, registered


def _room(write: BoundedWrite, bound: Bound, entries: list[Entry], over: int) -> list[PutOp]:
    """The evictions that make room in ``bound``'s namespace (its live ``entries``), or its refusal."""
    reads = bound.reads
    if reads is None:
        return room(write, bound, [e.item() for e in entries], over)
    listed = [
        Item(
            value={f: copy_json(e.value[f]) for f in reads if f in e.value},
            key=e.key,
            namespace=e.namespace,
            created_at=e.created_at,
            updated_at=e.updated_at,
        )
        for e in entries
    ]
    values = {e.key: e.value for e in entries}
    return run_steps(
        room_steps(write, bound, listed, over), lambda keys: {k: copy_json(values[k]) for k in keys}
    )


def _checkpoints(
    logic: CheckpointerLogic, state: StoreState, writes: list[Write]
) -> tuple[list[PutCheckpoint], Applied, dict[str, str], set[tuple[str, ...]]]:
    """The checkpoints of ``writes`` (one per namespace, one registering new namespaces first),
    what each applies, the new head of each thread and the namespaces registered. Changes nothing."""
    by_namespace: dict[tuple[str, ...], list[Write]] = {}
    for w in writes:
        by_namespace.setdefault(w.namespace, []).append(w)
    ts = logic.clock().isoformat()
    requests: list[PutCheckpoint] = []
    applied: Applied = []
    heads: dict[str, str] = {}
    new = {ns for ns in by_namespace if ns not in state.registered}
    if new:
        registry = registry_thread(logic.name)
        channels = {namespace_thread(logic.name, ns): list(ns) for ns in sorted(new)}
        put = checkpoint_request(registry, channels, ts, parent=state.heads.get(registry))
        requests.append(put)
        heads[registry] = put.checkpoint["id"]
    for namespace, group in by_namespace.items():
        thread = namespace_thread(logic.name, namespace)
        put = checkpoint_request(thread, {w.key: w.record for w in group}, ts, parent=state.heads.get(thread))
        cid = put.checkpoint["id"]
        requests.append(put)
        heads[thread] = cid
        applied.extend((namespace, w.key, cid, w.record, w.vectors, w.value) for w in group)
    return requests, applied, heads, new
