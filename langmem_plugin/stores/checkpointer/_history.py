"""History as steps: every version of an item, restore, a namespace at a past time, rollback.

Pure: nothing here does I/O. Old versions are read back from their checkpoints
(``GetCheckpoint``), and written back through :meth:`CheckpointerLogic.write` as new
versions with reason ``"restore"``.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import numpy as np
from langgraph.store.base import Item, PutOp

from langmem_plugin.core.steps import Steps
from langmem_plugin.errors import ConfigurationError, StoreError
from langmem_plugin.stores._validation import validate_namespace
from langmem_plugin.stores.checkpointer._batch import CheckpointerLogic
from langmem_plugin.stores.checkpointer._log import (
    Embed,
    GetCheckpoint,
    Request,
    namespace_thread,
    parse_time,
    thread_config,
)
from langmem_plugin.stores.checkpointer._state import StoreState

__all__ = ["ItemVersion", "history", "namespace_at", "restore", "rollback"]


@dataclass(frozen=True)
class ItemVersion:
    """One version of an item, from :meth:`CheckpointerStore.history`.

    Attributes:
        namespace: the item's namespace.
        key: the item's key.
        version: 1 for the first version, then 2, 3, ... (deletions count).
        value: the value written, or None when this version is a deletion.
        timestamp: when it was written (the item's ``updated_at``) or deleted.
        reason: ``"put"``, ``"delete"``, ``"expired"`` (a TTL sweep) or ``"restore"``.
        checkpoint_id: the checkpoint that holds it.
    """

    namespace: tuple[str, ...]
    key: str
    version: int
    value: dict[str, Any] | None
    timestamp: datetime
    reason: str
    checkpoint_id: str


def history(
    core: CheckpointerLogic, namespace: tuple[str, ...], key: str
) -> Steps[Request, list[ItemVersion]]:
    """Every version of an item, oldest first (``value=None`` for a deletion)."""
    namespace = validate_namespace(namespace, for_write=False)
    yield from core.load()
    state = core.require_state()
    with core.lock:
        refs = state.history(namespace, key)
    versions = []
    for number, ref in enumerate(refs, start=1):
        record = (yield from _fetch(core, namespace, ref.checkpoint_id))[key]
        value = json.loads(record["value"]) if record["op"] == "put" else None
        versions.append(
            ItemVersion(
                namespace,
                key,
                number,
                value,
                ref.at,
                record.get("reason", record["op"]),
                ref.checkpoint_id,
            )
        )
    return versions


def restore(
    core: CheckpointerLogic, namespace: tuple[str, ...], key: str, version: int
) -> Steps[Request, Item | None]:
    """Write version ``version`` of an item back as its newest; the item as now stored."""
    namespace = validate_namespace(namespace)
    yield from core.load()
    state = core.require_state()
    with core.lock:
        refs = state.history(namespace, key)
    if not isinstance(version, int) or not 1 <= version <= len(refs):
        raise ConfigurationError(
            f"item {namespace!r}/{key!r} has versions 1..{len(refs)}, not {version!r}. "
            "Fix: pick one from store.history(namespace, key)."
        )
    record = (yield from _fetch(core, namespace, refs[version - 1].checkpoint_id))[key]
    yield from _write_back(core, state, [_put_op(namespace, key, record if record["op"] == "put" else None)])
    with core.lock:
        entry = state.live(namespace, key, core.clock())
        return entry.item() if entry is not None else None


def namespace_at(
    core: CheckpointerLogic, namespace: tuple[str, ...], when: datetime
) -> Steps[Request, list[Item]]:
    """The items of ``namespace`` as they were at ``when``, by key."""
    namespace = validate_namespace(namespace, for_write=False)
    yield from core.load()
    records = yield from _records_at(core, namespace, when)
    items = []
    for key, record in records.items():
        created, updated = parse_time(record["created_at"]), parse_time(record["updated_at"])
        assert created is not None
        assert updated is not None
        value = json.loads(record["value"])
        items.append(Item(value=value, key=key, namespace=namespace, created_at=created, updated_at=updated))
    return items


def rollback(core: CheckpointerLogic, namespace: tuple[str, ...], when: datetime) -> Steps[Request, int]:
    """Make ``namespace`` what it was at ``when``; returns how many items changed."""
    namespace = validate_namespace(namespace)
    yield from core.load()
    state = core.require_state()
    records = yield from _records_at(core, namespace, when)
    with core.lock:
        now = core.clock()
        ops = []
        for key in state.keys_ever(namespace):
            target, current = records.get(key), state.live(namespace, key, now)
            if target is None and current is not None:
                ops.append(_put_op(namespace, key, None))
            elif target is not None and (current is None or current.value != json.loads(target["value"])):
                ops.append(_put_op(namespace, key, target))
    return (yield from _write_back(core, state, ops))


def _fetch(
    core: CheckpointerLogic, namespace: tuple[str, ...], checkpoint_id: str
) -> Steps[Request, dict[str, Any]]:
    """The channel values (records by key) of one checkpoint of ``namespace``."""
    saved = yield GetCheckpoint(thread_config(namespace_thread(core.name, namespace), checkpoint_id))
    if saved is None:
        raise StoreError(
            f"checkpoint {checkpoint_id} of namespace {namespace!r} is missing from the checkpointer "
            "(was its thread deleted?)"
        )
    return cast(dict[str, Any], saved.checkpoint["channel_values"])


def _write_back(core: CheckpointerLogic, state: StoreState, ops: list[PutOp]) -> Steps[Request, int]:
    """Write old versions back as new ones (reason ``"restore"``); returns how many were written."""
    texts = [state.texts_for(op.value, op.index) if op.value is not None else [] for op in ops]
    flat = [t for group in texts for t in group]
    vectors = np.asarray((yield Embed(flat)), dtype=np.float32) if flat else None
    bounds = list(itertools.accumulate((len(group) for group in texts), initial=0))
    with core.lock:
        now = core.clock()
        prepared = [
            core.prepare_put(
                state, op, vectors[a:b] if vectors is not None and b > a else None, now, reason="restore"
            )
            for op, (a, b) in zip(ops, itertools.pairwise(bounds), strict=True)
        ]
    writes = [w for w in prepared if w is not None]
    yield from core.write(state, writes)
    return len(writes)


def _records_at(
    core: CheckpointerLogic, namespace: tuple[str, ...], when: datetime
) -> Steps[Request, dict[str, dict[str, Any]]]:
    """The put record of each item of ``namespace`` live at ``when``, by key."""
    state = core.require_state()
    with core.lock:
        chosen: dict[str, str] = {}
        for key in state.keys_ever(namespace):
            past = [r for r in state.history(namespace, key) if r.at <= when]
            if past and not past[-1].deleted:
                chosen[key] = past[-1].checkpoint_id
    channels: dict[str, dict[str, Any]] = {}
    for cid in sorted(set(chosen.values())):
        channels[cid] = yield from _fetch(core, namespace, cid)
    records = {}
    for key, cid in sorted(chosen.items()):
        record = channels[cid][key]
        expires = parse_time(record.get("expires_at"))
        if expires is None or expires > when:
            records[key] = record
    return records


def _put_op(namespace: tuple[str, ...], key: str, record: dict[str, Any] | None) -> PutOp:
    """The PutOp that writes a put record's value back (with its index and TTL), or a deletion."""
    if record is None:
        return PutOp(namespace, key, None)
    return PutOp(
        namespace, key, json.loads(record["value"]), index=record.get("index"), ttl=record.get("ttl")
    )
