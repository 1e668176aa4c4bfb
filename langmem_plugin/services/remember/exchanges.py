"""Exchanges read from messages: the end of a conversation, or a whole one, as episodes.

:func:`episode_from_messages` turns the end of a conversation (the last user message, the
tools called since, the final answer) into one :class:`~.episodes.Episode`;
:func:`episodes_from_messages` turns a whole conversation into its exchanges, each linked to
the one before and after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage

from langmem_plugin.core.record import artifact_memories
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.remember.episodes import CONTEXT_CHARS, Episode, clean_text, shorten

__all__ = ["episode_from_messages", "episodes_from_messages"]


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def _speaker(message: BaseMessage) -> str:
    if message.name:
        return message.name
    return "user" if isinstance(message, HumanMessage) else "assistant"


def _exchange(segment: Sequence[AnyMessage | BaseMessage], *, unanswered: bool = False) -> Episode | None:
    """The episode of ``segment`` (a user message and what followed it); unanswered, ``None``, or
    with ``unanswered`` the user's turn alone (what a user said is worth remembering)."""
    human = segment[0]
    answer: AIMessage | None = None
    tools: list[str] = []
    memories: list[str] = []
    forgot = False
    for message in segment[1:]:
        if isinstance(message, ToolMessage) and message.status != "error":
            changed = artifact_memories(message.artifact)
            if changed is not None and changed[0] == "forgotten":
                forgot = forgot or bool(changed[1])
            elif changed is not None:
                memories.extend(changed[1])
        if isinstance(message, AIMessage):
            tools.extend(call["name"] for call in message.tool_calls)
            if _text(message).strip() and not message.tool_calls:
                answer = message
    if answer is None and not (unanswered and _text(human).strip()):
        return None
    return Episode(
        clean_text(_text(human).strip()),
        clean_text(_text(answer).strip()) if answer is not None else "",
        tuple(dict.fromkeys(tools)),
        (human.id or "", answer.id or "") if answer is not None else (human.id or "",),
        speaker=human.name or None,
        memories=tuple(dict.fromkeys(memories)),
        forgot=forgot,
    )


def _segments(
    messages: Sequence[AnyMessage | BaseMessage],
) -> list[tuple[int, list[AnyMessage | BaseMessage]]]:
    """The exchanges of ``messages``: (index of the user message, the messages from it to the next)."""
    segments: list[tuple[int, list[AnyMessage | BaseMessage]]] = []
    for index, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            segments.append((index, [message]))
        elif segments:
            segments[-1][1].append(message)
    return segments


def _linked(
    episodes: Sequence[tuple[Episode, int]], *, first_previous: Episode | None = None
) -> list[Episode]:
    """``episodes`` (with their positions) linked to their neighbours in the thread."""
    out: list[Episode] = []
    for n, (episode, position) in enumerate(episodes):
        previous = episodes[n - 1][0] if n else first_previous
        following = episodes[n + 1][0] if n + 1 < len(episodes) else None
        out.append(
            dataclasses.replace(
                episode,
                position=position,
                previous=previous.basis() if previous is not None else None,
                following=following.basis() if following is not None else None,
                context=shorten(previous.text(), CONTEXT_CHARS) if previous is not None else "",
            )
        )
    return out


def episode_from_messages(messages: Sequence[AnyMessage | BaseMessage]) -> Episode | None:
    """The last exchange in ``messages``, or ``None`` when there is no answered user message.

    It carries its place in the thread: its position among the thread's exchanges, and the key
    and the beginning of the exchange before it.

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> episode_from_messages([HumanMessage("hi"), AIMessage("hello!")]).content(200)
    'User: hi\\nAssistant: hello!'
    """
    segments = _segments(messages)
    if not segments:
        return None
    last = _exchange(segments[-1][1])
    if last is None:
        return None
    previous = next((e for _, s in reversed(segments[:-1]) if (e := _exchange(s)) is not None), None)
    (episode,) = _linked([(last, len(segments) - 1)], first_previous=previous)
    return episode


def episodes_from_messages(
    messages: Sequence[AnyMessage | BaseMessage],
    *,
    per: Literal["exchange", "message"] = "exchange",
    times: Sequence[datetime | None] | None = None,
    sessions: Sequence[str | None] | None = None,
    session_ids: Sequence[str | None] | None = None,
) -> list[Episode]:
    """Every episode of ``messages``, in order, each linked to its neighbours.

    Args:
        messages: the thread's messages.
        per: ``"exchange"``: one episode per user message with text, as remember writes them
            (a message no answer followed is the user's turn alone: remember, live, waits for the
            answer; a history is whole, so nothing more will come); ``"message"``: one per
            message with text (a conversation between people).
        times: the time of each message (the episode takes its first message's).
        sessions: the session of each message: its date as given, or its number (BM25 reads it).
        session_ids: the id of each message's session (never read by BM25).
    """
    found: list[tuple[Episode, int]] = []
    starts: list[int] = []
    if per == "message":
        for index, message in enumerate(messages):
            if isinstance(message, (HumanMessage, AIMessage)) and (text := _text(message).strip()):
                found.append(
                    (Episode(clean_text(text), "", (), (message.id or "",), speaker=_speaker(message)), index)
                )
                starts.append(index)
    elif per == "exchange":
        for position, (start, segment) in enumerate(_segments(messages)):
            episode = _exchange(segment, unanswered=True)
            if episode is not None:
                found.append((episode, position))
                starts.append(start)
    else:
        raise ConfigurationError(f"per must be 'exchange' or 'message', got {per!r}")
    linked = _linked(found)
    return [
        dataclasses.replace(
            episode,
            time=times[start] if times is not None else episode.time,
            session=sessions[start] if sessions is not None else episode.session,
            session_id=session_ids[start] if session_ids is not None else episode.session_id,
        )
        for episode, start in zip(linked, starts, strict=True)
    ]


# -- passages ---------------------------------------------------------------------------------
