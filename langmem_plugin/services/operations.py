"""Memory operations: save, search, get, update, delete, list categories, clear.

Each operation is written as *store steps* (see :mod:`langmem_plugin.services.store_steps`): run it
with :func:`~langmem_plugin.services.execute` or ``await``
:func:`~langmem_plugin.services.aexecute` over any LangGraph ``BaseStore``.
Namespaces come from a :class:`~langmem_plugin.Scope` and a
:class:`~langmem_plugin.services.MemoryLayout` only; the arguments that a model
may write (query, category, tags, dates, ids) can narrow what is read, never
choose whose memory it is.

Every value written is a :class:`~langmem_plugin.MemoryRecord`
(``record.to_value()``); items that are not records are skipped when read.
Reads that return memories to a caller (search, get) add one to each returned
record's ``access_count``.

Writes (save, update, delete, clear) given ``recorded_by`` (the memory tools pass
``"tool:save_memory"`` ...) record each change in the user's history
(:mod:`langmem_plugin.services.history`) in the same batch as the change itself:
a change is never stored without its history entry, nor an entry without its change.

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.core.scope import Scope
>>> from langmem_plugin.services import MemoryLayout, execute
>>> store, scope, layout = InMemoryStore(), Scope(user_id="u1", thread_id="t1"), MemoryLayout()
>>> saved = execute(store, save_steps(scope, layout, "Prefers green tea", category="preferences/drinks"))
>>> [m.record.content for m in execute(store, search_steps(scope, layout, category="preferences"))]
['Prefers green tea']
>>> execute(store, categories_steps(scope, layout))
{'preferences': 1, 'preferences/drinks': 1}
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from langgraph.store.base import GetOp, Item, PutOp, SearchItem, SearchOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord, text_problem
from langmem_plugin.core.scope import NamespaceTemplate, Scope
from langmem_plugin.errors import InvalidFilterError, InvalidRecordError, MemoryNotFoundError
from langmem_plugin.services.filters import (
    category_filter,
    clean_category,
    clean_tags,
    matches,
    parse_when,
    read_compartments,
)
from langmem_plugin.services.history import HISTORY_NAMESPACE, Change, history_ops
from langmem_plugin.services.layout import (
    STORED_COMPARTMENTS,
    Compartment,
    MemoryLayout,
    parse_compartment,
)
from langmem_plugin.services.limits import (
    bound_of,
    bounded_steps,
    count_steps,
    list_steps,
    write_rounds,
    write_steps,
)
from langmem_plugin.services.store_steps import HOLD, StoreSteps

__all__ = [
    "INDEX_FIELDS",
    "StoredMemory",
    "access_ops",
    "categories_steps",
    "changes_ops",
    "clear_steps",
    "count_steps",
    "delete_steps",
    "get_steps",
    "list_steps",
    "new_memory_id",
    "read_record",
    "save_steps",
    "search_steps",
    "to_stored",
    "update_steps",
    "write_rounds",
    "write_steps",
]

logger = logging.getLogger(__name__)

#: The record fields a store embeds (passed as ``PutOp(index=...)``).
INDEX_FIELDS = ["content"]
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class StoredMemory:
    """A memory as read from a store.

    Attributes:
        id: the item key (what tools call the memory's id).
        compartment: which compartment it is in.
        namespace: the store namespace it is in.
        record: the memory itself.
        score: the store's relevance score when found by a query, else ``None``.
    """

    id: str
    compartment: Compartment
    namespace: tuple[str, ...]
    record: MemoryRecord
    score: float | None = None

    def compact(self) -> dict[str, Any]:
        """What a tool shows the model: id, content, category and score (no raw item)."""
        out: dict[str, Any] = {
            "id": self.id,
            "content": self.record.content,
            "category": self.record.category,
        }
        if self.score is not None:
            out["score"] = round(self.score, 3)
        if "invalid_at" in self.record.metadata:  # superseded: no longer true (core.validity)
            out["invalid_at"] = self.record.metadata["invalid_at"]
        return out


def new_memory_id() -> str:
    """A fresh, short memory id (12 hex digits of a random UUID)."""
    return uuid.uuid4().hex[:12]


def changes_ops(
    scope: Scope,
    changes: Sequence[Change],
    recorded_by: str | None,
    *,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> list[PutOp]:
    """The history writes of ``changes`` made by ``recorded_by`` (none when it is ``None`` or the
    scope has no user: history is kept per user)."""
    if recorded_by is None or not scope.user_id or not changes:
        return []
    return history_ops(scope, changes, source=recorded_by, template=history)


def read_record(item: Item) -> MemoryRecord | None:
    """The record in ``item``, or ``None`` (logged) when the value is not a memory record."""
    try:
        return MemoryRecord.from_value(item.value)
    except InvalidRecordError as exc:
        logger.debug("skipping item %s/%s: not a memory record (%s)", item.namespace, item.key, exc)
        return None


def to_stored(item: Item, compartment: Compartment) -> StoredMemory | None:
    """``item`` as a :class:`StoredMemory`, or ``None`` when its value is not a memory record."""
    record = read_record(item)
    if record is None:
        return None
    score = item.score if isinstance(item, SearchItem) else None
    return StoredMemory(item.key, compartment, tuple(item.namespace), record, score)


def save_steps(
    scope: Scope,
    layout: MemoryLayout,
    content: str,
    *,
    compartment: Compartment | str = Compartment.USER,
    category: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, str] | None = None,
    priority: int | None = None,
    kind: MemoryKind | str = MemoryKind.FACT,
    source: str | None = None,
    memory_id: str | None = None,
    recorded_by: str | None = None,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[StoredMemory]:
    """Save a new memory in ``compartment`` of ``scope``.

    With ``recorded_by`` the save is recorded in the user's history (``ADD``), in the same batch.
    The compartment's item limit is counted and the memory written in one bounded write
    (:func:`~langmem_plugin.services.limits.bounded_steps`): a full compartment makes room by
    evicting its oldest episodes, never a memory saved on purpose.

    Raises:
        InvalidRecordError: a bad field (empty content, bad category, priority out of 1–10, ...).
        MemoryLimitError: the content is too long, or the compartment is full.
    """
    comp = parse_compartment(compartment, allowed=STORED_COMPARTMENTS)
    namespace = layout.namespace(comp, scope, write=True)
    fields: dict[str, Any] = {
        "content": content,
        "category": clean_category(category),
        "tags": list(tags or []),
        "metadata": dict(metadata or {}),
        "kind": kind,
        "source": source,
    }
    if priority is not None:
        fields["priority"] = priority
    record = MemoryRecord(**fields)
    layout.check_content(comp, record.content)
    key = memory_id or new_memory_id()
    change = Change(key, "ADD", None, record.content)
    ops = [
        PutOp(namespace, key, record.to_value(), index=INDEX_FIELDS),
        *changes_ops(scope, [change], recorded_by, history=history),
    ]
    yield from bounded_steps(ops, [bound_of(layout, comp, namespace)])
    return StoredMemory(key, comp, namespace, record)


def access_ops(memories: Sequence[StoredMemory]) -> list[PutOp]:
    """Writes that add one to each memory's ``access_count`` (same texts: no store embeds them again)."""
    ops = []
    for memory in memories:
        bumped = memory.record.model_copy(update={"access_count": memory.record.access_count + 1})
        ops.append(PutOp(memory.namespace, memory.id, bumped.to_value(), index=INDEX_FIELDS))
    return ops


def search_steps(
    scope: Scope,
    layout: MemoryLayout,
    query: str | None = None,
    *,
    compartments: Iterable[Compartment | str] | None = None,
    category: str | None = None,
    tags: Sequence[str] | str | None = None,
    since: str | datetime | date | None = None,
    until: str | datetime | date | None = None,
    kinds: Sequence[MemoryKind] | None = None,
    limit: int = 10,
    track_access: bool = True,
) -> StoreSteps[list[StoredMemory]]:
    """Search memories of ``scope`` in ``compartments`` (default: user and session).

    With a ``query``: best first by the store's score. Without: newest first.
    ``category`` matches as a path prefix (``"project"`` finds ``"project/rockbot"``),
    ``tags`` must all be present, ``since``/``until`` bound ``created_at``.

    Raises:
        InvalidFilterError: a bad date or limit.
        CompartmentError: an unknown compartment.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise InvalidFilterError(f"limit must be a whole number from 1 to 100, got {limit!r}")
    chosen = read_compartments(compartments)
    category = category_filter(category, omit="Omit category to search every category.")
    tag_list = clean_tags(tags)
    lower = parse_when(since, name="since")
    upper = parse_when(until, name="until", end=True)
    query = query.strip() if isinstance(query, str) and query.strip() else None
    if query is not None and (problem := text_problem(query)) is not None:
        raise InvalidFilterError(f"the query {problem}; remove or replace the character")
    filtered = bool(category or tag_list or lower or upper or kinds)
    namespaces = [(c, layout.namespace(c, scope)) for c in chosen]
    memories: list[StoredMemory] = []
    if query is not None:
        fetch = min(max(limit * 10, 100), 1000) if filtered else limit
        pages = yield [SearchOp(ns, query=query, limit=fetch, refresh_ttl=True) for _, ns in namespaces]
        for (comp, ns), page in zip(namespaces, pages, strict=True):
            memories.extend(m for i in page if tuple(i.namespace) == ns and (m := to_stored(i, comp)))
    else:
        for comp, ns in namespaces:
            items = yield from list_steps(ns)
            memories.extend(m for i in items if (m := to_stored(i, comp)))
    memories = [
        m
        for m in memories
        if matches(m.record, category=category, tags=tag_list, since=lower, until=upper, kinds=kinds)
    ]
    if query is not None:
        memories.sort(key=lambda m: -(m.score if m.score is not None else float("-inf")))
    else:
        memories.sort(key=lambda m: m.record.created_at, reverse=True)
    memories = memories[:limit]
    if track_access and memories:
        yield from write_steps(access_ops(_writable(layout, scope, memories)))
    return memories


def _writable(layout: MemoryLayout, scope: Scope, memories: Sequence[StoredMemory]) -> list[StoredMemory]:
    """Those of ``memories`` the scope's agent may change (an agent that only reads a compartment
    leaves no access counts there)."""
    return [m for m in memories if layout.writable(m.compartment, scope)]


def _check_id(memory_id: Any) -> str:
    """``memory_id`` exactly as given (never stripped or folded into another memory's id)."""
    if not isinstance(memory_id, str) or not _ID.fullmatch(memory_id):
        raise MemoryNotFoundError(
            str(memory_id),
            f"no memory has the id {memory_id!r}; ids are the 'id' values that search_memory returns, "
            "exactly as written there",
        )
    return memory_id


def _find_steps(
    scope: Scope, layout: MemoryLayout, memory_id: str, compartments: Iterable[Compartment | str] | None
) -> StoreSteps[StoredMemory]:
    key = _check_id(memory_id)
    namespaces = [(c, layout.namespace(c, scope)) for c in read_compartments(compartments)]
    items = yield [GetOp(ns, key) for _, ns in namespaces]
    for (comp, _), item in zip(namespaces, items, strict=True):
        if item is not None and (memory := to_stored(item, comp)) is not None:
            return memory
    raise MemoryNotFoundError(
        key, f"no memory has the id {key!r}; ids are the 'id' values that search_memory returns"
    )


def get_steps(
    scope: Scope,
    layout: MemoryLayout,
    memory_id: str,
    *,
    compartments: Iterable[Compartment | str] | None = None,
    track_access: bool = True,
) -> StoreSteps[StoredMemory]:
    """The memory with ``memory_id`` in the scope's ``compartments``.

    Raises:
        MemoryNotFoundError: no such id there.
    """
    memory = yield from _find_steps(scope, layout, memory_id, compartments)
    if track_access and layout.writable(memory.compartment, scope):
        yield access_ops([memory])
    return memory


def update_steps(
    scope: Scope,
    layout: MemoryLayout,
    memory_id: str,
    *,
    compartments: Iterable[Compartment | str] | None = None,
    content: str | None = None,
    category: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, str] | None = None,
    priority: int | None = None,
    recorded_by: str | None = None,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[StoredMemory]:
    """Change the given fields of a memory (``None`` leaves a field as it is).

    With ``recorded_by`` the change is recorded in the user's history (``UPDATE``, old and new
    content), in the same batch.

    Raises:
        MemoryNotFoundError: no such id.
        InvalidRecordError: a bad new value.
        MemoryLimitError: the new content is too long.
    """
    yield HOLD  # read, then written back changed: no other writer in between
    memory = yield from _find_steps(scope, layout, memory_id, compartments)
    layout.namespace(memory.compartment, scope, write=True)  # an agent that only reads it: refused
    changes: dict[str, Any] = {}
    if content is not None:
        changes["content"] = content
    if category is not None:
        changes["category"] = clean_category(category)
    if tags is not None:
        changes["tags"] = list(tags)
    if metadata is not None:
        changes["metadata"] = dict(metadata)
    if priority is not None:
        changes["priority"] = priority
    record = memory.record.touched(**changes)
    layout.check_content(memory.compartment, record.content)
    change = Change(memory.id, "UPDATE", memory.record.content, record.content)
    yield [
        PutOp(memory.namespace, memory.id, record.to_value(), index=INDEX_FIELDS),
        *changes_ops(scope, [change], recorded_by, history=history),
    ]
    return StoredMemory(memory.id, memory.compartment, memory.namespace, record)


def delete_steps(
    scope: Scope,
    layout: MemoryLayout,
    memory_id: str,
    *,
    compartments: Iterable[Compartment | str] | None = None,
    recorded_by: str | None = None,
    reason: str | None = None,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[StoredMemory]:
    """Delete a memory; returns what was deleted.

    With ``recorded_by`` the deletion is recorded in the user's history (``DELETE``, the old
    content and ``reason``), in the same batch.

    Raises:
        MemoryNotFoundError: no such id.
    """
    memory = yield from _find_steps(scope, layout, memory_id, compartments)
    layout.namespace(memory.compartment, scope, write=True)  # an agent that only reads it: refused
    change = Change(memory.id, "DELETE", memory.record.content, None, reason)
    yield [
        PutOp(memory.namespace, memory.id, None),
        *changes_ops(scope, [change], recorded_by, history=history),
    ]
    return memory


def categories_steps(
    scope: Scope, layout: MemoryLayout, *, compartments: Iterable[Compartment | str] | None = None
) -> StoreSteps[dict[str, int]]:
    """The category tree with counts: every path prefix with the number of memories under it."""
    counts: dict[str, int] = {}
    for comp in read_compartments(compartments):
        items = yield from list_steps(layout.namespace(comp, scope))
        for item in items:
            record = read_record(item)
            if record is None:
                continue
            parts = record.category.split("/")
            for depth in range(1, len(parts) + 1):
                path = "/".join(parts[:depth])
                counts[path] = counts.get(path, 0) + 1
    return dict(sorted(counts.items()))


def clear_steps(
    scope: Scope,
    layout: MemoryLayout,
    compartment: Compartment | str,
    *,
    category: str | None = None,
    tags: Sequence[str] | str | None = None,
    kinds: Sequence[MemoryKind] | None = None,
    everything: bool = False,
    recorded_by: str | None = None,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[list[StoredMemory]]:
    """Delete the memories of ``compartment`` that match ``category`` (a path prefix), ``tags`` and
    ``kinds``; returns them.

    Clearing the whole compartment is its own explicit call, ``everything=True`` with no
    filter: a call with no filter, or with a filter that is not valid (``category="/"``),
    raises instead of deleting everything.

    Raises:
        InvalidFilterError: no filter and not ``everything``; ``everything`` with a filter; a
            category that is not a valid category path.
    """
    comp = parse_compartment(compartment, allowed=STORED_COMPARTMENTS)
    if not isinstance(everything, bool):
        raise InvalidFilterError(f"everything must be true or false, got {everything!r}")
    namespace = layout.namespace(comp, scope, write=True)
    to_clear_all = f"To clear the whole {comp.value} compartment, pass all=true and no category or tags."
    category = category_filter(category, omit=to_clear_all)
    tag_list = clean_tags(tags)
    narrowed = bool(category or tag_list or kinds)
    if everything and narrowed:
        raise InvalidFilterError(
            "clear_memory got all=true together with a category, tags or kinds: pass either all=true "
            "(the whole compartment) or the filter (only what matches), not both."
        )
    if not everything and not narrowed:
        raise InvalidFilterError(
            f"clear_memory needs a category or tags that say what to delete. {to_clear_all}"
        )
    items = yield from list_steps(namespace)
    removed = [
        m
        for i in items
        if (m := to_stored(i, comp))
        and matches(m.record, category=category, tags=tag_list, since=None, until=None, kinds=kinds)
    ]
    if removed:
        if everything:
            why = f"cleared the whole {comp.value} compartment"
        else:
            said = [f"category {category!r}" if category else "", f"tags {tag_list!r}" if tag_list else ""]
            said.append(f"kinds {[str(k) for k in kinds]!r}" if kinds else "")
            why = f"cleared {comp.value} memory matching " + " and ".join(p for p in said if p)
        changes = [Change(m.id, "DELETE", m.record.content, None, why) for m in removed]
        yield [
            *(PutOp(m.namespace, m.id, None) for m in removed),
            *changes_ops(scope, changes, recorded_by, history=history),
        ]
    return removed
