"""langmem_plugin: real memory for LangGraph and LangChain agents, offline by default.

Importing the package registers the bundled token encodings with tiktoken
(lazily: nothing is read until first use), so token counting — ours and
langchain-openai's — works on a machine with no network.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from langmem_plugin.core.embeddings import MiniLMEmbeddings, embedding_dims, resolve_embeddings
from langmem_plugin.core.lexical import BM25Encoder, BM25Index, SparseVector
from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope, fill_namespace, resolve_scope
from langmem_plugin.core.tokens import (
    TokenCounter,
    count_message_tokens,
    count_tokens,
    encoding_for_model,
    ensure_offline_encodings,
    install_offline_encodings,
)
from langmem_plugin.errors import (
    BlockingCallError,
    CompartmentError,
    ConfigurationError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidRecordError,
    InvalidValueError,
    LangMemPluginError,
    MemoryLimitError,
    MemoryNotFoundError,
    MissingDependencyError,
    OfflineResourceError,
    ScopeError,
    StoreError,
    StoreLockedError,
    UnknownEmbeddingsError,
)
from langmem_plugin.services import (
    Compartment,
    CompartmentLimits,
    MemoryLayout,
    RecallConfig,
    RememberConfig,
    TokenBudgets,
    add_documents,
    delete_idle_threads,
    trim_window,
)
from langmem_plugin.services.retrieval import HybridRetriever, RetrievalConfig
from langmem_plugin.stores._transfer import copy_items, export_jsonl, import_jsonl
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.surfaces import (
    Memory,
    MemoryState,
    StateKeys,
    WindowConfig,
    add_memory_agent,
    create_memory_tools,
)

if TYPE_CHECKING:
    from langmem_plugin.stores.qdrant import QdrantIndexConfig, QdrantSearchConfig, QdrantStore

# Imported on first use: qdrant-client alone takes about a second to import.
_LAZY = {
    "QdrantStore": "langmem_plugin.stores.qdrant",
    "QdrantIndexConfig": "langmem_plugin.stores.qdrant",
    "QdrantSearchConfig": "langmem_plugin.stores.qdrant",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'langmem_plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


try:
    __version__ = version("langmem-plugin")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0.0.0"

install_offline_encodings()

__all__ = [
    "BM25Encoder",
    "BM25Index",
    "BlockingCallError",
    "CheckpointerStore",
    "Compartment",
    "CompartmentError",
    "CompartmentLimits",
    "ConfigurationError",
    "HybridRetriever",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidValueError",
    "LangMemPluginError",
    "Memory",
    "MemoryKind",
    "MemoryLayout",
    "MemoryLimitError",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryState",
    "MiniLMEmbeddings",
    "MissingDependencyError",
    "OfflineResourceError",
    "QdrantIndexConfig",
    "QdrantSearchConfig",
    "QdrantStore",
    "RecallConfig",
    "RememberConfig",
    "RetrievalConfig",
    "Scope",
    "ScopeError",
    "SparseVector",
    "StateKeys",
    "StoreError",
    "StoreLockedError",
    "TokenBudgets",
    "TokenCounter",
    "UnknownEmbeddingsError",
    "WindowConfig",
    "__version__",
    "add_documents",
    "add_memory_agent",
    "copy_items",
    "count_message_tokens",
    "count_tokens",
    "create_memory_tools",
    "delete_idle_threads",
    "embedding_dims",
    "encoding_for_model",
    "ensure_offline_encodings",
    "export_jsonl",
    "fill_namespace",
    "import_jsonl",
    "install_offline_encodings",
    "resolve_embeddings",
    "resolve_scope",
    "trim_window",
]
