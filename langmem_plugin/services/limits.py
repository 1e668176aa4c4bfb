"""A namespace's items listed, counted and written within its compartment's item limit.

A write that adds memories to a limited compartment is a *bounded write*
(:mod:`langmem_plugin.core.bounded`): :func:`bounded_steps` yields one
:class:`~langmem_plugin.core.bounded.BoundedWrite`, and

- a store that holds limits where its data lives (``item_limits(store) ==
  "shared"``: CheckpointerStore over a SQLite file, embedded QdrantStore)
  counts and writes in one exclusive section of its engine: two store objects
  or two processes writing one compartment never overshoot its limit;
- any other store (LangGraph's ``InMemoryStore``, ``PostgresStore``, a
  QdrantStore on a server, a CheckpointerStore over a saver it cannot lock)
  gets the count and the write as separate batches. The writers of this
  package hold :func:`~langmem_plugin.services.layout.room_held` around them,
  so the limit holds within one process and one store object — and only there.

A full namespace makes room by evicting its oldest episodes (and passages),
never a memory saved on purpose (:func:`bound_of`); the room made is ``1/20``
of the limit more than the write needs, so the next writes find room without
listing the namespace again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import Item, PutOp, SearchOp

from langmem_plugin.core.bounded import Bound, BoundedWrite, Eviction, OrderedEviction, overflow, room
from langmem_plugin.core.record import MemoryKind, MemoryRecord, record_time
from langmem_plugin.errors import InvalidRecordError
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.store_steps import StoreSteps

__all__ = [
    "bound_of",
    "bounded_steps",
    "count_steps",
    "list_steps",
    "write_rounds",
    "write_steps",
]

_PAGE = 500
_MAX_SCAN = 5000
_ROOM_SLACK = 20  # a full namespace gets room for 1/20 of its limit more than the write needs


def list_steps(namespace: tuple[str, ...], *, max_items: int = _MAX_SCAN) -> StoreSteps[list[Item]]:
    """Every item in ``namespace`` (exactly; not sub-namespaces), up to ``max_items``, paging."""
    items: list[Item] = []
    offset = 0
    while len(items) < max_items:
        (page,) = yield [SearchOp(namespace, limit=_PAGE, offset=offset, refresh_ttl=False)]
        items.extend(i for i in page if tuple(i.namespace) == namespace)
        if len(page) < _PAGE:
            break
        offset += _PAGE
    return items[:max_items]


def count_steps(namespace: tuple[str, ...], *, at_least: int) -> StoreSteps[bool]:
    """Whether ``namespace`` holds at least ``at_least`` items (one item is read, at that offset)."""
    if at_least <= 0:
        return True
    (page,) = yield [SearchOp(namespace, limit=1, offset=at_least - 1, refresh_ttl=False)]
    return bool(page)


def write_rounds(ops: Sequence[PutOp]) -> list[list[PutOp]]:
    """``ops`` in as few batches as possible with no content text twice in one batch.

    LangGraph's InMemoryStore fails a batch that embeds the same text for two items
    (one episode written to session and user memory, one text in two compartments).
    """
    rounds: list[list[PutOp]] = []
    seen: list[set[str]] = []
    for op in ops:
        text = str(op.value.get("content")) if op.value is not None else None
        for number, texts in enumerate(seen):
            if text is None or text not in texts:
                rounds[number].append(op)
                if text is not None:
                    texts.add(text)
                break
        else:
            rounds.append([op])
            seen.append({text} if text is not None else set())
    return rounds


def write_steps(ops: Sequence[PutOp]) -> StoreSteps[None]:
    """Write ``ops`` in the batches of :func:`write_rounds`."""
    for batch in write_rounds(ops):  # noqa: UP028 - the steps must receive the results: not `yield from` a list
        yield batch


#: Where an episode without ``created_at`` goes in the order (none of this package's writers writes one).
_UNDATED = datetime.max.replace(tzinfo=UTC)


def _episode_time(value: Mapping[str, Any]) -> datetime | None:
    """An episode's place in the eviction order, from its ``kind`` and ``created_at`` alone, read
    as the record reads them; ``None``: no episode, or no time the record would take."""
    if value.get("kind") != MemoryKind.EPISODE.value:
        return None
    if "created_at" not in value:
        return _UNDATED
    try:
        return record_time(value["created_at"])
    except (ValueError, OverflowError):
        return None


def _is_episode(value: Mapping[str, Any]) -> bool:
    """Whether a whole value is a memory record of kind episode (an invalid record is never evicted)."""
    try:
        return MemoryRecord.from_value(value).kind is MemoryKind.EPISODE
    except InvalidRecordError:
        return False


def _oldest_episodes(limit: int) -> Eviction:
    """The eviction of a full compartment: its oldest episodes (and passages), ``1/20`` of the
    limit more than needed; memories of any other kind are never chosen. A store lists the
    namespace's ``kind`` and ``created_at`` to choose, not whole values (:class:`OrderedEviction`)."""
    return OrderedEviction(
        fields=("kind", "created_at"), rank=_episode_time, admits=_is_episode, extra=limit // _ROOM_SLACK
    )


def bound_of(layout: MemoryLayout, comp: Compartment, namespace: tuple[str, ...]) -> Bound | None:
    """The item limit of ``comp`` on ``namespace`` as a :class:`~langmem_plugin.core.bounded.Bound`
    (``None``: the compartment has no item limit). A full namespace evicts its oldest episodes."""
    limit = layout.limits_for(comp).max_items
    if limit is None:
        return None
    return Bound(
        namespace,
        limit,
        refuse=lambda count, adding: layout.room_error(comp, count, adding),
        evict=_oldest_episodes(limit),
    )


def bounded_steps(ops: Sequence[PutOp], bounds: Sequence[Bound | None]) -> StoreSteps[list[PutOp]]:
    """Write ``ops`` so that each bound's namespace stays within its limit; returns the evictions.

    One :class:`~langmem_plugin.core.bounded.BoundedWrite` is yielded: a store that holds
    limits where its data lives answers it atomically; for any other store (the request is
    answered ``None``) each namespace is counted — and listed when full — then the
    evictions and ``ops`` are written (see the module docstring for what holds then).
    Every bound is checked before anything is written.

    Raises:
        MemoryLimitError: a namespace cannot make room (too few episodes); nothing is written.
    """
    write = BoundedWrite(tuple(ops), tuple(b for b in bounds if b is not None))
    if not ops:
        return []
    if not write.bounds:
        yield from write_steps(ops)
        return []
    answered = yield write
    if answered is not None:
        return list(answered)
    evictions: list[PutOp] = []
    for bound in write.bounds:
        final = write.final(bound.namespace)
        if not (yield from count_steps(bound.namespace, at_least=bound.max_items - len(final) + 1)):
            continue  # room enough even if every key the write touches is new
        items = yield from list_steps(bound.namespace, max_items=bound.max_items + len(final))
        present = {i.key for i in items if i.key in final}
        evictions.extend(room(write, bound, items, overflow(write, bound, count=len(items), present=present)))
    yield from write_steps([*evictions, *ops])
    return evictions
