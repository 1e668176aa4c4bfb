"""langmem_plugin: real memory for LangGraph and LangChain agents, offline by default.

The names here are the ones an agent needs. The rest lives in documented submodules:
``langmem_plugin.errors`` (every error), ``langmem_plugin.stores`` (the stores, their
configs, export/import), ``langmem_plugin.core.tokens`` / ``.embeddings`` / ``.lexical``
/ ``.scope`` / ``.record``, ``langmem_plugin.services.recall.retrieval`` / ``.window`` /
``.knowledge``, and ``langmem_plugin.testing`` (a scripted chat model, fake embeddings).

Importing the package registers the bundled token encodings with tiktoken
(lazily: nothing is read until first use), so token counting — ours and
langchain-openai's — works on a machine with no network.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from langmem_plugin.core.embeddings import MiniLMEmbeddings
from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens, install_offline_encodings
from langmem_plugin.errors import ConfigurationError, LangMemPluginError
from langmem_plugin.services import (
    Compartment,
    CompartmentLimits,
    MemoryLayout,
    RecallConfig,
    RememberConfig,
    TokenBudgets,
    add_documents,
    trim_window,
)
from langmem_plugin.services.context import ContextConfig, ResultsConfig
from langmem_plugin.services.upkeep import ExtractionConfig
from langmem_plugin.stores import CheckpointerStore
from langmem_plugin.surfaces import (
    Memory,
    MemoryState,
    WindowConfig,
    add_memory_agent,
    create_memory_tools,
    memory_index,
)

# StateKeys now goes inside ContextConfig(keys=...): still importable here, no longer in __all__.
from langmem_plugin.surfaces import StateKeys as StateKeys

if TYPE_CHECKING:  # type checkers see the name; a module __getattr__ would hide unknown imports from them
    from langmem_plugin.stores.qdrant import QdrantStore
else:

    def __getattr__(name: str) -> Any:
        # Imported on first use: qdrant-client alone takes about a second to import.
        if name != "QdrantStore":
            raise AttributeError(f"module 'langmem_plugin' has no attribute {name!r}")
        value = importlib.import_module("langmem_plugin.stores").QdrantStore
        globals()[name] = value
        return value


try:
    __version__ = version("langmem-plugin")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0.0.0"

install_offline_encodings()

__all__ = [
    "CheckpointerStore",
    "Compartment",
    "CompartmentLimits",
    "ConfigurationError",
    "ContextConfig",
    "ExtractionConfig",
    "LangMemPluginError",
    "Memory",
    "MemoryKind",
    "MemoryLayout",
    "MemoryRecord",
    "MemoryState",
    "MiniLMEmbeddings",
    "QdrantStore",
    "RecallConfig",
    "RememberConfig",
    "ResultsConfig",
    "Scope",
    "TokenBudgets",
    "WindowConfig",
    "__version__",
    "add_documents",
    "add_memory_agent",
    "count_tokens",
    "create_memory_tools",
    "memory_index",
    "trim_window",
]
