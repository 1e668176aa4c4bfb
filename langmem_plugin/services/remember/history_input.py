"""The shapes a history may take, read and checked whole before anything is written.

A history is a ``list`` or ``tuple`` (or an iterator, read once) of either

- **messages**: a LangChain ``HumanMessage``, ``AIMessage``, ``ToolMessage`` or ``SystemMessage``;
  a dict ``{"role": ..., "content": ...}`` (``"type"`` for ``"role"``; optional ``"name"`` or
  ``"speaker"``, ``"id"``, an assistant's ``"tool_calls"``, a tool's ``"tool_call_id"``; other
  keys are ignored); or a ``(role, content)`` pair;
- **sessions**: dicts ``{"messages": [...], "date": ..., "id": ...}`` (``"date"`` and ``"id"``
  optional, no other key), whose ``"messages"`` is a list of messages as above.

A session's keys:

- ``"messages"`` (required): its messages;
- ``"date"``: when it took place, read by :func:`~langmem_plugin.core.times.read_time` (a
  ``datetime``, naive meaning UTC; a ``date``; ISO text; text such as ``"1:56 pm on 8 May, 2023"``,
  ``"2023/05/21 (Sun) 19:50"``, ``"May 21, 2023"``; epoch seconds). Its episodes are stamped
  with it (``created_at``), and the date as the history gave it (a number: its ISO text) is the
  episode's ``metadata.session``, which BM25 reads, so a question naming the date finds it.
  Missing, ``None`` or blank: the episodes are stamped with the time of the import and
  ``metadata.session`` is the session's number;
- ``"id"``: its name in the source (a ``str``, one line), kept as ``metadata.session_id``: it
  groups the session's episodes for recall's session lift, and BM25 never reads it (an id
  such as ``"answer_4be1b6b4_2"`` is not something a question says).

The rules, each refused with a :class:`~langmem_plugin.errors.ConfigurationError` that names the
place (``session 2, message 5``), the value, and the fix:

- a role is ``user``/``human``, ``assistant``/``ai``, ``tool``, ``system``/``developer`` (left out
  of episodes), or — with ``per="message"``, a conversation between people — the speaker's name;
- content is a ``str`` or a list of content blocks (``str`` or dict); only an assistant message
  with tool calls may have none;
- a tool call is ``{"name": str, "args": dict, "id": str}`` (``"type": "tool_call"`` allowed),
  in a list;
- a name (a speaker, a tool) is one line of at most 200 characters, without control characters;
  a message id a ``str`` without whitespace or control characters;
- a date is one instant (:func:`~langmem_plugin.core.times.read_time`): unknown, incomplete
  (``"May 2023"``) or ambiguous (``"05/06/2023"``) text, a weekday that is not the date's, a
  named timezone, a number outside epoch seconds of 1980-2100 and a ``bool`` are refused with
  :class:`~langmem_plugin.errors.InvalidTimeError` (a ``ConfigurationError``); never guessed.

A history that is none of these is refused before the first write, so an import never stops
half-way on a bad message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Literal, NamedTuple, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langmem_plugin.core.times import read_time
from langmem_plugin.errors import ConfigurationError, InvalidTimeError, LangMemPluginError, shown

__all__ = ["History", "ReadSession", "parse_time", "read_history"]

#: A history: messages, or sessions ``{"date": ..., "messages": [...]}``.
History: TypeAlias = Sequence[BaseMessage | Mapping[str, Any] | tuple[str, Any]] | Iterable[Any]

_ROLES_USER = frozenset({"user", "human"})
_ROLES_ASSISTANT = frozenset({"assistant", "ai"})
_ROLES_SKIPPED = frozenset({"system", "developer"})
_SESSION_KEYS = frozenset({"messages", "date", "id"})
_TOOL_CALL_KEYS = frozenset({"name", "args", "id", "type"})
_NAME_CHARS = 200
_BAD_IN_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_BAD_IN_ID = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SHAPE = (
    "a history is a list of messages (LangChain messages, {'role': ..., 'content': ...} dicts or "
    "(role, content) pairs) or a list of sessions {'date': ..., 'messages': [...]}"
)


class ReadSession(NamedTuple):
    """A session as read (a plain list of messages is one session, without label).

    Attributes:
        label: what ``metadata.session`` says: the date as given, else the session's number
            (``None``: a plain list of messages).
        id: the session's ``"id"``, if it has one.
        time: its date as a timezone-aware time (``None``: none given).
        messages: its messages (system messages left out).
    """

    label: str | None
    id: str | None
    time: datetime | None
    messages: list[BaseMessage]


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def parse_time(value: Any) -> datetime | None:
    """A session's date as a timezone-aware UTC time, or ``None`` when it is none or not one.

    :func:`read_history` refuses a date this gives ``None`` for (blank aside), with the reason
    (:func:`~langmem_plugin.core.times.read_time` says it).

    >>> parse_time("2023-05-08T13:56").isoformat(), parse_time("1:56 pm on 8 May, 2023").isoformat()
    ('2023-05-08T13:56:00+00:00', '2023-05-08T13:56:00+00:00')
    >>> parse_time("2023/05/21 (Sun) 19:50").isoformat(), parse_time("05/06/2023")
    ('2023-05-21T19:50:00+00:00', None)
    """
    if _blank(value):
        return None
    try:
        return read_time(value)
    except InvalidTimeError:
        return None


def _date_label(value: Any, time: datetime) -> str:
    """The date as the history gave it, for BM25: text as it is, a number as ISO text."""
    if isinstance(value, str):
        return str.__str__(value)
    return str(value) if isinstance(value, datetime | date) else time.isoformat()


def _refuse(where: str, problem: str, value: Any, fix: str) -> ConfigurationError:
    place = f"history, {where}" if where else "history"
    return ConfigurationError(f"{place}: {problem}, got {type(value).__name__} {shown(value)}. Fix: {fix}")


def _items(value: Any, where: str, what: str) -> list[Any]:
    """``value`` (a list, a tuple or an iterator) as a list; anything else is refused."""
    if isinstance(value, list | tuple):
        return list(value)
    if not isinstance(value, Iterator):
        raise _refuse(where, f"{what} must be a list", value, f"pass a list of {what}; {_SHAPE}")
    items: list[Any] = []
    try:
        items.extend(value)
    except LangMemPluginError:
        raise
    except Exception as exc:
        raise ConfigurationError(
            f"history{', ' + where if where else ''}: reading the {what} failed after {len(items)} of them "
            f"({type(exc).__name__}: {shown(str(exc))}); nothing was written. Fix: pass a list you "
            "have read whole."
        ) from exc
    return items


def _name(value: Any, where: str, what: str) -> str:
    """A speaker's or a tool's name: one line, not blank, at most 200 characters."""
    if not isinstance(value, str):
        raise _refuse(where, f"{what} must be a str", value, f"give {what} as text")
    text = str.__str__(value)
    if not text.strip():
        raise _refuse(where, f"{what} is blank", value, f"give a real {what}, or leave it out")
    if len(text) > _NAME_CHARS:
        raise _refuse(
            where,
            f"{what} is {len(text)} characters long (at most {_NAME_CHARS})",
            value,
            "check that role and content are not swapped",
        )
    bad = _BAD_IN_NAME.search(text)
    if bad is not None:
        raise _refuse(
            where,
            f"{what} holds U+{ord(bad.group()):04X} (a line break, control character or lone surrogate)",
            value,
            f"give {what} as one line of text",
        )
    return text


def _message_id(value: Any, default: str, where: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or not value or _BAD_IN_ID.search(value):
        raise _refuse(
            where,
            "a message id must be a non-empty str without whitespace or control characters",
            value,
            "pass str ids such as 'D1:3', or leave 'id' out (the place in the history is used)",
        )
    return str.__str__(value)


def _content(value: Any, where: str) -> str | list[str | dict[str, Any]]:
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list) and all(isinstance(b, str | dict) for b in value):
        return list(value)
    raise _refuse(
        where,
        "content must be a str or a list of content blocks (str or dict)",
        value,
        "pass the message's text as a str",
    )


def _tool_calls(value: Any, where: str, *, id_may_be_none: bool = False) -> list[dict[str, Any]]:
    """An assistant's tool calls, each ``{"name": str, "args": dict, "id": str}``.

    ``id_may_be_none``: an ``AIMessage``'s own calls, where LangChain allows ``"id": None``.
    """
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise _refuse(
            where, "tool_calls must be a list", value, "pass [{'name': ..., 'args': {...}, 'id': ...}]"
        )
    calls: list[dict[str, Any]] = []
    for n, call in enumerate(value, start=1):
        at = f"{where}, tool call {n}"
        form = "a tool call is {'name': str, 'args': dict, 'id': str}"
        if not isinstance(call, Mapping):
            raise _refuse(at, form, call, "give each tool call as such a dict")
        extra = sorted(map(shown, set(call) - _TOOL_CALL_KEYS))
        missing = sorted(k for k in ("name", "args", "id") if k not in call)
        if extra or missing:
            problem = f"{form}; " + "; ".join(
                p
                for p in (f"unknown keys {extra}" if extra else "", f"missing {missing}" if missing else "")
                if p
            )
            raise _refuse(
                at, problem, call, "convert it (an OpenAI 'function' call: name, json.loads(arguments), id)"
            )
        args = call["args"]
        if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
            raise _refuse(
                at, "args must be a dict with str keys", args, "pass the call's arguments as a dict"
            )
        if not (isinstance(call["id"], str) or (id_may_be_none and call["id"] is None)):
            raise _refuse(
                at, "a tool call id must be a str", call["id"], "pass the id the tool result answers"
            )
        if call.get("type", "tool_call") != "tool_call":
            raise _refuse(at, "type must be 'tool_call'", call.get("type"), "leave 'type' out")
        name = _name(call["name"], at, "the tool name")
        ident = None if call["id"] is None else str.__str__(call["id"])
        calls.append({"name": name, "args": dict(args), "id": ident, "type": "tool_call"})
    return calls


def _from_object(item: BaseMessage, default_id: str, where: str) -> BaseMessage | None:
    if isinstance(item, SystemMessage):
        return None
    if not isinstance(item, HumanMessage | AIMessage | ToolMessage):
        raise _refuse(
            where,
            "a LangChain message must be a HumanMessage, AIMessage, ToolMessage or SystemMessage",
            item,
            "convert it to one of those (or to a {'role', 'content'} dict)",
        )
    _content(item.content, where)
    if item.name is not None:
        _name(item.name, where, "the name")
    update: dict[str, Any] = {}
    if isinstance(item, AIMessage):
        calls = _tool_calls(item.tool_calls, where, id_may_be_none=True)
        if calls != item.tool_calls:
            update["tool_calls"] = calls
    ident = _message_id(item.id, default_id, where)
    if ident != item.id:
        update["id"] = ident
    return item.model_copy(update=update) if update else item


def _from_mapping(item: Mapping[str, Any], default_id: str, where: str, per: str) -> BaseMessage | None:
    role_value = item.get("role") if item.get("role") is not None else item.get("type")
    if role_value is None:
        raise _refuse(
            where, "a message dict needs a 'role'", item, "add 'role': 'user' (or 'assistant', ...)"
        )
    role = _name(role_value, where, "the role")
    lowered = role.lower()
    if lowered in _ROLES_SKIPPED:
        return None
    calls = item.get("tool_calls")
    if calls is not None and lowered not in _ROLES_ASSISTANT:
        raise _refuse(where, f"only an assistant message has tool_calls (role {role!r})", calls, "drop them")
    tool_calls = _tool_calls(calls, where)
    content_value = item.get("content")
    if content_value is None and tool_calls:
        content_value = ""  # an assistant that only calls tools (OpenAI writes content: null)
    if content_value is None:
        raise _refuse(where, "a message dict needs 'content'", item, "add 'content': 'the text'")
    content = _content(content_value, where)
    name_value = item.get("name") if item.get("name") is not None else item.get("speaker")
    kwargs: dict[str, Any] = {"id": _message_id(item.get("id"), default_id, where)}
    if name_value is not None:
        kwargs["name"] = _name(name_value, where, "the name")
    if lowered in _ROLES_ASSISTANT:
        return AIMessage(content, tool_calls=tool_calls, **kwargs)
    if lowered == "tool":
        call_id = item.get("tool_call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise _refuse(where, "tool_call_id must be a str", call_id, "pass the id of the call it answers")
        return ToolMessage(content, tool_call_id=call_id or "", **kwargs)
    if lowered not in _ROLES_USER:
        if per != "message":
            raise _refuse(
                where,
                f"the role {role!r} is not user, assistant, tool or system",
                item,
                "use one of those; a speaker's name as the role is read with per='message'",
            )
        kwargs.setdefault("name", role)  # a speaker's name as the role: a conversation between people
    return HumanMessage(content, **kwargs)


def _message(item: Any, default_id: str, where: str, per: str) -> BaseMessage | None:
    """``item`` as a LangChain message with an id (``None``: a system message, not part of episodes)."""
    if isinstance(item, BaseMessage):
        return _from_object(item, default_id, where)
    if isinstance(item, Mapping):
        return _from_mapping(item, default_id, where, per)
    if isinstance(item, tuple) and len(item) == 2:
        return _from_mapping({"role": item[0], "content": item[1]}, default_id, where, per)
    raise _refuse(
        where,
        "a message must be a LangChain message, a {'role', 'content'} dict or a (role, content) pair",
        item,
        _SHAPE,
    )


def _session(session: Mapping[str, Any], s: int, per: str) -> ReadSession:
    where = f"session {s}"
    extra = sorted(map(shown, set(session) - _SESSION_KEYS))
    if extra:
        raise _refuse(where, f"a session has 'messages', 'date' and 'id' only, not {extra}", session, _SHAPE)
    when = session.get("date")
    time = None if _blank(when) else read_time(when, what="the date", where=f"history, {where}")
    ident = session.get("id")
    if ident is not None:
        ident = _name(ident, where, "the session id")
    items = _items(session["messages"], where, "messages")
    messages = [
        m
        for i, item in enumerate(items, start=1)
        if (m := _message(item, f"{s}.{i}", f"{where}, message {i}", per))
    ]
    label = _date_label(when, time) if time is not None else str(s)
    return ReadSession(label, ident, time, messages)


def read_history(history: Any, *, per: Literal["exchange", "message"] = "exchange") -> list[ReadSession]:
    """``history`` read and checked whole: its sessions (a plain list of messages is one, unlabelled).

    Raises:
        ConfigurationError: anything in ``history`` that is not one of the shapes of the module
            docs; the message names its place, the value and the fix.
    """
    if not isinstance(history, list | tuple | Iterator):
        fix = "wrap it in a list" if isinstance(history, Mapping | BaseMessage) else "pass a list"
        raise _refuse("", "a history must be a list", history, f"{fix}; {_SHAPE}")
    items = _items(history, "", "messages or sessions")
    is_session = [isinstance(h, Mapping) and "messages" in h for h in items]
    if any(is_session):
        first = is_session.index(not is_session[0]) if not all(is_session) else None
        if first is not None:
            raise _refuse(
                f"item {first + 1}",
                "a history is either a list of messages or a list of sessions, not both",
                items[first],
                "put every message in a session {'date': ..., 'messages': [...]}",
            )
        return [_session(session, s, per) for s, session in enumerate(items, start=1)]
    messages = [
        m for i, item in enumerate(items, start=1) if (m := _message(item, f"1.{i}", f"message {i}", per))
    ]
    return [ReadSession(None, None, None, messages)]
