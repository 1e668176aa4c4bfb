"""The SQLite file's own write lock: what makes a bounded write of a CheckpointerStore hold across processes.

A ``SqliteSaver`` commits each checkpoint it writes, so a count and a write made
through it are two transactions, and another writer (another store object,
another process) can land in between. For a bounded write
(:mod:`langmem_plugin.core.bounded`) the store therefore opens its own
connection to the same file, with a ``SqliteSaver`` over it that uses your
saver's serializer, and runs the section (:class:`~._log.Exclusive`) as one
SQLite transaction:

- ``BEGIN IMMEDIATE`` takes SQLite's write lock on the file: every other
  writer — another connection, store object or process — waits (busy timeout)
  until the section ends, and readers go on (WAL);
- the section reads the log as committed by everyone (a writer's snapshot is
  the newest one), so it counts what every process wrote;
- its checkpoints go through the ``SqliteSaver``, whose commit after each put
  is held back while the section is open; they commit together at the end, or
  an error rolls them all back: nothing is half-written.

The lock here only keeps this store's threads off one connection at a time;
two store objects, or two processes, are held apart by SQLite's write lock.

A purge (``CheckpointerStore.purge_history``) is such a section too: its deletes
and rewrites of checkpoints commit together. The connection runs with
``PRAGMA secure_delete=ON``, so the rows it deletes or replaces are overwritten
with zeros rather than left in free pages, and after a purge the WAL is written
back into the file and truncated (``wal_checkpoint(TRUNCATE)``, when no reader
holds it). What SQLite copied within pages before (the slack a page split
leaves) is gone only after a ``VACUUM``.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Generator
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver

from langmem_plugin.core.steps import run_steps
from langmem_plugin.errors import StoreError
from langmem_plugin.stores.checkpointer._log import (
    CheckpointIds,
    DropCheckpoints,
    GetCheckpoint,
    HeldRequest,
    ListCheckpoints,
    PutCheckpoint,
    StoreThreads,
)

__all__ = ["SqliteWriter", "sqlite_file"]

T = TypeVar("T")

#: Seconds a section waits for another writer's transaction before it fails.
BUSY_TIMEOUT = 30.0
#: Milliseconds the WAL checkpoint after a purge waits for readers before it leaves the WAL as it is.
SCRUB_TIMEOUT_MS = 1000

# A thread's checkpoints in the SqliteSaver's table (its primary key starts with these two columns).
_COUNT = "SELECT count(*) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
_IDS = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
_DROP = ("DELETE FROM checkpoints WHERE thread_id = ?", "DELETE FROM writes WHERE thread_id = ?")
# Every thread of one store and its checkpoint count: one walk of the table's primary key, in range.
_THREADS = (
    "SELECT thread_id, count(*) FROM checkpoints WHERE thread_id >= ? AND thread_id < ? "
    "AND checkpoint_ns = '' GROUP BY thread_id"
)
_CHUNK = 500  # checkpoint ids per DELETE (SQLite's limit on bound parameters)

logger = logging.getLogger(__name__)


def sqlite_file(saver: BaseCheckpointSaver[Any]) -> str | None:
    """The file a ``SqliteSaver`` writes (its real path); ``None`` for any other saver, an
    in-memory / temporary database (no other connection can open it), or a connection this
    thread may not use (``check_same_thread``)."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:  # pragma: no cover - the sqlite extra is not installed
        return None
    if not isinstance(saver, SqliteSaver):
        return None
    try:
        with saver.lock:
            rows = saver.conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.Error:  # e.g. a connection bound to another thread: the file cannot be told
        return None
    for _, name, path in rows:
        if name == "main" and path:
            return os.path.realpath(str(path))
    return None


class _HeldConnection(sqlite3.Connection):
    """A connection whose ``commit`` waits while a section is open (the saver commits after each put)."""

    held = False

    def commit(self) -> None:
        if not self.held:
            super().commit()


