"""The conversation window: what part of ``messages`` the model sees, and old threads.

:func:`trim_window` keeps the last turns of a conversation by number of turns
and/or by tokens (the model's real tokenizer). It cuts only between *blocks*:
an AI message that calls tools and the tool results that answer it are one
block, never separated — a model API rejects a tool result without its call.
Leading system messages are always kept, and the window never keeps an answer
without the user message it answers: it drops whole turns, and inside the newest
turn only the steps between the question and the newest step.

It returns a new list and leaves the state alone: the checkpointed history is
not rewritten. To rewrite it (drop the old messages from the checkpoint too),
return :func:`window_removals` from a node as the ``messages`` update.

:func:`delete_idle_threads` deletes threads whose newest checkpoint is older
than ``max_idle`` from a checkpointer (and, given a store, their session
memory, their stored tool results and their thread index entries, with the old
versions of all of it from a store that keeps history, ``CheckpointerStore``).

>>> from langchain_core.messages import AIMessage, HumanMessage
>>> history = [HumanMessage("a"), AIMessage("b"), HumanMessage("c"), AIMessage("d")]
>>> [m.content for m in trim_window(history, max_turns=1)]
['c', 'd']
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    MessageLikeRepresentation,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.store.base import BaseStore

from langmem_plugin.core.record import utc_now
from langmem_plugin.core.tokens import count_message_tokens
from langmem_plugin.errors import ConfigurationError, shown
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.store_steps import aexecute, execute
from langmem_plugin.services.upkeep import delete_threads_steps

logger = logging.getLogger(__name__)

__all__ = [
    "adelete_idle_threads",
    "delete_idle_threads",
    "message_blocks",
    "read_messages",
    "trim_window",
    "window_removals",
]


#: The fix an error about unreadable messages ends with.
_MESSAGES_FIX = (
    'Fix: pass messages as a chat model takes them: [("user", "...")], '
    '[{"role": "user", "content": "..."}] or [HumanMessage("...")].'
)


def read_messages(messages: Sequence[MessageLikeRepresentation], where: str) -> list[BaseMessage]:
    """``messages`` as LangChain messages: each ``BaseMessage`` as it is (the same object), each
    ``(role, content)`` pair or ``{"role": ..., "content": ...}`` dict read as a chat model reads
    it (``langchain_core.messages.convert_to_messages``).

    Raises:
        ConfigurationError: an element LangChain cannot read as a message; the error names
            ``where``, its index, what it is, why, and the fix.
    """
    read: list[BaseMessage] = []
    for index, message in enumerate(messages):
        if isinstance(message, BaseMessage):
            read.append(message)
            continue
        try:
            (converted,) = convert_to_messages([message])
        except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if isinstance(exc, KeyError):
                why = f"it lacks the key {why}"
            raise ConfigurationError(
                f"{where}: messages[{index}] is {type(message).__name__} {shown(message)}, which "
                f"LangChain cannot read as a message ({shown(why)}). {_MESSAGES_FIX}"
            ) from exc
        read.append(converted)
    return read


def message_blocks(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """``messages`` grouped into blocks that must stay together (a tool call and its results)."""
    blocks: list[list[BaseMessage]] = []
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage) and blocks and message.tool_call_id in open_calls:
            blocks[-1].append(message)
            open_calls.discard(message.tool_call_id)
            continue
        previous = blocks[-1][0] if blocks else None
        if isinstance(message, ToolMessage) and isinstance(previous, AIMessage) and previous.tool_calls:
            # a result whose call id we do not know: keep it with the preceding call, never alone
            blocks[-1].append(message)
            continue
        blocks.append([message])
        open_calls = (
            {c["id"] for c in message.tool_calls if c["id"]} if isinstance(message, AIMessage) else set()
        )
    return blocks


def trim_window(
    messages: Sequence[MessageLikeRepresentation],
    *,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    model: str | None = None,
) -> list[BaseMessage]:
    """The last part of ``messages`` within ``max_turns`` user turns and ``max_tokens`` tokens.

    The window never keeps an answer without the question it answers: it starts at a user
    message (unless what it keeps comes before the conversation's first user message), and
    never separates a tool call from its results.

    Args:
        messages: the conversation (not modified): messages, or what a chat model takes
            (``("user", "...")`` pairs, role dicts; see :func:`read_messages`).
        max_turns: keep at most this many turns (a turn starts at a user message).
        max_tokens: keep at most this many tokens, counted as a model input with ``model``'s
            tokenizer, leading system messages included. Whole turns go first, oldest first;
            when the newest turn alone is over the limit, its oldest steps after the question go
            (tool calls with their results), and the question and its newest step are kept even
            when they alone are over the limit.
        model: whose tokenizer counts (``None``: o200k_base).

    Raises:
        ConfigurationError: a limit below 1, or an element that is not a message.
    """
    if max_turns is not None and max_turns < 1:
        raise ConfigurationError(f"max_turns must be at least 1 or None, got {max_turns}")
    if max_tokens is not None and max_tokens < 1:
        raise ConfigurationError(f"max_tokens must be at least 1 or None, got {max_tokens}")
    if isinstance(messages, str) or not isinstance(messages, Sequence):
        raise ConfigurationError(
            f"trim_window(messages) takes a list of messages, got {type(messages).__name__} "
            f"{shown(messages)}. {_MESSAGES_FIX}"
        )
    messages = read_messages(messages, "trim_window(messages)")
    head = 0
    while head < len(messages) and isinstance(messages[head], SystemMessage):
        head += 1
    system, turns = messages[:head], _turns(message_blocks(messages[head:]))
    if max_turns is not None:
        asked = [i for i, turn in enumerate(turns) if _asks(turn)]
        if len(asked) > max_turns:
            turns = turns[asked[-max_turns] :]
    if max_tokens is None:
        return system + _flat(b for turn in turns for b in turn)

    limit = max_tokens

    def over(blocks: list[list[BaseMessage]]) -> bool:
        return count_message_tokens(system + _flat(blocks), model=model) > limit

    while len(turns) > 1 and over([b for turn in turns for b in turn]):
        turns = turns[1:]
    if len(turns) != 1:
        return system + _flat(b for turn in turns for b in turn)
    last = turns[0]
    first = 1 if _asks(last) else 0  # the question stays; the steps after it go, oldest first
    while len(last) > first + 1 and over(last):
        last = [*last[:first], *last[first + 1 :]]
    return system + _flat(last)


def _asks(turn: list[list[BaseMessage]]) -> bool:
    """Whether a turn starts with the user's message (the part before the first one does not)."""
    return isinstance(turn[0][0], HumanMessage)


def _turns(blocks: list[list[BaseMessage]]) -> list[list[list[BaseMessage]]]:
    """``blocks`` grouped into turns: each starts at a user message (what comes before the first
    user message is a turn of its own)."""
    turns: list[list[list[BaseMessage]]] = []
    for block in blocks:
        if not turns or isinstance(block[0], HumanMessage):
            turns.append([block])
        else:
            turns[-1].append(block)
    return turns


def _flat(blocks: Iterable[list[BaseMessage]]) -> list[BaseMessage]:
    return [m for block in blocks for m in block]


def window_removals(messages: Sequence[BaseMessage], kept: Sequence[BaseMessage]) -> list[RemoveMessage]:
    """``RemoveMessage`` updates that drop from state every message of ``messages`` not in ``kept``.

    Return them as a node's ``{"messages": ...}`` update to rewrite the checkpointed history.
    Messages need ids (LangGraph's ``add_messages`` gives every message one).
    """
    keep = {m.id for m in kept}
    missing = [m for m in messages if m.id is None]
    if missing:
        raise ConfigurationError("window_removals needs message ids; messages from graph state have them")
    return [RemoveMessage(id=m.id) for m in messages if m.id not in keep and m.id is not None]


def _latest_by_thread(tuples: Iterable[CheckpointTuple]) -> dict[str, datetime]:
    latest: dict[str, datetime] = {}
    for item in tuples:
        thread_id = item.config.get("configurable", {}).get("thread_id")
        ts = item.checkpoint.get("ts")
        if not thread_id or not ts:
            continue
        when = datetime.fromisoformat(str(ts))
        if thread_id not in latest or when > latest[thread_id]:
            latest[thread_id] = when
    return latest


def _idle(latest: dict[str, datetime], max_idle: timedelta, now: datetime | None) -> list[str]:
    if max_idle <= timedelta(0):
        raise ConfigurationError(f"max_idle must be positive, got {max_idle}")
    cutoff = (now or utc_now()) - max_idle
    return sorted(t for t, when in latest.items() if when < cutoff)


def _log_removed(idle: Sequence[str], counts: dict[str, int]) -> None:
    logger.info("deleted %d idle threads; from the store: %s", len(idle), counts)


def delete_idle_threads(
    checkpointer: BaseCheckpointSaver[Any],
    max_idle: timedelta,
    *,
    store: BaseStore | None = None,
    layout: MemoryLayout | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> list[str]:
    """Delete threads whose newest checkpoint is older than ``max_idle``; returns their ids.

    Args:
        checkpointer: any LangGraph checkpointer that can ``list`` and ``delete_thread``.
        max_idle: how long a thread may stay untouched.
        store: when given, what it keeps for those threads is deleted from it too: their session
            memory, their stored tool results (on a store without TTL nothing else removes
            them) and their entries in the thread index (``forget_user``'s list of a user's threads);
            a store that keeps history (``CheckpointerStore``) then drops the old versions of all
            of it, as a forget does. The episodes their users' memory holds stay: long-term
            memory outlives a thread.
        layout: the session and results namespace templates (default layout when ``None``).
        now: the current time (tests).
        dry_run: only say which threads would be deleted.
    """
    idle = _idle(_latest_by_thread(checkpointer.list(None)), max_idle, now)
    if dry_run:
        return idle
    if store is not None and idle:  # first: killed part-way, the threads are still idle for a retry
        _log_removed(idle, execute(store, delete_threads_steps(layout or MemoryLayout(), idle)))
    for thread_id in idle:
        checkpointer.delete_thread(thread_id)
    return idle


async def adelete_idle_threads(
    checkpointer: BaseCheckpointSaver[Any],
    max_idle: timedelta,
    *,
    store: BaseStore | None = None,
    layout: MemoryLayout | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> list[str]:
    """Async :func:`delete_idle_threads`."""
    idle = _idle(_latest_by_thread([t async for t in checkpointer.alist(None)]), max_idle, now)
    if dry_run:
        return idle
    if store is not None and idle:  # first: killed part-way, the threads are still idle for a retry
        _log_removed(idle, await aexecute(store, delete_threads_steps(layout or MemoryLayout(), idle)))
    for thread_id in idle:
        await checkpointer.adelete_thread(thread_id)
    return idle
