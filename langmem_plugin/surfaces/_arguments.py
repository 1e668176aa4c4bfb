"""Checks of what a caller hands :class:`~langmem_plugin.Memory` directly, before any store call.

A value of the wrong type raises a typed error that names it and the fix, instead of an
``AttributeError`` from deep inside (``config="t1"``, ``recall("hi")``, ``history(None)``) or,
worse, a call that quietly does something else (a ``str`` read as a list of one-letter
messages, a dict id read as a filter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_plugin.core.scope import Scope, resolve_scope
from langmem_plugin.errors import ConfigurationError, shown

__all__ = ["memory_id_of", "messages_of", "scope_of"]


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


def messages_of(messages: Any, method: str) -> list[BaseMessage]:
    """``messages`` as a list, once it is a list or tuple of LangChain messages.

    Raises:
        ConfigurationError: ``messages`` is not a list or tuple, or holds something that is not
            a ``BaseMessage`` (the message names its index).
    """
    if not isinstance(messages, list | tuple):
        raise ConfigurationError(
            f"{method}(messages) takes a list of LangChain messages, got {type(messages).__name__} "
            f"{shown(messages)}. Fix: pass [HumanMessage('...')]."
        )
    for index, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise ConfigurationError(
                f"{method}(messages): messages[{index}] is {type(message).__name__} {shown(message)}, "
                "not a LangChain message. Fix: pass HumanMessage/AIMessage objects (for dicts or "
                "(role, content) pairs: langchain_core.messages.convert_to_messages)."
            )
    return list(messages)


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
