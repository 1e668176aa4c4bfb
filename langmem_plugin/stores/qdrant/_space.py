"""Free space before the embedded engine writes: a full disk is a typed error, never a SIGBUS.

Qdrant Edge writes through memory-mapped files. When the file system has no room for a page it
touches, the kernel does not return an error: it sends the process ``SIGBUS``, which kills it
(Python cannot catch it). So the embedded engine checks, before each step that makes the engine
write, that the store's file system has room for it, and raises
:class:`~langmem_plugin.errors.StoreFullError` (naming the path, the free and the needed bytes,
and the fix) while there is still enough left for the engine to close cleanly.

What a step needs (:func:`needed`) is :data:`RESERVE` plus what the step itself writes:

- a write: :data:`WRITE_FACTOR` times the bytes it carries (payload JSON, vectors);
- an index build or compaction: twice what the shard holds on disk (the optimizer writes new
  segments beside the old ones, which are removed only when the shard is closed);
- opening: on a file system that gives a read of a file's hole a page of memory (tmpfs, whose
  pages are memory), the holes of the shard's files, which the engine reads when it loads them.

The numbers were measured with ``used`` from ``statvfs`` around each step, on an ext4 file
system and on tmpfs (docs/stores.md, "Faults of an embedded store", has them). The check is
made by this process: another program filling the disk between the check and the write can
still exhaust the reserve.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langmem_plugin.errors import StoreFullError
from langmem_plugin.stores._validation import MAX_VALUE_BYTES
from langmem_plugin.stores.qdrant._calls import Delete, PointData, SetPayload, SetPayloads, Upsert

__all__ = [
    "MEMORY_FILE_SYSTEMS",
    "RESERVE",
    "WRITE_FACTOR",
    "file_system_type",
    "free_bytes",
    "full",
    "is_full",
    "require",
    "shard_bytes",
    "write_needs",
]

#: Bytes kept free under every engine step: more than twice the largest fixed cost measured
#: (creating a store: 0.1 MB on ext4, 12.2 MiB on tmpfs; closing after a busy session 0.8 MB),
#: so the engine can always flush and close, and a write never reaches the last page.
RESERVE = 32 * 1024 * 1024

#: Bytes on disk per byte a write carries, at most (measured: 2.4 for small items, whose
#: vectors, index entries and WAL record each take room; 1.05 for a 1 MB value), doubled.
WRITE_FACTOR = 5

#: File systems whose holes take memory pages when a mapped file is read (the engine reads
#: every file of a shard it loads): opening there needs room for the holes too.
MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs", "shm", "devtmpfs"})


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (a store being created has no directory yet)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged process may still write on the file system of ``path``."""
    stat = os.statvfs(_existing(path))
    return stat.f_bavail * stat.f_frsize


def file_system_type(path: Path) -> str | None:
    """The type of the file system ``path`` is on (``"ext4"``, ``"tmpfs"``); None where unknown
    (not Linux, or ``/proc`` not mounted)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    target = os.path.realpath(_existing(path))
    best: tuple[int, str] | None = None
    for line in lines:
        mount, _, rest = line.partition(" - ")
        fields = mount.split()
        if len(fields) < 5 or not rest:
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), rest.split()[0])
    return best[1] if best is not None else None


def _files(directory: Path) -> Iterator[tuple[str, os.stat_result]]:
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            try:
                yield path, os.stat(path)
            except OSError:  # removed while walked (a segment the optimizer dropped)
                continue


def shard_bytes(directory: Path) -> tuple[int, int]:
    """What the shard in ``directory`` takes on disk, and the bytes of the holes of its segments'
    files (the WAL's are not read when the shard is loaded)."""
    allocated = holes = 0
    wal = str(directory / "wal")
    for path, stat in _files(directory):
        used = stat.st_blocks * 512
        allocated += used
        if not path.startswith(wal):
            holes += max(0, stat.st_size - used)
    return allocated, holes


def is_full(exc: BaseException) -> bool:
    """Whether an exception (an ``OSError``, or the engine's, which carries only text) says the
    file system is out of room."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "no space left" in text or "not enough space" in text or "quota exceeded" in text


# A payload's bytes at most, without encoding it: a value is at most MAX_VALUE_BYTES of JSON, and
# the rest of a payload (namespace, key, timestamps) is small beside it.
_PAYLOAD_BOUND = 2 * MAX_VALUE_BYTES


def _payload_bytes(payload: Any, *, exact: bool) -> int:
    return len(json.dumps(payload, ensure_ascii=False, default=str)) if exact else _PAYLOAD_BOUND


def _point_bytes(point: PointData, *, exact: bool) -> int:
    dense = sum(len(v) for v in point.dense or ()) * 4
    sparse = len(point.sparse.indices) * 8 if point.sparse is not None else 0
    return _payload_bytes(point.payload, exact=exact) + dense + sparse


def _carried(call: object, *, exact: bool) -> int | None:
    """The bytes a write call carries (``exact``: its payloads encoded; else a bound); None: a read."""
    if isinstance(call, Upsert):
        return sum(_point_bytes(p, exact=exact) for p in call.points)
    if isinstance(call, Delete):
        return 64 * len(call.ids)
    if isinstance(call, SetPayload):
        return _payload_bytes(call.payload, exact=exact) * max(1, len(call.ids))
    if isinstance(call, SetPayloads):
        return sum(_payload_bytes(payload, exact=exact) for _, payload in call.updates)
    inner = getattr(call, "calls", None)  # a batch of write calls, applied together
    if isinstance(inner, tuple):
        return sum(_carried(c, exact=exact) or 0 for c in inner)
    return None


def write_needs(call: object, path: Path) -> tuple[int, int] | None:
    """The bytes a write ``call`` needs free (:data:`RESERVE` included) and the bytes free on the
    file system of ``path``; None for a read (which asks the file system nothing).

    Bounded first without encoding anything (a statvfs and some arithmetic: the common case,
    a file system with room, costs no JSON encoding); encoded only when the bound is above what is
    free.
    """
    bound = _carried(call, exact=False)
    if bound is None:
        return None
    free = free_bytes(path)
    needed = RESERVE + WRITE_FACTOR * bound
    if needed <= free:
        return needed, free
    return RESERVE + WRITE_FACTOR * (_carried(call, exact=True) or 0), free


def require(path: Path, needed: int, doing: str) -> None:
    """Raise :class:`StoreFullError` unless the file system of ``path`` has ``needed`` bytes free.

    Args:
        path: the store's directory.
        needed: the bytes the step needs, :data:`RESERVE` included.
        doing: the step, for the message (``"write 3 items"``).
    """
    free = free_bytes(path)
    if free < needed:
        raise full(path, free=free, needed=needed, doing=doing)


def full(path: Path, *, free: int, needed: int, doing: str) -> StoreFullError:
    """The error of a step ``doing`` refused for lack of room on the file system of ``path``."""
    return StoreFullError(
        f"not enough free space to {doing} in the store at {path}: {_mib(free)} free on its file "
        f"system, {_mib(needed)} needed ({_mib(RESERVE)} of it kept free so the engine can always "
        "close cleanly). Nothing of this step was written; every write acknowledged before it is "
        "kept. Fix: free space on that file system (or move the store to a larger one), then retry "
        "or reopen the store.",
        path=str(path),
        free=free,
        needed=needed,
    )


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB ({n:,} bytes)"
