"""Plan store operations once, run them twice: one sync driver, one async driver.

Every service that touches a store is written as a *plan*: a generator that
yields a list of LangGraph store operations (``GetOp``, ``PutOp``,
``SearchOp``, ...) and receives their results, as many rounds as it needs, then
returns its answer. :func:`execute` runs a plan with ``store.batch``,
:func:`aexecute` with ``await store.abatch``. The logic exists once; only the
I/O differs — so sync and async can never drift apart.

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

from collections.abc import Generator, Sequence
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Op

__all__ = ["Plan", "aexecute", "execute"]

T = TypeVar("T")

#: A generator that yields batches of store operations and returns a value.
Plan = Generator[Sequence[Op], list[Any], T]


def execute(store: BaseStore, plan: Plan[T]) -> T:
    """Run ``plan`` against ``store`` with the store's sync ``batch``."""
    try:
        ops = next(plan)
        while True:
            results = store.batch(ops) if ops else []
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
            ops = plan.send(results)
    except StopIteration as stop:
        value: T = stop.value
        return value
