"""The holds of a CheckpointerStore (``hold``/``ahold``): where its data lives, and what it folds once held.

Over a ``SqliteSaver`` on a file, several processes may open the file at once, so a hold must
reach them all:

- **the lock**: a byte-range lock (POSIX ``lockf``) on ``<database>.hold``, a sidecar file
  beside the database, one byte per key at the offset of the key's token
  (:func:`~langmem_plugin.stores._hold.token_of`), so two keys (two sources of knowledge, or a
  source and the read-modify-write key) do not block each other. Every store object of this
  process on the file shares one open descriptor of it and one registry of holders
  (:class:`FileLocks`): a POSIX lock belongs to the process, and closing any descriptor of the
  file would drop them all. The operating system drops a killed process's locks.
- **why not SQLite's own write lock** (``BEGIN IMMEDIATE``, what a bounded write takes): a
  read-modify-write of the services spans several batches and an embedding call between them;
  a write transaction held that long would stop every writer of the file, your graphs'
  checkpoints included, not only the store's holders. The sidecar stops only those who hold
  the same key.
- **the catch-up**: the store's indexes live in the process and do not follow other
  processes' writes. So, once held, the store reads how many checkpoints each of its threads
  holds (one query over the table's primary key), and folds the checkpoints of every thread
  that changed since (:func:`caught_up`, on the store's own connection to the file): what the
  held steps read next is what every process committed.

Without ``fcntl`` (Windows) the lock is this process's only: the holders of one file in one
process still take turns; other processes are not held. Over any other saver a hold is this
store object's only: its index is the process's, so no other process could share its view
anyway (one process per store over those savers, as the package docstring says).
"""

from __future__ import annotations

import errno
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import Any

from langmem_plugin.core.steps import Steps
from langmem_plugin.errors import StoreError
from langmem_plugin.stores._hold import Held, Holds
from langmem_plugin.stores.checkpointer._batch import CheckpointerLogic
from langmem_plugin.stores.checkpointer._bounded import catch_up
from langmem_plugin.stores.checkpointer._log import (
    Exclusive,
    HeldRequest,
    Request,
    StoreThreads,
    thread_namespace,
    threads_prefix,
)
from langmem_plugin.stores.checkpointer._state import StoreState

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: holds are in-process only
    fcntl = None  # type: ignore[assignment]

__all__ = ["ACROSS_PROCESSES", "FileLocks", "aheld_caught_up", "caught_up", "file_holds", "held_caught_up"]

#: Whether a hold over a SQLite file holds other processes too (``fcntl``; not on Windows).
ACROSS_PROCESSES = fcntl is not None

_BUSY = {errno.EACCES, errno.EAGAIN}

_files: weakref.WeakValueDictionary[str, FileLocks] = weakref.WeakValueDictionary()
_files_lock = threading.Lock()


class FileLocks:
    """Byte-range locks on one file, for every store object of this process (see the module docstring).

    The file is opened with the first lock taken and closed with the last one given back.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._taken = 0

    def try_lock(self, token: int) -> bool:
        assert fcntl is not None
        with self._lock:
            if self._fd is None:
                try:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
                except OSError as exc:
                    raise StoreError(
                        f"could not open {self.path!r}, the lock file beside the database that holds "
                        f"writers of the store apart: {exc}. Fix: let this process create and write "
                        "files in the database's directory."
                    ) from exc
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, token, os.SEEK_SET)
            except OSError as exc:
                self._close_unused()
                if exc.errno in _BUSY:
                    return False
                raise StoreError(f"could not lock {self.path!r}: {exc}") from exc
            self._taken += 1
            return True

    def unlock(self, tokens: list[int]) -> None:
        assert fcntl is not None
        with self._lock:
            assert self._fd is not None
            try:
                for token in tokens:
                    fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, token, os.SEEK_SET)
            finally:
                self._taken -= len(tokens)
                self._close_unused()

    def _close_unused(self) -> None:
        if self._fd is not None and self._taken <= 0:
            os.close(self._fd)  # closing drops every lock of the process on the file: none is left
            self._fd, self._taken = None, 0


def file_holds(database: str) -> Holds:
    """The holds of the SQLite file ``database`` (a real path): on ``<database>.hold``."""
    path = database + ".hold"
    if not ACROSS_PROCESSES:  # pragma: no cover - Windows
        return Holds(("sqlite", path), None)
    with _files_lock:
        locks = _files.get(path)
        if locks is None:
            locks = _files[path] = FileLocks(path)
    return Holds(("sqlite", path), locks)


def held_caught_up(
    holds: Holds, keys: Iterable[str], wait: bool, catch_up_now: Callable[[], None] | None
) -> Held | None:
    """Hold ``keys``, then run ``catch_up_now`` (the store's :func:`caught_up`); given back if it fails."""
    held = holds.hold(keys, wait=wait)
    if held is not None and catch_up_now is not None:
        try:
            catch_up_now()
        except BaseException:
            held.release()
            raise
    return held


async def aheld_caught_up(
    holds: Holds, keys: Iterable[str], wait: bool, catch_up_now: Callable[[], Awaitable[None]] | None
) -> Held | None:
    """Async :func:`held_caught_up`."""
    held = await holds.ahold(keys, wait=wait)
    if held is not None and catch_up_now is not None:
        try:
            await catch_up_now()
        except BaseException:
            held.release()
            raise
    return held


def caught_up(logic: CheckpointerLogic) -> Steps[Request, None]:
    """Fold every checkpoint of the store that another writer committed and this store has not
    seen (nothing before the log is first read: reading it reads them all)."""
    state = logic.state
    if state is None:
        return
    yield Exclusive(_catching_up(logic, state), lock=False)


def _catching_up(logic: CheckpointerLogic, state: StoreState) -> Generator[HeldRequest, Any, None]:
    counts: dict[str, int] = yield StoreThreads(threads_prefix(logic.name))
    for thread, count in counts.items():
        namespace = thread_namespace(logic.name, thread)
        if namespace is None:
            continue  # the registry: a new namespace's own thread is in the counts too
        with logic.lock:
            known = len(state.folded.get(namespace, ())) - state.dropped.get(namespace, 0)
        if count != known:
            yield from catch_up(logic, state, namespace)
