"""Layer 4: thin adapters over the services — tools, graph nodes, callback handler, middleware.

``langmem_plugin.surfaces.middleware`` needs the ``agents`` extra (``langchain``) and is
imported only when used (``Memory.middleware()``).
"""

from __future__ import annotations

from langmem_plugin.surfaces.memory import Memory, default_store
from langmem_plugin.surfaces.nodes import (
    MemoryState,
    ModelNode,
    RecallNode,
    RememberNode,
    StateKeys,
    WindowConfig,
    add_memory_agent,
    model_messages,
)
from langmem_plugin.surfaces.tools import MEMORY_TOOL_NAMES, create_memory_tools

__all__ = [
    "MEMORY_TOOL_NAMES",
    "Memory",
    "MemoryState",
    "ModelNode",
    "RecallNode",
    "RememberNode",
    "StateKeys",
    "WindowConfig",
    "add_memory_agent",
    "create_memory_tools",
    "default_store",
    "model_messages",
]
