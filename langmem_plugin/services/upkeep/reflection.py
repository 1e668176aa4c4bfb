"""Background reflection: extraction and consolidation after a run, off the user's turn.

:func:`reflect_steps` is one reflection as steps: the extraction call
(:mod:`~langmem_plugin.services.upkeep.extraction`), then consolidation into the
user's memory (:mod:`~langmem_plugin.services.upkeep.consolidation`). It yields store
ops and model calls; :class:`Reflector` runs it in one background thread.

:class:`Reflector` is what the turn service hands each finished turn to
(:meth:`Reflector.schedule`, non-blocking, for sync and async callers alike):

- **debounced per thread** — a job waits ``debounce`` seconds; a new message in
  that time *replaces* the pending job's messages with the newer, longer
  conversation and moves its time. Nothing is cancelled (no race with a job
  already running: that one finishes, and the newer job runs after it), and the
  job reads every message up to the newest (no lag of one message). Messages
  already reflected on are skipped, so a thread's reflections never overlap.
  A thread that never goes quiet is still reflected on every ``max_wait`` seconds.
- **a bounded queue** — at most ``max_pending`` threads wait; a job beyond that
  is kept in :attr:`Reflector.failed` (logged), never silently dropped.
- **retried and kept** — a failed job is rescheduled with backoff, then kept in
  :attr:`Reflector.failed` (:meth:`Reflector.retry_failed` runs them again); its
  messages stay unreflected, so the thread's next job reads them too.
- **flush on shutdown** — :meth:`Reflector.flush` runs every pending job now and
  waits; :meth:`Reflector.close` flushes and stops the thread; an ``atexit`` hook
  flushes what is left when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import logging
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.upkeep.consolidation import (
    ConsolidationResult,
    Request,
    arun_requests,
    consolidate_steps,
    run_requests,
)
from langmem_plugin.services.upkeep.extraction import (
    Candidate,
    ExtractionConfig,
    extraction_call,
    to_candidates,
)
from langmem_plugin.services.upkeep.provenance import attribute_steps

__all__ = ["FailedReflection", "ReflectionResult", "Reflector", "areflect", "reflect", "reflect_steps"]

logger = logging.getLogger(__name__)

_SEEN_PER_THREAD = 2000
_THREADS_KEPT = 10_000
_RESULTS_KEPT = 100
_LINKS_KEPT = 200  # exchange links one job keeps (a thread that never goes quiet)
_IDLE_EXIT = 30.0  # seconds with nothing pending before the worker thread ends


@dataclass
class ReflectionResult:
    """What one reflection did.

    Attributes:
        scope: whose memory.
        candidates: what extraction proposed.
        consolidation: what consolidation did with them.
    """

    scope: Scope
    candidates: list[Candidate]
    consolidation: ConsolidationResult


def reflect_steps(
    scope: Scope,
    layout: MemoryLayout,
    messages: Sequence[AnyMessage | BaseMessage],
    config: ExtractionConfig,
    *,
    context: Sequence[AnyMessage | BaseMessage] = (),
    exchanges: Sequence[str] = (),
) -> Generator[Request, Any, ReflectionResult]:
    """Extract candidates from ``messages`` (``context``: the messages before, shown as context only),
    then consolidate them into ``scope``'s user memory.

    ``exchanges`` are the links of the exchanges ``messages`` were stored as: each candidate gets
    those it came from as its ``sources`` (:func:`.provenance.attribute_steps`).
    """
    answer = yield extraction_call(messages, config, context=context)
    candidates = to_candidates(answer)
    if exchanges:
        candidates = yield from attribute_steps(scope, layout, candidates, exchanges)
    consolidation = yield from consolidate_steps(scope, layout, candidates, config.consolidation)
    return ReflectionResult(scope, candidates, consolidation)


def _models(config: ExtractionConfig) -> dict[str, BaseChatModel]:
    if config.model is None:
        raise ConfigurationError(
            "extraction is off: no model configured. Fix: ExtractionConfig(model=<a tool-calling chat model>)"
        )
    decider = config.consolidation.model if config.consolidation is not None else None
    return {"extraction": config.model, "consolidation": decider or config.model}


def reflect(
    store: BaseStore,
    scope: Scope,
    messages: Sequence[AnyMessage | BaseMessage],
    config: ExtractionConfig,
    *,
    layout: MemoryLayout | None = None,
) -> ReflectionResult:
    """One reflection now, in the caller's thread (the :class:`Reflector` runs this in the background).

    Raises:
        ConfigurationError: ``config`` has no model.
    """
    steps = reflect_steps(scope, layout or MemoryLayout(), messages, config)
    result: ReflectionResult = run_requests(store, _models(config), steps)
    return result


async def areflect(
    store: BaseStore,
    scope: Scope,
    messages: Sequence[AnyMessage | BaseMessage],
    config: ExtractionConfig,
    *,
    layout: MemoryLayout | None = None,
) -> ReflectionResult:
    """Async :func:`reflect`."""
    steps = reflect_steps(scope, layout or MemoryLayout(), messages, config)
    result: ReflectionResult = await arun_requests(store, _models(config), steps)
    return result


def _fingerprint(message: BaseMessage, position: int) -> str:
    """The message's id; without one, its position and text (the same "yes" twice is two messages)."""
    if message.id:
        return f"id:{message.id}"
    text = message.content if isinstance(message.content, str) else repr(message.content)
    return f"h:{position}:" + hashlib.sha256(f"{message.type}\x1f{text}".encode()).hexdigest()[:20]


