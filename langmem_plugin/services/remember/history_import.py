"""Import an existing conversation history as episodes, through remember's own writer.

A history is a list of messages, or a list of sessions of messages with their dates (and ids)::

    [{"date": "2023-05-08T13:56", "id": "s1", "messages": [{"role": "user", "content": "..."}, ...]}, ...]

A session's date stamps its episodes and is what BM25 reads of the session (``metadata.session``);
its id is kept apart (``metadata.session_id``) and never replaces the date; a date that does not
read as one instant is refused (:mod:`.history_input` says which keys and dates are read).

Messages are LangChain messages, ``{"role", "content"}`` dicts (``"name"`` or ``"speaker"``
names who spoke; with ``per="message"`` a role other than user/assistant/tool/system is taken as
a speaker's name) or ``(role, content)`` pairs; :mod:`.history_input` has every rule. The whole
history is read and checked before the first write: a bad message raises
:class:`~langmem_plugin.errors.ConfigurationError` naming its place, and nothing is written.
:func:`import_history` cuts the history into episodes exactly as remember does
(:func:`~langmem_plugin.services.remember.exchanges.episodes_from_messages`: the same keys, fields and
passages), and writes them with :func:`~langmem_plugin.services.remember.episodes.write_episodes_steps`
in batches, so the store embeds many texts per call. An episode already stored is left as it
is: importing the same history again writes nothing, and an interrupted import resumes.

A user message that no answer followed is imported too, as the user's turn alone (what users
say of themselves is what memory is for; remember, live, waits for the answer, but a history
is whole). A history whose messages (system messages aside) hold no turn at all warns, naming
the fix, and writes nothing.

A message without an id gets one from its place in the history (``"s.m"``: session, message),
so a replay makes the same keys.

:func:`import_histories` imports many conversations, ``(thread_id, history)`` pairs read one at
a time, each as :func:`import_history` would (bounded memory; a killed import resumes by running
it again); both call ``on_progress`` with an :class:`ImportProgress` after each batch.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeAlias

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, ScopeError, shown
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.remember.episodes import (
    Episode,
    EpisodesWritten,
    RememberConfig,
    write_episodes_steps,
)
from langmem_plugin.services.remember.exchanges import episodes_from_messages
from langmem_plugin.services.remember.history_input import History, parse_time, read_history
from langmem_plugin.services.remember.writer import EpisodeWriter, FailedWrite
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.upkeep import index_thread_ops

__all__ = [
    "History",
    "ImportProgress",
    "ImportReport",
    "OnProgress",
    "aimport_histories",
    "aimport_history",
    "history_episodes",
    "import_histories",
    "import_history",
    "parse_time",
]

Per: TypeAlias = Literal["exchange", "message"]

_PROGRESS_MIN_TURNS = 200


@dataclass
class ImportReport:
    """What :func:`import_history` did.

    Attributes:
        turns: the episodes found in the history (exchanges, or messages with ``per="message"``).
        conversations: the conversations imported whole (:func:`import_histories`; 1 for
            :func:`import_history`).
        written: the episodes written (per compartment once: ``turns`` times the compartments
            when all are new).
        skipped: the episodes already stored as they are (a replay).
        passages: the passages written beside long episodes.
        failed: the episodes whose batch failed every retry (kept in ``failures``).
        evicted: older episode items deleted to make room (a compartment's ``max_items``
            counts passages too: raise it in ``MemoryLayout(limits=...)`` for a long history).
        seconds: how long it took.
        failures: the failed writes (retry with ``EpisodeWriter.retry_failed`` semantics:
            ``write.make_steps()`` run on ``write.store``).
    """

    turns: int = 0
    conversations: int = 0
    written: int = 0
    skipped: int = 0
    passages: int = 0
    failed: int = 0
    evicted: int = 0
    seconds: float = 0.0
    failures: list[FailedWrite] = field(default_factory=list, repr=False)

    @property
    def turns_per_second(self) -> float:
        """Episodes imported (written or found stored) per second."""
        return self.turns / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        return (
            f"{self.turns} turns ({self.written} written, {self.skipped} already stored, "
            f"{self.passages} passages, {self.failed} failed, {self.evicted} evicted) "
            f"in {self.seconds:.2f} s: {self.turns_per_second:.1f} turns/s"
        )


@dataclass(frozen=True)
class ImportProgress:
    """How far an import has come, given to ``on_progress`` after each batch of episodes.

    Attributes:
        thread_id: the conversation being imported.
        conversations: the conversations imported whole so far.
        turns: the episodes done so far (written, found stored, or failed), in all conversations.
        written: the episodes written so far; skipped: found stored as they are (a resumed import).
        failed: the episodes whose batch failed every retry.
        seconds: since the import began.
    """

    thread_id: str
    conversations: int
    turns: int
    written: int
    skipped: int
    failed: int
    seconds: float

    @property
    def turns_per_second(self) -> float:
        """Episodes done per second so far."""
        return self.turns / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        return (
            f"{self.conversations} conversations, {self.turns} turns ({self.written} written, "
            f"{self.skipped} already stored, {self.failed} failed) in {self.seconds:.1f} s: "
            f"{self.turns_per_second:.1f} turns/s; now {self.thread_id!r}"
        )


#: What ``on_progress`` is: called after each batch, in the importing thread.
OnProgress: TypeAlias = Callable[[ImportProgress], None]


def history_episodes(history: History, *, per: Per = "exchange") -> list[Episode]:
    """The episodes of ``history``, as remember would write them (see the module docs)."""
    return _read(history, per)[0]


def _read(history: History, per: Per) -> tuple[list[Episode], list[AnyMessage | BaseMessage]]:
    """The episodes of ``history`` and its messages."""
    messages: list[AnyMessage | BaseMessage] = []
    times: list[datetime | None] = []
    labels: list[str | None] = []
    ids: list[str | None] = []
    for session in read_history(history, per=per):
        n = len(session.messages)
        messages.extend(session.messages)
        times.extend([session.time] * n)
        labels.extend([session.label] * n)
        ids.extend([session.id] * n)
    episodes = episodes_from_messages(messages, per=per, times=times, sessions=labels, session_ids=ids)
    return episodes, messages


def _warn_nothing_found(messages: Sequence[AnyMessage | BaseMessage], per: Per) -> None:
    """A warning, at the caller's line, that ``messages`` held no turn to import: why, and the fix."""
    n = len(messages)
    if per == "exchange" and not any(isinstance(m, HumanMessage) for m in messages):
        why = (
            f"none of its {n} messages is the user's, and per='exchange' imports each user message "
            "with what answered it. Fix: give the user's messages the role 'user', or pass "
            "per='message' to import every message with text"
        )
    else:
        why = (
            f"none of its {n} messages is a user's or an assistant's with text (system and tool "
            "messages are not turns). Fix: check the messages' roles and contents"
        )
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("langmem_plugin."):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"import_history wrote nothing: {why}", UserWarning, stacklevel=level)


