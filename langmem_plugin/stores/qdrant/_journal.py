"""The embedded engine's batch journal: a batch's writes applied whole, even across a kill.

Qdrant Edge applies one update at a time, each in its write-ahead log before it
returns, but it has no transaction that spans several: a batch that deletes some
points and upserts others is two updates (or more: a payload merge is one update
per point). A process killed between two of them would leave a mix — the deletes
of a ``forget`` done and the rewrites of its batch not.

So before the first of several updates, the engine writes the batch's calls (the
points with their vectors: every embedding was made before) to ``journal.json``
beside ``store.json``, through a temporary file renamed into place — the journal is
whole or absent, never torn — then applies them and removes the journal. Every
call is idempotent (an upsert writes the whole point, a delete deletes, a payload
merge sets the same keys again), so whoever finds a journal finishes it by applying
all its calls again: the next open of the directory, or, in the process whose
apply failed part-way (an engine error), the next call on the store, before
anything else reads it. A batch is applied whole, or — when the journal was not
yet in place — not at all.

The file is JSON (never pickle: a store directory may come from anyone), vectors
as little-endian float32 in base64 (what the engine stores), and it is read back
strictly: a journal this module cannot read is a :class:`~langmem_plugin.errors.StoreError`
that names the file, never a guess.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langmem_plugin.core.lexical import SparseVector
from langmem_plugin.errors import StoreError
from langmem_plugin.stores.qdrant._calls import Delete, PointData, SetPayload, SetPayloads, Upsert, WriteCall

__all__ = ["JOURNAL", "engine_updates", "read_journal", "remove_journal", "write_journal"]

#: The journal's file name, in the store directory.
JOURNAL = "journal.json"
_VERSION = 1


def engine_updates(calls: Sequence[WriteCall]) -> int:
    """How many engine updates ``calls`` make (a payload merge per point counts one each)."""
    return sum(len(c.updates) if isinstance(c, SetPayloads) else 1 for c in calls)


def write_journal(directory: Path, calls: Sequence[WriteCall], *, durable: bool) -> None:
    """Put the journal of ``calls`` in place, whole (``durable``: fsynced, file and directory)."""
    data = json.dumps({"version": _VERSION, "calls": [_encode(c) for c in calls]})
    path = directory / JOURNAL
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        _sync_directory(directory)


def read_journal(directory: Path) -> list[WriteCall] | None:
    """The calls of the journal in ``directory`` (None: there is none). A torn temporary file
    (a kill while it was written: the batch had not begun) is removed.

    Raises:
        StoreError: the journal is not one this module wrote (it names the file and the fix).
    """
    (directory / JOURNAL).with_suffix(".json.tmp").unlink(missing_ok=True)
    path = directory / JOURNAL
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _unreadable(path, exc) from exc
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise ValueError(f"not a version-{_VERSION} journal")
        return [_decode(c) for c in data["calls"]]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise _unreadable(path, exc) from exc


def remove_journal(directory: Path) -> None:
    """The batch is applied: its journal goes."""
    (directory / JOURNAL).unlink(missing_ok=True)


def _unreadable(path: Path, exc: BaseException) -> StoreError:
    return StoreError(
        f"the batch journal {path} cannot be read ({type(exc).__name__}: {exc}): it holds the writes "
        "of a batch that was being applied when its process stopped. Fix: if this file did not come "
        "from langmem-plugin, move it away and open the store again (the batch it would have "
        "finished is then dropped, and may be left applied in part)."
    )


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _vector(v: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def _floats(s: str) -> list[float]:
    return [float(x) for x in np.frombuffer(base64.b64decode(s, validate=True), dtype="<f4")]


def _encode(call: WriteCall) -> dict[str, Any]:
    if isinstance(call, Upsert):
        return {"upsert": [_encode_point(p) for p in call.points]}
    if isinstance(call, Delete):
        return {"delete": list(call.ids)}
    if isinstance(call, SetPayload):
        return {"set_payload": {"ids": list(call.ids), "payload": call.payload}}
    return {
        "set_payloads": {
            "updates": [[pid, payload] for pid, payload in call.updates],
            "changes": [None if c is None else [c[0], c[1]] for c in call.changes],
        }
    }


def _encode_point(p: PointData) -> dict[str, Any]:
    return {
        "id": p.id,
        "payload": p.payload,
        "dense": [_vector(v) for v in p.dense] if p.dense is not None else None,
        "sparse": [list(p.sparse.indices), list(p.sparse.values)] if p.sparse is not None else None,
    }


def _decode(data: dict[str, Any]) -> WriteCall:
    ((kind, body),) = data.items()
    if kind == "upsert":
        return Upsert(tuple(_decode_point(p) for p in body))
    if kind == "delete":
        return Delete(tuple(_str(i) for i in body))
    if kind == "set_payload":
        return SetPayload(tuple(_str(i) for i in body["ids"]), _object(body["payload"]))
    if kind == "set_payloads":
        updates = tuple((_str(pid), _object(payload)) for pid, payload in body["updates"])
        changes = tuple(None if c is None else (_object(c[0]), _object(c[1])) for c in body["changes"])
        return SetPayloads(updates, changes)
    raise ValueError(f"unknown call {kind!r}")


def _decode_point(p: dict[str, Any]) -> PointData:
    dense = p["dense"]
    sparse = p["sparse"]
    return PointData(
        _str(p["id"]),
        _object(p["payload"]),
        [_floats(v) for v in dense] if dense is not None else None,
        SparseVector(tuple(int(i) for i in sparse[0]), tuple(float(x) for x in sparse[1]))
        if sparse is not None
        else None,
    )


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value
