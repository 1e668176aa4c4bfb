"""The turn service: the one entry every surface calls, before the model and after it.

A graph node, the ``create_agent`` middleware, the callback handler and
:class:`~langmem_plugin.Memory` itself are adapters of a few lines over one
:class:`MemoryTurn`. A feature of a turn is written here once and every
surface has it.

- **Before the model** (:meth:`MemoryTurn.before_model`): the recall query from
  the state's messages (and the agent's plan), the search, rank and token fit of
  :mod:`~langmem_plugin.services.recall`, and the state update that carries what
  to inject (``memory_prompt``) and the record of it (``memory_context``).
  :meth:`MemoryTurn.model_messages` and :meth:`MemoryTurn.system_prompt` say what
  the model sees: the instructions, the memory prompt, the conversation window.
- **After the model** (:meth:`MemoryTurn.after_model`): when the turn ended with
  an answer, the exchange is written as an episode through the shared
  :class:`~langmem_plugin.services.remember.EpisodeWriter` (inline or in the
  background, retried, never raising into the run), and the state update clears
  run memory and records what was written. With a reflector, the finished turn is
  handed to background extraction and consolidation
  (:class:`~langmem_plugin.services.reflection.Reflector`, debounced per thread).

Each half is written once as steps over a store (no I/O); the sync and async
methods only choose the driver (:func:`~langmem_plugin.services._io.execute` or
:func:`~langmem_plugin.services._io.aexecute`).

>>> from langchain_core.messages import AIMessage, HumanMessage
>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.core.scope import Scope
>>> from langmem_plugin.services.remember import RememberConfig
>>> turn = MemoryTurn(remember=RememberConfig(compartments=("session", "user")))
>>> store = InMemoryStore()
>>> scope = Scope(user_id="u1", thread_id="t1")
>>> done = turn.after_model({"messages": [HumanMessage("I like tea"), AIMessage("Noted.")]}, scope, store)
>>> done["memory_context"]["stored"]["compartments"]
['session', 'user']
>>> update = turn.before_model({"messages": [HumanMessage("What do I like?")]}, scope, store)
>>> "I like tea" in update["memory_prompt"]
True
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.services._io import StoreSteps, aexecute, execute
from langmem_plugin.services.forgetting import index_thread_ops
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.recall import Recall, RecallConfig, recall_steps
from langmem_plugin.services.reflection import Reflector
from langmem_plugin.services.remember import (
    EpisodeWriter,
    RememberConfig,
    episode_from_messages,
    remember_steps,
)
from langmem_plugin.services.retrieval import HybridRetriever
from langmem_plugin.services.window import trim_window

__all__ = ["DEFAULT_KEYS", "EpisodeWrite", "MemoryTurn", "StateKeys", "WindowConfig", "state_value"]


@dataclass(frozen=True)
class StateKeys:
    """The names of the graph state keys memory reads and writes."""

    messages: str = "messages"
    memory_prompt: str = "memory_prompt"
    memory_context: str = "memory_context"
    run_memory: str = "run_memory"
    plan: str = "plan"


#: The default state key names.
DEFAULT_KEYS = StateKeys()


@dataclass(frozen=True)
class WindowConfig:
    """How much of the conversation the model sees (the checkpointed history is not changed).

    Attributes:
        max_turns: the last this many user turns (``None``: all).
        max_tokens: at most this many tokens of messages (``None``: no limit).
    """

    max_turns: int | None = None
    max_tokens: int | None = None


def state_value(state: Any, key: str, default: Any = None) -> Any:
    """``state[key]`` for a mapping state, ``state.key`` for a dataclass or pydantic state."""
    if isinstance(state, Mapping):
        return state.get(key, default)
    return getattr(state, key, default)


@dataclass(frozen=True)
class EpisodeWrite:
    """An episode write, ready to submit: steps made anew for each attempt, and what it stores."""

    make_steps: Callable[[], StoreSteps[Any]]
    stored: dict[str, Any]

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
        keys: state key names.
        window: how much of the conversation the model sees.
        model: the chat model name whose tokenizer counts the window (``None``: o200k_base).
        reflector: background extraction and consolidation, scheduled when a turn ends with an
            answer (``None``: no extraction).
    """

    def __init__(
        self,
        *,
        store: BaseStore | None = None,
        layout: MemoryLayout | None = None,
        recall: RecallConfig | None = None,
        remember: RememberConfig | None = None,
        writer: EpisodeWriter | None = None,
        keys: StateKeys = DEFAULT_KEYS,
        window: WindowConfig | None = None,
        model: str | None = None,
        reflector: Reflector | None = None,
    ) -> None:
        self.store = store
        self.layout = layout or MemoryLayout()
        self.recall_config = recall or RecallConfig()
        self.remember_config = remember or RememberConfig()
        self.writer = writer or EpisodeWriter.from_config(self.remember_config)
        self.keys = keys
        self.window = window
        self.model = model
        self._retrievers: dict[int, HybridRetriever] = {}
        self._lock = threading.Lock()
        self.reflector = reflector
        self._indexed: set[tuple[int, str | None, str | None]] = set()

    # -- recall -------------------------------------------------------------------------------

    def retriever_for(self, store: BaseStore) -> HybridRetriever | None:
        """The retriever recall searches ``store`` with: one per store, kept (``None`` without
        ``recall.retrieval``), so its lexical index is built once."""
        if self.recall_config.retrieval is None:
            return None
        with self._lock:
            found = self._retrievers.get(id(store))
            if found is None or found.store is not store:  # the retriever holds its store: ids stay unique
                found = self._retrievers[id(store)] = HybridRetriever(store, self.recall_config.retrieval)
            return found

    def recall_steps(
        self,
        scope: Scope,
        store: BaseStore,
        messages: Sequence[AnyMessage | BaseMessage],
        *,
        plan: Any = None,
        run_memory: Sequence[Any] | None = None,
    ) -> StoreSteps[Recall]:
        """The steps of one recall for ``messages`` (and the agent's ``plan``) against ``store``."""
        return recall_steps(
            scope,
            self.layout,
            messages,
            config=self.recall_config,
            plan=plan,
            run_memory=run_memory,
            retriever=self.retriever_for(store),
        )

    def recall(self, scope: Scope, store: BaseStore, messages: Sequence[BaseMessage], **state: Any) -> Recall:
        """Recall for ``messages``; ``state`` may give ``plan`` and ``run_memory``."""
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

    def _recall_input(self, state: Any) -> tuple[list[BaseMessage], dict[str, Any]]:
        keys = self.keys
        extra = {"plan": state_value(state, keys.plan), "run_memory": state_value(state, keys.run_memory)}
        return list(state_value(state, keys.messages) or []), extra

    def _update(self, recall: Recall) -> dict[str, Any]:
        return {self.keys.memory_prompt: recall.prompt, self.keys.memory_context: recall.record()}

    def before_model(self, state: Any, scope: Scope, store: BaseStore) -> dict[str, Any]:
        """Recall for the state's conversation: the update with ``memory_prompt`` and ``memory_context``."""
        messages, extra = self._recall_input(state)
        return self._update(self.recall(scope, store, messages, **extra))

    async def abefore_model(self, state: Any, scope: Scope, store: BaseStore) -> dict[str, Any]:
        """Async :meth:`before_model`."""
        messages, extra = self._recall_input(state)
        return self._update(await self.arecall(scope, store, messages, **extra))

    def system_prompt(self, state: Any, instructions: str | None = None) -> str | None:
        """The system prompt: ``instructions``, then the memory prompt recall put in state."""
        parts = [p for p in (instructions, state_value(state, self.keys.memory_prompt)) if p]
        return "\n\n".join(parts) if parts else None

    def model_messages(self, state: Any, *, instructions: str | None = None) -> list[BaseMessage]:
        """What the model sees: one system message (:meth:`system_prompt`), then the window."""
        messages: list[BaseMessage] = list(state_value(state, self.keys.messages) or [])
        window = self.window
        if window is not None and (window.max_turns or window.max_tokens):
            messages = trim_window(
                messages, max_turns=window.max_turns, max_tokens=window.max_tokens, model=self.model
            )
        system = self.system_prompt(state, instructions)
        return [SystemMessage(system), *messages] if system else messages

    # -- after the model ----------------------------------------------------------------------

    def episode_write(
        self, messages: Sequence[AnyMessage | BaseMessage], scope: Scope
    ) -> EpisodeWrite | None:
        """The write that stores the last exchange of ``messages``; ``None`` when it is not answered."""
        episode = episode_from_messages(messages)
        if episode is None:
            return None
        layout, compartments = self.layout, self.remember_config.compartments

        def make() -> StoreSteps[Any]:
            return remember_steps(scope, layout, episode, compartments=compartments)

        stored = {
            "episode": episode.key(scope),
            "compartments": [c.value for c in compartments],
            "mode": "background" if self.writer.background else "inline",
        }
        return EpisodeWrite(make, stored)

    def _finished(self, state: Any) -> bool:
        messages = state_value(state, self.keys.messages) or []
        return bool(messages) and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls

    def _after(
        self, state: Any, scope: Scope, final: bool
    ) -> tuple[EpisodeWrite | None, dict[str, Any]] | None:
        if not final and not self._finished(state):
            return None
        write = self.episode_write(state_value(state, self.keys.messages) or [], scope)
        context = dict(state_value(state, self.keys.memory_context) or {})
        context["stored"] = write.stored if write else None
        return write, {self.keys.run_memory: [], self.keys.memory_context: context}

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
        after = self._after(state, scope, final)
        if after is None:
            return None
        write, update = after
        if write is not None:
            self.writer.submit(store, self._with_thread_index(write.make_steps, scope, store), write.what)
            self._reflect(state, scope, store)
        return update

    async def aafter_model(
        self, state: Any, scope: Scope, store: BaseStore, *, final: bool = False
    ) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        after = self._after(state, scope, final)
        if after is None:
            return None
        write, update = after
        if write is not None:
            make = self._with_thread_index(write.make_steps, scope, store)
            await self.writer.asubmit(store, make, write.what)
            self._reflect(state, scope, store)
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

    def _reflect(self, state: Any, scope: Scope, store: BaseStore) -> None:
        """Hand the finished turn to background reflection (non-blocking; debounced per thread)."""
        if self.reflector is not None:
            self.reflector.schedule(store, scope, state_value(state, self.keys.messages) or [])
