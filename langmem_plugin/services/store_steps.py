"""Store steps: services written once over any ``BaseStore``, run sync or async.

Every service that touches a store is written as *store steps*
(:data:`StoreSteps`, the package's one pattern of :mod:`langmem_plugin.core.steps`):
a generator that yields a list of LangGraph store operations (``GetOp``,
``PutOp``, ``SearchOp``, ...) and receives their results, as many rounds as it
needs, then returns its answer. :func:`execute` runs the steps with
``store.batch``, :func:`aexecute` with ``await store.abatch``. The logic exists
once; only the I/O differs — so sync and async can never drift apart.

Both tell the watchers of a store (:func:`watch_writes`) about every batch of
writes they ran, so a cache over the store (the lexical index of a
:class:`~langmem_plugin.services.retrieval.HybridRetriever`) sees every write
the services make.

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
import functools
import threading
import time
import weakref
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Op, PutOp

from langmem_plugin.core.steps import arun_steps, run_steps

__all__ = ["Pause", "StoreSteps", "aexecute", "arun_batch", "execute", "run_batch", "watch_writes"]

T = TypeVar("T")

#: Steps over a store: a generator that yields batches of store operations and returns a value.
StoreSteps = Generator[Sequence[Op], list[Any], T]


WriteWatcher = Callable[[Sequence[PutOp]], None]
_watchers: weakref.WeakKeyDictionary[BaseStore, list[weakref.WeakMethod[WriteWatcher]]] = (
    weakref.WeakKeyDictionary()
)
_watchers_lock = threading.Lock()


def watch_writes(store: BaseStore, watcher: WriteWatcher) -> None:
    """Call ``watcher`` (a bound method, held weakly) with the puts of every batch run on ``store``.

    It is called after the batch succeeded, from the thread that ran it, so it must be
    thread-safe and quick. Writes made with ``store.put``/``store.batch`` directly are not seen.
    """
    with _watchers_lock:
        watchers = _watchers.setdefault(store, [])
        watchers[:] = [w for w in watchers if w() is not None]
        watchers.append(weakref.WeakMethod(watcher))


def _written(store: BaseStore, ops: Sequence[Op]) -> None:
    with _watchers_lock:
        watchers = [w() for w in _watchers.get(store, ())]
    if not watchers:
        return
    puts = [op for op in ops if isinstance(op, PutOp)]
    if puts:
        for watcher in watchers:
            if watcher is not None:
                watcher(puts)


@dataclass(frozen=True)
class Pause:
    """A request to wait ``seconds`` (``time.sleep`` on the sync path, ``asyncio.sleep`` on the async one)."""

    seconds: float


def run_batch(store: BaseStore, request: Sequence[Op] | Pause) -> list[Any] | None:
    """Carry out one request of store steps with the store's sync API."""
    if isinstance(request, Pause):
        time.sleep(request.seconds)
        return None
    results = store.batch(request) if request else []
    _written(store, request)
    return results


async def arun_batch(store: BaseStore, request: Sequence[Op] | Pause) -> list[Any] | None:
    """Carry out one request of store steps with the store's async API."""
    if isinstance(request, Pause):
        await asyncio.sleep(request.seconds)
        return None
    results = await store.abatch(request) if request else []
    _written(store, request)
    return results


def execute(store: BaseStore, steps: StoreSteps[T]) -> T:
    """Run ``steps`` against ``store`` with the store's sync ``batch``."""
    return run_steps(steps, functools.partial(run_batch, store))


async def aexecute(store: BaseStore, steps: StoreSteps[T]) -> T:
    """Run ``steps`` against ``store`` with the store's async ``abatch``."""
    return await arun_steps(steps, functools.partial(arun_batch, store))
