"""The episode writer: memory writes inline or in the background, retried, never lost quietly.

:class:`EpisodeWriter` runs store steps (an episode, an archived plan...) inline or
in a worker thread, retries a failed write with backoff, logs every failure, and
keeps what still failed in :attr:`EpisodeWriter.failed` (retry with
:meth:`EpisodeWriter.retry_failed`). A write never raises into the caller's run.
A write names whose it is (``user_id``), so ``forget_user`` drops that user's failed writes
(:meth:`EpisodeWriter.drop_user`) instead of letting a retry write them back.
The retry loop is one generator of steps for both the sync and the async path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph.store.base import BaseStore

from langmem_plugin.core.steps import arun_steps, run_steps
from langmem_plugin.services.layout import (
    aroom_held,
    room_held,
)
from langmem_plugin.services.store_steps import Pause, StoreRequest, StoreRun, StoreSteps

if TYPE_CHECKING:
    from langmem_plugin.services.remember.episodes import RememberConfig

__all__ = ["EpisodeWriter", "FailedWrite"]

logger = logging.getLogger(__name__)


@dataclass
class FailedWrite:
    """A write that failed every attempt; kept so it is never silently lost."""

    what: str
    error: BaseException
    store: BaseStore
    make_steps: Callable[[], StoreSteps[Any]]
    attempts: int = 0
    rooms: tuple[tuple[str, ...], ...] = ()
    user_id: str | None = None


@dataclass
class EpisodeWriter:
    """Runs memory writes inline or in the background, with retries; never raises into the run.

    A write names the namespaces it adds to (``rooms``): it holds their count-then-put lock
    (:func:`~langmem_plugin.services.layout.room_held`) so a compartment's item limit holds
    when many writers fill it at once (in this process).

    Attributes:
        background: run writes in a worker thread (for sync and async callers).
        retries: attempts after the first.
        retry_delay: seconds before the first retry, doubled each time.
        failed: writes that failed every attempt (logged at ERROR); see :meth:`retry_failed`.
    """

    background: bool = False
    retries: int = 3
    retry_delay: float = 0.05
    failed: list[FailedWrite] = field(default_factory=list)
    _executor: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)
    _futures: set[Future[bool]] = field(default_factory=set, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @classmethod
    def from_config(cls, config: RememberConfig) -> EpisodeWriter:
        """A writer with ``config``'s mode and retry settings."""
        return cls(background=config.background, retries=config.retries, retry_delay=config.retry_delay)

    def _attempts(self, write: FailedWrite) -> Generator[StoreRequest, Any, bool]:
        """The write with its retries, as steps: one implementation for the sync and async paths."""
        for attempt in range(self.retries + 1):
            try:
                yield from write.make_steps()
                return True
            except Exception as exc:  # a failed write must not break the run: log, retry, keep
                logger.warning("memory write %r failed (attempt %d): %r", write.what, attempt + 1, exc)
                write.error, write.attempts = exc, attempt + 1
                if attempt < self.retries:
                    yield Pause(float(self.retry_delay * 2**attempt))
        logger.error(
            "memory write %r failed after %d attempts and is kept in EpisodeWriter.failed: %r",
            write.what,
            write.attempts,
            write.error,
        )
        with self._lock:
            self.failed.append(write)
        return False

    def _run_sync(self, write: FailedWrite) -> bool:
        with contextlib.ExitStack() as held:
            for room in sorted(write.rooms):
                held.enter_context(room_held(write.store, room))
            with StoreRun(write.store) as run:
                return run_steps(self._attempts(write), run.do)

    async def _run_async(self, write: FailedWrite) -> bool:
        async with contextlib.AsyncExitStack() as held:
            for room in sorted(write.rooms):
                await held.enter_async_context(aroom_held(write.store, room))
            with StoreRun(write.store) as run:
                return await arun_steps(self._attempts(write), run.ado)

    @staticmethod
    def _write(
        store: BaseStore,
        make: Callable[[], StoreSteps[Any]],
        what: str,
        rooms: Sequence[tuple[str, ...]],
        user_id: str | None,
    ) -> FailedWrite:
        return FailedWrite(what, RuntimeError("not run yet"), store, make, 0, tuple(rooms), user_id)

    def submit(
        self,
        store: BaseStore,
        make: Callable[[], StoreSteps[Any]],
        what: str,
        *,
        rooms: Sequence[tuple[str, ...]] = (),
        user_id: str | None = None,
    ) -> None:
        """Write now (inline) or in the worker thread (background); never raises.

        Args:
            store: where to write.
            make: makes the write's steps (anew for each attempt).
            what: how the write is named in logs and in :attr:`failed`.
            rooms: the namespaces the write adds items to (their item limits are held).
            user_id: whose data the write holds (:meth:`drop_user` drops it when it failed).
        """
        write = self._write(store, make, what, rooms, user_id)
        if not self.background:
            self._run_sync(write)
            return
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="langmem-remember")
            future = self._executor.submit(self._run_sync, write)
            self._futures.add(future)
        future.add_done_callback(self._futures.discard)

    async def asubmit(
        self,
        store: BaseStore,
        make: Callable[[], StoreSteps[Any]],
        what: str,
        *,
        rooms: Sequence[tuple[str, ...]] = (),
        user_id: str | None = None,
    ) -> None:
        """Write now with the store's async API (inline), or hand it to the worker thread (background).

        Background writes run in the worker thread in both cases, so a write outlives the
        event loop that submitted it (``asyncio.run(graph.ainvoke(...))`` returning does not
        cancel it); never raises.
        """
        if not self.background:
            await self._run_async(self._write(store, make, what, rooms, user_id))
            return
        self.submit(store, make, what, rooms=rooms, user_id=user_id)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until the background thread has finished every write submitted so far."""
        with self._lock:
            futures = list(self._futures)
        for future in futures:
            future.result(timeout=timeout)

    async def aflush(self) -> None:
        """Wait, without blocking the event loop, until the worker thread has finished its writes."""
        with self._lock:
            futures = [asyncio.wrap_future(f) for f in self._futures]
        if futures:
            await asyncio.gather(*futures)

    def drop_user(self, user_id: str) -> int:
        """Finish the background writes submitted so far, then drop the failed writes of ``user_id``
        (so no retry writes their data back after ``forget_user``); returns how many were dropped.

        A failed write that names no user (``user_id=None`` at submit) is kept.
        """
        self.flush()
        with self._lock:
            dropped = [w for w in self.failed if w.user_id == user_id]
            self.failed = [w for w in self.failed if w.user_id != user_id]
        for write in dropped:
            logger.info("failed memory write %r of a forgotten user dropped", write.what)
        return len(dropped)

    def retry_failed(self) -> int:
        """Try every failed write again (inline, with retries); returns how many succeeded."""
        with self._lock:
            pending, self.failed = self.failed, []
        return sum(self._run_sync(write) for write in pending)

    async def aretry_failed(self) -> int:
        """Async :meth:`retry_failed`."""
        with self._lock:
            pending, self.failed = self.failed, []
        return sum([await self._run_async(write) for write in pending])

    def close(self) -> None:
        """Finish background writes and stop the worker thread."""
        self.flush()
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