class SqliteWriter:
    """Runs exclusive sections on a private connection to ``path`` (see the module docstring).

    Args:
        path: the database file.
        saver: the store's saver (its serializer is used, so what is written reads back alike).
    """

    def __init__(self, path: str, saver: BaseCheckpointSaver[Any]) -> None:
        self.path = path
        self._serde = saver.serde
        self._lock = threading.Lock()
        self._conn: _HeldConnection | None = None
        self._saver: Any = None

    def run(self, steps: Generator[HeldRequest, Any, T], *, lock: bool = True, scrub: bool = False) -> T:
        """Run ``steps`` in one write transaction: committed if they return, rolled back if they raise.

        ``lock=False``: run reads only, outside any transaction (a put raises).
        ``scrub=True``: once committed, write the WAL back into the file and truncate it (best
        effort: left as it is when a reader still holds it after ``SCRUB_TIMEOUT_MS``).

        Raises:
            StoreError: SQLite failed (e.g. another writer held the file past the busy timeout).
        """
        with self._lock:
            conn, saver = self._open()
            if not lock:
                try:
                    return run_steps(steps, functools.partial(_read_only, conn, saver))
                except sqlite3.Error as exc:
                    raise StoreError(f"SQLite failed to read {self.path!r}: {exc}") from exc
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite could not lock {self.path!r} for a bounded write: {exc}") from exc
            conn.held = True
            try:
                result = run_steps(steps, functools.partial(_carry_out, conn, saver))
                conn.held = False
                conn.commit()
            except BaseException as exc:
                conn.held = False
                conn.rollback()
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"SQLite failed in a bounded write to {self.path!r}: {exc}") from exc
                raise
            if scrub:
                _truncate_wal(conn)
            return result

    def close(self) -> None:
        """Close the private connection (idempotent; the next section opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn, self._saver = None, None

    def _open(self) -> tuple[_HeldConnection, Any]:
        if self._conn is None:
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT, check_same_thread=False, factory=_HeldConnection
            )
            conn.execute("PRAGMA secure_delete=ON")  # what a purge deletes is zeroed, not left in free pages
            saver = SqliteSaver(conn, serde=self._serde)
            saver.setup()
            self._conn, self._saver = conn, saver
        return self._conn, self._saver


def _read_only(conn: _HeldConnection, saver: Any, request: HeldRequest) -> Any:
    assert not isinstance(request, PutCheckpoint | DropCheckpoints), "a write outside the section"
    return _carry_out(conn, saver, request)


def _truncate_wal(conn: _HeldConnection) -> None:
    """Write the WAL back into the file and empty it, waiting at most ``SCRUB_TIMEOUT_MS`` for readers."""
    try:
        conn.execute(f"PRAGMA busy_timeout={SCRUB_TIMEOUT_MS}")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error as exc:  # a reader or writer held on: SQLite checkpoints the WAL later, as usual
        logger.debug("the WAL of %s was left to SQLite's own checkpoint: %s", conn, exc)
    finally:
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")


def _carry_out(conn: _HeldConnection, saver: Any, request: HeldRequest) -> Any:
    if isinstance(request, PutCheckpoint):
        return saver.put(request.config, request.checkpoint, request.metadata, request.versions)
    if isinstance(request, GetCheckpoint):
        return saver.get_tuple(request.config)
    if isinstance(request, ListCheckpoints):
        return list(saver.list(request.config))
    if isinstance(request, DropCheckpoints):
        for statement in _DROP:
            if request.ids is None:
                conn.execute(statement, (request.thread,))
                continue
            for start in range(0, len(request.ids), _CHUNK):
                ids = request.ids[start : start + _CHUNK]
                marks = ",".join("?" * len(ids))
                conn.execute(f"{statement} AND checkpoint_id IN ({marks})", (request.thread, *ids))
        return None
    if isinstance(request, StoreThreads):
        end = request.prefix[:-1] + chr(ord(request.prefix[-1]) + 1)  # just past every id with the prefix
        return dict(conn.execute(_THREADS, (request.prefix, end)).fetchall())
    assert isinstance(request, CheckpointIds)
    (count,) = conn.execute(_COUNT, (request.thread,)).fetchone()
    if count == request.known:
        return []
    return [row[0] for row in conn.execute(_IDS, (request.thread,))]
