"""Graph nodes: recall before the model, remember after it, and a helper that wires both.

Each node is an adapter of a few lines over one
:class:`~langmem_plugin.services.turn.MemoryTurn` — the turn service every
surface shares:

- :class:`RecallNode`: :meth:`MemoryTurn.before_model` — the fenced prompt text
  in ``state["memory_prompt"]``, the record of what was injected (ids, scores,
  tokens) in ``state["memory_context"]``;
- :class:`RememberNode`: :meth:`MemoryTurn.after_model` — the last exchange stored
  as an episode (inline or in the background, retried, never raising) and run
  memory cleared: place it where the run ends;
- :class:`ResultsNode`: :meth:`MemoryTurn.after_tools` — new tool results stored,
  compaction decided (``add_memory_agent`` puts it between the tools and the model
  when the turn has ``results``);
- :class:`ModelNode`: calls a chat model with :meth:`MemoryTurn.model_messages`
  (instructions, memory prompt, the conversation window);
- :func:`add_memory_agent` wires recall → model → tools → remember into an
  existing ``StateGraph`` builder.

Every node is a ``Runnable`` with a sync and an async path, so ``graph.invoke``
and ``await graph.ainvoke`` both work. State keys are configurable with
:class:`~langmem_plugin.services.turn.StateKeys`; :class:`MemoryState` is a
state to extend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.context import (
    ConversationSummary,
    RunNoteEntry,
    keep_first,
    latest,
    run_notes_reducer,
    summary_reducer,
)
from langmem_plugin.services.plan import Plan, plan_reducer
from langmem_plugin.services.turn import DEFAULT_KEYS, MemoryTurn
from langmem_plugin.surfaces._runtime import resolve_scope_and_store
from langmem_plugin.surfaces._tool_output import acontain_tool_call, contain_tool_call

__all__ = ["MemoryState", "ModelNode", "RecallNode", "RememberNode", "ResultsNode", "add_memory_agent"]


class MemoryState(MessagesState, total=False):
    """Graph state with memory's keys; extend it with your own.

    Attributes:
        memory_prompt: the fenced context recall built for the next model call (the last one
            written, when parallel agents each recall in one step).
        memory_context: what recall injected (query, ids, scores, tokens per section) and
            what remember stored (likewise the last one written).
        run_memory: notes of this run (strings; a sub-agent's own are ``{"content", "agent"}``),
            always injected, cleared when the run ends; the ``add_run_note`` tool appends to it (its
            reducer keeps parallel calls in order).
        plan: the agent's plan (:mod:`langmem_plugin.services.plan.state`), changed by the plan tools;
            its reducer merges the updates of parallel tool calls.
        tool_results: the stored tool results, by tool-call id (written once).
        compacted: the citation the model sees instead of a result, by tool-call id (decided once).
        summary: the running summary of what the window dropped
            (:mod:`langmem_plugin.services.context.summary`).
    """

    memory_prompt: Annotated[str, latest]
    memory_context: Annotated[dict[str, Any], latest]
    run_memory: Annotated[list[RunNoteEntry], run_notes_reducer]
    plan: Annotated[Plan | None, plan_reducer]
    tool_results: Annotated[dict[str, Any], keep_first]
    compacted: Annotated[dict[str, str], keep_first]
    summary: Annotated[ConversationSummary | None, summary_reducer]


class RecallNode(RunnableLambda[Any, dict[str, Any]]):
    """Recall before the model: ``memory_prompt`` and ``memory_context`` into state.

    Args:
        turn: the turn service (store, layout, budgets); ``None``: a default one that uses
            the graph's store.
        name: the node's name.
    """

    def __init__(self, turn: MemoryTurn | None = None, *, name: str = "recall") -> None:
        self.turn = turn or MemoryTurn()
        super().__init__(self._sync, afunc=self._async, name=name)

    def _sync(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.turn.store, what="the recall node")
        return self.turn.before_model(state, scope, store)

    async def _async(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.turn.store, what="the recall node")
        return await self.turn.abefore_model(state, scope, store)


class RememberNode(RunnableLambda[Any, dict[str, Any]]):
    """Remember where the run ends: the exchange as an episode; run memory cleared.

    Writes go through the turn's :class:`~langmem_plugin.services.remember.writer.EpisodeWriter`:
    inline or in the background, retried, logged, kept in ``writer.failed`` when they
    still fail — the node itself never raises because of a write.

    Args:
        turn: the turn service; ``None``: a default one that uses the graph's store.
        name: the node's name.
    """

    def __init__(self, turn: MemoryTurn | None = None, *, name: str = "remember") -> None:
        self.turn = turn or MemoryTurn()
        super().__init__(self._sync, afunc=self._async, name=name)

    def _sync(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.turn.store, what="the remember node")
        return self.turn.after_model(state, scope, store, final=True) or {}

    async def _async(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.turn.store, what="the remember node")
        return await self.turn.aafter_model(state, scope, store, final=True) or {}


class ResultsNode(RunnableLambda[Any, dict[str, Any]]):
    """After the tools: :meth:`MemoryTurn.after_tools` — new tool results stored, compaction decided.

    Args:
        turn: the turn service (with ``results``); ``None``: a default one (results off).
        name: the node's name.
    """

    def __init__(self, turn: MemoryTurn | None = None, *, name: str = "results") -> None:
        self.turn = turn or MemoryTurn()
        super().__init__(self._sync, afunc=self._async, name=name)

    def _sync(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.turn.store, what="the results node")
        return self.turn.after_tools(state, scope, store)

    async def _async(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.turn.store, what="the results node")
        return await self.turn.aafter_tools(state, scope, store)


class ModelNode(RunnableLambda[Any, dict[str, Any]]):
    """Calls a chat model on what the turn says the model sees: instructions, memory prompt, window.

    Args:
        model: the chat model.
        turn: the turn service (window, state keys, tokenizer); ``None``: a default one.
        tools: tools to bind (memory tools and yours); none binds nothing.
        instructions: the system instructions before the memory prompt.
        name: the node's name.
    """

    def __init__(
        self,
        model: BaseChatModel | Runnable[Any, Any],
        *,
        turn: MemoryTurn | None = None,
        tools: Sequence[BaseTool] = (),
        instructions: str | None = None,
        name: str = "agent",
    ) -> None:
        if tools and not isinstance(model, BaseChatModel):
            raise ConfigurationError("ModelNode(tools=...) needs a chat model that can bind_tools")
        self.model: Runnable[Any, Any] = model.bind_tools(list(tools)) if tools else model  # type: ignore[union-attr]
        self.turn = turn or MemoryTurn()
        self.instructions = instructions
        super().__init__(self._sync, afunc=self._async, name=name)

    def _sync(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = self.turn.model_messages(state, instructions=self.instructions)
        return {self.turn.keys.messages: [self.model.invoke(messages, config)]}

    async def _async(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = self.turn.model_messages(state, instructions=self.instructions)
        return {self.turn.keys.messages: [await self.model.ainvoke(messages, config)]}


def add_memory_agent(
    builder: StateGraph[Any, Any, Any, Any],
    *,
    recall: Runnable[Any, Any],
    model: BaseChatModel | Runnable[Any, Any] | Callable[..., Any],
    remember: Runnable[Any, Any],
    tools: Sequence[BaseTool] = (),
    instructions: str | None = None,
    turn: MemoryTurn | None = None,
    names: Mapping[str, str] | None = None,
    connect: bool = True,
) -> StateGraph[Any, Any, Any, Any]:
    """Add recall → model → tools → remember to ``builder``.

    ``START → recall → agent``; ``agent → tools → agent`` while the model calls
    tools; ``agent → remember → END`` when it answers.

    Args:
        builder: an existing ``StateGraph`` builder (its state must have the memory keys, e.g.
            extend :class:`MemoryState`).
        recall: the recall node (``memory.recall_node``).
        model: a chat model (wrapped in a :class:`ModelNode` with ``tools`` bound) or your own
            node that reads ``state["memory_prompt"]``.
        remember: the remember node (``memory.remember_node``).
        tools: the tools the model may call (memory tools and yours); run by a ``ToolNode``.
        instructions: system instructions (when ``model`` is a chat model).
        turn: the turn service whose state keys, window and tokenizer the model node uses
            (``memory.turn``); ``None``: the defaults.
        names: rename the nodes: keys ``recall``, ``agent``, ``tools``, ``remember`` (and ``results``:
            the :class:`ResultsNode` between tools and agent, added when ``turn.results`` is set).
        connect: add the ``START`` and ``END`` edges too; ``False`` leaves them to you.

    Returns:
        ``builder``, for chaining.
    """
    n = {"recall": "recall", "agent": "agent", "tools": "tools", "remember": "remember", "results": "results"}
    n.update(names or {})
    keys = turn.keys if turn is not None else DEFAULT_KEYS
    node: Any = model
    if isinstance(model, BaseChatModel):
        node = ModelNode(model, turn=turn, tools=tools, instructions=instructions, name=n["agent"])
    builder.add_node(n["recall"], recall)
    builder.add_node(n["agent"], node)
    builder.add_node(n["remember"], remember)
    builder.add_edge(n["recall"], n["agent"])
    if tools:
        tool_node = ToolNode(
            list(tools),
            messages_key=keys.messages,
            wrap_tool_call=contain_tool_call,  # a tool output too deep to write: an error message
            awrap_tool_call=acontain_tool_call,
        )
        builder.add_node(n["tools"], tool_node)
        builder.add_conditional_edges(
            n["agent"],
            lambda state: tools_condition(state, messages_key=keys.messages),
            {"tools": n["tools"], END: n["remember"]},
        )
        _connect_tools(builder, n, turn)
    else:
        builder.add_edge(n["agent"], n["remember"])
    if connect:
        builder.add_edge(START, n["recall"])
        builder.add_edge(n["remember"], END)
    return builder


def _connect_tools(
    builder: StateGraph[Any, Any, Any, Any], n: Mapping[str, str], turn: MemoryTurn | None
) -> None:
    """tools → agent, or tools → results → agent when the turn stores tool results or keeps a window
    (the summary of what it drops is decided there)."""
    if turn is None or not turn.runs_after_tools:
        builder.add_edge(n["tools"], n["agent"])
        return
    builder.add_node(n["results"], ResultsNode(turn, name=n["results"]))
    builder.add_edge(n["tools"], n["results"])
    builder.add_edge(n["results"], n["agent"])
