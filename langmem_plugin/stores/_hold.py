"""Named holds where a store's data lives: one holder per key, among threads, coroutines and processes.

A store that several processes may write at once (``CheckpointerStore`` over a SQLite file,
``PostgresMemoryStore``) offers ``hold(keys)`` / ``ahold(keys)``: while a caller holds a key, no
other caller holding that key — in this process or another — runs. The services take one key
around a read-modify-write (``store_steps.HOLD``) and one key per source around a document's
change (``services.knowledge``); the protocol is ``store_steps.HoldingStore``.

This module is what those stores share; each gives its own :class:`CrossLocks`:

- **in this process**, a registry of who holds each ``(place, token)`` (a token is 62 bits of the
  SHA-256 of a key; a place is where the cross-process locks live: a file, a Postgres session);
- **across processes**, the place's lock (a byte-range lock on a file beside a SQLite database, a
  Postgres advisory lock), always tried without blocking and polled: a waiter never occupies a
  connection, never trips a kernel's deadlock detection over locks its threads hold, and a
  cancelled coroutine leaves nothing taken behind it.

On Postgres a try and a release are each one short statement, run on the caller's thread (the
event loop's, from async code), as the release at the end of a run must be callable from sync
code. The keys of one call are taken in token order, the earlier ones kept while a later one is
waited for, so two callers never wait for each other in a circle. ``wait=False`` takes every key
now or none. :meth:`Held.release` never waits for another holder, so it may be called from sync
code that ends an async run. A process that dies releases its locks with it (the file is closed,
the session ends).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Generator, Hashable, Iterable
from typing import Any, Protocol

from langmem_plugin.errors import ConfigurationError

__all__ = ["CrossLocks", "Held", "Holds", "token_of"]

_FIRST_WAIT, _LONGEST_WAIT = 0.001, 0.02  # seconds between tries, doubling

# (place, token) -> the Held that has it, for every hold of this process
_owners: dict[tuple[Hashable, int], Held] = {}
_owners_lock = threading.Lock()


def token_of(key: str) -> int:
    """The token of ``key``: 62 bits of its SHA-256 (a byte offset, a part of an advisory key)."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") >> 2


class CrossLocks(Protocol):
    """The locks of one place that other processes see (a file's byte ranges, a Postgres session's)."""

    def try_lock(self, token: int) -> bool:
        """Take ``token`` without waiting; False when another process holds it."""
        ...

    def unlock(self, tokens: list[int]) -> None:
        """Give ``tokens`` back (each taken by :meth:`try_lock`); never waits for another holder."""
        ...


class Held:
    """Keys held until :meth:`release` (or the end of a ``with`` block)."""

    def __init__(self, holds: Holds) -> None:
        self._holds = holds
        self._tokens: list[int] = []  # taken in this process, in order
        self._crossed: list[int] = []  # of those, taken across processes too
        self.refused = False  # wait=False found a key held elsewhere: nothing is held

    def release(self) -> None:
        """Give every key back (idempotent). Never waits for another holder."""
        crossed, self._crossed = self._crossed, []
        tokens, self._tokens = self._tokens, []
        try:
            if crossed and self._holds.locks is not None:
                self._holds.locks.unlock(list(reversed(crossed)))
        finally:
            with _owners_lock:
                for token in tokens:
                    if _owners.get((self._holds.place, token)) is self:
                        del _owners[(self._holds.place, token)]

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Holds:
    """The holds of one place (see the module docstring).

    Args:
        place: identifies where ``locks`` live: two ``Holds`` of one place share their in-process
            registry (two store objects on one SQLite file, in one process).
        locks: the cross-process locks; None: in this process only (no ``fcntl``: Windows).
    """

    def __init__(self, place: Hashable, locks: CrossLocks | None) -> None:
        self.place = place
        self.locks = locks

    def hold(self, keys: Iterable[str], *, wait: bool = True) -> Held | None:
        """Hold every key of ``keys``, waiting for their holders; ``wait=False``: all of them now,
        else None (nothing taken)."""
        held = Held(self)
        taking = self._taking(held, keys, wait=wait)
        try:
            delay = next(taking, None)
            while delay is not None:
                time.sleep(delay)
                delay = next(taking, None)
        except BaseException:
            held.release()
            raise
        return None if held.refused else held

    async def ahold(self, keys: Iterable[str], *, wait: bool = True) -> Held | None:
        """:meth:`hold` for coroutines: waits with ``asyncio.sleep``, never blocking the loop."""
        held = Held(self)
        taking = self._taking(held, keys, wait=wait)
        try:
            delay = next(taking, None)
            while delay is not None:
                await asyncio.sleep(delay)
                delay = next(taking, None)
        except BaseException:  # cancelled while waiting: give back what was taken
            held.release()
            raise
        return None if held.refused else held

    def _taking(self, held: Held, keys: Iterable[str], *, wait: bool) -> Generator[float, Any, None]:
        """Take each key in token order: yields the seconds to wait before trying again."""
        delay = _FIRST_WAIT
        for token in sorted({token_of(key) for key in _checked(keys)}):
            while not self._try(held, token):
                if not wait:
                    held.release()
                    held.refused = True
                    return
                yield delay
                delay = min(delay * 2, _LONGEST_WAIT)
            delay = _FIRST_WAIT

    def _try(self, held: Held, token: int) -> bool:
        with _owners_lock:
            owner = _owners.get((self.place, token))
            if owner is not None:
                return owner is held
            _owners[(self.place, token)] = held
        held._tokens.append(token)
        if self.locks is None:
            return True
        try:
            taken = self.locks.try_lock(token)
        except BaseException:
            self._drop(held, token)
            raise
        if taken:
            held._crossed.append(token)
            return True
        self._drop(held, token)  # another process has it: let this process's others try meanwhile
        return False

    def _drop(self, held: Held, token: int) -> None:
        held._tokens.remove(token)
        with _owners_lock:
            if _owners.get((self.place, token)) is held:
                del _owners[(self.place, token)]


def _checked(keys: Iterable[str]) -> list[str]:
    """``keys`` as a list, or the :class:`ConfigurationError` that names the bad one."""
    if isinstance(keys, str | bytes):
        raise ConfigurationError(
            f"hold() takes a collection of keys, got the single {type(keys).__name__} {keys!r} "
            f"(its characters would each be a key). Fix: store.hold([{keys!r}])."
        )
    out = list(keys)
    for key in out:
        if not isinstance(key, str):
            raise ConfigurationError(
                f"a hold's key must be a str, got {key!r}. Fix: name what is held, e.g. 'docs:a.md'."
            )
    return out
