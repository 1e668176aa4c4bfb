"""Plan store operations once, run them twice: one sync driver, one async driver.

Every service that touches a store is written as a *plan*: a generator that
yields a list of LangGraph store operations (``GetOp``, ``PutOp``,
``SearchOp``, ...) and receives their results, as many rounds as it needs, then
returns its answer. :func:`execute` runs a plan with ``store.batch``,
:func:`aexecute` with ``await store.abatch``. The logic exists once; only the
I/O differs — so sync and async can never drift apart.

Both drivers tell the watchers of a store (:func:`watch_writes`) about every
batch of writes they ran, so a cache over the store (the lexical index of a
:class:`~langmem_plugin.services.retrieval.HybridRetriever`) sees every write a
plan makes.

>>> from langgraph.store.base import GetOp, PutOp
>>> from langgraph.store.memory import InMemoryStore
>>> def plan():
...     yield [PutOp(("n",), "k", {"v": 1})]
...     (item,) = yield [GetOp(("n",), "k")]
...     return item.value["v"]
>>> execute(InMemoryStore(), plan())
1
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Op, PutOp

__all__ = ["Plan", "aexecute", "execute", "watch_writes"]

T = TypeVar("T")

#: A generator that yields batches of store operations and returns a value.
Plan = Generator[Sequence[Op], list[Any], T]


WriteWatcher = Callable[[Sequence[PutOp]], None]
_watchers: weakref.WeakKeyDictionary[BaseStore, list[weakref.WeakMethod[WriteWatcher]]] = (
    weakref.WeakKeyDictionary()
)
_watchers_lock = threading.Lock()


def watch_writes(store: BaseStore, watcher: WriteWatcher) -> None:
    """Call ``watcher`` (a bound method, held weakly) with the puts of every batch a plan runs on ``store``.

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


def execute(store: BaseStore, plan: Plan[T]) -> T:
    """Run ``plan`` against ``store`` with the store's sync ``batch``."""
    try:
        ops = next(plan)
        while True:
            results = store.batch(ops) if ops else []
            _written(store, ops)
            ops = plan.send(results)
    except StopIteration as stop:
        value: T = stop.value
        return value


async def aexecute(store: BaseStore, plan: Plan[T]) -> T:
    """Run ``plan`` against ``store`` with the store's async ``abatch``."""
    try:
        ops = next(plan)
        while True:
            results = await store.abatch(ops) if ops else []
            _written(store, ops)
            ops = plan.send(results)
    except StopIteration as stop:
        value: T = stop.value
        return value
