"""``Memory``: the configuration held once, every surface taken from it.

>>> from langgraph.graph import StateGraph
>>> from langmem_plugin import Memory, MemoryState
>>> from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel
>>> memory = Memory(embeddings=FakeEmbeddings())
>>> builder = StateGraph(MemoryState)
>>> _ = memory.add_to(builder, ScriptedChatModel(["Hello!"]))
>>> graph = builder.compile(store=memory.store)
>>> out = graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"user_id": "u1", "thread_id": "t1"}})
>>> out["messages"][-1].content, out["memory_context"]["stored"]["compartments"]
('Hello!', ['user'])
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore

from langmem_plugin.core.embeddings import EmbeddingsSpec, resolve_embeddings
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.core.times import TimeLike
from langmem_plugin.errors import ConfigurationError, shown
from langmem_plugin.services import aexecute, execute
from langmem_plugin.services.agents import AgentRules
from langmem_plugin.services.context import RUN_NOTE_TOOL, ContextConfig
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.plan import PlanConfig
from langmem_plugin.services.recall import HybridRetriever, Recall, RecallConfig
from langmem_plugin.services.remember import (
    RememberConfig,
)
from langmem_plugin.services.turn import MemoryTurn, with_renamed
from langmem_plugin.services.upkeep import (
    ConsolidationConfig,
    ExtractionConfig,
    Reflector,
)
from langmem_plugin.stores import lexical_view
from langmem_plugin.surfaces._arguments import messages_of, state_of
from langmem_plugin.surfaces._default_store import LEXICAL_FIELDS, default_store, dims_given, memory_index
from langmem_plugin.surfaces._documents import DocumentMethods
from langmem_plugin.surfaces._forgetting import ForgettingMethods
from langmem_plugin.surfaces._importing import ImportingMethods
from langmem_plugin.surfaces._inspecting import InspectingMethods
from langmem_plugin.surfaces._snapshots import SnapshotMethods
from langmem_plugin.surfaces._team import TeamMethods, with_team
from langmem_plugin.surfaces.callbacks import (
    RETRIEVING_TOOLS,
    AsyncMemoryCallbackHandler,
    MemoryCallbackHandler,
)
from langmem_plugin.surfaces.nodes import ModelNode, RecallNode, RememberNode, add_memory_agent
from langmem_plugin.surfaces.plan_tools import create_plan_tools
from langmem_plugin.surfaces.result_tools import create_result_tools
from langmem_plugin.surfaces.run_tools import create_run_tools
from langmem_plugin.surfaces.tools import MEMORY_TOOL_NAMES, create_memory_tools, tool_names
from langmem_plugin.surfaces.wrap import MemoryModel

if TYPE_CHECKING:
    from langmem_plugin.surfaces.middleware import MemoryMiddleware

__all__ = [
    "LEXICAL_FIELDS",
    "Memory",
    "ToolsConfig",
    "default_store",
    "memory_index",
    "scores_are_similarities",
]

logger = logging.getLogger(__name__)


#: The tools ``Memory(tools=...)`` chooses from: the memory tools and the run note.
MEMORY_TOOLS = (*MEMORY_TOOL_NAMES, RUN_NOTE_TOOL)


@dataclass(frozen=True)
class ToolsConfig:
    """Which memory tools :attr:`Memory.tools` has, and how the model sees them.

    Attributes:
        include: ``"lean"`` (the default: ``save_memory``, ``search_memory``, ``get_memory``,
            ``update_memory``, ``delete_memory``), ``"full"`` (every tool: the others of
            ``MEMORY_TOOL_NAMES``, the destructive ``clear_memory`` and ``forget_memories`` among
            them, and ``"add_run_note"``, a note for the rest of the run), tool names, or both:
            ``("lean", "clear_memory")``. Checked when the config is made.
        names: rename tools: ``{"save_memory": "remember_fact"}``.
        instructions: text added to each tool's description (house rules for the model).
        compartments: the compartments the tools may read and write.

    Raises:
        ConfigurationError: an unknown tool or set name in ``include``.
    """

    include: str | Sequence[str] = "lean"
    names: Mapping[str, str] = field(default_factory=dict)
    instructions: str | None = None
    compartments: tuple[Compartment | str, ...] = (Compartment.USER, Compartment.SESSION)

    def __post_init__(self) -> None:
        _ = self.selected  # an unknown name raises now, not at the first memory.tools

    @property
    def selected(self) -> tuple[str, ...]:
        """The tools ``include`` selects, by default name, in order."""
        return tool_names(self.include, known=MEMORY_TOOLS, where="Memory(tools=...)")


def scores_are_similarities(store: BaseStore) -> bool:
    """Whether ``store``'s query scores are similarities (cosine) that a fixed threshold suits.

    ``False`` for stores that rank by fused ranks or BM25: QdrantStore in its default
    ``"hybrid"`` (or ``"lexical"``) mode, a CheckpointerStore with ``index={"mode": "hybrid"}``.
    """
    mode = getattr(store, "search_mode", None)  # QdrantStore and CheckpointerStore say how they rank
    index = getattr(store, "index_config", None)
    if mode is None and isinstance(index, Mapping):
        mode = index.get("mode")
    return mode in (None, "dense", "semantic")


class Memory(
    SnapshotMethods, TeamMethods, ImportingMethods, ForgettingMethods, DocumentMethods, InspectingMethods
):
    """Memory for a LangGraph / LangChain agent, configured once.

    Args:
        store: any LangGraph ``BaseStore``. ``None`` (the default): :func:`default_store`, Qdrant's
            embedded engine with hybrid (dense + BM25) recall, in a temporary directory removed when
            the memory is closed, garbage-collected or the process exits — or in ``path``.
            ``Memory(InMemoryStore())`` keeps memory in LangGraph's InMemoryStore (dense-only
            recall, see docs/stores.md).
        path: where the default store keeps memory, durably (a directory, created when missing;
            one opener at a time). Only without ``store``.
        embeddings: the embedder of the default store (ignored when ``store`` is given).
        dims: the dimension of ``embeddings``' vectors (e.g. 768). Leave it out for an embedder
            that declares it (MiniLM, OpenAI's text-embedding models); for another (an Ollama or
            vLLM server behind ``OpenAIEmbeddings(base_url=...)``) the default store learns it by
            one call at its first write or search — nothing is called while ``Memory()`` is made.
            Only without ``store``.
        layout: namespace templates and size limits of the compartments.
        agents: what each compartment is to a sub-agent (:class:`~langmem_plugin.services.agents.AgentRules`:
            shared, isolated or read-only; default: run notes and the plan each agent's own, the
            rest shared); :meth:`agent` gives one sub-agent's surfaces (docs/agents.md).
        recall: search, rank and token budgets of recall (default :class:`RecallConfig`: the
            store's dense and BM25 candidates fused, see :mod:`langmem_plugin.services.recall.retrieval`).
            With ``retrieval=None`` recall uses the store's own search; give a store whose
            scores are fused ranks or BM25 (see :func:`scores_are_similarities`) its own
            ``min_relevance`` then.
        remember: where episodes go (by default user memory when the run names a user, else the
            thread's session memory), inline or background, retries.
        context: what the model's context holds during a run (:class:`ContextConfig`):
            ``window``, how much of the conversation a :meth:`model_node` (and the middleware)
            shows the model (``WindowConfig(max_tokens=..., summary=SummaryConfig(chat_model))``
            summarizes what it would drop, into state and session memory, instead of dropping
            it); ``results``, tool results as memory
            (:class:`~langmem_plugin.services.context.results.ResultsConfig`: large results
            stored in the thread's results compartment, shown in full once, then as a citation;
            :attr:`tools` gains ``retrieve_result`` and ``query_results``; off by default);
            ``keys``, the graph state key names.
        tools: which memory tools :attr:`tools` has: ``"lean"`` (the default: save, search, read,
            update and delete one memory), ``"full"`` (every tool, the destructive
            ``clear_memory`` and ``forget_memories`` among them), tool names or both
            (``["lean", "clear_memory"]``), or a :class:`ToolsConfig` (renames, instructions,
            compartments) — see docs/tools.md.
        plan: plan mode: ``True`` (or a :class:`~langmem_plugin.services.plan.state.PlanConfig`) adds
            the plan tools to :attr:`tools`; the plan in state (``MemoryState``'s ``plan`` key)
            is rendered into the system prompt at every model call, and a completed plan is
            archived into session memory when the run ends.
        extraction: background extraction and consolidation of memories after each turn
            (``ExtractionConfig(model=...)``); off without a model (:attr:`extraction_status`).
        tokenizer_model: the chat model name whose tokenizer counts budgets and the window
            (e.g. ``"gpt-4o-mini"``; ``None``: o200k_base).

    The keywords ``model``, ``keys``, ``window`` and ``results`` of earlier versions still work
    and warn once with their new spelling (``tokenizer_model=``, ``context=ContextConfig(...)``).

    Attributes:
        store: the store every surface uses.
        writer: the episode writer shared by the remember node, middleware and callback
            (``writer.failed`` holds writes that failed every retry).
        reflector: the background extraction worker, or ``None`` (extraction off).
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        embeddings: EmbeddingsSpec | None = None,
        dims: int | None = None,
        layout: MemoryLayout | None = None,
        agents: AgentRules | None = None,
        recall: RecallConfig | None = None,
        remember: RememberConfig | None = None,
        context: ContextConfig | None = None,
        plan: bool | PlanConfig = False,
        extraction: ExtractionConfig | None = None,
        tools: ToolsConfig | str | Sequence[str] = "lean",
        tokenizer_model: str | None = None,
        **renamed: Any,
    ) -> None:
        context, model = with_renamed("Memory", context, tokenizer_model, renamed)
        if store is not None and path is not None:
            raise ConfigurationError(
                f"Memory got both a store ({type(store).__name__}) and path={shown(path)}; path= is "
                "where the default store lives. Fix: pass one of them."
            )
        if store is not None and dims is not None:
            raise ConfigurationError(
                f"Memory got both a store ({type(store).__name__}) and dims={shown(dims)}; dims= is "
                "the dimension of the default store's embedder. Fix: give the store's own index its "
                "dims (index={'dims': ..., 'embed': ...}), and leave dims= out."
            )
        if store is None:  # what can be checked without a call is checked now, not at first use
            dims = dims_given(dims)
            embeddings = resolve_embeddings(embeddings)
        self._source = StoreSource(
            store,
            lambda: default_store(embeddings, path=path, dims=dims),
            view=partial(lexical_view, fields=LEXICAL_FIELDS),
            runtime_first=path is None,
        )
        if path is not None:
            self._source.own()  # the directory is opened (and locked) now, not at first use
        self.layout = layout or MemoryLayout()
        if agents is not None:
            self.layout = dataclasses.replace(self.layout, agents=agents)
        if recall is None:
            recall = RecallConfig()
        recall = with_team(recall, self.layout)  # a team compartment: recall reads it
        recall_config = recall
        if recall_config.model is None and model is not None:
            recall_config = dataclasses.replace(recall_config, model=model)
        self.recall_config = recall_config
        self.remember_config = remember or RememberConfig()
        self.model = model
        self.context = context
        self.keys = context.keys
        self.window = context.window
        self.plan_config = plan if isinstance(plan, PlanConfig) else PlanConfig() if plan else None
        self.extraction = self._extraction_config(extraction)
        self.reflector = Reflector(self.extraction, layout=self.layout) if self.extraction.enabled else None
        logger.info(self.extraction.status)
        self.turn = MemoryTurn(
            store=self._source,
            layout=self.layout,
            recall=recall_config,
            remember=self.remember_config,
            context=context,
            tokenizer_model=model,
            plan=self.plan_config,
            reflector=self.reflector,
        )
        self.writer = self.turn.writer
        self.tools_config = tools if isinstance(tools, ToolsConfig) else ToolsConfig(include=tools)

    @property
    def store(self) -> BaseStore:
        """The store this memory was given; without one, its default store (made at first use).

        Inside a graph run, ``Memory()`` (no store, no ``path``) uses the run's store instead when
        the graph has one (see :mod:`langmem_plugin.core.store_source`); ``memory.store`` is the
        store of calls made outside any run.
        """
        return self._source.own()

    @property
    def retriever(self) -> HybridRetriever | None:
        """The hybrid retriever recall searches with (on the store of this call), or ``None`` (no
        ``recall.retrieval``)."""
        retrieval = self.recall_config.retrieval
        return HybridRetriever(self._source.now(), retrieval) if retrieval else None

    def _extraction_config(self, extraction: ExtractionConfig | None) -> ExtractionConfig:
        config = extraction or ExtractionConfig()
        given = self._source.given  # none: the default store, whose scores are fused ranks
        if config.consolidation is None and not (given is not None and scores_are_similarities(given)):
            # fused-rank scores suit no fixed threshold: the best matches go to the model
            config = dataclasses.replace(config, consolidation=ConsolidationConfig(match_threshold=None))
        return config

    @property
    def extraction_status(self) -> str:
        """Whether extraction is on, in one line (it says why when it is off)."""
        return self.extraction.status

    @property
    def tool_names(self) -> dict[str, str]:
        """The tool renames: default name → name given."""
        return dict(self.tools_config.names)

    # -- surfaces -----------------------------------------------------------------------------

    @cached_property
    def recall_node(self) -> RecallNode:
        """The node to put before the model."""
        return RecallNode(self.turn)

    @cached_property
    def remember_node(self) -> RememberNode:
        """The node to put after the model, where the run ends."""
        return RememberNode(self.turn)

    @cached_property
    def tools(self) -> list[BaseTool]:
        """The memory tools (the plan tools in plan mode, the result tools with ``results``):
        ``model.bind_tools(memory.tools)``, ``ToolNode(memory.tools)``,
        ``create_agent(model, tools=memory.tools, ...)``."""
        tools = self._memory_tools(self.tools_config) + self._team_tools()
        if RUN_NOTE_TOOL in self.tools_config.selected:
            tools += create_run_tools(layout=self.layout, keys=self.keys, agent=self.agent_name)
        tools += self._result_tools()
        if self.plan_config is not None:
            tools += create_plan_tools(
                key=self.keys.plan, messages_key=self.keys.messages, layout=self.layout, agent=self.agent_name
            )
        return tools

    def _result_tools(self) -> list[BaseTool]:
        config = self.turn.results
        if config is None:
            return []
        return create_result_tools(store=self._source, layout=self.layout, config=config, model=self.model)

    def _memory_tools(self, config: ToolsConfig) -> list[BaseTool]:
        return create_memory_tools(
            store=self._source,
            layout=self.layout,
            include=[name for name in config.selected if name != RUN_NOTE_TOOL],
            names=config.names,
            instructions=config.instructions,
            compartments=config.compartments,
        )

    def model_node(
        self,
        model: BaseChatModel,
        *,
        tools: Sequence[BaseTool] | None = None,
        instructions: str | None = None,
    ) -> ModelNode:
        """A model node: instructions + memory prompt + window; ``tools`` default to :attr:`tools`."""
        return ModelNode(
            model, turn=self.turn, tools=self.tools if tools is None else tools, instructions=instructions
        )

    def add_to(
        self,
        builder: StateGraph[Any, Any, Any, Any],
        model: BaseChatModel | Runnable[Any, Any],
        *,
        tools: Sequence[BaseTool] = (),
        instructions: str | None = None,
        names: Mapping[str, str] | None = None,
        connect: bool = True,
    ) -> StateGraph[Any, Any, Any, Any]:
        """Wire recall → model → tools (memory tools + ``tools``) → remember into ``builder``."""
        return add_memory_agent(
            builder,
            recall=self.recall_node,
            model=model,
            remember=self.remember_node,
            tools=[*self.tools, *tools],
            instructions=instructions,
            turn=self.turn,
            names=names,
            connect=connect,
        )

    def middleware(self) -> MemoryMiddleware:
        """An ``AgentMiddleware`` for ``langchain.agents.create_agent`` (in the main install)."""
        from langmem_plugin.surfaces.middleware import MemoryMiddleware

        return MemoryMiddleware(self.turn)

    def wrap(self, model: Runnable[Any, Any]) -> MemoryModel:
        """``model`` with memory, for code that calls a chat model itself: recall before every call,
        remember after an answer (:mod:`langmem_plugin.surfaces.wrap` says what it cannot do)."""
        return MemoryModel(model, self.turn, self._source)

    def callback_handler(self) -> MemoryCallbackHandler:
        """A sync callback handler for ``config["callbacks"]`` (stores episodes, records retrievals)."""
        return MemoryCallbackHandler(self.turn, retrieving_tools=self._retrieving_tools())

    def async_callback_handler(self) -> AsyncMemoryCallbackHandler:
        """The async callback handler, for ``ainvoke``/``astream`` runs."""
        return AsyncMemoryCallbackHandler(self.turn, retrieving_tools=self._retrieving_tools())

    def _retrieving_tools(self) -> list[str]:
        renamed = self.tool_names
        return [renamed.get(kind, kind) for kind in RETRIEVING_TOOLS]

    # -- direct use ---------------------------------------------------------------------------

    def messages_for_model(self, state: Any, *, instructions: str | None = None) -> list[BaseMessage]:
        """The messages your own model node should send: system (instructions + memory) + window.

        A dict state's messages may be what a chat model takes (``("user", "...")`` pairs...).
        """
        state = state_of(state, self.keys.messages, "messages_for_model")
        return self.turn.model_messages(state, instructions=instructions)

    def recall(
        self,
        messages: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        plan: Any = None,
        run_memory: Sequence[Any] | None = None,
        as_of: TimeLike | None = None,
    ) -> Recall:
        """Recall outside a graph, for the scope in ``config``.

        ``messages`` is what a chat model takes: a str (one user message), a list of messages,
        ``("user", "...")`` pairs or ``{"role": ..., "content": ...}`` dicts; the last user
        message is the query. Input that is none of these raises ``ConfigurationError``.
        ``as_of`` (a datetime, naive meaning UTC, or a date as an imported session's) recalls as
        of that time, for evaluations and backfills: recency is measured from it and memories
        written after it are left out; a time that does not read raises ``InvalidTimeError``.
        """
        scope = self._scope_of(config)
        messages = messages_of(messages, "recall")
        return self.turn.recall(
            scope, self._source.now(), messages, plan=plan, run_memory=run_memory, as_of=as_of
        )

    async def arecall(
        self,
        messages: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        plan: Any = None,
        run_memory: Sequence[Any] | None = None,
        as_of: TimeLike | None = None,
    ) -> Recall:
        """Async :meth:`recall`."""
        scope = self._scope_of(config)
        messages = messages_of(messages, "arecall")
        return await self.turn.arecall(
            scope, self._source.now(), messages, plan=plan, run_memory=run_memory, as_of=as_of
        )

    def flush(self, timeout: float | None = None) -> None:
        """Wait for background writes to finish, then run pending reflections now and wait for them
        (and for the model compactor's descriptions of tool results)."""
        self.writer.flush(timeout)
        if self.reflector is not None:
            self.reflector.flush(timeout)
        if self.turn.describer is not None:
            self.turn.describer.flush(timeout)

    async def aflush(self) -> None:
        """Async :meth:`flush`."""
        await self.writer.aflush()
        if self.reflector is not None:
            await self.reflector.aflush()
        if self.turn.describer is not None:
            await self.turn.describer.aflush()

    def close(self) -> None:
        """Finish background writes and reflections and stop their worker threads.

        The store ``Memory`` made (no ``store`` given) is closed too: a temporary one is removed
        with its directory, one at ``path`` is released for the next opener. A store you gave
        stays open.
        """
        self.writer.close()
        if self.reflector is not None:
            self.reflector.close()
        if self.turn.describer is not None:
            self.turn.describer.close()
        close = getattr(self._source.made, "close", None)  # the default store, if it was made
        if close is not None:
            close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resume(self) -> int:
        """Finish what a stopped run left part-done in the store (a ``forget_user`` or thread deletion
        killed between its batches: :mod:`~langmem_plugin.services.intents`); how many were finished.

        The first recall of this ``Memory`` on its store does it too.
        """
        store = self._source.now()
        return execute(store, self.turn.resume_steps(store))

    async def aresume(self) -> int:
        """Async :meth:`resume`."""
        store = self._source.now()
        return await aexecute(store, self.turn.resume_steps(store))

    def __repr__(self) -> str:
        return f"Memory(store={self._source!r}, model={self.model!r})"
