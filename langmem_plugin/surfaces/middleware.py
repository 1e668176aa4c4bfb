"""An ``AgentMiddleware`` for ``langchain.agents.create_agent`` (the ``agents`` extra).

::

    agent = create_agent(model, tools=memory.tools, middleware=[memory.middleware()])
    agent.invoke({"messages": [...]}, {"configurable": {"user_id": "u1", "thread_id": "t1"}})

An adapter of a few lines over the turn service
(:class:`~langmem_plugin.services.turn.MemoryTurn`), the same one the graph
nodes and the callback handler use:

- ``before_model``: :meth:`MemoryTurn.before_model` when a user message starts the
  turn; the fenced prompt and the record go into state (``memory_prompt``,
  ``memory_context``); before the other model calls, :meth:`MemoryTurn.after_tools`
  (new tool results stored, compaction decided into state);
- ``wrap_model_call``: the model sees :meth:`MemoryTurn.system_prompt` (the system
  message plus the memory prompt, with the plan section rendered from the state at this
  call) through ``request.override(system_message=...)``, and the messages with stored
  results compacted as decided, without what the conversation summary covers, within the
  window (:meth:`MemoryTurn.visible_messages`) through ``request.override(messages=...)``;
  the state is not modified;
- ``after_model``: :meth:`MemoryTurn.after_model`: when the model answered (no tool
  calls), the exchange is stored as an episode and run memory is cleared;
- ``wrap_tool_call``: a tool output too deeply nested for LangChain to write as text is an
  error message the model reads, not the end of the run
  (:func:`~langmem_plugin.surfaces._tool_output.contain_tool_call`).

LangChain (``langchain.agents``) comes with the main install; in an environment that lacks it,
importing this module raises :class:`~langmem_plugin.errors.MissingDependencyError` with the
pip line that fixes it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, NotRequired

from langchain_core.messages import SystemMessage

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import MissingDependencyError
from langmem_plugin.services.context import (
    ConversationSummary,
    RunNoteEntry,
    keep_first,
    latest,
    run_notes_reducer,
    summary_reducer,
)
from langmem_plugin.services.plan import Plan, plan_reducer
from langmem_plugin.services.turn import MemoryTurn
from langmem_plugin.surfaces._runtime import resolve_scope_and_store
from langmem_plugin.surfaces._tool_output import acontain_tool_call, contain_tool_call

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise MissingDependencyError(
        "the agent middleware needs langchain (create_agent), a dependency of langmem-plugin this "
        "environment lacks. Fix: pip install 'langchain>=1.0,<2'"
    ) from exc

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime
    from langgraph.store.base import BaseStore
    from langgraph.types import Command

__all__ = ["MemoryAgentState", "MemoryMiddleware"]


class MemoryAgentState(AgentState[Any]):
    """``create_agent``'s state plus memory's keys."""

    memory_prompt: Annotated[NotRequired[str], latest]
    memory_context: Annotated[NotRequired[dict[str, Any]], latest]
    run_memory: Annotated[NotRequired[list[RunNoteEntry]], run_notes_reducer]
    plan: NotRequired[Annotated[Plan | None, plan_reducer]]
    tool_results: Annotated[NotRequired[dict[str, Any]], keep_first]
    compacted: Annotated[NotRequired[dict[str, str]], keep_first]
    summary: Annotated[NotRequired[ConversationSummary | None], summary_reducer]


class MemoryMiddleware(AgentMiddleware[MemoryAgentState, Any, Any]):
    """Recall before the model, remember after it, for ``create_agent``.

    Args:
        turn: the turn service (``memory.turn``) whose store, layout, budgets and writer are used.
    """

    state_schema = MemoryAgentState

    def __init__(self, turn: MemoryTurn) -> None:
        super().__init__()
        self.turn = turn
        self.tools = []

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "LangMemMemory"

    def _scope(self, runtime: Runtime[Any]) -> tuple[Scope, BaseStore]:
        return resolve_scope_and_store(None, self.turn.store, runtime=runtime, what="the memory middleware")

    def before_agent(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Recall when a sub-agent starts on a conversation it was handed (a supervisor's or a
        swarm's hand-off ends with a tool message, not the user's): its first model call sees
        memory as a turn the user starts does."""
        if self.turn.starts_turn(state) or not state.get("messages"):
            return None
        scope, store = self._scope(runtime)
        return self.turn.before_model(state, scope, store) if scope.subagent else None

    async def abefore_agent(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`before_agent`."""
        if self.turn.starts_turn(state) or not state.get("messages"):
            return None
        scope, store = self._scope(runtime)
        return await self.turn.abefore_model(state, scope, store) if scope.subagent else None

    def before_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Recall when a user message starts the turn; otherwise store new tool results."""
        if not self.turn.starts_turn(state):
            return self.turn.after_tools(state, *self._scope(runtime)) or None
        return self.turn.before_model(state, *self._scope(runtime))

    async def abefore_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        if not self.turn.starts_turn(state):
            return await self.turn.aafter_tools(state, *self._scope(runtime)) or None
        return await self.turn.abefore_model(state, *self._scope(runtime))

    def _with_memory(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        request = self._with_results(request)
        current = request.system_message.text if request.system_message is not None else None
        system = self.turn.system_prompt(request.state, current)
        if system is None or system == current:
            return request
        return request.override(system_message=SystemMessage(system))

    def _with_results(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        if not self.turn.runs_after_tools:
            return request
        view: list[Any] = self.turn.visible_messages(request.state, request.messages)
        return request.override(messages=view)

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

    def after_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store the exchange when the model answered."""
        return self.turn.after_model(state, *self._scope(runtime))

    async def aafter_model(self, state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        return await self.turn.aafter_model(state, *self._scope(runtime))

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the tool; an output too deep to write as text is an error message for the model."""
        return contain_tool_call(request, handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call`."""
        return await acontain_tool_call(request, handler)
