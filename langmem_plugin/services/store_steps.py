"""Store steps: services written once over any ``BaseStore``, run sync or async.

Every service that touches a store is written as *store steps*
(:data:`StoreSteps`, the package's one pattern of :mod:`langmem_plugin.core.steps`):
a generator that yields a list of LangGraph store operations (``GetOp``,
``PutOp``, ``SearchOp``, ...) and receives their results, as many rounds as it
needs, then returns its answer. :func:`execute` runs the steps with
``store.batch``, :func:`aexecute` with ``await store.abatch``. The logic exists
once; only the I/O differs — so sync and async can never drift apart.

A step may also yield a :class:`CandidateSearch`: the candidate lists of hybrid
search (:mod:`langmem_plugin.core.candidates`). A store that answers them
(QdrantStore, CheckpointerStore) does, in one call; any other store runs its own
``search`` instead, whose results become the dense list, with no lexical one
(``Candidates.lexical_index`` is False), so the caller knows what is missing.

A step may yield a :class:`~langmem_plugin.core.bounded.BoundedWrite` (a write
within an item limit, :mod:`langmem_plugin.services.limits`): a store that holds
limits where its data lives (``item_limits(store) == "shared"``) answers it with
the evictions it made; for any other store the answer is ``None`` and the steps
count and write themselves.

A step may yield an :class:`Outside` call: something the steps need answered that is not the
store's (recall's reranker, :mod:`langmem_plugin.services.recall.rerank`). It is run where the
store's requests are, by its own ``run`` on the sync path and ``arun`` on the async one, so the
steps stay free of I/O there too.

A step may yield a :class:`PurgeHistory` after deleting or rewriting items: a
store that keeps the old versions of what it deletes (a :class:`HistoryPurger`:
CheckpointerStore) drops them and answers how many; for any other store (it
keeps no such history) the answer is ``None``. Every service that deletes or rewrites items asks
it the one way, :func:`purge_history_steps`, after its deletes.

A step that reads items to write them back changed (a read-modify-write: a provenance link
added to a memory, a memory updated, an exchange marked superseded or stripped of a quote) first
yields :data:`HOLD`: the steps then run alone among the steps that hold it too, until they end —
so no two such writers interleave and lose one's change (:func:`hold_steps`). Among the runs of
this process on that store object the run's driver (:class:`StoreRun`) holds them apart itself;
a store that several processes may write (a :class:`HoldingStore`: ``CheckpointerStore`` over a
SQLite file, ``PostgresMemoryStore``) then holds the others too, where its data lives — by the
one key :data:`READ_MODIFY_WRITE`, until the run ends. Any other store (``InMemoryStore``,
``QdrantStore``, whose embedded engine already has one process) is held in process only.

Named holds (the per-source holds of knowledge ingestion) are taken with the store's
:meth:`HoldingStore.hold` around a run, or, from inside steps that must not wait (a resume
skipping what a live writer holds), with a :class:`HoldIfFree` request.

>>> from langgraph.store.base import GetOp, PutOp
>>> from langgraph.store.memory import InMemoryStore
>>> def steps():
...     yield [PutOp(("n",), "k", {"v": 1})]
...     (item,) = yield [GetOp(("n",), "k")]
...     return item.value["v"]
>>> execute(InMemoryStore(), steps())
1
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import Collection, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from langgraph.store.base import BaseStore, Op, PutOp, SearchItem, SearchOp

from langmem_plugin.core.bounded import BoundedStore, BoundedWrite, item_limits
from langmem_plugin.core.candidates import CandidateQuery, Candidates, CandidateStore
from langmem_plugin.core.kept_vectors import keep_vectors
from langmem_plugin.core.steps import arun_steps, run_steps

__all__ = [
    "HOLD",
    "READ_MODIFY_WRITE",
    "CandidateSearch",
    "HeldKeys",
    "HistoryPurger",
    "Hold",
    "HoldIfFree",
    "HoldingStore",
    "Outside",
    "Pause",
    "PurgeHistory",
    "StoreRequest",
    "StoreRun",
    "StoreSteps",
    "aexecute",
    "arun_batch",
    "execute",
    "hold_steps",
    "purge_history_steps",
    "run_batch",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Pause:
    """A request to wait ``seconds`` (``time.sleep`` on the sync path, ``asyncio.sleep`` on the async one)."""

    seconds: float


class Outside:
    """A call outside the store that steps yield (a reranker): :func:`execute` answers it with
    :meth:`run`, :func:`aexecute` with :meth:`arun`."""

    def run(self) -> Any:
        """The answer, on the sync path."""
        raise NotImplementedError

    async def arun(self) -> Any:
        """The answer, on the async path."""
        raise NotImplementedError


@dataclass(frozen=True)
class CandidateSearch:
    """A request for the candidate lists of hybrid search, one :class:`Candidates` per query."""

    queries: tuple[CandidateQuery, ...]


@dataclass(frozen=True)
class PurgeHistory:
    """A request to drop the old versions a store keeps of items it deleted or rewrote.

    Attributes:
        namespaces: each namespace, and those below it, entirely (a forgotten user's own).
        keys: ``(namespace, key)`` of single items (in a namespace others keep using).
    """

    namespaces: tuple[tuple[str, ...], ...] = ()
    keys: tuple[tuple[tuple[str, ...], str], ...] = ()


@runtime_checkable
class HistoryPurger(Protocol):
    """A store that keeps the old versions of what it deletes, and can drop them (CheckpointerStore).

    Forgetting calls it after its deletes (:class:`PurgeHistory`), so that what was forgotten
    does not stay in the store's history. A store without history need not implement it.
    """

    def purge_history(
        self, namespaces: Iterable[tuple[str, ...]] = (), *, keys: Iterable[tuple[tuple[str, ...], str]] = ()
    ) -> int:
        """Keep only the current version of each item named; returns how many versions went."""
        ...

    async def apurge_history(
        self, namespaces: Iterable[tuple[str, ...]] = (), *, keys: Iterable[tuple[tuple[str, ...], str]] = ()
    ) -> int:
        """:meth:`purge_history`, from async code."""
        ...


@dataclass(frozen=True)
class Hold:
    """A request to run the rest of the steps alone among the holders of this store (see the module
    docstring); answered ``None``. Held until the steps end, whether they return or raise."""


#: The one :class:`Hold` request.
HOLD = Hold()

#: The key a :class:`HoldingStore` holds for :data:`HOLD`.
READ_MODIFY_WRITE = "langmem_plugin:read-modify-write"


@dataclass(frozen=True)
class HoldIfFree:
    """A request to hold each of ``keys`` that no other holder has now, without waiting; answered
    with the ``frozenset`` of those held, until the steps end. On a store that is not a
    :class:`HoldingStore` (nothing to hold where the data lives), or through :func:`run_batch`,
    every key is answered: the steps' own in-process locks are then the hold."""

    keys: tuple[str, ...]


class HeldKeys(Protocol):
    """Keys a :class:`HoldingStore` holds until :meth:`release`."""

    def release(self) -> None:
        """Give every key back; never waits for another holder (so sync code may end an async hold)."""
        ...


@runtime_checkable
class HoldingStore(Protocol):
    """A store that holds its writers apart by key where its data lives, across processes.

    While a caller holds a key, no other holder of that key runs — in this process or any other
    on the same data. What holds, per store: ``docs/security.md`` ("writers of one item take
    turns"). ``CheckpointerStore`` and ``PostgresMemoryStore`` implement it.
    """

    def hold(self, keys: Collection[str], *, wait: bool = True) -> HeldKeys | None:
        """Hold every key, waiting for their holders; ``wait=False``: all of them now, else None."""
        ...

    async def ahold(self, keys: Collection[str], *, wait: bool = True) -> HeldKeys | None:
        """:meth:`hold` from async code (waits without blocking the event loop)."""
        ...


#: What store steps yield: a batch of store operations, a pause, a candidate search, a bounded
#: write, a history purge, a hold or a call outside the store.
StoreRequest = (
    Sequence[Op] | Pause | CandidateSearch | BoundedWrite | PurgeHistory | Hold | HoldIfFree | Outside
)
#: Steps over a store: a generator that yields :data:`StoreRequest` and returns a value.
StoreSteps = Generator[StoreRequest, Any, T]


def hold_steps() -> StoreSteps[None]:
    """Steps that hold the store for the rest of the steps that run them (``yield from``)."""
    yield HOLD


class _StoreHold:
    """Who holds one store: one run at a time (a run holding it again is let through)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.owner: object | None = None

    def try_take(self, run: object) -> bool:
        with self.changed:
            if self.owner is None or self.owner is run:
                self.owner = run
                return True
            return False

    def take(self, run: object) -> None:
        with self.changed:
            self.changed.wait_for(lambda: self.owner is None or self.owner is run)
            self.owner = run

    def release(self, run: object) -> None:
        with self.changed:
            if self.owner is run:
                self.owner = None
                self.changed.notify_all()


_holds: weakref.WeakKeyDictionary[BaseStore, _StoreHold] = weakref.WeakKeyDictionary()
_holds_lock = threading.Lock()


def _hold_of(store: BaseStore) -> _StoreHold:
    with _holds_lock:
        return _holds.setdefault(store, _StoreHold())


def purge_history_steps(
    written: Iterable[PutOp] = (), *, namespaces: Iterable[tuple[str, ...]] = ()
) -> StoreSteps[int]:
    """After a batch that deleted or rewrote items: drop the old versions a store keeps of them.

    One :class:`PurgeHistory` for the item of each op ``written`` (deleted or rewritten) and for
    each of ``namespaces`` with those below it, entirely (places wholly removed); none when both
    are empty. Returns how many versions went: 0 for a store that keeps no history.
    """
    request = PurgeHistory(
        tuple(dict.fromkeys(tuple(ns) for ns in namespaces)),
        tuple(dict.fromkeys((tuple(op.namespace), op.key) for op in written)),
    )
    if not (request.namespaces or request.keys):
        return 0
    purged = yield request
    return purged or 0


def _search_ops(request: CandidateSearch) -> list[Op]:
    """A store without candidate lists runs its own search per query instead."""
    return [SearchOp(q.namespace_prefix, q.filter, q.limit, 0, q.query) for q in request.queries]


def _as_candidates(request: CandidateSearch, pages: list[Any]) -> list[Candidates]:
    out = []
    for q, page in zip(request.queries, pages, strict=True):
        scored: list[SearchItem] = [item for item in page if item.score is not None]
        unscored = [] if scored else list(page)  # a store with no search index only lists
        out.append(Candidates(scored, [], q.query, lexical_index=False, unscored=unscored))
    return out


def _bounded(store: BaseStore) -> BoundedStore:
    assert isinstance(store, BoundedStore)  # item_limits() said "shared"
    return store


def run_batch(store: BaseStore, request: StoreRequest) -> Any:
    """Carry out one request of store steps with the store's sync API (a :class:`Hold` and a
    :class:`HoldIfFree` are the driver's, :class:`StoreRun`: here they hold nothing)."""
    if isinstance(request, Outside):
        return request.run()
    if isinstance(request, Hold):
        return None
    if isinstance(request, HoldIfFree):
        return frozenset(request.keys)
    if isinstance(request, Pause):
        time.sleep(request.seconds)
        return None
    if isinstance(request, CandidateSearch):
        if isinstance(store, CandidateStore):
            return store.search_candidates(request.queries)
        return _as_candidates(request, store.batch(_search_ops(request)))
    if isinstance(request, BoundedWrite):
        return _bounded(store).write_bounded(request) if item_limits(store) == "shared" else None
    if isinstance(request, PurgeHistory):
        if not isinstance(store, HistoryPurger) or not (request.namespaces or request.keys):
            return None
        return store.purge_history(request.namespaces, keys=request.keys)
    return store.batch(keep_vectors(store, request)) if request else []


async def arun_batch(store: BaseStore, request: StoreRequest) -> Any:
    """Carry out one request of store steps with the store's async API (a :class:`Hold` and a
    :class:`HoldIfFree`: see :func:`run_batch`)."""
    if isinstance(request, Outside):
        return await request.arun()
    if isinstance(request, Hold):
        return None
    if isinstance(request, HoldIfFree):
        return frozenset(request.keys)
    if isinstance(request, Pause):
        await asyncio.sleep(request.seconds)
        return None
    if isinstance(request, CandidateSearch):
        if isinstance(store, CandidateStore):
            return await store.asearch_candidates(request.queries)
        return _as_candidates(request, await store.abatch(_search_ops(request)))
    if isinstance(request, BoundedWrite):
        return await _bounded(store).awrite_bounded(request) if item_limits(store) == "shared" else None
    if isinstance(request, PurgeHistory):
        if not isinstance(store, HistoryPurger) or not (request.namespaces or request.keys):
            return None
        return await store.apurge_history(request.namespaces, keys=request.keys)
    return await store.abatch(keep_vectors(store, request)) if request else []


class StoreRun:
    """One run of store steps on ``store``: carries out its requests, holds included, and gives
    the holds back when it ends (a context manager). :func:`execute` and :func:`aexecute` make
    one; a driver that also carries out requests of its own (a model call) makes its own and
    hands it the store requests.

    A :class:`Hold` is taken in this process first (the store object's holders take turns), then,
    on a :class:`HoldingStore`, where the data lives (:data:`READ_MODIFY_WRITE`); a second one in
    the same run holds already. Everything is given back when the run ends, in the reverse order.
    """

    def __init__(self, store: BaseStore) -> None:
        self.store = store
        self._hold = _hold_of(store)
        self._holding = False
        self._kept: list[HeldKeys] = []

    def do(self, request: StoreRequest) -> Any:
        """Carry out ``request`` with the store's sync API."""
        if isinstance(request, Hold):
            if not self._holding:
                self._hold.take(self)
                self._holding = True
                if isinstance(self.store, HoldingStore):
                    self._keep(self.store.hold((READ_MODIFY_WRITE,)))
            return None
        if isinstance(request, HoldIfFree):
            if not isinstance(self.store, HoldingStore):
                return frozenset(request.keys)
            return self._kept_free(request, [self.store.hold((key,), wait=False) for key in request.keys])
        return run_batch(self.store, request)

    async def ado(self, request: StoreRequest) -> Any:
        """Carry out ``request`` with the store's async API."""
        if isinstance(request, Hold):
            if not self._holding:
                while not self._hold.try_take(self):  # noqa: ASYNC110 - threads take it too: polled
                    await asyncio.sleep(0.002)
                self._holding = True
                if isinstance(self.store, HoldingStore):
                    self._keep(await self.store.ahold((READ_MODIFY_WRITE,)))
            return None
        if isinstance(request, HoldIfFree):
            if not isinstance(self.store, HoldingStore):
                return frozenset(request.keys)
            held = [await self.store.ahold((key,), wait=False) for key in request.keys]
            return self._kept_free(request, held)
        return await arun_batch(self.store, request)

    def _keep(self, held: HeldKeys | None) -> None:
        if held is not None:
            self._kept.append(held)

    def _kept_free(self, request: HoldIfFree, held: list[HeldKeys | None]) -> frozenset[str]:
        for one in held:
            self._keep(one)
        return frozenset(key for key, one in zip(request.keys, held, strict=True) if one is not None)

    def __enter__(self) -> StoreRun:
        return self

    def __exit__(self, *exc: object) -> None:
        kept, self._kept = self._kept, []
        try:
            with contextlib.ExitStack() as releasing:  # every one given back, even if one fails
                for held in kept:
                    releasing.callback(held.release)
        finally:
            self._holding = False
            self._hold.release(self)


def execute(store: BaseStore, steps: StoreSteps[T]) -> T:
    """Run ``steps`` against ``store`` with the store's sync ``batch``."""
    with StoreRun(store) as run:
        return run_steps(steps, run.do)


async def aexecute(store: BaseStore, steps: StoreSteps[T]) -> T:
    """Run ``steps`` against ``store`` with the store's async ``abatch``."""
    with StoreRun(store) as run:
        return await arun_steps(steps, run.ado)
