"""CheckpointerStore: a LangGraph ``BaseStore`` whose data lives in a checkpointer you already run.

Durable, cross-thread memory without another service: give it the
``InMemorySaver``, ``SqliteSaver`` / ``AsyncSqliteSaver`` or ``PostgresSaver``
your graphs use, and every item gets a full, auditable history.

The mapping onto checkpoints
----------------------------
- **a namespace ↔ a reserved thread** ``langmem_plugin.store:<name>:["users","u1"]``
  (checkpoint namespace ``""``); a registry thread ``langmem_plugin.store:<name>:registry``
  lists the namespace threads, so opening never scans your graphs' threads;
- **a write ↔ one checkpoint per namespace it touches**, holding *only the
  items it changed*: item key ↔ channel, the item's new version ↔ the
  channel's value, the checkpoint id ↔ the channel's version. A thread is
  therefore a log of deltas, and a put costs O(items changed), never
  O(namespace): ``InMemorySaver`` and ``PostgresSaver`` store one blob per
  changed channel version, and ``SqliteSaver`` — which serialises whole
  checkpoints — serialises just the changed items, because the checkpoint
  holds nothing else. (Mapping keys onto channels of *one growing* checkpoint
  would make every SqliteSaver put rewrite the whole namespace.)
- a channel value is a small record: ``{"op": "put", "value": <JSON text>,
  "created_at", "updated_at", "expires_at", "ttl", "index", "vectors": <float32
  bytes>, "dims", "fields", "embedder"}``, ``{"op": "delete", "at", "reason"}`` or a TTL
  refresh ``{"op": "refresh", "of": <checkpoint id>, "expires_at"}``. Vectors are stored,
  so reopening never re-embeds (unless the index configuration changed); ``embedder``
  names what made them (absent for an unknown embedder), and a store opened with
  another known embedder refuses to open (``EmbedderMismatchError``).

On first use the store reads the registry and each namespace thread, folds the
log in checkpoint-id order and builds its in-process indexes; reads are then
served from memory and each write updates them once the checkpointer has
acknowledged it. A write returns only after the checkpointer's ``put`` has
returned, so with ``SqliteSaver`` (which commits each checkpoint) a SIGKILL
loses no acknowledged write. A batch that touches several namespaces writes one
checkpoint (one commit) per namespace; it is not atomic across them.

One process writes a given store: its in-process indexes do not follow writes
made by another process to the same checkpointer until that store is reopened
(several stores can share one saver, each under its own ``name``). Item limits
are the exception (:mod:`langmem_plugin.core.bounded`): over a ``SqliteSaver``
on a file, :meth:`CheckpointerStore.write_bounded` runs in one SQLite write
transaction on the store's own connection to the file (``_sqlite``), reads the
bounded namespace's checkpoints it had not seen (another store object's,
another process's) before it counts, and commits its checkpoints together, so
a compartment's limit holds for every writer of the file. Over any other saver
``item_limits`` is ``"process"`` and it refuses. The services' read-modify-writes and
document changes are the other exception (:meth:`CheckpointerStore.hold`): over a
``SqliteSaver`` on a file they hold every process on it (a byte-range lock on ``<file>.hold``)
and, once held, the store folds the checkpoints others wrote first (``_hold``).

History: :meth:`CheckpointerStore.history` lists every version of an item
(``value=None`` for a deletion), :meth:`~CheckpointerStore.restore` writes an old
version back, :meth:`~CheckpointerStore.rollback` does it for a whole namespace,
:meth:`~CheckpointerStore.namespace_at` shows a namespace as it was
at a past time (TTL refreshes by reads are not part of that timeline: an item
counts as expired at the expiry its version was written with).
:meth:`~CheckpointerStore.purge_history` drops old versions (forgetting calls it
after its deletes): the items named keep only their current version, each
checkpoint that held a dropped one is written again without it under its own id,
and a namespace left with nothing loses its thread and registration — over a
``SqliteSaver`` on a file in one SQLite write transaction (``_sqlite``).

Search
------
Filters follow the store contract (the same for every store of the package). With a
query: ``"semantic"`` (cosine over the ``IndexConfig`` embeddings, the default
when ``index`` is given), ``"lexical"`` (BM25, the default without ``index``:
over every string of the value) or ``"hybrid"`` (reciprocal-rank fusion of
both) — ``index={"mode": ...}``; ``index={"lexical_fields": [...]}`` chooses what BM25
reads. Items that have no score (``index=False`` on put, or no shared term for BM25)
come after the scored ones with ``score=None``. For a hybrid search fused by the
caller, :meth:`CheckpointerStore.search_candidates` answers the raw dense and BM25
lists (``langmem_plugin.core.candidates``). The indexes are in process: exact (brute-force) vector search
over a numpy matrix and an inverted BM25 index, rebuilt by folding the whole
log on open: search time and memory grow with the number of items, and
reopening reads the whole log (``langmem-plugin bench checkpointer --scale``
measures both; the docs' benchmark page has the numbers). Sensible up to a few
tens of thousands of items per store; beyond that, use a vector engine (QdrantStore).

>>> from langgraph.checkpoint.memory import InMemorySaver
>>> store = CheckpointerStore(InMemorySaver())
>>> store.put(("users", "u1"), "tea", {"text": "likes green tea"})
>>> store.put(("users", "u1"), "tea", {"text": "prefers black tea now"})
>>> [v.value for v in store.history(("users", "u1"), "tea")]
[{'text': 'likes green tea'}, {'text': 'prefers black tea now'}]
>>> store.search(("users",), query="black tea")[0].key
'tea'

The package
-----------
``_store`` (the ``BaseStore`` class and its I/O), ``_batch`` (a batch of ops as
steps), ``_bounded`` (a bounded write as steps), ``_history`` (history, restore,
rollback as steps), ``_purge`` (purging history as steps), ``_log`` (thread names,
records, checkpoints, the I/O requests), ``_state`` / ``_entries`` / ``_vectors``
(the folded state and its indexes), ``_config`` (the index configuration), ``_sqlite`` (the
SQLite write transaction of a bounded write or a purge), ``_hold`` (holds across processes and
the catch-up after one). Only ``_store``, ``_sqlite`` and ``_hold``'s file locks do I/O: the
others yield requests (``langmem_plugin.core.steps``).
"""

from langmem_plugin.stores.checkpointer._history import ItemVersion
from langmem_plugin.stores.checkpointer._store import CheckpointerIndexConfig, CheckpointerStore

__all__ = ["CheckpointerIndexConfig", "CheckpointerStore", "ItemVersion"]