_Key = tuple[int, str, str]


@dataclass
class _Job:
    store: BaseStore
    scope: Scope
    messages: list[BaseMessage]
    due: float
    first: float = 0.0
    attempts: int = 0
    turns: int = 1
    exchanges: list[str] = field(default_factory=list)


@dataclass
class FailedReflection:
    """A reflection that failed every attempt (or found the queue full); kept, never lost.

    Attributes:
        scope: whose memory.
        store: where.
        messages: the conversation it was to read.
        error: the last error.
        attempts: attempts made.
        exchanges: the links of the exchanges the messages were stored as.
    """

    scope: Scope
    store: BaseStore
    messages: list[BaseMessage]
    error: BaseException
    attempts: int
    exchanges: list[str] = field(default_factory=list)


@dataclass
class _Stats:
    scheduled: int = 0
    rescheduled: int = 0
    runs: int = 0
    retried: int = 0
    failed: int = 0
    skipped_no_user: int = 0
    counts: dict[str, int] = field(default_factory=dict)


class Reflector:
    """Runs reflections in one background thread, debounced per thread (see the module docstring).

    Args:
        config: extraction, consolidation and the debounce, queue and retry settings; must
            have a model.
        layout: the compartments' namespaces.

    Attributes:
        failed: jobs that failed every attempt or found the queue full.
        results: the latest results (the last 100), newest last.
    """

    def __init__(self, config: ExtractionConfig, *, layout: MemoryLayout | None = None) -> None:
        self._models = _models(config)
        self.config = config
        self.layout = layout or MemoryLayout()
        self.failed: list[FailedReflection] = []
        self.results: deque[ReflectionResult] = deque(maxlen=_RESULTS_KEPT)
        self._stats = _Stats()
        self._pending: dict[_Key, _Job] = {}
        self._running: set[_Key] = set()
        self._seen: OrderedDict[_Key, OrderedDict[str, None]] = OrderedDict()
        self._cond = threading.Condition()
        self._flushing = 0
        self._closed = False
        self._worker: threading.Thread | None = None

    # -- scheduling ---------------------------------------------------------------------------

    def schedule(
        self,
        store: BaseStore,
        scope: Scope,
        messages: Sequence[AnyMessage | BaseMessage],
        *,
        exchanges: Sequence[str] = (),
    ) -> bool:
        """Queue (or reschedule) the reflection of ``scope``'s thread on ``messages``; never blocks.

        ``messages`` is the conversation so far (its newest message last); ``exchanges``, the
        links of the exchanges it was stored as (the memories found get them as ``sources``).
        Returns whether a job is pending; ``False`` when the scope has no ``user_id`` (nowhere
        to keep memories).
        """
        if not scope.user_id:
            with self._cond:
                self._stats.skipped_no_user += 1
            logger.debug("reflection skipped: the scope has no user_id")
            return False
        key: _Key = (id(store), scope.user_id, scope.thread_id or "")
        now = time.monotonic()
        due = now + self.config.debounce
        every = self.config.every_turns
        with self._cond:
            if self._closed:  # never raise into the user's run
                logger.warning(
                    "reflection of thread %r not scheduled: the reflector is closed", scope.thread_id
                )
                return False
            job = self._pending.get(key)
            if job is not None:
                if self.config.max_wait is not None:  # a thread that never goes quiet is not starved
                    due = min(due, job.first + max(self.config.max_wait, self.config.debounce))
                job.turns += 1
                if every is not None and job.turns >= every:  # enough turns: no more waiting
                    due = now
                job.messages, job.scope, job.due = list(messages), scope, due
                job.exchanges = _links(job.exchanges, exchanges)
                self._stats.rescheduled += 1
            elif len(self._pending) >= self.config.max_pending:
                error = OverflowError(f"the reflection queue is full ({self.config.max_pending} threads)")
                logger.error("reflection of thread %r kept in Reflector.failed: %s", scope.thread_id, error)
                self.failed.append(
                    FailedReflection(scope, store, list(messages), error, 0, _links(exchanges))
                )
                return False
            else:
                first = due - self.config.debounce
                self._pending[key] = _Job(
                    store,
                    scope,
                    list(messages),
                    now if every == 1 else due,
                    first=first,
                    exchanges=_links(exchanges),
                )
                self._stats.scheduled += 1
            self._start()
            self._cond.notify_all()
        return True

    def _start(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._loop, name="langmem-reflection", daemon=True)
            self._worker.start()
            _LIVE.add(self)

    # -- the worker ---------------------------------------------------------------------------

    def _next(self) -> tuple[_Key, _Job] | None:
        idle = False
        with self._cond:
            while True:
                now = time.monotonic()
                ready = [
                    (job.due, key)
                    for key, job in self._pending.items()
                    if key not in self._running and (self._flushing or job.due <= now)
                ]
                if ready:
                    _, key = min(ready)
                    self._running.add(key)
                    return key, self._pending.pop(key)
                if not self._pending and (self._closed or idle):
                    self._worker = None  # the next schedule starts a new one
                    return None
                waits = [job.due - now for key, job in self._pending.items() if key not in self._running]
                idle = not self._cond.wait(max(min(waits), 0.001) if waits else _IDLE_EXIT) and not waits

    def _loop(self) -> None:
        while (taken := self._next()) is not None:
            key, job = taken
            try:
                self._run(key, job)
            finally:
                with self._cond:
                    self._running.discard(key)
                    self._cond.notify_all()

    def _unseen(self, key: _Key, messages: Sequence[BaseMessage]) -> list[tuple[int, str]]:
        """The positions and fingerprints of the messages not reflected on yet."""
        with self._cond:
            seen: Mapping[str, None] = self._seen.get(key) or {}
            marks = [(i, _fingerprint(m, i)) for i, m in enumerate(messages)]
            return [(i, mark) for i, mark in marks if mark not in seen]

    def _mark_seen(self, key: _Key, marks: Sequence[str]) -> None:
        with self._cond:
            seen = self._seen.setdefault(key, OrderedDict())
            self._seen.move_to_end(key)
            for mark in marks:
                seen[mark] = None
            while len(seen) > _SEEN_PER_THREAD:
                seen.popitem(last=False)
            while len(self._seen) > _THREADS_KEPT:
                self._seen.popitem(last=False)

    def _run(self, key: _Key, job: _Job) -> None:
        unseen = self._unseen(key, job.messages)
        if not unseen:
            return
        new = [job.messages[i] for i, _ in unseen]
        first = unseen[0][0]
        context = job.messages[max(first - 2 * self.config.context_messages, 0) : first]
        job.attempts += 1
        try:
            steps = reflect_steps(
                job.scope, self.layout, new, self.config, context=context, exchanges=job.exchanges
            )
            result: ReflectionResult = run_requests(job.store, self._models, steps)
        except Exception as exc:  # a failed reflection must not stop the worker: retry, then keep
            self._failed(key, job, exc)
            return
        self._mark_seen(key, [mark for _, mark in unseen])
        with self._cond:
            self._stats.runs += 1
            for name, count in result.consolidation.counts().items():
                self._stats.counts[name] = self._stats.counts.get(name, 0) + count
            self.results.append(result)

    def _failed(self, key: _Key, job: _Job, exc: Exception) -> None:
        logger.warning(
            "reflection of thread %r failed (attempt %d): %r", job.scope.thread_id, job.attempts, exc
        )
        with self._cond:
            if job.attempts <= self.config.retries:
                self._stats.retried += 1
                newer = self._pending.get(key)
                if newer is not None:  # a newer job holds these messages too: it is the retry
                    newer.attempts = max(newer.attempts, job.attempts)
                    newer.exchanges = _links(job.exchanges, newer.exchanges)
                else:
                    job.due = time.monotonic() + self.config.retry_delay * 2 ** (job.attempts - 1)
                    job.first = job.due
                    self._pending[key] = job
                return
            self._stats.failed += 1
            self.failed.append(
                FailedReflection(job.scope, job.store, job.messages, exc, job.attempts, job.exchanges)
            )
        logger.error(
            "reflection of thread %r failed after %d attempts and is kept in Reflector.failed: %r",
            job.scope.thread_id,
            job.attempts,
            exc,
        )

    # -- control ------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Threads waiting for, or in, reflection."""
        with self._cond:
            return len(self._pending) + len(self._running)

    def stats(self) -> dict[str, Any]:
        """Counters: jobs scheduled, rescheduled, run, retried, failed, and consolidation outcomes."""
        with self._cond:
            s = self._stats
            return {
                "scheduled": s.scheduled,
                "rescheduled": s.rescheduled,
                "runs": s.runs,
                "retried": s.retried,
                "failed": s.failed,
                "skipped_no_user": s.skipped_no_user,
                "pending": len(self._pending) + len(self._running),
                **s.counts,
            }

    def flush(self, timeout: float | None = None) -> bool:
        """Run every pending job now (no debounce) and wait for them; ``False`` on timeout.

        Jobs being retried run at once too; what still fails is in :attr:`failed`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flushing += 1
            try:
                if self._pending:
                    self._start()
                self._cond.notify_all()
                while self._pending or self._running:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return False
                    self._cond.wait(left)
                return True
            finally:
                self._flushing -= 1

    async def aflush(self) -> bool:
        """Async :meth:`flush`: waits in a worker thread, not on the event loop."""
        return await asyncio.to_thread(self.flush)

    def retry_failed(self) -> int:
        """Queue every kept job again (due now); returns how many were queued. Follow with :meth:`flush`."""
        with self._cond:
            kept, self.failed = self.failed, []
        for job in kept:
            self.schedule(job.store, job.scope, job.messages, exchanges=job.exchanges)
        with self._cond:
            for pending in self._pending.values():
                pending.due = time.monotonic()
            self._cond.notify_all()
        return len(kept)

    def drop_user(self, user_id: str) -> dict[str, int]:
        """Drop every queued job of ``user_id`` (``forget_user``): pending and kept-failed jobs are
        removed unrun, what was reflected on is forgotten, and a job of theirs already running is
        waited for (its writes land before the forget that follows). Returns the counts:
        ``queued_reflections``, ``failed_reflections``."""
        with self._cond:
            while any(key[1] == user_id for key in self._running):  # its retry lands in pending
                self._cond.wait()
            pending = [key for key in self._pending if key[1] == user_id]
            for key in pending:
                del self._pending[key]
            failed = [f for f in self.failed if f.scope.user_id == user_id]
            self.failed = [f for f in self.failed if f.scope.user_id != user_id]
            for key in [key for key in self._seen if key[1] == user_id]:
                del self._seen[key]
            self._cond.notify_all()
        if pending or failed:
            logger.info("forget_user: %d queued and %d failed reflections dropped", len(pending), len(failed))
        return {"queued_reflections": len(pending), "failed_reflections": len(failed)}

    def close(self, timeout: float | None = None) -> None:
        """Flush, then stop the worker thread."""
        self.flush(timeout)
        with self._cond:
            self._closed = True
            worker = self._worker
            self._cond.notify_all()
        if worker is not None:
            worker.join(timeout)
        _LIVE.discard(self)


_LIVE: weakref.WeakSet[Reflector] = weakref.WeakSet()


def _links(*groups: Sequence[str]) -> list[str]:
    """The exchange links of ``groups``, each once, the newest :data:`_LINKS_KEPT`."""
    return list(dict.fromkeys(link for group in groups for link in group))[-_LINKS_KEPT:]


@atexit.register
def _flush_at_exit() -> None:  # pragma: no cover - runs when the interpreter exits
    for reflector in list(_LIVE):
        if not reflector.flush(timeout=30):
            logger.error("reflection: %d jobs were still pending at exit", reflector.pending)
