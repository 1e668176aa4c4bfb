"""The scrub: the embedded store's shard rewritten without what was deleted, the old files zeroed.

Qdrant Edge deletes a point by marking it: its payload (the item's text) stays in the
segment's files, and the update that wrote it stays in the write-ahead log, until a
segment is rebuilt and the log's file is full — which may never come. Measured here:
a point deleted, then ``optimize()`` and hundreds of writes, and a byte scan of the
closed directory still found its text in ``shard/wal/open-1`` and in the segment's
``payload_storage``. Edge's vacuum optimizer (``deleted_threshold``) does rebuild a
segment without its deleted points, but the log keeps them, and the log has no call
that drops what it holds (starting a new one by hand would restart the operation
numbers the segments compare against). So the scrub builds the shard again:

1. a new shard in ``shard.scrub/`` with the same settings and payload indexes, every
   live point copied into it (payload and vectors, read page by page), its HNSW
   index built (capped segments, as the store's own builds), flushed, each file and
   directory synced;
2. the old shard closed, and ``scrub.ready`` written (synced): the new one is whole;
3. ``shard/`` renamed ``shard.old/``, ``shard.scrub/`` renamed ``shard/``, the marker
   removed (each step synced);
4. every file of ``shard.old/`` overwritten with zeros where it holds data (holes
   skipped: Edge's files are sparse), synced, then removed.

**A crash at any step** leaves a directory that opens with every item: :func:`finish`
(run by every open, under the store's lock, before the shard is loaded) completes
what the marker says is complete — steps 3 and 4 — and otherwise wipes the
half-built ``shard.scrub/`` and keeps the old shard. Forgotten text can then remain
in ``shard.old/`` or the old shard until that next open, never an item lost.
``tests/test_forget_disk.py`` kills a process at each step.

**What the scrub cannot reach**: the filesystem below the files. A removed file's
blocks are free, not erased, where the zeros did not go first (a copy-on-write
filesystem such as btrfs or ZFS, and an SSD's own remapping, write the zeros
elsewhere); full-disk encryption covers that. Backups and copies of the directory
are the user's.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qdrant_edge as qe

__all__ = ["NEW", "OLD", "READY", "SCRUB_NOW_POINTS", "Scrubbed", "build", "finish", "mark_ready", "wipe"]

#: The new shard while it is built (a sibling of ``shard/``).
NEW = "shard.scrub"
#: The old shard while it is wiped.
OLD = "shard.old"
#: Written once the new shard is whole: from then on the scrub is completed, never undone.
READY = "scrub.ready"
#: A purge of single items (a forget) scrubs at once while the store holds at most this many
#: points; a whole namespace removed (``forget_user``, ``delete_idle_threads``) always does.
SCRUB_NOW_POINTS = 10_000

_SHARD = "shard"
_PAGE = 1_000
_ZEROS = bytes(1 << 20)


@dataclass(frozen=True)
class Scrubbed:
    """What one scrub did.

    Attributes:
        points: the live points copied into the new shard.
        seconds: how long the store was held (copy, index build, swap and wipe).
        wiped_bytes: bytes of the old shard's files overwritten with zeros before removal.
    """

    points: int
    seconds: float
    wiped_bytes: int


def _step(name: str) -> None:
    """A point of the scrub; does nothing (the crash tests stop a process here)."""


def build(shard: qe.EdgeShard, path: Path, config: qe.EdgeConfig, indexes: Sequence[tuple[str, Any]]) -> int:
    """Build ``path/shard.scrub`` from the live points of ``shard``; how many were copied.

    The new shard gets ``config`` and the payload ``indexes``, every point of ``shard`` (payload
    and vectors), and its HNSW index; it is flushed, closed and synced to disk. On any error it
    is wiped and ``shard`` is as it was.
    """
    target = path / NEW
    wipe(target)  # a half-built one an earlier failure left
    new = qe.EdgeShard.create(str(target), config)
    try:
        for name, schema in indexes:
            new.update(qe.UpdateOperation.create_field_index(name, schema))
        copied, offset = 0, None
        while True:
            request = qe.ScrollRequest(offset=offset, limit=_PAGE, with_payload=True, with_vector=True)
            records, offset = shard.scroll(request)
            if records:
                points = [qe.Point(r.id, r.vector or {}, r.payload) for r in records]
                new.update(qe.UpdateOperation.upsert_points(points))
                copied += len(points)
            _step("copying")
            if offset is None:
                break
        new.optimize()
        new.flush()
    except BaseException:
        new.close()
        wipe(target)
        raise
    new.close()
    _sync_tree(target)
    _step("built")
    return copied


def mark_ready(path: Path) -> None:
    """Say, durably, that ``path/shard.scrub`` is whole: from now on the swap is completed."""
    marker = path / READY
    with open(marker, "w", encoding="utf-8") as f:
        f.write(json.dumps({"new": NEW}))
        f.flush()
        os.fsync(f.fileno())
    _sync_dir(path)
    _step("ready")


def finish(path: Path) -> int:
    """Complete or undo a scrub of ``path`` that stopped part-way; the bytes wiped.

    With the marker, the new shard is whole: it replaces the old one (if it has not yet), and
    the old one is wiped. Without it, a new shard is a half-built one: it is wiped, and the
    old one stays. Idempotent; a directory with no scrub under way is left as it is.
    """
    shard, new, old, marker = path / _SHARD, path / NEW, path / OLD, path / READY
    wiped = 0
    if marker.exists():
        if new.exists():
            if shard.exists():
                wiped += wipe(old)  # a wipe an earlier scrub left unfinished
                os.rename(shard, old)
                _sync_dir(path)
                _step("moved-old")
            os.rename(new, shard)
            _sync_dir(path)
            _step("moved-new")
        marker.unlink()
        _sync_dir(path)
        _step("unmarked")
    wiped += wipe(new)
    if old.exists():
        if shard.exists():
            wiped += wipe(old)
        else:  # not a state the steps leave; never drop the only shard there is
            os.rename(old, shard)
            _sync_dir(path)
    return wiped


def wipe(directory: Path) -> int:
    """Overwrite every file under ``directory`` with zeros where it holds data, sync it, and remove
    the whole tree; the bytes overwritten (0 when there is no such directory)."""
    if not directory.exists():
        return 0
    wiped = 0
    for root, dirs, files in os.walk(directory, topdown=False):
        for name in files:
            file = os.path.join(root, name)
            if not os.path.islink(file):
                wiped += _zero(file)
            _step("wiping")
            os.unlink(file)
        for name in dirs:
            inner = os.path.join(root, name)
            if os.path.islink(inner):
                os.unlink(inner)
            else:
                os.rmdir(inner)
    os.rmdir(directory)
    _sync_dir(directory.parent)
    return wiped


def _zero(file: str) -> int:
    """Overwrite the data of ``file`` with zeros (its holes left as they are) and sync it."""
    written = 0
    with open(file, "r+b") as f:
        fd = f.fileno()
        for start, end in _extents(fd, os.fstat(fd).st_size):
            f.seek(start)
            while start < end:
                n = f.write(_ZEROS[: min(len(_ZEROS), end - start)])
                start += n
                written += n
        f.flush()
        os.fsync(fd)
    return written


def _extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The ranges of a file that hold data (the whole file where the system cannot tell)."""
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        yield 0, size
        return
    position = 0
    while position < size:
        try:
            start = os.lseek(fd, position, seek_data)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after position
                return
            raise
        end = min(os.lseek(fd, start, seek_hole), size)
        yield start, end
        position = end


def _sync_tree(directory: Path) -> None:
    """fsync every file and directory under ``directory``, and the directory's own entry."""
    for root, _, files in os.walk(directory):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_dir(Path(root))
    _sync_dir(directory.parent)


def _sync_dir(directory: Path) -> None:
    """fsync a directory, so that the renames and removals in it are on disk (not on Windows)."""
    if os.name == "nt":  # pragma: no cover - a directory cannot be opened there
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
