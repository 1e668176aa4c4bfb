"""The context's half of a turn: what happens after the tools, and what the model sees of the window.

:class:`~langmem_plugin.services.turn.MemoryTurn` composes one :class:`ContextTurn`; every surface
reaches it through the turn (``after_tools``, ``results_view``, ``visible_messages``).

- **After the tools** (:meth:`ContextTurn.after_tools`; the turn's ``before_model`` runs it too):
  with ``results`` configured, large tool results are stored in the results compartment and the
  compaction of results the model has seen is decided once, into state (``tool_results``,
  ``compacted``; see :mod:`~langmem_plugin.services.context.results`).
- **Summarization** (``WindowConfig(summary=SummaryConfig(model))``,
  :mod:`~langmem_plugin.services.context.summary`): after the tools, what the window would drop is
  summarized once, into state (``summary``) and session memory. Without a summarizer the window
  trims and ``memory_context["window"]`` says how many messages it dropped.
- **What the model sees** (:meth:`ContextTurn.visible_messages`): stored results in full or
  compacted as decided in state (:meth:`ContextTurn.results_view`), the summary in place of the
  messages it covers, within the window.

The steps are written once over a store (no I/O); :meth:`ContextTurn.after_tools` and
:meth:`ContextTurn.aafter_tools` only choose the driver.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.core.steps import arun_steps, run_steps
from langmem_plugin.services.context.config import ContextConfig
from langmem_plugin.services.context.results import result_describer, results_update_steps, results_view
from langmem_plugin.services.context.summary import (
    SummarySteps,
    summary_steps,
    summary_view,
)
from langmem_plugin.services.context.window import trim_window
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.store_steps import StoreSteps, arun_batch, run_batch

__all__ = ["ContextTurn", "state_value"]


def state_value(state: Any, key: str, default: Any = None) -> Any:
    """``state[key]`` for a mapping state, ``state.key`` for a dataclass or pydantic state."""
    if isinstance(state, Mapping):
        return state.get(key, default)
    return getattr(state, key, default)


class ContextTurn:
    """The context's half of one turn: tool results as memory, the window and its summary.

    Args:
        context: the window, tool results as memory and the state key names.
        model: the chat model name whose tokenizer counts the window (``None``: o200k_base).
    """

    def __init__(self, context: ContextConfig, *, model: str | None = None) -> None:
        self.context = context
        self.keys = context.keys
        self.results = context.results
        self.window = context.window
        self.model = model
        self.describer = result_describer(context.results, model=model)  # the model compactor

    @property
    def windowed(self) -> bool:
        """Whether the window keeps less than the whole conversation (turns or tokens)."""
        window = self.window
        return window is not None and bool(window.max_turns or window.max_tokens)

    @property
    def runs_after_tools(self) -> bool:
        """Whether :meth:`after_tools` has work: tool results as memory, or a window to keep."""
        return self.results is not None or self.windowed

    def results_steps(
        self, state: Any, scope: Scope, store: BaseStore, layout: MemoryLayout
    ) -> StoreSteps[dict[str, Any]]:
        """The steps that store the state's new tool results and decide what to compact: the update."""
        config, keys = self.results, self.keys
        if config is None:
            return {}
        ttl = config.ttl_minutes if getattr(store, "supports_ttl", False) else None
        stored = state_value(state, keys.tool_results) or {}
        return (
            yield from results_update_steps(
                list(state_value(state, keys.messages) or []),
                stored,
                state_value(state, keys.compacted) or {},
                scope,
                layout,
                config,
                keys=(keys.tool_results, keys.compacted),
                ttl=ttl,
                model=self.model,
                descriptions=self.describer.ready(scope, stored) if self.describer else None,
            )
        )

    def after_tools_steps(
        self, state: Any, scope: Scope, store: BaseStore, layout: MemoryLayout
    ) -> SummarySteps:
        """:meth:`results_steps`, then the summary of what the window would drop: the state update."""
        update: dict[str, Any] = yield from self.results_steps(state, scope, store, layout)
        window, keys = self.window, self.keys
        if window is None or not self.windowed:
            return update
        # the results as the model will see them: what state holds plus this update (first write wins)
        seen = {
            key: {**(update.get(key) or {}), **(state_value(state, key) or {})}
            for key in (keys.tool_results, keys.compacted)
        }
        messages = self.results_view(seen, state_value(state, keys.messages) or [])
        new, record = yield from summary_steps(
            messages,
            state_value(state, keys.summary),
            scope,
            layout,
            window.summary,
            max_turns=window.max_turns,
            max_tokens=window.max_tokens,
            model=self.model,
        )
        if new is not None:
            update[keys.summary] = new
        context = state_value(state, keys.memory_context) or {}
        if record != context.get("window", {}):
            update[keys.memory_context] = {**context, "window": record}
        return update

    def after_tools(self, state: Any, scope: Scope, store: BaseStore, layout: MemoryLayout) -> dict[str, Any]:
        """Run :meth:`after_tools_steps` on ``store`` (and the summarizer): the state update, empty
        when nothing changed."""
        if not self.runs_after_tools:
            return {}
        do = functools.partial(run_batch, store)
        update: dict[str, Any] = run_steps(self.after_tools_steps(state, scope, store, layout), do)
        return update

    async def aafter_tools(
        self, state: Any, scope: Scope, store: BaseStore, layout: MemoryLayout
    ) -> dict[str, Any]:
        """Async :meth:`after_tools`."""
        if not self.runs_after_tools:
            return {}
        ado = functools.partial(arun_batch, store)
        update: dict[str, Any] = await arun_steps(self.after_tools_steps(state, scope, store, layout), ado)
        return update

    def describe(
        self, state: Any, scope: Scope, update: Mapping[str, Any], *, goal: str | None = None
    ) -> None:
        """Queue the model compactor's descriptions of the results ``update`` stored, focused on
        ``goal`` (never blocks)."""
        if self.describer is not None and self.describes(update):
            messages = state_value(state, self.keys.messages) or []
            self.describer.schedule(scope, messages, update[self.keys.tool_results], goal=goal)

    def describes(self, update: Mapping[str, Any]) -> bool:
        """Whether :meth:`describe` has work for ``update``: a model compactor and new results."""
        return self.describer is not None and bool(update.get(self.keys.tool_results))

    def results_view(self, state: Any, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``messages`` with stored results in full plus their id, or compacted, as decided in state."""
        if self.results is None:
            return list(messages)
        keys = self.keys
        return results_view(
            messages,
            state_value(state, keys.tool_results) or {},
            state_value(state, keys.compacted) or {},
            self.results,
            model=self.model,
        )

    def visible_messages(self, state: Any, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The conversation the model sees: results as decided (:meth:`results_view`), without what
        the summary in state covers, within the window."""
        messages = summary_view(self.results_view(state, messages), state_value(state, self.keys.summary))
        window = self.window
        if window is not None and self.windowed:
            messages = trim_window(
                messages, max_turns=window.max_turns, max_tokens=window.max_tokens, model=self.model
            )
        return messages
