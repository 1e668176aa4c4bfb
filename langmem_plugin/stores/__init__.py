"""Layer 2: LangGraph ``BaseStore`` implementations, and moving items between any two stores.

- :class:`QdrantStore` (with :class:`QdrantIndexConfig`, :class:`QdrantSearchConfig`,
  :class:`QdrantOptions`):
  Qdrant's embedded engine at a path, or a Qdrant server by URL. Imported on first use,
  since qdrant-client alone takes about a second to import.
- :class:`CheckpointerStore`: a store kept in the checkpointer you already run
  (InMemorySaver, SqliteSaver, PostgresSaver), with per-item history.
- :class:`PostgresMemoryStore` (with :class:`PostgresMemoryIndexConfig`): LangGraph's
  ``PostgresStore`` with BM25 beside pgvector, shared by every process on the database.
  Imported on first use (the ``postgres`` extra).
- :class:`LexicalStore` (and :func:`lexical_view`): any ``BaseStore`` with a BM25 index beside its own
  search, so recall gets both candidate lists from LangGraph's ``InMemoryStore`` or ``PostgresStore``.
- :class:`LangGraphServerStore`: the store of a LangGraph server (``langgraph dev``, LangGraph
  Platform) through its Store API, to inspect or use from outside the server.
- :func:`export_jsonl`, :func:`import_jsonl`, :func:`copy_items`: between any two BaseStores.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from langmem_plugin.stores._lexical import LexicalStore, lexical_view
from langmem_plugin.stores._server import LangGraphServerStore
from langmem_plugin.stores._transfer import copy_items, export_jsonl, import_jsonl
from langmem_plugin.stores.checkpointer import CheckpointerStore

_LAZY = {
    "QdrantStore": "qdrant",
    "QdrantIndexConfig": "qdrant",
    "QdrantOptions": "qdrant",
    "QdrantSearchConfig": "qdrant",
    "PostgresMemoryStore": "postgres",
    "PostgresMemoryIndexConfig": "postgres",
}

if TYPE_CHECKING:  # type checkers see the names; a module __getattr__ would hide unknown imports from them
    from langmem_plugin.stores.postgres import PostgresMemoryIndexConfig, PostgresMemoryStore
    from langmem_plugin.stores.qdrant import QdrantIndexConfig, QdrantOptions, QdrantSearchConfig, QdrantStore
else:

    def __getattr__(name: str) -> Any:
        if name not in _LAZY:
            raise AttributeError(f"module 'langmem_plugin.stores' has no attribute {name!r}")
        value = getattr(importlib.import_module(f"langmem_plugin.stores.{_LAZY[name]}"), name)
        globals()[name] = value
        return value


__all__ = [
    "CheckpointerStore",
    "LangGraphServerStore",
    "LexicalStore",
    "PostgresMemoryIndexConfig",
    "PostgresMemoryStore",
    "QdrantIndexConfig",
    "QdrantOptions",
    "QdrantSearchConfig",
    "QdrantStore",
    "copy_items",
    "export_jsonl",
    "import_jsonl",
    "lexical_view",
]
