"""One version of a source at a time: how adding, re-adding and removing a document write.

**Keys.** A chunk's key is ``doc-<source id>-<text id>``: the source id is 16 hex digits of the
SHA-256 of the source's name (its exact text, whatever its length or characters), the text id
8 characters of the SHA-256 of the chunk's text. The chunks of a source are found by the key
prefix, never by a metadata field that is cleaned or cut for display, so ``remove_documents``
finds a source by exactly the name ``add_documents`` reported. A chunk whose text is in both the
old and the new version keeps its key and its vectors. (Keys of an earlier release,
``doc-<12 hex>-<n>``, are found by their prefix too, and replaced at the next add.)

**Intent first** (docs/DESIGN.md, "Bad days"). Every change of a source records what it is
about to do in the store, in :data:`STEPS_NAMESPACE`, before its first write, and deletes that
record after its last one:

1. *adding* (a source that has no chunk yet): the record lists the new version's keys; the
   chunks are written; the record goes.
2. *re-adding*: the record (state ``staging``) lists the new version's keys; the chunks the old
   version lacks are written *hidden* (a value with a ``knowledge_staged`` field is no memory
   record, so recall and every reader skip it), embedded by the store; then the record turns
   ``committing`` (the commit point); the old version's other chunks are deleted; the hidden ones
   are revealed (the same texts: the store keeps their vectors, nothing is embedded again); the
   record goes. Readers see the old version, then the chunks both versions share, then the new
   version — never chunks of two versions at once.
3. *removing*: the record (``removing``) names the source; its chunks are deleted; the record goes.

A failure while writing (the embedder or the store raises) undoes what the change wrote before
the error propagates. A process killed part-way leaves the record: :func:`resume_knowledge_steps`
rolls each one forward (``committing``, ``removing``, and ``adding`` whose chunks are all there)
or back (``staging``, and an incomplete ``adding``: the chunks written are deleted), so the old
version or the new one is whole. ``add_documents`` and ``remove_documents`` call it first.

**Concurrent writers of one source serialise** (:func:`held`, :func:`aheld`), for as long as
the change runs, from before it reads the compartment: on an in-process lock per (knowledge
namespace, source), for any store; then, on a store that several processes may write (a
:class:`~langmem_plugin.services.store_steps.HoldingStore`: ``CheckpointerStore`` over a SQLite
file, ``PostgresMemoryStore``), on the store's hold of one key per source (:func:`source_key`),
where its data lives — so two processes writing one source take turns, and writers of two
sources do not wait for each other. A resume takes each record's source the same way without
waiting (:class:`~langmem_plugin.services.store_steps.HoldIfFree`) and leaves a held one to its
live writer, in this process or another; it reads the records again once it holds them. Any
other store (``InMemoryStore``; ``QdrantStore``, whose embedded engine has one process) holds in
process only.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, Item, PutOp

from langmem_plugin.core.record import clean_text, utc_now
from langmem_plugin.services.limits import list_steps
from langmem_plugin.services.store_steps import HeldKeys, HoldIfFree, HoldingStore, StoreSteps

__all__ = [
    "STAGED",
    "STEPS_NAMESPACE",
    "Change",
    "aheld",
    "apply_steps",
    "chunk_key",
    "held",
    "listing_steps",
    "resume_knowledge_steps",
    "source_id",
    "source_key",
    "text_id",
]

_log = logging.getLogger("langmem_plugin.knowledge")
#: Where the intent records of unfinished changes live, one item per (namespace, source).
STEPS_NAMESPACE = ("memory_meta", "knowledge_steps")
#: The field that hides a chunk written ahead of its version's commit.
STAGED = "knowledge_staged"
_TEXT_ID = 8  # characters of URL-safe base64 (6 bytes of the SHA-256)
_SCAN = 250_000


def source_id(name: str) -> str:
    """The 16 hex digits that identify the source ``name`` in its chunks' keys."""
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def text_id(text: str) -> str:
    """The 8 characters that identify a chunk's text within its source."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:6]
    return base64.urlsafe_b64encode(digest).decode("ascii")


def chunk_key(source: str, text: str) -> str:
    """The key of the chunk ``text`` of the source id ``source``."""
    return f"doc-{source}-{text_id(text)}"


def owner(key: str) -> str | None:
    """The source id in a chunk key (the 12 hex digits of an earlier release's key), or ``None``."""
    if not key.startswith("doc-"):
        return None
    if len(key) == 21 + _TEXT_ID and key[20] == "-":
        return key[4:20]
    head, dash, number = key[4:].partition("-")
    return head if dash and len(head) == 12 and number.isdecimal() else None


def items_of(by_owner: Mapping[str, list[Item]], source: str) -> list[Item]:
    """The items of the source id ``source`` (including those under an earlier release's keys)."""
    return [*by_owner.get(source, []), *by_owner.get(source[:12], [])]


def _step_key(namespace: Sequence[str], source: str) -> str:
    packed = json.dumps([list(namespace), source], ensure_ascii=True)
    return hashlib.sha256(packed.encode("ascii")).hexdigest()[:32]


def source_key(namespace: Sequence[str], source: str) -> str:
    """The key a :class:`~langmem_plugin.services.store_steps.HoldingStore` holds for the writers of
    the source id ``source`` of ``namespace``."""
    return f"langmem_plugin:knowledge:{_step_key(namespace, source)}"


@dataclass
class Change:
    """One source's change, everything computed before the first write.

    Attributes:
        state: ``adding``, ``replacing`` or ``removing``.
        keys: the new version's chunk keys, in order (none for a removal).
        stage: the puts written before the commit (visible when adding, hidden when replacing).
        final: the puts that make the new version visible and current, after the commit.
        stale: the keys deleted at the commit (the old version's chunks the new one lacks).
    """

    namespace: tuple[str, ...]
    source: str
    name: str
    state: str
    keys: list[str] = field(default_factory=list)
    stage: list[PutOp] = field(default_factory=list)
    final: list[PutOp] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    def record(self, state: str, version: str) -> PutOp:
        """The intent record of this change in ``state``."""
        value = {
            "namespace": list(self.namespace),
            "source": self.source,
            "name": clean_text(self.name)[:200],
            "state": state,
            "version": version,
            "chunks": "".join(k[-_TEXT_ID:] for k in self.keys),
            "at": utc_now().isoformat(),
        }
        return PutOp(STEPS_NAMESPACE, _step_key(self.namespace, self.source), value, index=False)

    def forget_record(self) -> PutOp:
        return PutOp(STEPS_NAMESPACE, _step_key(self.namespace, self.source), None)

    def undo(self) -> list[PutOp]:
        """Deletes of what :attr:`stage` may have written."""
        return [PutOp(op.namespace, op.key, None) for op in self.stage]


# ---- locks --------------------------------------------------------------------------------------


class _SourceLock:
    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


_locks: weakref.WeakValueDictionary[tuple[tuple[str, ...], str], _SourceLock] = weakref.WeakValueDictionary()
_locks_guard = threading.Lock()


def _lock(namespace: Sequence[str], source: str) -> _SourceLock:
    with _locks_guard:
        found = _locks.get((tuple(namespace), source))
        if found is None:
            found = _locks[(tuple(namespace), source)] = _SourceLock()
        return found


def _ordered(namespace: Sequence[str], sources: Iterable[str]) -> list[_SourceLock]:
    return [_lock(namespace, s) for s in sorted(set(sources))]  # one order: no deadlock


@contextlib.contextmanager
def held(store: BaseStore, namespace: Sequence[str], sources: Iterable[str]) -> Iterator[None]:
    """Hold each source id of ``namespace``: its in-process lock, then the store's hold of its
    :func:`source_key` on a :class:`~langmem_plugin.services.store_steps.HoldingStore` (writers in
    other processes wait too)."""
    wanted = sorted(set(sources))
    taken: list[_SourceLock] = []
    shared: HeldKeys | None = None
    try:
        for entry in _ordered(namespace, wanted):
            entry.lock.acquire()
            taken.append(entry)
        if isinstance(store, HoldingStore) and wanted:
            shared = store.hold([source_key(namespace, s) for s in wanted])
        yield
    finally:
        if shared is not None:
            shared.release()
        for entry in reversed(taken):
            entry.lock.release()


@contextlib.asynccontextmanager
async def aheld(
    store: BaseStore, namespace: Sequence[str], sources: Iterable[str], *, poll: float = 0.002
) -> AsyncIterator[None]:
    """:func:`held` for coroutines: waits without blocking the event loop (the same locks)."""
    wanted = sorted(set(sources))
    taken: list[_SourceLock] = []
    shared: HeldKeys | None = None
    try:
        for entry in _ordered(namespace, wanted):
            # Threads hold these locks too, so no asyncio primitive can wait for them (as aroom_held).
            while not entry.lock.acquire(blocking=False):  # noqa: ASYNC110
                await asyncio.sleep(poll)
            taken.append(entry)
        if isinstance(store, HoldingStore) and wanted:
            shared = await store.ahold([source_key(namespace, s) for s in wanted])
        yield
    finally:
        if shared is not None:
            shared.release()
        for entry in reversed(taken):
            entry.lock.release()


# ---- reading and writing ------------------------------------------------------------------------


def listing_steps(
    namespace: tuple[str, ...], max_items: int | None
) -> StoreSteps[tuple[dict[str, list[Item]], int]]:
    """The chunks of ``namespace`` by source id (hidden ones included), and how many items it
    holds: the compartment read once, in pages."""
    scan = _SCAN if max_items is None else max(2 * max_items + 1000, 10_000)
    items = yield from list_steps(namespace, max_items=scan)
    by_owner: dict[str, list[Item]] = {}
    for item in items:
        if (found := owner(item.key)) is not None:
            by_owner.setdefault(found, []).append(item)
    return by_owner, len(items)


def apply_steps(
    changes: Sequence[Change], stage: Callable[[list[PutOp]], StoreSteps[Any]]
) -> StoreSteps[None]:
    """Write ``changes`` by the protocol of the module docstring.

    ``stage`` writes the staged puts (steps taking the list of puts: a bounded write, so the item
    limit holds). When it, or a write before the commit, fails, what was staged is deleted and
    the records dropped before the error propagates.
    """
    if not changes:
        return None
    version = utc_now().isoformat()
    first = [
        c.record("staging" if c.state == "replacing" and c.stage else _first(c), version) for c in changes
    ]
    yield first
    try:
        yield from stage([op for c in changes for op in c.stage])
        committing = [c.record("committing", version) for c in changes if c.state == "replacing" and c.stage]
        if committing:
            yield committing
    except Exception:
        undo = [op for c in changes if c.state != "removing" for op in c.undo()]
        yield [*undo, *(c.forget_record() for c in changes)]
        raise
    yield from _finish(changes)
    return None


def _first(change: Change) -> str:
    return {"adding": "adding", "removing": "removing"}.get(change.state, "committing")


def _finish(changes: Sequence[Change]) -> StoreSteps[None]:
    """From the commit on: deletes first, then the reveals, then the records go."""
    deletes = [PutOp(c.namespace, key, None) for c in changes for key in c.stale]
    if deletes:
        yield deletes
    reveals = [op for c in changes for op in c.final]
    if reveals:
        yield reveals
    yield [c.forget_record() for c in changes]
    return None


# ---- resuming -----------------------------------------------------------------------------------


def resume_knowledge_steps() -> StoreSteps[int]:
    """Finish every change of a document that a killed process left half-done; the number finished.

    Each intent record in :data:`STEPS_NAMESPACE` is rolled forward or back (module docstring),
    unless a writer of this process holds its source now (it is live, not left). Call it with
    ``execute(store, resume_knowledge_steps())`` (or ``aexecute``) when a store is opened;
    ``add_documents`` and ``remove_documents`` call it first.
    """
    records = yield from list_steps(STEPS_NAMESPACE, max_items=_SCAN)
    taken: dict[str, _SourceLock] = {}
    try:
        for namespace, source in _sources_of(records):
            entry = _lock(namespace, source)
            if entry.lock.acquire(blocking=False):  # else a live writer of this process has it
                taken[source_key(namespace, source)] = entry
        if not taken:
            return 0
        free = yield HoldIfFree(tuple(taken))  # the store's hold: a live writer elsewhere keeps its own
        for key in [key for key in taken if key not in free]:
            taken.pop(key).lock.release()
        if not taken:
            return 0
        # read again, now held: what was read first may be stale (another process may have finished)
        records = yield from list_steps(STEPS_NAMESPACE, max_items=_SCAN)
        pending: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for item in records:
            value = item.value
            named = _source_of(value)
            if named is not None and source_key(*named) in taken:
                pending.setdefault(named[0], []).append({**value, "key": item.key})
        changes: list[Change] = []
        for namespace, found in pending.items():
            by_owner, _ = yield from listing_steps(namespace, None)
            changes.extend(_resumed(namespace, value, items_of(by_owner, value["source"])) for value in found)
        if changes:
            yield from _finish(changes)
        return len(changes)
    finally:
        for entry in taken.values():
            entry.lock.release()


def _source_of(value: Mapping[str, Any]) -> tuple[tuple[str, ...], str] | None:
    """The (namespace, source id) an intent record names, or None for a malformed one."""
    namespace, source = value.get("namespace"), value.get("source")
    if not isinstance(namespace, list) or not isinstance(source, str):
        return None
    return tuple(namespace), source


def _sources_of(records: Iterable[Item]) -> list[tuple[tuple[str, ...], str]]:
    return list(dict.fromkeys(found for item in records if (found := _source_of(item.value)) is not None))


def _resumed(namespace: tuple[str, ...], record: Mapping[str, Any], items: list[Item]) -> Change:
    """The rest of the change ``record`` describes, given the source's ``items`` now."""
    source, state = str(record["source"]), str(record.get("state"))
    chunks = str(record.get("chunks") or "")
    keys = [f"doc-{source}-{chunks[i : i + _TEXT_ID]}" for i in range(0, len(chunks), _TEXT_ID)]
    stored = {item.key: item for item in items}
    change = Change(namespace, source, str(record.get("name", "")), state, keys)
    complete = all(key in stored for key in keys)
    if state == "committing" or (state == "adding" and complete):
        if not complete:
            _log.warning("knowledge: %s lost chunks of its new version; kept what is there", change.name)
        wanted = set(keys)
        change.stale = [key for key in stored if key not in wanted]
        revealed = (_revealed(stored[key], n, len(keys)) for n, key in enumerate(keys) if key in stored)
        change.final = [op for op in revealed if op is not None]
    elif state == "staging":
        change.stale = [key for key, item in stored.items() if STAGED in item.value]
    else:  # removing, or adding cut short
        change.stale = list(stored)
    return change


def _revealed(item: Item, number: int, total: int) -> PutOp | None:
    """The put that makes a staged or shared chunk current as chunk ``number`` of ``total``."""
    value = {k: v for k, v in item.value.items() if k != STAGED}
    metadata = dict(value.get("metadata") or {})
    metadata.update(chunk=str(number), chunks=str(total))
    value["metadata"] = metadata
    if value == item.value:
        return None
    return PutOp(tuple(item.namespace), item.key, value)
