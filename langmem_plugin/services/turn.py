"""The turn service: the one entry every surface calls, before the model and after it.

A graph node, the ``create_agent`` middleware, the callback handler and
:class:`~langmem_plugin.Memory` itself are adapters of a few lines over one
:class:`MemoryTurn`. A feature of a turn is written here once and every
surface has it.

- **Before the model** (:meth:`MemoryTurn.before_model`): the recall query from
  the state's messages (and the agent's plan), the search, rank and token fit of
  :mod:`~langmem_plugin.services.recall.rank`, and the state update that carries what
  to inject (``memory_prompt``) and the record of it (``memory_context``).
  :meth:`MemoryTurn.model_messages` and :meth:`MemoryTurn.system_prompt` say what
  the model sees: the instructions, the memory prompt, the conversation window.
- **The plan** (``state["plan"]``, :mod:`~langmem_plugin.services.plan.state`): its goal
  joins the recall query, but its section is not part of the memory prompt:
  :meth:`MemoryTurn.system_prompt` renders it from the state it is given, inside the
  same fence, within ``budgets.plan`` tokens — so every model call (each call of a
  model node, each ``wrap_model_call`` of the middleware) sees the plan as the plan
  tools left it, whatever the window or a summarizer did to the messages.
- **After the model** (:meth:`MemoryTurn.after_model`): when the turn ended with
  an answer, the exchange is written as an episode through the shared
  :class:`~langmem_plugin.services.remember.writer.EpisodeWriter` (inline or in the
  background, retried, never raising into the run), and the state update clears
  run memory and records what was written. In plan mode (``plan=PlanConfig()``) a
  completed plan is archived into session memory (kind ``plan``) through the same
  writer and cleared from state; a plan whose lifetime is the run is cleared too.
  With a reflector, the finished turn is handed to background extraction and consolidation
  (:class:`~langmem_plugin.services.upkeep.reflection.Reflector`, debounced per thread).
- **After the tools** (:meth:`MemoryTurn.after_tools`, also run by ``before_model``): tool results
  stored and their compaction decided, what the window would drop summarized — the context's half
  of the turn (:mod:`~langmem_plugin.services.context.context_turn`), which
  :meth:`MemoryTurn.model_messages` also asks what the model sees of the window.

Each half is written once as steps over a store (no I/O); the sync and async
methods only choose the driver (:func:`~langmem_plugin.services.store_steps.execute` or
:func:`~langmem_plugin.services.store_steps.aexecute`).

>>> from langchain_core.messages import AIMessage, HumanMessage
>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.core.scope import Scope
>>> turn = MemoryTurn()
>>> store = InMemoryStore()
>>> scope = Scope(user_id="u1", thread_id="t1")
>>> done = turn.after_model({"messages": [HumanMessage("I like tea"), AIMessage("Noted.")]}, scope, store)
>>> done["memory_context"]["stored"]["compartments"]
['user']
>>> update = turn.before_model({"messages": [HumanMessage("What do I like?")]}, scope, store)
>>> "I like tea" in update["memory_prompt"]
True
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import BaseStore

from langmem_plugin.core.fence import add_section
from langmem_plugin.core.record import exchange_link
from langmem_plugin.core.renamed import renamed_keywords
from langmem_plugin.core.scope import Scope, resolve_scope
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.core.times import TimeLike
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError, ScopeError
from langmem_plugin.services.context import (
    DEFAULT_KEYS,
    ContextConfig,
    ContextTurn,
    StateKeys,
    SummarySteps,
    WindowConfig,
    run_notes_cleared,
    state_value,
    summary_section,
    visible_notes,
)
from langmem_plugin.services.knowledge import resume_knowledge_steps
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.plan import (
    Plan,
    PlanConfig,
    archive_key,
    archive_steps,
    owns_plan_lifetime,
    render_plan,
    visible_plan,
)
from langmem_plugin.services.recall import Recall, RecallConfig, query_from_state, recall_steps, run_section
from langmem_plugin.services.remember import (
    EpisodeWriter,
    RememberConfig,
    episode_from_messages,
    remember_steps,
)
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute
from langmem_plugin.services.upkeep import Reflector, index_thread_ops, resume_forgetting_steps

__all__ = [
    "DEFAULT_KEYS",
    "ContextConfig",
    "EpisodeWrite",
    "MemoryTurn",
    "PlanConfig",
    "StateKeys",
    "StoreWrite",
    "WindowConfig",
    "state_value",
]


#: The keywords of :class:`MemoryTurn` (and of ``Memory``) that moved, and where they went.
RENAMED_KEYWORDS = {
    "model": "tokenizer_model=...",
    "keys": "context=ContextConfig(keys=...)",
    "window": "context=ContextConfig(window=...)",
    "results": "context=ContextConfig(results=...)",
}


def with_renamed(
    owner: str, context: ContextConfig | None, tokenizer_model: str | None, renamed: Mapping[str, Any]
) -> tuple[ContextConfig, str | None]:
    """``context`` and ``tokenizer_model`` with the old keywords in ``renamed`` folded in (each
    warns once with its new spelling); a keyword given both ways is a ``ConfigurationError``."""
    old = renamed_keywords(owner, renamed, RENAMED_KEYWORDS, stacklevel=4)
    if not old:
        return context or ContextConfig(), tokenizer_model
    if "model" in old:
        if tokenizer_model is not None:
            raise ConfigurationError(f"{owner}: give tokenizer_model= only (model= is its old spelling)")
        tokenizer_model = old.pop("model")
    if old and context is not None:
        raise ConfigurationError(
            f"{owner}: give context=ContextConfig(...) only, not also {sorted(old)} (their old spelling)"
        )
    return ContextConfig(**old), tokenizer_model


#: A write to submit to the writer: steps made anew for each attempt, how logs name it, and the
#: namespaces it adds items to (their item limits are held while it runs).
StoreWrite: TypeAlias = tuple[Callable[[], StoreSteps[Any]], str, tuple[tuple[str, ...], ...]]


@dataclass(frozen=True)
class EpisodeWrite:
    """An episode write, ready to submit: steps made anew for each attempt, and what it stores."""

    make_steps: Callable[[], StoreSteps[Any]]
    stored: dict[str, Any]
    rooms: tuple[tuple[str, ...], ...] = ()

    @property
    def what(self) -> str:
        """How the write is named in logs and in ``EpisodeWriter.failed``."""
        return f"episode {self.stored['episode']}"


class MemoryTurn:
    """One turn of an agent's memory, for every surface.

    Args:
        store: the store; ``None`` means the store passed to each call (the graph's).
        layout: namespace templates and limits of the compartments.
        recall: search, rank and token budgets of recall.
        remember: where episodes go, inline or background, retries.
        writer: the episode writer (default: one made from ``remember``).
        context: the window, tool results as memory and the state key names
            (:class:`ContextConfig`).
        tokenizer_model: the chat model name whose tokenizer counts the window (``None``:
            o200k_base).
        plan: plan mode (the plan's lifetime and archive); ``None``: off. A plan in state is
            shown to the model either way.
        reflector: background extraction and consolidation, scheduled when a turn ends with an
            answer (``None``: no extraction).
    """

    def __init__(
        self,
        *,
        store: BaseStore | StoreSource | None = None,
        layout: MemoryLayout | None = None,
        recall: RecallConfig | None = None,
        remember: RememberConfig | None = None,
        writer: EpisodeWriter | None = None,
        context: ContextConfig | None = None,
        tokenizer_model: str | None = None,
        plan: PlanConfig | None = None,
        reflector: Reflector | None = None,
        **renamed: Any,
    ) -> None:
        context, tokenizer_model = with_renamed("MemoryTurn", context, tokenizer_model, renamed)
        self.store = store
        self.context = context
        self.context_turn = ContextTurn(context, model=tokenizer_model)  # after the tools, the window
        self.results = context.results
        self.layout = layout or MemoryLayout()
        self.recall_config = recall or RecallConfig()
        self.remember_config = remember or RememberConfig()
        self.writer = writer or EpisodeWriter.from_config(self.remember_config)
        self.keys = context.keys
        self.window = context.window
        self.model = tokenizer_model
        self.plan_config = plan
        self._lock = threading.Lock()
        self.reflector = reflector
        self.describer = self.context_turn.describer  # the model compactor
        self._indexed: set[tuple[int, str | None, str | None]] = set()
        self._resumed: set[int] = set()  # the stores whose unfinished operations were finished

    def for_agent(self, store: BaseStore | StoreSource | None, layout: MemoryLayout) -> MemoryTurn:
        """This turn with another store source and layout (a sub-agent's: ``memory.agent(name)``),
        sharing its writer, reflector and configuration."""
        turn = copy.copy(self)
        turn.store, turn.layout = store, layout
        return turn

    # -- recall -------------------------------------------------------------------------------

    def recall_steps(
        self,
        scope: Scope,
        store: BaseStore,
        messages: Sequence[AnyMessage | BaseMessage],
        *,
        plan: Any = None,
        run_memory: Sequence[Any] | None = None,
        query: str | None = None,
        as_of: TimeLike | None = None,
        shown: Sequence[str] | None = None,
    ) -> StoreSteps[Recall]:
        """The steps of one recall for ``messages`` (and the agent's ``plan``) against ``store``.

        Compartments whose namespace ``scope`` cannot fill (user memory in a run without a user
        id) are not searched, as long as one is left (:func:`~.recall.recall_steps`); with none
        left the recall raises :class:`~langmem_plugin.errors.ScopeError`. ``as_of``: recall as
        it would have been then (recency from it, nothing written after it; see
        :func:`~.recall.recall_steps`). ``shown``: the ids of the messages the model sees with this
        recall; their exchanges are not recalled again.

        The first recall on a store first finishes what a stopped run left part-done there
        (:meth:`resume_steps`).
        """
        steps = recall_steps(
            scope,
            self.layout,
            messages,
            config=self.recall_config,
            plan=plan,
            run_memory=run_memory,
            query=query,
            as_of=as_of,
            shown=shown,
        )
        return steps if id(store) in self._resumed else self._resumed_first(store, steps)

    def resume_steps(self, store: BaseStore) -> StoreSteps[int]:
        """Finish every operation of several batches a stopped run left part-done on ``store``
        (``forget_user``, thread deletions, document re-adds: their intents,
        :mod:`~langmem_plugin.services.intents`); returns how many were finished."""
        finished: int = yield from resume_forgetting_steps(self.layout)
        finished += yield from resume_knowledge_steps()
        with self._lock:
            self._resumed.add(id(store))
        return finished

    def _resumed_first(self, store: BaseStore, steps: StoreSteps[Recall]) -> StoreSteps[Recall]:
        yield from self.resume_steps(store)
        return (yield from steps)

    def recall(self, scope: Scope, store: BaseStore, messages: Sequence[BaseMessage], **state: Any) -> Recall:
        """Recall for ``messages``; ``state`` may give ``plan``, ``run_memory`` and ``as_of``."""
        return execute(store, self.recall_steps(scope, store, messages, **state))

    async def arecall(
        self, scope: Scope, store: BaseStore, messages: Sequence[BaseMessage], **state: Any
    ) -> Recall:
        """Async :meth:`recall`."""
        return await aexecute(store, self.recall_steps(scope, store, messages, **state))

    # -- before the model ---------------------------------------------------------------------

    def starts_turn(self, state: Any) -> bool:
        """Whether the state's last message is the user's: a new turn, for a hook run on every call."""
        messages = state_value(state, self.keys.messages) or []
        return bool(messages) and isinstance(messages[-1], HumanMessage)

    def _recall_input(self, state: Any, scope: Scope) -> tuple[list[BaseMessage], dict[str, Any]]:
        keys = self.keys
        messages = list(state_value(state, keys.messages) or [])
        # The plan's goal joins the query; its section and the run's notes are not part of the
        # memory prompt but rendered from the state at each model call (system_prompt), so they
        # are never stale: a note the model adds shows in its next call.
        query = query_from_state(messages, self._plan(state, scope))
        # an exchange the model is shown anyway (in its window) is not recalled into the prompt too
        shown = [m.id for m in self.visible_messages(state, messages) if m.id]
        return messages, {"query": query, "shown": shown}

    def _update(self, recall: Recall, state: Any, scope: Scope) -> dict[str, Any]:
        record = recall.record()
        model = self.recall_config.model
        record["tokens"]["plan"] = count_tokens(self.plan_section(state, scope), model=model)
        record["tokens"]["run"] = count_tokens(self.run_section(state, scope), model=model)
        return {self.keys.memory_prompt: recall.prompt, self.keys.memory_context: record}

    def before_model(self, state: Any, scope: Scope, store: BaseStore) -> dict[str, Any]:
        """Recall for the state's conversation: the update with ``memory_prompt`` and ``memory_context``."""
        messages, extra = self._recall_input(state, scope)
        update = self._update(self.recall(scope, store, messages, **extra), state, scope)
        return self._with_after_tools(update, self.after_tools(state, scope, store))

    async def abefore_model(self, state: Any, scope: Scope, store: BaseStore) -> dict[str, Any]:
        """Async :meth:`before_model`."""
        messages, extra = self._recall_input(state, scope)
        update = self._update(await self.arecall(scope, store, messages, **extra), state, scope)
        return self._with_after_tools(update, await self.aafter_tools(state, scope, store))

    def _with_after_tools(self, update: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """Recall's update with :meth:`after_tools`' (its window record joins recall's record)."""
        context = after.pop(self.keys.memory_context, None)
        if context is not None and "window" in context:
            record = update[self.keys.memory_context]
            update[self.keys.memory_context] = {**record, "window": context["window"]}
        return {**update, **after}

    def agent_scope(self, scope: Scope | None = None) -> Scope:
        """``scope``, else the current run's (:func:`~langmem_plugin.core.scope.resolve_scope`) — as the
        sub-agent of ``memory.agent(name)``'s store source: whose run notes and plan the prompt shows."""
        if scope is not None:
            return scope
        found = resolve_scope()
        agent = self.store.agent if isinstance(self.store, StoreSource) else None
        return found.as_subagent(agent) if agent is not None else found

    def _plan(self, state: Any, scope: Scope | None) -> Plan | None:
        """The plan in ``state`` that the agent ``scope`` runs as sees (:mod:`~.plan.owner`)."""
        value = state_value(state, self.keys.plan)
        return visible_plan(value, self.agent_scope(scope), self.layout) if value else None

    def plan_section(self, state: Any, scope: Scope | None = None) -> str:
        """The plan in ``state`` as a prompt section within ``budgets.plan`` tokens ('' without a plan,
        or when it is another agent's; ``scope``: who runs, else the current run's)."""
        config = self.recall_config
        return render_plan(self._plan(state, scope), budget=config.budgets.plan, model=config.model)

    def run_section(self, state: Any, scope: Scope | None = None) -> str:
        """The run's notes in ``state`` that the agent ``scope`` runs as sees (its own, see
        :mod:`~.context.run_notes`), as a prompt section within ``budgets.run`` tokens."""
        config, notes = self.recall_config, state_value(state, self.keys.run_memory)
        notes = visible_notes(notes, self.agent_scope(scope), self.layout) if notes else notes
        return run_section(notes, config.budgets.run, config.model)

    def system_prompt(
        self, state: Any, instructions: str | None = None, *, scope: Scope | None = None
    ) -> str | None:
        """The system prompt: ``instructions``, then the memory prompt recall put in state, with the
        plan section and the run's notes rendered now from the state, inside the same fence.

        Called before every model call, so the plan the model sees is the one in state at that
        moment (after the plan tools of this run), whatever happened to the messages. ``scope``:
        who runs (whose plan and notes are shown); ``None``: the current run's.
        """
        memory = state_value(state, self.keys.memory_prompt) or ""
        memory = add_section(memory, summary_section(state_value(state, self.keys.summary)))
        memory = add_section(memory, self.plan_section(state, scope))
        memory = add_section(memory, self.run_section(state, scope))
        parts = [p for p in (instructions, memory) if p]
        return "\n\n".join(parts) if parts else None

    def model_messages(
        self, state: Any, *, instructions: str | None = None, scope: Scope | None = None
    ) -> list[BaseMessage]:
        """What the model sees: one system message (:meth:`system_prompt`), then the window."""
        messages = self.visible_messages(state, state_value(state, self.keys.messages) or [])
        system = self.system_prompt(state, instructions, scope=scope)
        return [SystemMessage(system), *messages] if system else messages

    def visible_messages(self, state: Any, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The conversation the model sees: results as decided (:meth:`results_view`), without what
        the summary in state covers, within the window (:meth:`ContextTurn.visible_messages`)."""
        return self.context_turn.visible_messages(state, messages)

    def results_view(self, state: Any, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``messages`` with stored results in full plus their id, or compacted, as decided in state."""
        return self.context_turn.results_view(state, messages)

    # -- after the model ----------------------------------------------------------------------

    def episode_write(
        self, messages: Sequence[AnyMessage | BaseMessage], scope: Scope
    ) -> EpisodeWrite | None:
        """The write that stores the last exchange of ``messages``; ``None`` when it is not answered."""
        episode = episode_from_messages(messages)
        if episode is None or episode.forgot:  # an exchange that forgot a memory is about it: not kept
            return None
        layout, config = self.layout, self.remember_config
        # an agent to which a compartment is read-only leaves its exchanges out of it
        compartments = [c for c in config.compartments_for(scope) if layout.writable(c, scope)]
        if not compartments:
            return None

        def make() -> StoreSteps[Any]:
            return remember_steps(scope, layout, episode, compartments=compartments, config=config)

        stored = {
            "episode": episode.key(scope),
            "compartments": [c.value for c in compartments],
            "mode": "background" if self.writer.background else "inline",
        }
        try:
            rooms = tuple(layout.namespace(c, scope) for c in compartments)
        except ScopeError:  # the write itself fails, is logged and kept by the writer
            rooms = ()
        return EpisodeWrite(make, stored, rooms)

    def _finished(self, state: Any) -> bool:
        messages = state_value(state, self.keys.messages) or []
        return bool(messages) and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls

    def plan_archive(self, state: Any, scope: Scope) -> tuple[list[StoreWrite], dict[str, Any]]:
        """At the end of a run: the archive writes of the completed plans (the plan in state, and
        those it replaced), and the state update that clears them (and any plan whose lifetime is
        the run); ``{}``: nothing to change. Only the plan of the agent whose run ends: never
        another agent's, nor the root's at the end of a sub-agent that shares or reads it."""
        config = self.plan_config
        mine = config is not None and owns_plan_lifetime(scope, self.layout)
        plan = self._plan(state, scope) if mine else None
        if config is None or plan is None:
            return [], {}
        done = [*plan["finished"], *([plan] if plan["is_complete"] else [])]
        writes: list[StoreWrite] = []
        if config.archive and scope.thread_id and self.layout.writable(Compartment.SESSION, scope):
            layout = self.layout
            for finished in done:

                def make(finished: Plan = finished) -> StoreSteps[Any]:
                    return archive_steps(scope, layout, finished)

                writes.append((make, archive_key(finished), ()))  # the key names the write in logs
        if plan["is_complete"] or config.lifetime == "run":
            return writes, {self.keys.plan: None}
        return writes, ({self.keys.plan: {**plan, "finished": []}} if done else {})

    def _after(
        self, state: Any, scope: Scope, store: BaseStore, final: bool
    ) -> tuple[list[StoreWrite], dict[str, Any]] | None:
        if not final and not self._finished(state):
            return None
        episode = self.episode_write(state_value(state, self.keys.messages) or [], scope)
        archives, cleared = self.plan_archive(state, scope)
        context = dict(state_value(state, self.keys.memory_context) or {})
        context["stored"] = episode.stored if episode else None
        writes: list[StoreWrite] = []
        if episode is not None:
            writes.append(
                (self._with_thread_index(episode.make_steps, scope, store), episode.what, episode.rooms)
            )
        if archives:
            writes.extend(archives)
            context["archived_plans"] = [key for _, key, _ in archives]
        notes = run_notes_cleared(scope, self.layout)  # the root's: all; a sub-agent's: its own
        if notes is not None:
            cleared[self.keys.run_memory] = notes
        return writes, {self.keys.memory_context: context, **cleared}

    def after_model(
        self, state: Any, scope: Scope, store: BaseStore, *, final: bool = False
    ) -> dict[str, Any] | None:
        """Store the exchange when the turn ended with an answer; the state update, or ``None``.

        Args:
            state: the graph state after the model call.
            scope: whose memory.
            store: where to write.
            final: the run ends here (a remember node): run memory is cleared even when the
                state holds no answered exchange. Otherwise (a hook run after every model
                call) nothing happens while the model is still calling tools.
        """
        after = self._after(state, scope, store, final)
        if after is None:
            return None
        writes, update = after
        for make, what, rooms in writes:
            self.writer.submit(store, make, what, rooms=rooms, user_id=scope.user_id)
        if stored := update[self.keys.memory_context].get("stored"):
            self._reflect(state, scope, store, stored.get("episode"))
        return update

    async def aafter_model(
        self, state: Any, scope: Scope, store: BaseStore, *, final: bool = False
    ) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        after = self._after(state, scope, store, final)
        if after is None:
            return None
        writes, update = after
        for make, what, rooms in writes:
            await self.writer.asubmit(store, make, what, rooms=rooms, user_id=scope.user_id)
        if stored := update[self.keys.memory_context].get("stored"):
            self._reflect(state, scope, store, stored.get("episode"))
        return update

    # -- after the tools: the context's half (:class:`ContextTurn`) --------------------------------

    def results_steps(self, state: Any, scope: Scope, store: BaseStore) -> StoreSteps[dict[str, Any]]:
        """The steps that store the state's new tool results and decide what to compact: the update."""
        return self.context_turn.results_steps(state, scope, store, self.layout)

    @property
    def runs_after_tools(self) -> bool:
        """Whether :meth:`after_tools` has work: tool results as memory, or a window to keep."""
        return self.context_turn.runs_after_tools

    def after_tools_steps(self, state: Any, scope: Scope, store: BaseStore) -> SummarySteps:
        """:meth:`results_steps`, then the summary of what the window would drop: the state update."""
        return self.context_turn.after_tools_steps(state, scope, store, self.layout)

    def after_tools(self, state: Any, scope: Scope, store: BaseStore) -> dict[str, Any]:
        """Store new tool results, decide compaction, summarize what the window would drop; the state
        update (empty when nothing changed)."""
        return self._describe(state, scope, self.context_turn.after_tools(state, scope, store, self.layout))

    async def aafter_tools(self, state: Any, scope: Scope, store: BaseStore) -> dict[str, Any]:
        """Async :meth:`after_tools`."""
        update = await self.context_turn.aafter_tools(state, scope, store, self.layout)
        return self._describe(state, scope, update)

    def _describe(self, state: Any, scope: Scope, update: dict[str, Any]) -> dict[str, Any]:
        """Queue the model compactor's descriptions of the results ``update`` stored, focused on the
        goal of the plan (never blocks)."""
        if self.context_turn.describes(update):
            plan = self._plan(state, scope)
            self.context_turn.describe(state, scope, update, goal=plan["goal"] if plan else None)
        return update

    # -- extraction and forgetting ------------------------------------------------------------

    def _with_thread_index(
        self, make: Callable[[], StoreSteps[Any]], scope: Scope, store: BaseStore
    ) -> Callable[[], StoreSteps[Any]]:
        """``make`` followed, the first time a (user, thread) pair is seen, by its thread-index write
        (how ``forget_user`` finds a user's threads)."""
        ops = index_thread_ops(scope)
        key = (id(store), scope.user_id, scope.thread_id)
        if not ops or key in self._indexed:
            return make
        indexed = self._indexed

        def steps() -> StoreSteps[Any]:
            written = yield from make()
            yield ops
            if len(indexed) > 100_000:
                indexed.clear()
            indexed.add(key)
            return written

        return steps

    def reset_thread_index(self, user_id: str) -> None:
        """Forget which of ``user_id``'s threads were indexed (after ``forget_user`` removed the index)."""
        with self._lock:
            for key in [k for k in self._indexed if k[1] == user_id]:
                self._indexed.discard(key)

    def _reflect(self, state: Any, scope: Scope, store: BaseStore, episode: str | None = None) -> None:
        """Hand the finished turn to background reflection (non-blocking; debounced per thread);
        ``episode``: the key it is stored under (what is extracted from it links to it)."""
        if self.reflector is not None:
            links = [exchange_link(scope.thread_id, episode)] if episode else []
            messages = state_value(state, self.keys.messages) or []
            self.reflector.schedule(store, scope, messages, exchanges=links)
