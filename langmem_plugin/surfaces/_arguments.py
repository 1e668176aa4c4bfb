"""Checks of what a caller hands :class:`~langmem_plugin.Memory` directly, before any store call.

A value of the wrong type raises a typed error that names it and the fix, instead of an
``AttributeError`` from deep inside (``config="t1"``, ``recall(None)``, ``history(None)``) or,
worse, a call that quietly does something else (a ``str`` read as a list of one-letter
messages, a dict id read as a filter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.prompt_values import PromptValue

from langmem_plugin.core.scope import Scope, resolve_scope
from langmem_plugin.errors import ConfigurationError, shown
from langmem_plugin.services.context import read_messages

__all__ = ["memory_id_of", "messages_of", "scope_of", "state_of"]


def scope_of(config: Any) -> Scope:
    """The scope of ``config`` (``None``: no ids), once it is a RunnableConfig-shaped mapping.

    Raises:
        ConfigurationError: ``config`` or its ``"configurable"`` is not a mapping.
        ScopeError: an id in it that is not one (:func:`~langmem_plugin.core.scope.exact_id`).
    """
    example = "{'configurable': {'user_id': 'u1', 'thread_id': 't1'}}"
    if config is None:
        return resolve_scope({})
    if not isinstance(config, Mapping):
        raise ConfigurationError(
            f"config must be a RunnableConfig dict, got {type(config).__name__} {shown(config)}. "
            f"Fix: pass {example}."
        )
    configurable = config.get("configurable")
    if configurable is not None and not isinstance(configurable, Mapping):
        raise ConfigurationError(
            f"config['configurable'] must be a dict of ids, got {type(configurable).__name__} "
            f"{shown(configurable)}. Fix: pass {example}."
        )
    return resolve_scope(config)


#: The roles a ``(role, content)`` pair may name (LangChain's ``convert_to_messages``).
_ROLES = frozenset({"human", "user", "ai", "assistant", "system", "developer", "tool", "function"})
_MESSAGES_FIX = (
    'Fix: pass a str, or a list of messages as a chat model takes them: [("user", "...")], '
    '[{"role": "user", "content": "..."}] or [HumanMessage("...")].'
)


def messages_of(messages: Any, method: str) -> list[BaseMessage]:
    """``messages`` as LangChain messages, read as a chat model reads its input.

    A ``str`` is one user message; a ``PromptValue`` or a single ``BaseMessage`` gives its
    messages; a list or tuple may mix ``BaseMessage`` objects, ``(role, content)`` pairs and
    ``{"role": ..., "content": ...}`` dicts (``langchain_core.messages.convert_to_messages``).

    >>> [m.type for m in messages_of([("user", "hi"), {"role": "assistant", "content": "hey"}], "recall")]
    ['human', 'ai']
    >>> messages_of("green tea", "recall")[0].content
    'green tea'

    Raises:
        ConfigurationError: ``messages`` is none of these, or holds something LangChain cannot read
            as a message (the error names its index, what it is, why and the fix) — never an
            empty recall from input that was misread.
    """
    if isinstance(messages, str):
        return [HumanMessage(messages)]
    if isinstance(messages, BaseMessage):
        return [messages]
    if isinstance(messages, PromptValue):
        return messages.to_messages()
    if not isinstance(messages, list | tuple):
        raise ConfigurationError(
            f"{method}(messages) takes a str or a list of messages, got {type(messages).__name__} "
            f"{shown(messages)}. {_MESSAGES_FIX}"
        )
    if _bare_pair(messages):
        raise ConfigurationError(
            f"{method}(messages) got one (role, content) pair {shown(messages)}, which reads as two "
            f"messages. Fix: put it in a list: [{shown(messages)}]."
        )
    return read_messages(messages, f"{method}(messages)")


def _bare_pair(messages: list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``messages`` is a ``("user", "...")`` pair itself rather than a list of messages."""
    return (
        isinstance(messages, tuple)
        and len(messages) == 2
        and isinstance(messages[0], str)
        and messages[0] in _ROLES
        and isinstance(messages[1], str)
    )


def memory_id_of(memory_id: Any) -> str:
    """``memory_id`` once it is a non-empty ``str`` (never a filter, never ``str()`` of something).

    Raises:
        ConfigurationError: anything else.
    """
    if not isinstance(memory_id, str) or not memory_id:
        raise ConfigurationError(
            f"memory_id must be a non-empty str, got {type(memory_id).__name__} {shown(memory_id)}. "
            "Fix: pass the 'id' that search_memory or Memory.recall returned."
        )
    return str.__str__(memory_id)


def state_of(state: Any, key: str, method: str) -> Any:
    """``state`` with its ``key`` messages read by :func:`messages_of` when it is a mapping (a
    graph's state as a dict may hold ``("user", "...")`` pairs; ``add_messages`` would convert them).

    Raises:
        ConfigurationError: the messages are not messages (see :func:`messages_of`).
    """
    if not isinstance(state, Mapping) or state.get(key) is None:
        return state
    return {**state, key: messages_of(state[key], method)}
