"""A LangChain callback handler: memory for a graph or chain you do not want to change.

Attach it through ``config["callbacks"]``::

    graph.invoke(inputs, {"callbacks": [memory.callback_handler()], "configurable": {...}})
    await graph.ainvoke(inputs, {"callbacks": [memory.async_callback_handler()], ...})

After each chat-model call that ends with an answer (no tool calls), it stores
the exchange — the last user message, the tools called, the answer — as an
episode: an adapter over the turn service's
:meth:`~langmem_plugin.services.turn.MemoryTurn.after_model`, the same call the
remember node and the middleware make, through the same episode writer.
It records retrievals: documents returned by retrievers and the results of
the memory tools (``search_memory``, ``get_memory``) — see :attr:`records`.

**Recall needs the node, the middleware or a wrapped model.** A LangChain callback
observes a model call; it cannot change the model's input. To put memories *into* the
prompt, add :attr:`Memory.recall_node` before your model node, use
:meth:`Memory.middleware` with ``create_agent``, or call ``memory.wrap(model)`` where your
code calls the model (:mod:`langmem_plugin.surfaces.wrap`).

The scope comes from the run's config (``configurable``: ``user_id``,
``thread_id``) and the graph's runtime context, never from model output.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from langmem_plugin.core.scope import Scope
from langmem_plugin.services.turn import MemoryTurn
from langmem_plugin.surfaces._runtime import resolve_scope_and_store

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langgraph.store.base import BaseStore

__all__ = ["AsyncMemoryCallbackHandler", "MemoryCallbackHandler"]

#: The memory tools whose results are recorded as retrievals, by default name.
RETRIEVING_TOOLS = ("search_memory", "get_memory")

_Call = tuple[list[BaseMessage], Scope, "BaseStore"]


class _Logic:
    """What both handlers do; only the write differs (sync or async)."""

    turn: MemoryTurn

    def _setup(self, turn: MemoryTurn, retrieving_tools: Iterable[str]) -> None:
        self.turn = turn
        self.records: list[dict[str, Any]] = []
        self._calls: dict[UUID, _Call] = {}
        self._tools: dict[UUID, str] = {}
        self._lock = threading.Lock()
        self.tool_names = set(retrieving_tools)

    def _start(
        self, messages: list[list[BaseMessage]], run_id: UUID, metadata: dict[str, Any] | None
    ) -> None:
        if messages:
            scope, store = resolve_scope_and_store(
                None, self.turn.store, metadata=metadata, what="the memory callback handler"
            )
            with self._lock:
                self._calls[run_id] = (list(messages[0]), scope, store)

    def _state(self, response: LLMResult, run_id: UUID) -> tuple[dict[str, Any], Scope, BaseStore] | None:
        """The model call as a turn state (its input and its answer), with its scope and store."""
        with self._lock:
            call = self._calls.pop(run_id, None)
        if call is None or not response.generations or not response.generations[0]:
            return None
        generation = response.generations[0][0]
        if not isinstance(generation, ChatGeneration) or not isinstance(generation.message, AIMessage):
            return None
        inputs, scope, store = call
        return {self.turn.keys.messages: [*inputs, generation.message]}, scope, store

    def _stored(self, update: dict[str, Any] | None) -> None:
        stored = (update or {}).get(self.turn.keys.memory_context, {}).get("stored")
        if stored:
            with self._lock:
                self.records.append(
                    {"event": "stored", "episode": stored["episode"], "compartments": stored["compartments"]}
                )

    def _forget(self, run_id: UUID) -> None:
        with self._lock:
            self._calls.pop(run_id, None)

    def _tool_start(self, serialized: dict[str, Any] | None, run_id: UUID, kwargs: dict[str, Any]) -> None:
        name = (serialized or {}).get("name") or kwargs.get("name")
        if isinstance(name, str) and name in self.tool_names:
            with self._lock:
                self._tools[run_id] = name

    def _tool_end(self, output: Any, run_id: UUID) -> None:
        with self._lock:
            name = self._tools.pop(run_id, None)
        if name is None:
            return
        content = getattr(output, "content", output)
        try:
            found = json.loads(content) if isinstance(content, str) else None
        except json.JSONDecodeError:
            found = None
        items = found if isinstance(found, list) else [found] if isinstance(found, dict) else []
        with self._lock:
            self.records.append(
                {
                    "event": "retrieved",
                    "source": f"tool:{name}",
                    "items": [
                        {"id": i.get("id"), "score": i.get("score")} for i in items if isinstance(i, dict)
                    ],
                }
            )

    def _retrieved(self, documents: Sequence[Document]) -> None:
        with self._lock:
            self.records.append(
                {
                    "event": "retrieved",
                    "source": "retriever",
                    "items": [{"id": d.id, "content": d.page_content[:200]} for d in documents],
                }
            )


class MemoryCallbackHandler(_Logic, BaseCallbackHandler):
    """Sync handler: stores an episode after each answering chat-model call, records retrievals.

    Attributes:
        records: what happened, in order: ``{"event": "stored", ...}`` and
            ``{"event": "retrieved", "source": ..., "items": [...]}``.
    """

    run_inline = True  # run in the model's own thread and context (the graph's config is visible)
    raise_error = False

    def __init__(self, turn: MemoryTurn, *, retrieving_tools: Iterable[str] = RETRIEVING_TOOLS) -> None:
        self._setup(turn, retrieving_tools)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the model's input for this call."""
        self._start(messages, run_id, metadata)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Store the exchange when the call ended with an answer."""
        call = self._state(response, run_id)
        if call is not None:
            self._stored(self.turn.after_model(*call))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the failed call's input."""
        self._forget(run_id)

    def on_tool_start(
        self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Note memory tool calls."""
        self._tool_start(serialized, run_id, kwargs)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Record what a memory tool retrieved."""
        self._tool_end(output, run_id)

    def on_retriever_end(self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any) -> None:
        """Record what a retriever returned."""
        self._retrieved(documents)


class AsyncMemoryCallbackHandler(_Logic, AsyncCallbackHandler):
    """Async handler for ``ainvoke``/``astream``: the same as :class:`MemoryCallbackHandler`."""

    run_inline = True
    raise_error = False

    def __init__(self, turn: MemoryTurn, *, retrieving_tools: Iterable[str] = RETRIEVING_TOOLS) -> None:
        self._setup(turn, retrieving_tools)

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the model's input for this call."""
        self._start(messages, run_id, metadata)

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Store the exchange when the call ended with an answer."""
        call = self._state(response, run_id)
        if call is not None:
            self._stored(await self.turn.aafter_model(*call))

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the failed call's input."""
        self._forget(run_id)

    async def on_tool_start(
        self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Note memory tool calls."""
        self._tool_start(serialized, run_id, kwargs)

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Record what a memory tool retrieved."""
        self._tool_end(output, run_id)

    async def on_retriever_end(self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any) -> None:
        """Record what a retriever returned."""
        self._retrieved(documents)
