"""A LangChain callback handler: memory for a graph or chain you do not want to change.

Attach it through ``config["callbacks"]``::

    graph.invoke(inputs, {"callbacks": [memory.callback_handler()], "configurable": {...}})
    await graph.ainvoke(inputs, {"callbacks": [memory.async_callback_handler()], ...})

After each chat-model call that ends with an answer (no tool calls), it stores
the exchange — the last user message, the tools called, the answer — as an
episode (the same :func:`~langmem_plugin.services.remember_plan` the remember
node runs, through the same :class:`~langmem_plugin.services.EpisodeWriter`).
It records retrievals: documents returned by retrievers and the results of
the memory tools (``search_memory``, ``get_memory``) — see :attr:`records`.

**Recall needs the node or the middleware.** A LangChain callback observes a
model call; it cannot change the model's input. To put memories *into* the
prompt, add :attr:`Memory.recall_node` before your model node, or use
:meth:`Memory.middleware` with ``create_agent``.

The scope comes from the run's config (``configurable``: ``user_id``,
``thread_id``) and the graph's runtime context, never from model output.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from langmem_plugin.core.scope import Scope
from langmem_plugin.services._io import Plan
from langmem_plugin.services.remember import episode_from_messages, remember_plan
from langmem_plugin.surfaces._runtime import current_runtime

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langgraph.store.base import BaseStore

    from langmem_plugin.surfaces.memory import Memory

__all__ = ["AsyncMemoryCallbackHandler", "MemoryCallbackHandler"]

_RETRIEVING_TOOLS = {"search_memory", "get_memory"}


def _current_config() -> dict[str, Any]:
    from langgraph.config import get_config

    try:
        return dict(get_config())
    except RuntimeError:
        return {}


class _Logic:
    """What both handlers do; only the write differs (sync or async)."""

    memory: Memory

    def _setup(self, memory: Memory) -> None:
        self.memory = memory
        self.records: list[dict[str, Any]] = []
        self._inputs: dict[UUID, list[BaseMessage]] = {}
        self._tools: dict[UUID, str] = {}
        self._scopes: dict[UUID, Scope] = {}
        self._lock = threading.Lock()
        renamed = memory.tool_names
        self.tool_names = {renamed.get(kind, kind) for kind in _RETRIEVING_TOOLS}

    def _scope(self, metadata: dict[str, Any] | None) -> Scope:
        config = _current_config()
        configurable = {k: v for k, v in (metadata or {}).items() if isinstance(v, str)}
        configurable.update(config.get("configurable") or {})
        return Scope.from_runtime(current_runtime(), {**config, "configurable": configurable})

    def _start(
        self, messages: list[list[BaseMessage]], run_id: UUID, metadata: dict[str, Any] | None
    ) -> None:
        if messages:
            with self._lock:
                self._inputs[run_id] = list(messages[0])
                self._scopes[run_id] = self._scope(metadata)

    def _finish(self, response: LLMResult, run_id: UUID) -> tuple[BaseStore, Any, str] | None:
        with self._lock:
            inputs = self._inputs.pop(run_id, None)
            scope = self._scopes.pop(run_id, None)
        if inputs is None or scope is None or not response.generations or not response.generations[0]:
            return None
        generation = response.generations[0][0]
        if not isinstance(generation, ChatGeneration) or not isinstance(generation.message, AIMessage):
            return None
        answer = generation.message
        if answer.tool_calls:
            return None
        episode = episode_from_messages([*inputs, answer])
        if episode is None:
            return None
        memory = self.memory
        compartments = memory.remember_config.compartments

        def make() -> Plan[Any]:
            return remember_plan(scope, memory.layout, episode, compartments=compartments)

        key = episode.key(scope)
        with self._lock:
            self.records.append(
                {"event": "stored", "episode": key, "compartments": [c.value for c in compartments]}
            )
        return memory.store, make, f"episode {key}"

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

    def __init__(self, memory: Memory) -> None:
        self._setup(memory)

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
        job = self._finish(response, run_id)
        if job is not None:
            self.memory.writer.submit(*job)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the failed call's input."""
        with self._lock:
            self._inputs.pop(run_id, None)
            self._scopes.pop(run_id, None)

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

    def __init__(self, memory: Memory) -> None:
        self._setup(memory)

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
        job = self._finish(response, run_id)
        if job is not None:
            await self.memory.writer.asubmit(*job)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the failed call's input."""
        with self._lock:
            self._inputs.pop(run_id, None)
            self._scopes.pop(run_id, None)

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
