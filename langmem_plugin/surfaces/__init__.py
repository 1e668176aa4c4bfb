"""Layer 4: thin adapters over the turn service — tools, graph nodes, callback handler, middleware.

``Memory`` (:mod:`langmem_plugin.surfaces.memory`) holds the configuration once and
hands every adapter the same :class:`~langmem_plugin.services.turn.MemoryTurn`.
``langmem_plugin.surfaces.middleware`` needs the ``agents`` extra (``langchain``)
and is imported only when used (``Memory.middleware()``).
"""

from __future__ import annotations

from langmem_plugin.services.turn import StateKeys, WindowConfig
from langmem_plugin.surfaces.callbacks import AsyncMemoryCallbackHandler, MemoryCallbackHandler
from langmem_plugin.surfaces.memory import Memory, ToolsConfig, default_store, memory_index
from langmem_plugin.surfaces.nodes import MemoryState, ModelNode, RecallNode, RememberNode, add_memory_agent
from langmem_plugin.surfaces.plan_tools import PLAN_TOOL_NAMES, PlanState, create_plan_tools
from langmem_plugin.surfaces.tools import MEMORY_TOOL_NAMES, create_memory_tools

__all__ = [
    "MEMORY_TOOL_NAMES",
    "PLAN_TOOL_NAMES",
    "AsyncMemoryCallbackHandler",
    "Memory",
    "MemoryCallbackHandler",
    "MemoryState",
    "ModelNode",
    "PlanState",
    "RecallNode",
    "RememberNode",
    "StateKeys",
    "ToolsConfig",
    "WindowConfig",
    "add_memory_agent",
    "create_memory_tools",
    "create_plan_tools",
    "default_store",
    "memory_index",
]
