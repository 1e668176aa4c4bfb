"""Bounded writes: add to a namespace only while it stays within its item limit, counted where the data lives.

A compartment's item limit (``CompartmentLimits.max_items``) is a count
followed by a write. Done as two store calls, two writers can both count
``limit - 1`` and both write: across two store objects or two processes no lock
of this process can stop them. So the count and the write are one request, a
:class:`BoundedWrite`, that a store answers *atomically where its data lives*
(:class:`BoundedStore`): the store counts each bounded namespace and writes the
batch inside one exclusive section of its engine — a SQLite write transaction,
the directory lock of an embedded engine — and nothing can land in between.

:attr:`BoundedStore.item_limits` says what a store promises:

- ``"shared"``: every writer of the data (other store objects, other
  processes) is held to the limit; the store answers :meth:`~BoundedStore.write_bounded`;
- ``"process"``: the store cannot count and write in one step (a Qdrant server
  with several clients, a checkpointer it cannot lock): it refuses
  :meth:`~BoundedStore.write_bounded` rather than pretend, and the services
  fall back to a count then a write under a lock of this process — the limit
  then holds for the writers of one process through one store object only.

A store that is no :class:`BoundedStore` (LangGraph's ``InMemoryStore``,
``PostgresStore``...) counts as ``"process"``.

The decision is written once, here, for every store: :func:`overflow` (how many
items too many the write would leave) and :func:`room` (which items go to make
room, or the refusal). A bound whose eviction is an :class:`OrderedEviction`
chooses from a few fields of each value (:attr:`Bound.reads`): a store lists
only those and :func:`room_steps` reads whole the few items it would choose, so
a full namespace is not read whole on every write that must evict.

>>> from langgraph.store.base import Item, PutOp
>>> from datetime import datetime, UTC
>>> now = datetime.now(UTC)
>>> held = [Item(value={}, key=k, namespace=("n",), created_at=now, updated_at=now) for k in "ab"]
>>> bound = Bound(("n",), 2, refuse=lambda count, adding: ValueError(f"full: {count} + {adding}"))
>>> write = BoundedWrite((PutOp(("n",), "c", {"v": 1}),), (bound,))
>>> overflow(write, bound, count=2, present=set())
1
>>> room(write, bound, held, 1)
Traceback (most recent call last):
...
ValueError: full: 2 + 1
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from langgraph.store.base import Item, PutOp

from langmem_plugin.errors import ConfigurationError

__all__ = [
    "Bound",
    "BoundedStore",
    "BoundedWrite",
    "Eviction",
    "ItemLimits",
    "OrderedEviction",
    "Refusal",
    "Values",
    "item_limits",
    "overflow",
    "room",
    "room_steps",
]

#: Where a store holds item limits: for every writer of its data, or for one process only.
ItemLimits = Literal["shared", "process"]

#: ``(items the namespace holds, items the write adds) -> the error to raise`` (nothing is written).
Refusal = Callable[[int, int], Exception]
#: ``(the namespace's items the write does not touch, how many must go) -> keys to delete``.
Eviction = Callable[[Sequence[Item], int], Sequence[str]]
#: What :func:`room_steps` receives for the keys it asks for: ``{key: whole value}`` (a key gone: left out).
Values = Mapping[str, Mapping[str, Any]]

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class OrderedEviction:
    """An :data:`Eviction` that takes items in one order, which a store can follow without reading
    whole values.

    Called with whole items, it keeps those whose value ``admits`` passes, orders them by the
    ``rank`` of their value, then by key, and chooses none when fewer than ``over`` are left, else
    the first ``over + extra``. A store that lists a namespace to evict may read only ``fields`` of
    each value (:attr:`Bound.reads`) and make room with :func:`room_steps`: the same choice.

    Attributes:
        fields: the value's top-level fields ``rank`` reads (a name of letters, digits and ``_``).
        rank: an item's place from those fields of its value (lowest goes first); ``None``: never
            chosen. It reads nothing else, so a value and its ``fields`` rank alike; a value that
            ``admits`` passes has a place.
        admits: whether an item may be chosen, from its whole value.
        extra: how many more than needed are chosen (room for the next writes).
    """

    fields: tuple[str, ...]
    rank: Callable[[Mapping[str, Any]], Any]
    admits: Callable[[Mapping[str, Any]], bool]
    extra: int = 0

    def __post_init__(self) -> None:
        bad = [f for f in self.fields if not isinstance(f, str) or not _FIELD.fullmatch(f)]
        if bad:
            raise ConfigurationError(
                f"OrderedEviction fields {bad!r} are not top-level value keys of letters, digits and '_'; "
                "name the keys rank reads, e.g. ('kind', 'created_at')"
            )
        if self.extra < 0:
            raise ConfigurationError(f"OrderedEviction extra must be 0 or more, got {self.extra!r}")

    def __call__(self, items: Sequence[Item], over: int) -> list[str]:
        return self.pick([item for item in items if self.admits(item.value)], over)

    def pick(self, items: Sequence[Item], over: int) -> list[str]:
        """The keys the order chooses among ``items``, by ``rank`` alone (``admits`` is not asked)."""
        ranked = sorted((place, item.key) for item in items if (place := self.rank(item.value)) is not None)
        if len(ranked) < over:
            return []
        return [key for _, key in ranked[: over + self.extra]]


@dataclass(frozen=True)
class Bound:
    """The item limit of one namespace, for one write.

    Attributes:
        namespace: the namespace (exactly; sub-namespaces are not counted).
        max_items: the most items it may hold after the write.
        refuse: the error raised when the write does not fit (``count``, ``adding``).
        evict: chooses the items that make room (it may choose more than asked, never
            an item the write touches); ``None``: nothing is ever evicted.
    """

    namespace: tuple[str, ...]
    max_items: int
    refuse: Refusal
    evict: Eviction | None = None

    @property
    def reads(self) -> tuple[str, ...] | None:
        """What a store must list of each value to make room: these top-level fields (``evict`` is
        an :class:`OrderedEviction`: :func:`room_steps`), or ``None``: whole values (:func:`room`)."""
        return self.evict.fields if isinstance(self.evict, OrderedEviction) else None


@dataclass(frozen=True)
class BoundedWrite:
    """Write ``ops`` as one batch only if each bound's namespace then holds at most its ``max_items``.

    Attributes:
        ops: the writes (puts and deletes, in any namespaces; of two to one key the later wins).
        bounds: the namespaces whose limit the write must respect.
    """

    ops: tuple[PutOp, ...]
    bounds: tuple[Bound, ...]

    def final(self, namespace: tuple[str, ...]) -> dict[str, bool]:
        """The keys the write touches in ``namespace``: ``True`` where the last op puts, ``False`` deletes."""
        out: dict[str, bool] = {}
        for op in self.ops:
            if tuple(op.namespace) == namespace:
                out[op.key] = op.value is not None
        return out


def overflow(write: BoundedWrite, bound: Bound, *, count: int, present: Collection[str]) -> int:
    """How many items over ``bound.max_items`` the namespace would hold after ``write``.

    Args:
        count: how many live items the namespace holds now.
        present: which of the keys the write touches there are live now.
    """
    final = write.final(bound.namespace)
    added = sum(1 for key, puts in final.items() if puts and key not in present)
    removed = sum(1 for key, puts in final.items() if not puts and key in present)
    return count + added - removed - bound.max_items


def room(write: BoundedWrite, bound: Bound, items: Sequence[Item], over: int) -> list[PutOp]:
    """The deletes that make room for ``over`` items among ``items`` (the namespace's live items).

    Raises:
        Exception: ``bound.refuse(...)`` when the bound's ``evict`` cannot free ``over`` items.
    """
    if over <= 0:
        return []
    final = write.final(bound.namespace)
    candidates = [item for item in items if item.key not in final]
    allowed = {item.key for item in candidates}
    chosen = list(dict.fromkeys(bound.evict(candidates, over))) if bound.evict is not None else []
    chosen = [key for key in chosen if key in allowed]
    if len(chosen) < over:
        adding = sum(1 for puts in final.values() if puts)
        raise bound.refuse(len(items), adding)
    return [PutOp(bound.namespace, key, None) for key in chosen]


def room_steps(
    write: BoundedWrite, bound: Bound, items: Sequence[Item], over: int
) -> Generator[tuple[str, ...], Values, list[PutOp]]:
    """:func:`room`, for ``items`` listed with only :attr:`Bound.reads` of each value.

    Yields the keys whose whole values it needs (the few the order would choose) and receives them
    as :data:`Values`; drops those ``admits`` fails and chooses again, until every chosen item is
    admitted: what :func:`room` chooses from whole values. A bound that reads whole values is
    answered by :func:`room` without a request.

    Raises:
        Exception: ``bound.refuse(...)`` when the bound's ``evict`` cannot free ``over`` items.
    """
    order = bound.evict
    if over <= 0 or not isinstance(order, OrderedEviction):
        return room(write, bound, items, over)
    final = write.final(bound.namespace)
    pool = [item for item in items if item.key not in final]
    admitted: set[str] = set()
    while True:
        chosen = order.pick(pool, over)
        unread = tuple(key for key in chosen if key not in admitted)
        if not unread:
            break
        values = yield unread
        refused = {key for key in unread if key not in values or not order.admits(values[key])}
        admitted.update(key for key in unread if key not in refused)
        pool = [item for item in pool if item.key not in refused]
    if len(chosen) < over:
        raise bound.refuse(len(items), sum(1 for puts in final.values() if puts))
    return [PutOp(bound.namespace, key, None) for key in chosen]


@runtime_checkable
class BoundedStore(Protocol):
    """A store that can answer a :class:`BoundedWrite` atomically where its data lives."""

    @property
    def item_limits(self) -> ItemLimits:
        """``"shared"``: :meth:`write_bounded` holds every writer of the data to the limit;
        ``"process"``: it refuses (see the module docstring)."""
        ...

    def write_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """Count each bound's namespace and write ``write.ops`` (and the evictions) in one
        exclusive section; returns the evictions. Raises the bound's refusal, writing nothing."""
        ...

    async def awrite_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """:meth:`write_bounded`, from async code."""
        ...


def item_limits(store: object) -> ItemLimits:
    """What ``store`` promises for item limits: ``"shared"`` or ``"process"`` (any other store).

    >>> from langgraph.store.memory import InMemoryStore
    >>> item_limits(InMemoryStore())
    'process'
    """
    if isinstance(store, BoundedStore) and store.item_limits == "shared":
        return "shared"
    return "process"