@dataclass
class _Batch:
    make: Callable[[], StoreSteps[Any]]
    what: str
    rooms: tuple[tuple[str, ...], ...]
    size: int
    done: list[EpisodesWritten]
    last: bool = False  # the last batch of its conversation


def _batches(
    scope: Scope,
    layout: MemoryLayout,
    episodes: Sequence[Episode],
    config: RememberConfig,
    batch_size: int,
) -> Iterator[_Batch]:
    compartments = config.compartments_for(scope)
    try:
        rooms = tuple(layout.namespace(c, scope, write=True) for c in compartments)
    except ScopeError:  # the write itself fails, is logged and kept
        rooms = ()
    index_ops = index_thread_ops(scope)
    for start in range(0, len(episodes), batch_size):
        chunk = list(episodes[start : start + batch_size])
        done: list[EpisodesWritten] = []
        first = start == 0

        def make(
            chunk: list[Episode] = chunk, done: list[EpisodesWritten] = done, first: bool = first
        ) -> StoreSteps[Any]:
            written = yield from write_episodes_steps(
                scope, layout, chunk, compartments=compartments, config=config, skip_existing=True
            )
            if first and index_ops:
                yield index_ops
            done[:] = [written]
            return written

        what = f"history import of turns {start + 1}-{start + len(chunk)} of thread {scope.thread_id!r}"
        yield _Batch(make, what, rooms, len(chunk), done)


def _writer(config: RememberConfig) -> EpisodeWriter:
    return EpisodeWriter(background=False, retries=config.retries, retry_delay=config.retry_delay)


def _bar(total: int | None, progress: bool | None, *, many: bool = False) -> Any:
    shown = progress if progress is not None else (total or 0) >= _PROGRESS_MIN_TURNS
    if not shown:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="importing histories" if many else "importing history", unit="turn")


def _count(report: ImportReport, batch: _Batch, bar: Any) -> None:
    if batch.done:
        (written,) = batch.done
        report.written += len(written.written)
        report.skipped += written.skipped
        report.passages += written.passages
        report.evicted += written.evicted
    else:
        report.failed += batch.size
    if bar is not None:
        bar.update(batch.size)


