"""Remember: store each exchange as an episode, and never lose a write quietly.

:func:`episode_from_messages` turns the end of a conversation (the last user
message, the tools called since, the final answer) into the text of one
episode. :func:`remember_steps` writes it to session memory (and user memory
when configured) under a key derived from the thread and the messages, so
writing the same exchange twice — a retry, a replay — leaves one episode.
When a compartment is full, its oldest *episodes* make room; other memories
are never evicted.

:class:`EpisodeWriter` runs those writes inline or in the background, retries a
failed write with backoff, logs every failure, and keeps what still failed in
:attr:`EpisodeWriter.failed` (retry with :meth:`EpisodeWriter.retry_failed`).
A write never raises into the caller's run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.store.base import BaseStore, Op, PutOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.steps import arun_steps, run_steps
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.layout import (
    STORED_COMPARTMENTS,
    Compartment,
    MemoryLayout,
    aroom_held,
    parse_compartment,
    room_held,
)
from langmem_plugin.services.operations import INDEX_FIELDS, count_steps, list_steps, to_stored, write_steps
from langmem_plugin.services.store_steps import Pause, StoreSteps, arun_batch, run_batch

__all__ = [
    "EPISODE_CATEGORY",
    "Episode",
    "EpisodeWriter",
    "FailedWrite",
    "RememberConfig",
    "episode_from_messages",
    "remember_steps",
]

logger = logging.getLogger(__name__)

EPISODE_CATEGORY = "episodes"


@dataclass(frozen=True)
class RememberConfig:
    """What remember writes, and how.

    Attributes:
        compartments: where episodes go: session memory by default; add ``"user"`` to keep
            every exchange in the user's long-term memory too.
        background: write in a background worker instead of inline.
        retries: attempts after the first before a write is given up (and kept in ``failed``).
        retry_delay: seconds before the first retry; doubles each time.
    """

    compartments: tuple[Compartment, ...] = (Compartment.SESSION,)
    background: bool = False
    retries: int = 3
    retry_delay: float = 0.05

    def __post_init__(self) -> None:
        comps = tuple(
            parse_compartment(c, allowed=(Compartment.USER, Compartment.SESSION)) for c in self.compartments
        )
        object.__setattr__(self, "compartments", comps)
        if self.retries < 0 or self.retry_delay < 0:
            raise ConfigurationError("retries and retry_delay must be >= 0")


@dataclass(frozen=True)
class Episode:
    """One exchange: what the user said, which tools ran, what the assistant answered."""

    user: str
    assistant: str
    tools: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()

    def content(self, max_chars: int) -> str:
        """The episode's text, each side shortened to fit ``max_chars`` in all."""
        tools = f"\nTools: {', '.join(self.tools)}" if self.tools else ""
        budget = max(max_chars - len(tools) - len("User: \nAssistant: "), 20)
        user, assistant = self.user, self.assistant
        if len(user) + len(assistant) > budget:
            half = budget // 2
            if len(user) > half and len(assistant) > half:
                user, assistant = _shorten(user, half), _shorten(assistant, budget - half)
            elif len(user) > half:
                user = _shorten(user, budget - len(assistant))
            else:
                assistant = _shorten(assistant, budget - len(user))
        return f"User: {user}\nAssistant: {assistant}{tools}"[:max_chars]

    def key(self, scope: Scope) -> str:
        """A key that is the same for the same exchange in the same thread."""
        basis = "\x1f".join([scope.thread_id or "", *self.message_ids, self.user, self.assistant])
        return "ep-" + hashlib.sha256(basis.encode()).hexdigest()[:16]


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def episode_from_messages(messages: Sequence[AnyMessage | BaseMessage]) -> Episode | None:
    """The last exchange in ``messages``, or ``None`` when there is no answered user message.

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> episode_from_messages([HumanMessage("hi"), AIMessage("hello!")]).content(200)
    'User: hi\\nAssistant: hello!'
    """
    start = None
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            start = index
            break
    if start is None:
        return None
    human = messages[start]
    answer: AIMessage | None = None
    tools: list[str] = []
    ids = [human.id or ""]
    for message in messages[start + 1 :]:
        if isinstance(message, AIMessage):
            tools.extend(call["name"] for call in message.tool_calls)
            if _text(message).strip() and not message.tool_calls:
                answer = message
        elif isinstance(message, ToolMessage):
            continue
    if answer is None:
        return None
    ids.append(answer.id or "")
    return Episode(_text(human).strip(), _text(answer).strip(), tuple(dict.fromkeys(tools)), tuple(ids))


