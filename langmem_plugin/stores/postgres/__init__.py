"""PostgresMemoryStore: hybrid recall on the Postgres a LangGraph team already runs.

Built on LangGraph's ``PostgresStore`` (langgraph-checkpoint-postgres): its tables
(``store``, ``store_vectors``), its migrations, ``setup()``, ``from_conn_string()`` and TTL
sweeper, with what recall needs added:

- **BM25 in Postgres**: each item's BM25 terms and weights (``lexical_terms``,
  ``lexical_weights``, GIN-indexed), scored in SQL with the idf of the searched items, the
  same score the in-process BM25 index of ``CheckpointerStore`` gives;
- **candidate lists** (``search_candidates``): the dense (pgvector, exact cosine) and the
  lexical top-N of each query, raw, in one statement for all of a recall's queries; recall
  fuses them where it fuses every store's;
- **the store contract** of this package (filters, ordering, ``created_at`` kept, TTL by the
  store's clock, values checked at the validation boundary);
- **item limits for every writer** (``item_limits`` is ``"shared"``): the count and the write
  are one transaction under a per-namespace advisory lock.
- **holds for every writer** (``hold``/``ahold``): the services' read-modify-writes and the
  writers of one knowledge source take turns across processes, on session advisory locks keyed
  by the store's table (``_hold``).

Every process on the database shares the store: nothing is cached in the process, so a write
is seen by every other process as soon as it returns. Opening checks the server, pgvector
and the schema, and raises a typed error naming the fix (never a silent dense-only store).
Needs ``pip install 'langmem-plugin[postgres]'`` and pgvector on the server.
"""

from __future__ import annotations

from langmem_plugin.stores.postgres._store import PostgresMemoryIndexConfig, PostgresMemoryStore

__all__ = ["PostgresMemoryIndexConfig", "PostgresMemoryStore"]
