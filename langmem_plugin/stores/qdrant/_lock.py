"""An exclusive lock on a store directory, held while the store is open.

Qdrant Edge does not guard its files: a second opener of a held path fails
*and* breaks the first one's next flush. So the store takes an exclusive,
non-blocking ``flock`` on ``<path>/.lock`` before it opens anything; a second
opener (another process, or another store object in this one) gets a
:class:`~langmem_plugin.errors.StoreLockedError` and the first keeps working.
The operating system releases the lock when the holder exits, even on a crash.

The locks this process holds are also kept in a registry, so that a second
opener in the same process is told so ("held by this process": close the other
store, or reuse it) rather than sent looking for another process; the registry
also refuses that second opener where ``flock`` is missing (Windows).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from langmem_plugin.errors import StoreLockedError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; the store opens unguarded
    fcntl = None  # type: ignore[assignment]

__all__ = ["ACROSS_PROCESSES", "PathLock", "ReadWriteLock"]

#: Whether the lock turns away other processes too (``flock``; not on Windows, where only a second
#: opener in this process is refused): what lets an embedded store claim to be its data's one writer.
ACROSS_PROCESSES = fcntl is not None

# The locks held in this process, by the real path of their directory (weak: a lock that is
# garbage-collected without release() has had its file closed, which released the flock too).
_HELD: weakref.WeakValueDictionary[str, PathLock] = weakref.WeakValueDictionary()
_HELD_GUARD = threading.Lock()


class PathLock:
    """An exclusive lock on ``directory / ".lock"``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / ".lock"
        self._file: IO[str] | None = None
        self._key: str | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`StoreLockedError` naming who holds it."""
        if self._file is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        key = os.path.realpath(self.path)
        with _HELD_GUARD:
            other = _HELD.get(key)
            if other is not None and other.held:
                raise StoreLockedError(
                    f"the store at {self.path.parent} is held by this process: another QdrantStore on "
                    "this path is still open, and Qdrant's embedded engine allows one opener per path. "
                    "Fix: close the other store first (store.close(), or open it in a `with` block), or "
                    "reuse that QdrantStore object (with_search() gives views of it that rank differently)."
                )
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release()
            if fcntl is not None:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    handle.seek(0)
                    holder = handle.read().strip() or "unknown"
                    handle.close()
                    raise StoreLockedError(
                        f"the store at {self.path.parent} is open elsewhere, in another process "
                        f"(holder: {holder}). Qdrant's embedded engine allows one opener per path. Fix: "
                        "close the store in that process first, or run a Qdrant server and connect with "
                        "QdrantStore(url=...)."
                    ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}\n")
            handle.flush()
            self._file = handle
            self._key = key
            _HELD[key] = self

    def release(self) -> None:
        """Release the lock (no-op when not held)."""
        if self._file is None:
            return
        with _HELD_GUARD:
            if self._key is not None and _HELD.get(self._key) is self:
                del _HELD[self._key]
            if fcntl is not None:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None
            self._key = None


class ReadWriteLock:
    """Many engine calls at once, or one reopening of the shard (the embedded engine's full optimize).

    Writer-preferring: once a writer waits, new readers wait behind it, so a steady stream of
    engine calls cannot starve the optimize (each reader holds the lock for one engine call,
    never nested, so this cannot deadlock).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()