def _check(per: Any, batch_size: Any, progress: Any, on_progress: Any) -> None:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ConfigurationError(f"batch_size must be an int of at least 1, got {batch_size!r}")
    if per not in ("exchange", "message"):
        raise ConfigurationError(f"per must be 'exchange' or 'message', got {per!r}")
    if progress is not None and not isinstance(progress, bool):
        raise ConfigurationError(f"progress must be True, False or None, got {progress!r}")
    if on_progress is not None and not callable(on_progress):
        raise ConfigurationError(
            f"on_progress must be a function of an ImportProgress, got {on_progress!r}. "
            "Fix: on_progress=print, or leave it out."
        )


def _check_thread(scope: Scope) -> None:
    if not scope.thread_id:
        raise ScopeError(
            "thread_id",
            "importing a history needs the thread it belongs to: pass "
            "config={'configurable': {'thread_id': ..., 'user_id': ...}}",
        )


def _conversations(conversations: Iterable[Any], scope: Scope) -> Iterator[tuple[Scope, Any]]:
    """Each ``(thread_id, history)`` of ``conversations`` with its scope, read one at a time."""
    if isinstance(conversations, str | bytes | Mapping) or not isinstance(conversations, Iterable):
        raise ConfigurationError(
            f"conversations must be an iterable of (thread_id, history) pairs, got "
            f"{type(conversations).__name__}. Fix: pass a list or a generator of such pairs."
        )
    for n, item in enumerate(conversations, start=1):
        if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)):
            raise ConfigurationError(
                f"conversation {n} must be a (thread_id, history) pair with a str thread_id, got "
                f"{type(item).__name__} {shown(item)}. Fix: yield (thread_id, history) for each "
                "conversation; the ones before it were imported (run again to go on)."
            )
        yield dataclasses.replace(scope, thread_id=item[0]), item[1]


class _Run:
    """One import of one or many conversations, whatever the I/O: each conversation's batches,
    the writer, the report, the bar and the progress callback."""

    def __init__(
        self,
        layout: MemoryLayout | None,
        config: RememberConfig | None,
        per: Per,
        batch_size: int,
        progress: bool | None,
        on_progress: OnProgress | None,
        *,
        many: bool,
    ) -> None:
        _check(per, batch_size, progress, on_progress)
        self.layout, self.config = layout or MemoryLayout(), config or RememberConfig()
        self.per, self.batch_size, self.progress, self.many = per, batch_size, progress, many
        self.on_progress = on_progress
        self.started = time.perf_counter()
        self.report = ImportReport()
        self.bar: Any = None
        self.writer = _writer(self.config)
        self.thread, self.turns_done = "", 0

    def batches(self, history: History, scope: Scope) -> Iterator[_Batch]:
        """The batches of one conversation: read and checked whole first, then cut."""
        _check_thread(scope)
        episodes, messages = _read(history, self.per)
        if messages and not episodes:
            _warn_nothing_found(messages, self.per)
        self.report.turns += len(episodes)
        self.thread = scope.thread_id or ""
        if self.bar is None:
            self.bar = _bar(None if self.many else len(episodes), self.progress, many=self.many)
        batches = list(_batches(scope, self.layout, episodes, self.config, self.batch_size))
        if not batches:
            self.report.conversations += 1
        for n, batch in enumerate(batches, start=1):
            batch.last = n == len(batches)
            yield batch

    def done(self, batch: _Batch) -> None:
        _count(self.report, batch, self.bar)
        self.turns_done += batch.size
        self.report.conversations += batch.last
        if self.on_progress is not None:
            r = self.report
            seconds = time.perf_counter() - self.started
            self.on_progress(
                ImportProgress(
                    self.thread, r.conversations, self.turns_done, r.written, r.skipped, r.failed, seconds
                )
            )

    def __enter__(self) -> _Run:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
        self.report.failures = list(self.writer.failed)
        self.report.seconds = time.perf_counter() - self.started