def remember_steps(
    scope: Scope,
    layout: MemoryLayout,
    episode: Episode,
    *,
    compartments: Sequence[Compartment] = (Compartment.SESSION,),
) -> StoreSteps[list[tuple[Compartment, tuple[str, ...], str]]]:
    """Write ``episode`` into each compartment; returns ``(compartment, namespace, key)`` written.

    Raises:
        ScopeError: the scope lacks the id a compartment needs.
        MemoryLimitError: a compartment is full of memories that are not episodes.
    """
    written: list[tuple[Compartment, tuple[str, ...], str]] = []
    key = episode.key(scope)
    ops: list[PutOp] = []
    for compartment in compartments:
        comp = parse_compartment(compartment, allowed=STORED_COMPARTMENTS)
        namespace = layout.namespace(comp, scope)
        limits = layout.limits_for(comp)
        record = MemoryRecord(
            content=episode.content(limits.max_chars),
            category=EPISODE_CATEGORY,
            kind=MemoryKind.EPISODE,
            source="remember",
            tags=list(episode.tools),
            metadata={"thread_id": scope.thread_id} if scope.thread_id else {},
        )
        full = limits.max_items is not None and (yield from count_steps(namespace, at_least=limits.max_items))
        if full and limits.max_items is not None:
            items = yield from list_steps(namespace, max_items=limits.max_items + 1)
            keys = {i.key for i in items}
            if key not in keys and len(items) >= limits.max_items:
                episodes = sorted(
                    (m for i in items if (m := to_stored(i, comp)) and m.record.kind is MemoryKind.EPISODE),
                    key=lambda m: m.record.created_at,
                )
                excess = len(items) - limits.max_items + 1
                if len(episodes) < excess:
                    layout.check_room(comp, len(items))
                ops.extend(PutOp(m.namespace, m.id, None) for m in episodes[:excess])
        ops.append(PutOp(namespace, key, record.to_value(), index=INDEX_FIELDS))
        written.append((comp, namespace, key))
    yield from write_steps(ops)
    return written


@dataclass
class FailedWrite:
    """A write that failed every attempt; kept so it is never silently lost."""

    what: str
    error: BaseException
    store: BaseStore
    make_steps: Callable[[], StoreSteps[Any]]
    attempts: int = 0
    rooms: tuple[tuple[str, ...], ...] = ()


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

    def _attempts(self, write: FailedWrite) -> Generator[Sequence[Op] | Pause, Any, bool]:
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
            return run_steps(self._attempts(write), functools.partial(run_batch, write.store))

    async def _run_async(self, write: FailedWrite) -> bool:
        async with contextlib.AsyncExitStack() as held:
            for room in sorted(write.rooms):
                await held.enter_async_context(aroom_held(write.store, room))
            return await arun_steps(self._attempts(write), functools.partial(arun_batch, write.store))

    @staticmethod
    def _write(
        store: BaseStore, make: Callable[[], StoreSteps[Any]], what: str, rooms: Sequence[tuple[str, ...]]
    ) -> FailedWrite:
        return FailedWrite(what, RuntimeError("not run yet"), store, make, 0, tuple(rooms))

    def submit(
        self,
        store: BaseStore,
        make: Callable[[], StoreSteps[Any]],
        what: str,
        *,
        rooms: Sequence[tuple[str, ...]] = (),
    ) -> None:
        """Write now (inline) or in the worker thread (background); never raises.

        Args:
            store: where to write.
            make: makes the write's steps (anew for each attempt).
            what: how the write is named in logs and in :attr:`failed`.
            rooms: the namespaces the write adds items to (their item limits are held).
        """
        write = self._write(store, make, what, rooms)
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
    ) -> None:
        """Write now with the store's async API (inline), or hand it to the worker thread (background).

        Background writes run in the worker thread in both cases, so a write outlives the
        event loop that submitted it (``asyncio.run(graph.ainvoke(...))`` returning does not
        cancel it); never raises.
        """
        if not self.background:
            await self._run_async(self._write(store, make, what, rooms))
            return
        self.submit(store, make, what, rooms=rooms)

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
