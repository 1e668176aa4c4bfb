"""Layer 3: the logic of memory, as plain functions over any LangGraph ``BaseStore``.

Store I/O is written once as *store steps* (generators of store operations) and
run by :func:`execute` (sync) or :func:`aexecute` (async). Every surface (node,
middleware, callback handler) reaches them through one turn service,
:class:`~langmem_plugin.services.turn.MemoryTurn`; the tools call the memory
operations directly.
"""

from __future__ import annotations

from langmem_plugin.services.context import (
    adelete_idle_threads,
    delete_idle_threads,
    message_blocks,
    trim_window,
    window_removals,
)
from langmem_plugin.services.knowledge import (
    AddedDocument,
    aadd_documents,
    add_documents,
    add_documents_steps,
    aremove_documents,
    read_sources,
    remove_documents,
)
from langmem_plugin.services.layout import (
    DEFAULT_LIMITS,
    DEFAULT_NAMESPACES,
    STORED_COMPARTMENTS,
    Compartment,
    CompartmentLimits,
    MemoryLayout,
    add_run_note,
    parse_compartment,
)
from langmem_plugin.services.operations import (
    StoredMemory,
    categories_steps,
    clear_steps,
    delete_steps,
    get_steps,
    list_steps,
    save_steps,
    search_steps,
    update_steps,
)
from langmem_plugin.services.recall import (
    FENCE_CLOSE,
    FENCE_OPEN,
    Recall,
    RecallConfig,
    RecalledItem,
    TokenBudgets,
    query_from_state,
    recall_steps,
    search_candidates,
)
from langmem_plugin.services.remember import (
    Episode,
    EpisodeWriter,
    FailedWrite,
    RememberConfig,
    episode_from_messages,
    remember_steps,
)
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute
from langmem_plugin.services.turn import MemoryTurn, StateKeys, WindowConfig

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_NAMESPACES",
    "FENCE_CLOSE",
    "FENCE_OPEN",
    "STORED_COMPARTMENTS",
    "AddedDocument",
    "Compartment",
    "CompartmentLimits",
    "Episode",
    "EpisodeWriter",
    "FailedWrite",
    "MemoryLayout",
    "MemoryTurn",
    "Recall",
    "RecallConfig",
    "RecalledItem",
    "RememberConfig",
    "StateKeys",
    "StoreSteps",
    "StoredMemory",
    "TokenBudgets",
    "WindowConfig",
    "aadd_documents",
    "add_documents",
    "add_documents_steps",
    "add_run_note",
    "adelete_idle_threads",
    "aexecute",
    "aremove_documents",
    "categories_steps",
    "clear_steps",
    "delete_idle_threads",
    "delete_steps",
    "episode_from_messages",
    "execute",
    "get_steps",
    "list_steps",
    "message_blocks",
    "parse_compartment",
    "query_from_state",
    "read_sources",
    "recall_steps",
    "remember_steps",
    "remove_documents",
    "save_steps",
    "search_candidates",
    "search_steps",
    "trim_window",
    "update_steps",
    "window_removals",
]
