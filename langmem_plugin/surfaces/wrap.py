"""``memory.wrap(model)``: memory for a chat model you call yourself, in any graph or chain.

A one-line change for code one does not want to rewrite: where it calls ``model``, it calls
``memory.wrap(model)``. The wrapper is a Runnable that, for every call:

1. reads the scope from the call's config (``configurable``: ``user_id``, ``thread_id``) — the
   config passed in, or the one of the graph node it runs in;
2. recalls for the messages it is given, through the turn service's
   :meth:`~langmem_plugin.services.turn.MemoryTurn.before_model` — the same recall the node and
   the middleware make — and puts the fenced memory into the system message (after a system
   message of the caller's own, which it keeps first);
3. calls the model with that, and returns the model's answer unchanged;
4. remembers the exchange through :meth:`~langmem_plugin.services.turn.MemoryTurn.after_model`
   when the answer ends the turn (no tool calls), with the same episode writer.

``invoke``, ``ainvoke``, ``stream``, ``astream``, ``batch`` and ``abatch`` all do this (a stream
is remembered once it ends); ``bind_tools(...)`` gives a wrapper of the bound model.

What it cannot do: it sees only the messages it is given, so what the node and the middleware
keep in graph state (the plan, run notes, stored tool results and the window's summary) is not
there unless the caller's state gives it; and a wrapped model is a Runnable, not a
``BaseChatModel``: ``create_agent`` wants the middleware instead (:meth:`Memory.middleware`).

Why not a callback: a LangChain callback handler observes a model call; it is handed the
messages but the model call does not read back what a handler does to them, so a handler
cannot add memory to the prompt reliably. :meth:`Memory.callback_handler` stores exchanges; this
wrapper recalls and stores.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.errors import ConfigurationError, shown
from langmem_plugin.services.turn import MemoryTurn
from langmem_plugin.surfaces._runtime import resolve_scope_and_store

__all__ = ["MemoryModel"]


def _messages(value: LanguageModelInput) -> list[BaseMessage]:
    if isinstance(value, PromptValue):
        return value.to_messages()
    try:
        return convert_to_messages(value if not isinstance(value, str) else [("user", value)])
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise ConfigurationError(
            f"the wrapped model got input it cannot read as messages: {shown(value)} ({exc}). "
            'Fix: pass a string, a list of messages or of ("user", "text") tuples, or a prompt value.'
        ) from None


class MemoryModel(Runnable[LanguageModelInput, BaseMessage]):
    """A chat model with memory: recall before every call, remember after an answer.

    Args:
        model: the chat model (or any Runnable from messages to a message) to wrap.
        turn: the turn service (``memory.turn``).
        store: the store (``memory.store``); ``None``: the graph's.
    """

    def __init__(
        self, model: Runnable[Any, Any], turn: MemoryTurn, store: BaseStore | StoreSource | None = None
    ) -> None:
        if not isinstance(model, Runnable):
            raise ConfigurationError(
                f"wrap() takes a chat model (a LangChain Runnable), got {type(model).__name__}. "
                "Fix: memory.wrap(ChatOpenAI(...))."
            )
        self.model, self.turn, self.store = model, turn, store

    def __repr__(self) -> str:
        return f"MemoryModel({self.model!r})"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> MemoryModel:
        """The wrapper of ``model.bind_tools(tools, **kwargs)``."""
        bind = getattr(self.model, "bind_tools", None)
        if bind is None:
            raise ConfigurationError(
                f"{type(self.model).__name__} has no bind_tools. Fix: wrap a chat model."
            )
        return MemoryModel(bind(tools, **kwargs), self.turn, self.store)

    # -- one call ------------------------------------------------------------------------------

    def _prepare(
        self, value: LanguageModelInput, config: RunnableConfig
    ) -> tuple[list[BaseMessage], Scope, BaseStore]:
        scope, store = resolve_scope_and_store(config, self.store, what="memory.wrap(model)")
        return _messages(value), scope, store

    def _prompt(self, messages: list[BaseMessage], update: dict[str, Any]) -> list[BaseMessage]:
        keys = self.turn.keys
        own = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        rest = messages[1:] if own is not None else messages
        state = {keys.messages: rest, **update}
        instructions = own.text if own is not None else None
        return self.turn.model_messages(state, instructions=instructions)

    def _state(self, messages: list[BaseMessage], answer: BaseMessage) -> dict[str, Any]:
        return {self.turn.keys.messages: [*messages, answer]}

    def invoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> BaseMessage:
        config = ensure_config(config)
        messages, scope, store = self._prepare(input, config)
        update = self.turn.before_model({self.turn.keys.messages: messages}, scope, store)
        answer: BaseMessage = self.model.invoke(self._prompt(messages, update), config, **kwargs)
        self.turn.after_model(self._state(messages, answer), scope, store)
        return answer

    async def ainvoke(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> BaseMessage:
        config = ensure_config(config)
        messages, scope, store = self._prepare(input, config)
        update = await self.turn.abefore_model({self.turn.keys.messages: messages}, scope, store)
        answer: BaseMessage = await self.model.ainvoke(self._prompt(messages, update), config, **kwargs)
        await self.turn.aafter_model(self._state(messages, answer), scope, store)
        return answer

    def stream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[BaseMessage]:
        config = ensure_config(config)
        messages, scope, store = self._prepare(input, config)
        update = self.turn.before_model({self.turn.keys.messages: messages}, scope, store)
        whole = _Whole()
        for chunk in self.model.stream(self._prompt(messages, update), config, **kwargs):
            whole.add(chunk)
            yield chunk
        if (answer := whole.message()) is not None:
            self.turn.after_model(self._state(messages, answer), scope, store)

    async def astream(
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[BaseMessage]:
        config = ensure_config(config)
        messages, scope, store = self._prepare(input, config)
        update = await self.turn.abefore_model({self.turn.keys.messages: messages}, scope, store)
        whole = _Whole()
        async for chunk in self.model.astream(self._prompt(messages, update), config, **kwargs):
            whole.add(chunk)
            yield chunk
        if (answer := whole.message()) is not None:
            await self.turn.aafter_model(self._state(messages, answer), scope, store)


class _Whole:
    """The answer a stream adds up to: its chunks summed, or the one whole message a model that does
    not stream yields."""

    def __init__(self) -> None:
        self.chunks: AIMessageChunk | None = None
        self.full: AIMessage | None = None

    def add(self, chunk: Any) -> None:
        if isinstance(chunk, AIMessageChunk):
            self.chunks = chunk if self.chunks is None else self.chunks + chunk
        elif isinstance(chunk, AIMessage):
            self.full = chunk

    def message(self) -> BaseMessage | None:
        if self.chunks is not None:
            return message_chunk_to_message(self.chunks)
        return self.full
