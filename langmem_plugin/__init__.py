"""langmem_plugin: real memory for LangGraph and LangChain agents, offline by default.

The names here are the ones an agent needs. The rest lives in documented submodules:
``langmem_plugin.errors`` (every error), ``langmem_plugin.stores`` (the stores, their
configs, export/import), ``langmem_plugin.core.tokens`` / ``.embeddings`` / ``.lexical``
/ ``.scope`` / ``.record``, ``langmem_plugin.services.recall.retrieval`` / ``.window`` /
``.knowledge``, and ``langmem_plugin.testing`` (a scripted chat model, fake embeddings).

Importing the package registers the bundled token encodings with tiktoken
(lazily: nothing is read until first use), so token counting — ours and
langchain-openai's — works on a machine with no network. Nothing else is imported
until it is used: each name below loads its module on first access (PEP 562), so
``import langmem_plugin`` and ``langmem-plugin --help`` start fast.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from langmem_plugin.core.tokens import install_offline_encodings

if TYPE_CHECKING:  # type checkers see every name; at run time each is imported on first use
    from langmem_plugin.core.embeddings import MiniLMEmbeddings
    from langmem_plugin.core.record import MemoryKind, MemoryRecord
    from langmem_plugin.core.scope import Scope
    from langmem_plugin.core.tokens import count_tokens
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
    from langmem_plugin.services.agents import AgentRules
    from langmem_plugin.services.context import ContextConfig, ResultsConfig
    from langmem_plugin.services.recall import ChatModelReranker
    from langmem_plugin.services.upkeep import ExtractionConfig
    from langmem_plugin.stores import CheckpointerStore
    from langmem_plugin.stores.qdrant import QdrantStore
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

#: Where each public name lives. ``import langmem_plugin`` imports none of them (LangGraph,
#: LangChain, Qdrant and onnxruntime take seconds to import); the first use of a name imports
#: its module (PEP 562), so ``from langmem_plugin import Memory`` works as it always did.
_LAZY: dict[str, str] = {
    "MiniLMEmbeddings": "langmem_plugin.core.embeddings",
    "MemoryKind": "langmem_plugin.core.record",
    "MemoryRecord": "langmem_plugin.core.record",
    "Scope": "langmem_plugin.core.scope",
    "count_tokens": "langmem_plugin.core.tokens",
    "ConfigurationError": "langmem_plugin.errors",
    "LangMemPluginError": "langmem_plugin.errors",
    **dict.fromkeys(
        [
            "Compartment",
            "CompartmentLimits",
            "MemoryLayout",
            "RecallConfig",
            "RememberConfig",
            "TokenBudgets",
            "add_documents",
            "trim_window",
        ],
        "langmem_plugin.services",
    ),
    "AgentRules": "langmem_plugin.services.agents",
    "ContextConfig": "langmem_plugin.services.context",
    "ChatModelReranker": "langmem_plugin.services.recall",
    "ResultsConfig": "langmem_plugin.services.context",
    "ExtractionConfig": "langmem_plugin.services.upkeep",
    "CheckpointerStore": "langmem_plugin.stores",
    "QdrantStore": "langmem_plugin.stores",
    **dict.fromkeys(
        [
            "Memory",
            "MemoryState",
            "WindowConfig",
            "add_memory_agent",
            "create_memory_tools",
            "memory_index",
            "StateKeys",
        ],
        "langmem_plugin.surfaces",
    ),
}

if not TYPE_CHECKING:  # a module __getattr__ seen by a type checker would hide misspelt imports

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'langmem_plugin' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


try:
    __version__ = version("langmem-plugin")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0.0.0"

install_offline_encodings()

__all__ = [
    "AgentRules",
    "ChatModelReranker",
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
