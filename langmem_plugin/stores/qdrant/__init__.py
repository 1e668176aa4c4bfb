"""QdrantStore: LangGraph's BaseStore on Qdrant — embedded, on a server, or in qdrant-client's local mode.

See :class:`QdrantStore`. The modules inside are private: ``_plan`` holds the
store logic (ops → engine-neutral calls, no I/O), ``_edge`` and ``_remote`` the
two engines, ``_lock`` the exclusive lock of an embedded store's directory.
"""

from langmem_plugin.stores.qdrant._store import QdrantIndexConfig, QdrantSearchConfig, QdrantStore

__all__ = ["QdrantIndexConfig", "QdrantSearchConfig", "QdrantStore"]
