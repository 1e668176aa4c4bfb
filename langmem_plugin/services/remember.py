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
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.layout import STORED_COMPARTMENTS, Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.operations import INDEX_FIELDS, count_plan, list_plan, to_stored, write_plan
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute

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
        full = limits.max_items is not None and (yield from count_plan(namespace, at_least=limits.max_items))
        if full and limits.max_items is not None:
            items = yield from list_plan(namespace, max_items=limits.max_items + 1)
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
    yield from write_plan(ops)
    return written


@dataclass
class FailedWrite:
    """A write that failed every attempt; kept so it is never silently lost."""

    what: str
    error: BaseException
    store: BaseStore
    make_steps: Callable[[], StoreSteps[Any]]
    attempts: int = 0


@dataclass
class EpisodeWriter:
    """Runs memory writes inline or in the background, with retries; never raises into the run.

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

    def _delay(self, attempt: int) -> float:
        return float(self.retry_delay * 2**attempt)

    def _give_up(
        self, what: str, error: BaseException, store: BaseStore, make: Callable[[], StoreSteps[Any]]
    ) -> None:
        logger.error(
            "memory write %r failed after %d attempts and is kept in EpisodeWriter.failed: %r",
            what,
            self.retries + 1,
            error,
        )
        with self._lock:
            self.failed.append(FailedWrite(what, error, store, make, self.retries + 1))

    def _run_sync(self, store: BaseStore, make: Callable[[], StoreSteps[Any]], what: str) -> bool:
        for attempt in range(self.retries + 1):
            try:
                execute(store, make())
                return True
            except Exception as exc:  # a failed write must not break the run: log, retry, keep
                logger.warning("memory write %r failed (attempt %d): %r", what, attempt + 1, exc)
                if attempt == self.retries:
                    self._give_up(what, exc, store, make)
                    return False
                time.sleep(self._delay(attempt))
        return False  # pragma: no cover

    async def _run_async(self, store: BaseStore, make: Callable[[], StoreSteps[Any]], what: str) -> bool:
        for attempt in range(self.retries + 1):
            try:
                await aexecute(store, make())
                return True
            except Exception as exc:  # a failed write must not break the run: log, retry, keep
                logger.warning("memory write %r failed (attempt %d): %r", what, attempt + 1, exc)
                if attempt == self.retries:
                    self._give_up(what, exc, store, make)
                    return False
                await asyncio.sleep(self._delay(attempt))
        return False  # pragma: no cover

    def submit(self, store: BaseStore, make: Callable[[], StoreSteps[Any]], what: str) -> None:
        """Write now (inline) or in the worker thread (background); never raises."""
        if not self.background:
            self._run_sync(store, make, what)
            return
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="langmem-remember")
            future = self._executor.submit(self._run_sync, store, make, what)
            self._futures.add(future)
        future.add_done_callback(self._futures.discard)

    async def asubmit(self, store: BaseStore, make: Callable[[], StoreSteps[Any]], what: str) -> None:
        """Write now with the store's async API (inline), or hand it to the worker thread (background).

        Background writes run in the worker thread in both cases, so a write outlives the
        event loop that submitted it (``asyncio.run(graph.ainvoke(...))`` returning does not
        cancel it); never raises.
        """
        if not self.background:
            await self._run_async(store, make, what)
            return
        self.submit(store, make, what)

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
        done = 0
        for write in pending:
            done += self._run_sync(write.store, write.make_steps, write.what)
        return done

    async def aretry_failed(self) -> int:
        """Async :meth:`retry_failed`."""
        with self._lock:
            pending, self.failed = self.failed, []
        done = 0
        for write in pending:
            done += await self._run_async(write.store, write.make_steps, write.what)
        return done

    def close(self) -> None:
        """Finish background writes and stop the worker thread."""
        self.flush()
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
