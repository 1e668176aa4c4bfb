"""An ``AgentMiddleware`` for ``langchain.agents.create_agent`` (the ``agents`` extra).

::

    agent = create_agent(model, tools=memory.tools, middleware=[memory.middleware()])
    agent.invoke({"messages": [...]}, {"configurable": {"user_id": "u1", "thread_id": "t1"}})

- ``before_model``: recall (the same plan as the recall node) when the turn starts
  with a user message; the fenced prompt and the record go into state
  (``memory_prompt``, ``memory_context``).
- ``wrap_model_call``: the model sees the system message plus the memory prompt,
  through ``request.override(system_message=...)``; the state is not modified.
- ``after_model``: when the model answered (no tool calls), the exchange is stored
  as an episode (the same plan and writer as the remember node) and run memory is cleared.

Needs ``pip install 'langmem-plugin[agents]'``; without it, importing this module
raises :class:`~langmem_plugin.errors.MissingDependencyError` with that line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NotRequired

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from langmem_plugin.errors import MissingDependencyError
from langmem_plugin.services._io import aexecute, execute
from langmem_plugin.surfaces._runtime import resolve_scope_and_store

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise MissingDependencyError(
        "the agent middleware needs langchain (create_agent). Fix: pip install 'langmem-plugin[agents]'"
    ) from exc

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from langmem_plugin.core.scope import Scope
    from langmem_plugin.surfaces.memory import Memory

__all__ = ["MemoryAgentState", "MemoryMiddleware"]


class MemoryAgentState(AgentState[Any]):
    """``create_agent``'s state plus memory's keys."""

    memory_prompt: NotRequired[str]
    memory_context: NotRequired[dict[str, Any]]
    run_memory: NotRequired[list[str]]


def _config() -> RunnableConfig | None:
    from langgraph.config import get_config

    try:
        return get_config()
    except RuntimeError:
        return None


def _starts_turn(state: Any) -> bool:
    messages = state.get("messages") or []
    return bool(messages) and isinstance(messages[-1], HumanMessage)


def _answered(state: Any) -> bool:
    messages = state.get("messages") or []
    return bool(messages) and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls


class MemoryMiddleware(AgentMiddleware[MemoryAgentState, Any, Any]):
    """Recall before the model, remember after it, for ``create_agent``.

    Args:
        memory: the :class:`~langmem_plugin.Memory` whose store, layout, budgets and writer are used.
    """

    state_schema = MemoryAgentState

    def __init__(self, memory: Memory) -> None:
        super().__init__()
        self.memory = memory
        self.tools = []

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "LangMemMemory"

    def _scope(self, runtime: Runtime[Any]) -> tuple[Scope, Any]:
        return resolve_scope_and_store(
            _config(), self.memory.store, runtime=runtime, what="the memory middleware"
        )

    # -- recall -------------------------------------------------------------------------------

    def before_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Recall when a user message starts the turn."""
        if not _starts_turn(state):
            return None
        scope, store = self._scope(runtime)
        plan, finish = self.memory.recall_node.prepare(state, scope, store)
        return finish(execute(store, plan) if plan is not None else None)

    async def abefore_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        if not _starts_turn(state):
            return None
        scope, store = self._scope(runtime)
        plan, finish = self.memory.recall_node.prepare(state, scope, store)
        return finish(await aexecute(store, plan) if plan is not None else None)

    def _with_memory(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        prompt = request.state.get(self.memory.keys.memory_prompt)
        if not prompt:
            return request
        current = request.system_message.text if request.system_message is not None else ""
        text = f"{current}\n\n{prompt}" if current else str(prompt)
        return request.override(system_message=SystemMessage(text))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        """Call the model with the memory prompt after the system message."""
        return handler(self._with_memory(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        return await handler(self._with_memory(request))

    # -- remember -----------------------------------------------------------------------------

    def after_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store the exchange when the model answered."""
        if not _answered(state):
            return None
        scope, store = self._scope(runtime)
        node = self.memory.remember_node
        job = node.job(state, scope)
        if job is not None:
            self.memory.writer.submit(store, job[0], f"episode {job[1]['episode']}")
        return node.update(state, job[1] if job else None)

    async def aafter_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        if not _answered(state):
            return None
        scope, store = self._scope(runtime)
        node = self.memory.remember_node
        job = node.job(state, scope)
        if job is not None:
            await self.memory.writer.asubmit(store, job[0], f"episode {job[1]['episode']}")
        return node.update(state, job[1] if job else None)
