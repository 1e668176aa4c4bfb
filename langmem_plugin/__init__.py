"""langmem_plugin: real memory for LangGraph and LangChain agents, offline by default.

Importing the package registers the bundled token encodings with tiktoken
(lazily: nothing is read until first use), so token counting — ours and
langchain-openai's — works on a machine with no network.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

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
    ConfigurationError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidRecordError,
    InvalidValueError,
    LangMemPluginError,
    MissingDependencyError,
    OfflineResourceError,
    ScopeError,
    StoreError,
    StoreLockedError,
    UnknownEmbeddingsError,
)
from langmem_plugin.stores.checkpointer import CheckpointerStore

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
    "ConfigurationError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidValueError",
    "LangMemPluginError",
    "MemoryKind",
    "MemoryRecord",
    "MiniLMEmbeddings",
    "MissingDependencyError",
    "OfflineResourceError",
    "Scope",
    "ScopeError",
    "SparseVector",
    "StoreError",
    "StoreLockedError",
    "TokenCounter",
    "UnknownEmbeddingsError",
    "__version__",
    "count_message_tokens",
    "count_tokens",
    "embedding_dims",
    "encoding_for_model",
    "ensure_offline_encodings",
    "fill_namespace",
    "install_offline_encodings",
    "resolve_embeddings",
    "resolve_scope",
]
