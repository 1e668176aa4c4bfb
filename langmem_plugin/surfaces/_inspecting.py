"""``Memory``'s looking glass: an inspector of its store, and tokens per turn of a thread."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.recall import RecallConfig
from langmem_plugin.services.turn import MemoryTurn
from langmem_plugin.surfaces._token_usage import TokenUsage, atoken_usage, token_usage
from langmem_plugin.surfaces.inspector import Inspector

__all__ = ["InspectingMethods"]


class InspectingMethods:
    """Mixed into :class:`~langmem_plugin.Memory`, which sets these attributes."""

    _source: StoreSource
    layout: MemoryLayout
    recall_config: RecallConfig
    turn: MemoryTurn

    def inspector(self, *, writable: bool = False, store: BaseStore | None = None) -> Inspector:
        """An :class:`~langmem_plugin.surfaces.inspector.Inspector` of this memory's store, with its
        layout and recall settings: pages, details and recalls that render as tables in a notebook.

        ``store``: the store to inspect instead — the one a graph run by ``Memory()`` kept its
        memories in (``memory.inspector(store=graph.store)``); default: this memory's store (in a
        run, the run's).
        """
        chosen = self._source.viewed(store) if store is not None else self._source.now()
        return Inspector(chosen, layout=self.layout, recall=self.recall_config, writable=writable)

    def token_usage(
        self, graph: Any, config: RunnableConfig, *, instructions: str | None = None
    ) -> TokenUsage:
        """Tokens per model call of a thread: what the model was sent with this memory (instructions,
        recalled memory, the window) against what an agent without memory would resend (the
        instructions and the whole conversation so far), counted in this memory's tokenizer.

        ``str(usage)`` is a table; in a notebook the result draws both series and the table.
        Each model call is a row (a call that asked for tools too); only the thread's current
        branch counts (see :mod:`langmem_plugin.surfaces._token_usage`).

        Args:
            graph: the compiled graph the thread ran in, with a checkpointer.
            config: names the thread: ``{"configurable": {"thread_id": ...}}`` (a
                ``checkpoint_id`` in it ends the branch there).
            instructions: the instructions of a model node that is not this memory's (your
                own node calling :meth:`messages_for_model`, or ``create_agent``'s
                ``system_prompt``); the memory's model nodes' own are found in the graph.

        Returns:
            A :class:`~langmem_plugin.surfaces._token_usage.TokenUsage` (no rows for a thread
            without checkpoints).

        Raises:
            ConfigurationError: ``graph`` is not a compiled graph with a checkpointer.
            ScopeError: ``config`` names no ``thread_id``.
        """
        return token_usage(self.turn, graph, config, instructions=instructions)

    async def atoken_usage(
        self, graph: Any, config: RunnableConfig, *, instructions: str | None = None
    ) -> TokenUsage:
        """Async :meth:`token_usage` (reads ``aget_state_history``)."""
        return await atoken_usage(self.turn, graph, config, instructions=instructions)
