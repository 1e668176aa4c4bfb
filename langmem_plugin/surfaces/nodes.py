"""Graph nodes: recall before the model, remember after it, and a helper that wires both.

- :class:`RecallNode` runs :func:`~langmem_plugin.services.recall_plan` and puts
  the fenced prompt text in ``state["memory_prompt"]`` and the record of what
  was injected (ids, scores, tokens) in ``state["memory_context"]``.
- :class:`RememberNode` stores the last exchange as an episode
  (:func:`~langmem_plugin.services.remember_plan`, inline or in the background,
  retried, never raising) and clears run memory: place it where the run ends.
- :class:`ModelNode` calls a chat model with the instructions, the memory prompt
  and the (trimmed) conversation window.
- :func:`add_memory_agent` wires recall → model → tools → remember into an
  existing ``StateGraph`` builder.

Every node is a ``Runnable`` with a sync and an async path over the same plan,
so ``graph.invoke`` and ``await graph.ainvoke`` both work. State keys are
configurable with :class:`StateKeys`; :class:`MemoryState` is a state to extend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services._io import Plan, aexecute, execute
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.recall import Recall, RecallConfig, recall_plan
from langmem_plugin.services.remember import (
    EpisodeWriter,
    RememberConfig,
    episode_from_messages,
    remember_plan,
)
from langmem_plugin.services.retrieval import HybridRetriever
from langmem_plugin.services.window import trim_window
from langmem_plugin.surfaces._runtime import resolve_scope_and_store

__all__ = [
    "DEFAULT_KEYS",
    "MemoryState",
    "ModelNode",
    "RecallNode",
    "RememberNode",
    "StateKeys",
    "WindowConfig",
    "add_memory_agent",
    "model_messages",
]


class MemoryState(MessagesState, total=False):
    """Graph state with memory's keys; extend it with your own.

    Attributes:
        memory_prompt: the fenced context recall built for the next model call.
        memory_context: what recall injected (query, ids, scores, tokens per section) and
            what remember stored.
        run_memory: notes of this run (strings), always injected, cleared when the run ends.
    """

    memory_prompt: str
    memory_context: dict[str, Any]
    run_memory: list[str]


@dataclass(frozen=True)
class StateKeys:
    """The names of the state keys the memory nodes read and write."""

    messages: str = "messages"
    memory_prompt: str = "memory_prompt"
    memory_context: str = "memory_context"
    run_memory: str = "run_memory"
    plan: str = "plan"


@dataclass(frozen=True)
class WindowConfig:
    """How much of the conversation the model sees (the checkpointed history is not changed).

    Attributes:
        max_turns: the last this many user turns (``None``: all).
        max_tokens: at most this many tokens of messages (``None``: no limit).
    """

    max_turns: int | None = None
    max_tokens: int | None = None


#: The default state key names.
DEFAULT_KEYS = StateKeys()


def _get(state: Any, key: str, default: Any = None) -> Any:
    if isinstance(state, Mapping):
        return state.get(key, default)
    return getattr(state, key, default)


def model_messages(
    state: Any,
    *,
    instructions: str | None = None,
    keys: StateKeys = DEFAULT_KEYS,
    window: WindowConfig | None = None,
    model: str | None = None,
) -> list[BaseMessage]:
    """The messages for the model: one system message (instructions + memory prompt), then the window.

    >>> from langchain_core.messages import HumanMessage
    >>> state = {"messages": [HumanMessage("hi")], "memory_prompt": "<memory_context>...</memory_context>"}
    >>> msgs = model_messages(state, instructions="Be brief.")
    >>> [m.type for m in msgs], msgs[0].content.splitlines()[0]
    (['system', 'human'], 'Be brief.')
    """
    messages: list[BaseMessage] = list(_get(state, keys.messages) or [])
    if window is not None and (window.max_turns or window.max_tokens):
        messages = trim_window(
            messages, max_turns=window.max_turns, max_tokens=window.max_tokens, model=model
        )
    parts = [p for p in (instructions, _get(state, keys.memory_prompt)) if p]
    if not parts:
        return messages
    return [SystemMessage("\n\n".join(parts)), *messages]


class _DualNode(RunnableLambda[Any, dict[str, Any]]):
    """A node with one plan and two I/O paths."""

    def __init__(self, name: str, store: BaseStore | None) -> None:
        self.store = store
        super().__init__(self._sync, afunc=self._async, name=name)

    def prepare(
        self, state: Any, scope: Scope, store: BaseStore | None = None
    ) -> tuple[Plan[Any] | None, Callable[[Any], dict[str, Any]]]:
        """The plan this node runs for ``state`` against ``store``, and how its result becomes the update."""
        raise NotImplementedError

    def _sync(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.store, what=f"the {self.name} node")
        plan, finish = self.prepare(state, scope, store)
        return finish(execute(store, plan) if plan is not None else None)

    async def _async(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.store, what=f"the {self.name} node")
        plan, finish = self.prepare(state, scope, store)
        return finish(await aexecute(store, plan) if plan is not None else None)


class RecallNode(_DualNode):
    """Recall before the model: ``memory_prompt`` and ``memory_context`` into state.

    Args:
        store: the store (``None``: the graph's store).
        layout: namespace templates of the compartments.
        config: search, rank and token budgets.
        keys: state key names.
        retriever: with ``config.retrieval``, the retriever to search ``store`` with (shared by
            one ``Memory``); otherwise the node makes one per store and keeps it, so the
            lexical index is built once.
    """

    def __init__(
        self,
        *,
        store: BaseStore | None = None,
        layout: MemoryLayout | None = None,
        config: RecallConfig | None = None,
        keys: StateKeys = DEFAULT_KEYS,
        name: str = "recall",
        retriever: HybridRetriever | None = None,
    ) -> None:
        self.layout = layout or MemoryLayout()
        self.config = config or RecallConfig()
        self.keys = keys
        self._retrievers: dict[int, HybridRetriever] = {}
        if retriever is not None:
            self._retrievers[id(retriever.store)] = retriever
        self._lock = threading.Lock()
        super().__init__(name, store)

    def retriever_for(self, store: BaseStore | None) -> HybridRetriever | None:
        """The retriever recall searches ``store`` with (``None`` without ``config.retrieval``)."""
        if self.config.retrieval is None:
            return None
        store = store if store is not None else self.store
        if store is None:
            raise ConfigurationError(
                "the recall node has no store: compile the graph with a store or pass RecallNode(store=...)"
            )
        with self._lock:
            found = self._retrievers.get(id(store))
            if found is None or found.store is not store:  # the retriever holds its store: ids stay unique
                found = self._retrievers[id(store)] = HybridRetriever(store, self.config.retrieval)
            return found

    def prepare(
        self, state: Any, scope: Scope, store: BaseStore | None = None
    ) -> tuple[Plan[Any] | None, Callable[[Any], dict[str, Any]]]:
        """The recall plan for ``state`` against ``store``, and its state update (used by the middleware)."""
        plan = recall_plan(
            scope,
            self.layout,
            _get(state, self.keys.messages) or [],
            config=self.config,
            plan=_get(state, self.keys.plan),
            run_memory=_get(state, self.keys.run_memory),
            retriever=self.retriever_for(store),
        )

        def finish(recall: Recall) -> dict[str, Any]:
            return {self.keys.memory_prompt: recall.prompt, self.keys.memory_context: recall.record()}

        return plan, finish


class RememberNode(_DualNode):
    """Remember after the model: the exchange as an episode; run memory cleared.

    Writes go through an :class:`~langmem_plugin.services.EpisodeWriter`: inline or
    in the background, retried, logged, kept in ``writer.failed`` when they still
    fail — the node itself never raises because of a write.

    Args:
        store: the store (``None``: the graph's store).
        layout: namespace templates of the compartments.
        config: where episodes go, background or inline, retries.
        writer: the writer to use (shared with other surfaces of one ``Memory``).
        keys: state key names.
    """

    def __init__(
        self,
        *,
        store: BaseStore | None = None,
        layout: MemoryLayout | None = None,
        config: RememberConfig | None = None,
        writer: EpisodeWriter | None = None,
        keys: StateKeys = DEFAULT_KEYS,
        name: str = "remember",
    ) -> None:
        self.layout = layout or MemoryLayout()
        self.config = config or RememberConfig()
        self.writer = writer or EpisodeWriter.from_config(self.config)
        self.keys = keys
        super().__init__(name, store)

    def update(self, state: Any, stored: dict[str, Any] | None) -> dict[str, Any]:
        """The state update: run memory cleared, what was stored added to ``memory_context``."""
        update: dict[str, Any] = {self.keys.run_memory: []}
        context = dict(_get(state, self.keys.memory_context) or {})
        context["stored"] = stored
        update[self.keys.memory_context] = context
        return update

    def job(self, state: Any, scope: Scope) -> tuple[Callable[[], Plan[Any]], dict[str, Any]] | None:
        """The write to submit for ``state`` (a plan factory, for retries) and its description.

        ``None`` when the state holds no answered user message.
        """
        episode = episode_from_messages(_get(state, self.keys.messages) or [])
        if episode is None:
            return None
        compartments = self.config.compartments

        def make() -> Plan[Any]:
            return remember_plan(scope, self.layout, episode, compartments=compartments)

        stored = {
            "episode": episode.key(scope),
            "compartments": [c.value for c in compartments],
            "mode": "background" if self.writer.background else "inline",
        }
        return make, stored

    def _sync(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.store, what="the remember node")
        job = self.job(state, scope)
        if job is not None:
            self.writer.submit(store, job[0], f"episode {job[1]['episode']}")
        return self.update(state, job[1] if job else None)

    async def _async(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        scope, store = resolve_scope_and_store(config, self.store, what="the remember node")
        job = self.job(state, scope)
        if job is not None:
            await self.writer.asubmit(store, job[0], f"episode {job[1]['episode']}")
        return self.update(state, job[1] if job else None)


class ModelNode(RunnableLambda[Any, dict[str, Any]]):
    """Calls a chat model on instructions + memory prompt + the conversation window.

    Args:
        model: the chat model.
        tools: tools to bind (memory tools and yours); none binds nothing.
        instructions: the system instructions before the memory prompt.
        keys: state key names.
        window: how much of the conversation the model sees.
        token_model: the model name whose tokenizer counts the window (``None``: o200k_base).
    """

    def __init__(
        self,
        model: BaseChatModel | Runnable[Any, Any],
        *,
        tools: Sequence[BaseTool] = (),
        instructions: str | None = None,
        keys: StateKeys = DEFAULT_KEYS,
        window: WindowConfig | None = None,
        token_model: str | None = None,
        name: str = "agent",
    ) -> None:
        if tools and not isinstance(model, BaseChatModel):
            raise ConfigurationError("ModelNode(tools=...) needs a chat model that can bind_tools")
        self.model: Runnable[Any, Any] = model.bind_tools(list(tools)) if tools else model  # type: ignore[union-attr]
        self.instructions = instructions
        self.keys = keys
        self.window = window
        self.token_model = token_model
        super().__init__(self._sync, afunc=self._async, name=name)

    def _messages(self, state: Any) -> list[BaseMessage]:
        return model_messages(
            state, instructions=self.instructions, keys=self.keys, window=self.window, model=self.token_model
        )

    def _sync(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {self.keys.messages: [self.model.invoke(self._messages(state), config)]}

    async def _async(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {self.keys.messages: [await self.model.ainvoke(self._messages(state), config)]}


def add_memory_agent(
    builder: StateGraph[Any, Any, Any, Any],
    *,
    recall: Runnable[Any, Any],
    model: BaseChatModel | Runnable[Any, Any] | Callable[..., Any],
    remember: Runnable[Any, Any],
    tools: Sequence[BaseTool] = (),
    instructions: str | None = None,
    keys: StateKeys = DEFAULT_KEYS,
    window: WindowConfig | None = None,
    token_model: str | None = None,
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
        keys: state key names.
        window: how much of the conversation the model sees (when ``model`` is a chat model).
        token_model: the model name whose tokenizer counts the window.
        names: rename the nodes: keys ``recall``, ``agent``, ``tools``, ``remember``.
        connect: add the ``START`` and ``END`` edges too; ``False`` leaves them to you.

    Returns:
        ``builder``, for chaining.
    """
    n = {"recall": "recall", "agent": "agent", "tools": "tools", "remember": "remember", **dict(names or {})}
    if isinstance(model, BaseChatModel):
        node: Any = ModelNode(
            model,
            tools=tools,
            instructions=instructions,
            keys=keys,
            window=window,
            token_model=token_model,
            name=n["agent"],
        )
    else:
        node = model
    builder.add_node(n["recall"], recall)
    builder.add_node(n["agent"], node)
    builder.add_node(n["remember"], remember)
    builder.add_edge(n["recall"], n["agent"])
    if tools:
        builder.add_node(n["tools"], ToolNode(list(tools), messages_key=keys.messages))
        builder.add_conditional_edges(
            n["agent"],
            lambda state: tools_condition(state, messages_key=keys.messages),
            {"tools": n["tools"], END: n["remember"]},
        )
        builder.add_edge(n["tools"], n["agent"])
    else:
        builder.add_edge(n["agent"], n["remember"])
    if connect:
        builder.add_edge(START, n["recall"])
        builder.add_edge(n["remember"], END)
    return builder