def import_history(
    store: BaseStore,
    history: History,
    scope: Scope,
    *,
    layout: MemoryLayout | None = None,
    config: RememberConfig | None = None,
    per: Per = "exchange",
    batch_size: int = 64,
    progress: bool | None = None,
    on_progress: OnProgress | None = None,
) -> ImportReport:
    """Write ``history`` into ``scope``'s thread as remember would have, in batches; a report.

    Args:
        store: where to write.
        history: messages, or sessions of messages with dates (see the module docs).
        scope: whose memory, and the thread the history is (required).
        layout: namespaces and limits (default: :class:`MemoryLayout`).
        config: remember's settings: compartments, passages, retries.
        per: ``"exchange"`` (user/assistant chats, as remember writes them) or ``"message"``
            (one episode per message: a conversation between people).
        batch_size: episodes per store round (the store embeds their texts together).
        progress: show a progress bar (default: for 200 turns or more).
        on_progress: called with an :class:`ImportProgress` after each batch.

    Raises:
        ScopeError: ``scope`` has no thread id.
        ConfigurationError: ``history`` is not a history (:mod:`.history_input`: the place, the value
            and the fix; :class:`~langmem_plugin.errors.InvalidTimeError` for a session's date), or
            ``per``, ``batch_size``, ``progress`` or ``on_progress`` is not one of its values;
            raised before anything is written.
    """
    with _Run(layout, config, per, batch_size, progress, on_progress, many=False) as run:
        for batch in run.batches(history, scope):
            run.writer.submit(store, batch.make, batch.what, rooms=batch.rooms)
            run.done(batch)
    return run.report


async def aimport_history(
    store: BaseStore,
    history: History,
    scope: Scope,
    *,
    layout: MemoryLayout | None = None,
    config: RememberConfig | None = None,
    per: Per = "exchange",
    batch_size: int = 64,
    progress: bool | None = None,
    on_progress: OnProgress | None = None,
) -> ImportReport:
    """Async :func:`import_history` (the store's async API)."""
    with _Run(layout, config, per, batch_size, progress, on_progress, many=False) as run:
        for batch in run.batches(history, scope):
            await run.writer.asubmit(store, batch.make, batch.what, rooms=batch.rooms)
            run.done(batch)
    return run.report


def import_histories(
    store: BaseStore,
    conversations: Iterable[tuple[str, History]],
    scope: Scope,
    *,
    layout: MemoryLayout | None = None,
    config: RememberConfig | None = None,
    per: Per = "exchange",
    batch_size: int = 64,
    progress: bool | None = None,
    on_progress: OnProgress | None = None,
) -> ImportReport:
    """Import many conversations, each ``(thread_id, history)``, one at a time; one report.

    ``conversations`` is read lazily (a generator over files is never held whole): each
    conversation is read and checked whole, written in batches as :func:`import_history` writes
    it, then let go, so memory stays bounded by one conversation however many come. Each goes
    into its own thread (``thread_id``) of ``scope``'s user.

    **Resumable.** Episode keys come from the thread and the messages, and an episode stored
    whole is skipped (one read per episode), so after a crash or a kill the same call again
    writes only what is missing: no duplicates, and the finished conversations cost their reads.

    Args:
        conversations: ``(thread_id, history)`` pairs; a history as :func:`import_history` takes it.
        scope: whose memory (its ``thread_id``, if any, is replaced by each conversation's).
        progress: show a progress bar of turns (default: no).
        on_progress: called with an :class:`ImportProgress` after each batch (e.g. ``print``).
        layout, config, per, batch_size: as :func:`import_history`.

    Raises:
        ConfigurationError: an item is not a ``(thread_id, history)`` pair, or a history is not
            one (the conversations before it are written: run again to go on), or an argument
            is not one of its values (raised before anything is written).
        ScopeError: a thread id that is not an id.
    """
    with _Run(layout, config, per, batch_size, progress, on_progress, many=True) as run:
        for conversation_scope, history in _conversations(conversations, scope):
            for batch in run.batches(history, conversation_scope):
                run.writer.submit(store, batch.make, batch.what, rooms=batch.rooms)
                run.done(batch)
    return run.report


async def aimport_histories(
    store: BaseStore,
    conversations: Iterable[tuple[str, History]],
    scope: Scope,
    *,
    layout: MemoryLayout | None = None,
    config: RememberConfig | None = None,
    per: Per = "exchange",
    batch_size: int = 64,
    progress: bool | None = None,
    on_progress: OnProgress | None = None,
) -> ImportReport:
    """Async :func:`import_histories` (the store's async API)."""
    with _Run(layout, config, per, batch_size, progress, on_progress, many=True) as run:
        for conversation_scope, history in _conversations(conversations, scope):
            for batch in run.batches(history, conversation_scope):
                await run.writer.asubmit(store, batch.make, batch.what, rooms=batch.rooms)
                run.done(batch)
    return run.report
