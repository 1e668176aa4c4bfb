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

import threading
import weakref
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Op, PutOp

from langmem_plugin.core.steps import arun_steps, run_steps

__all__ = ["StoreSteps", "aexecute", "execute", "watch_writes"]

T = TypeVar("T")

#: Steps over a store: a generator that yields batches of store operations and returns a value.
StoreSteps = Generator[Sequence[Op], list[Any], T]
Plan = Generator[Sequence[Op], list[Any], T]  # transitional: removed once every service says StoreSteps


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


def execute(store: BaseStore, steps: StoreSteps[T]) -> T:
    """Run ``steps`` against ``store`` with the store's sync ``batch``."""

    def do(ops: Sequence[Op]) -> list[Any]:
        results = store.batch(ops) if ops else []
        _written(store, ops)
        return results

    return run_steps(steps, do)


async def aexecute(store: BaseStore, steps: StoreSteps[T]) -> T:
    """Run ``steps`` against ``store`` with the store's async ``abatch``."""

    async def do(ops: Sequence[Op]) -> list[Any]:
        results = await store.abatch(ops) if ops else []
        _written(store, ops)
        return results

    return await arun_steps(steps, do)
