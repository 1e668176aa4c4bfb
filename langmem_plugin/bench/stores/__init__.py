"""``langmem-plugin bench stores``: QdrantStore beside the stores a LangGraph user would otherwise pick.

Measured in one run, on this machine, with the *same precomputed vectors* for
every store (a lookup table stands in for the embedder, so the store is
measured, not the model):

- QdrantStore, embedded (Qdrant Edge in this process, on a temporary directory),
  as it comes: it builds its HNSW index every 10,000 written points, and the
  bench calls ``optimize()`` after the load to index the rest; optionally
  (``qdrant-embedded-optimized``) with ``options={"optimize_every": None}``: a bulk load
  without builds, then one ``optimize()``;
- QdrantStore over qdrant-client's local mode (``QdrantStore(":memory:")``);
- LangGraph's InMemoryStore;
- ``langgraph-store-qdrant`` 0.1.0 on qdrant-client's local mode (it needs a
  server ≥ 1.16 otherwise; no server can be installed here);
- LangGraph's SqliteStore on ``pysqlite3-binary`` (its vector search needs
  SQLite extension loading, which this Python's sqlite3 lacks).

The data: ``size`` items in one namespace, ``("bench", "target")``, among 99
other namespaces of 10 items each. Every search targets that namespace. The
vectors are clustered, as sentence embeddings are (2,000 topics; each text near
its topic, each query near one text), not uniform noise, on which no
approximate index finds neighbours. The metrics: batched put throughput
(batches of 500; for the embedded store it includes the automatic index
builds), the index build time (seconds spent in builds during the load plus the
final ``optimize()``), get p50, filtered search (``{"kind": "fact"}``, no query)
p50/p95, vector search p50/p95 and its recall@10 against exact cosine
neighbours (computed with numpy over the same vectors), hybrid search (dense +
BM25, fused in the engine; QdrantStore only) p50/p95, recall's search (the
default ``HybridRetriever``: the store's dense and BM25 candidate lists, fused by
score; on InMemoryStore its own search as the dense list) p50/p95, reopen time (close, open,
first get) and disk usage (allocated blocks), then ratios of each peer to the
embedded QdrantStore. For the embedded rows the note also gives the engine's
ceiling: the rate at which Qdrant Edge alone (the ``qdrant_edge`` package, none
of our code) takes the same items laid out as the store lays them out (the
vector, BM25 terms, namespace, key, value and timestamps; the
``qdrant_edge.Point`` conversion and the update, into a fresh shard configured
as the store's), measured on the first 20,000 items of the load, and the vector search right after the reopen,
while the store's payload cache is still empty. Peers that scan in Python are given a time budget per
metric rather than a fixed number of calls, and are skipped above
``slow_peer_max`` items. The peers come with ``pip install 'langmem-plugin[bench]'``.

The benchmark is split by what each part does: the run (:func:`run_stores_bench`) in
:mod:`~langmem_plugin.bench.stores.run`; the items, queries and precomputed vectors in
:mod:`~langmem_plugin.bench.stores.data`; the peers (opening, reopening, what each needs) in
:mod:`~langmem_plugin.bench.stores.peers`; the engine's ceiling in
:mod:`~langmem_plugin.bench.stores.ceiling`; the table in :mod:`~langmem_plugin.bench.stores.results`.
This package re-exports their public names.
"""

from __future__ import annotations

from langmem_plugin.bench.stores.peers import OPTIMIZED, PEERS, check_peers
from langmem_plugin.bench.stores.results import StoreRow, StoresBenchResult
from langmem_plugin.bench.stores.run import run_stores_bench

__all__ = ["OPTIMIZED", "PEERS", "StoreRow", "StoresBenchResult", "check_peers", "run_stores_bench"]
