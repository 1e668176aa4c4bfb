"""QdrantStore: LangGraph's BaseStore on Qdrant — embedded, on a server, or in qdrant-client's local mode.

See :class:`QdrantStore`. The modules inside are private. The store's logic is
written once, with no I/O, as steps (:mod:`langmem_plugin.core.steps`):

- ``_layout``: how an item is a point (ids, payload fields, time, vectors; format 2);
- ``_filters``: engine-neutral filters, and the store contract's filters translated;
- ``_calls``: the requests the steps yield (engine calls, embedding requests);
- ``_config``: the user's configuration, checked, and ``BatchConfig``, what the steps read;
- ``_batch`` (with ``_search`` and ``_writes``): the steps of one ``batch``;
- ``_bounded``: the steps of a bounded write (count, make room, write; ``core.bounded``);
- ``_maintenance``: the steps of a TTL sweep, an export page and an import;
- ``_engine``: the ``Engine`` protocol; ``_edge`` and ``_remote`` the two engines
  (``_cache`` the embedded engine's payload cache, ``_lock`` its directory lock);
- ``_opening``: the engine a store's ``path``, ``url`` or ``client`` means, and a temporary
  store's directory (opened in the background, removed with the store);
- ``_embedding``: the embedding requests carried out with the store's ``Embeddings``;
- ``_store``: ``QdrantStore``, which carries the requests out, blocking or awaited.
"""

from langmem_plugin.stores.qdrant._config import QdrantIndexConfig, QdrantOptions, QdrantSearchConfig
from langmem_plugin.stores.qdrant._store import QdrantStore

__all__ = ["QdrantIndexConfig", "QdrantOptions", "QdrantSearchConfig", "QdrantStore"]
