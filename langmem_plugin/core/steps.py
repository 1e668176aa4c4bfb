"""Logic once, I/O twice: the one sync/async pattern of the package.

Every piece of logic that needs I/O — a service over a ``BaseStore``, the
QdrantStore batch over its engine, the CheckpointerStore batch over its
checkpointer — is written once, without I/O, as *steps*: a generator that
yields a request (a list of store ops, an engine call, an embedding request),
receives its result, and finally returns its answer. :func:`run_steps` carries
the requests out with a blocking function, :func:`arun_steps` with an awaited
one; they are the only two drivers, so the sync and async paths of every
feature cannot drift apart.

A request that fails is thrown back into the steps at the ``yield`` that made
it, so a step can translate or recover from it; when it does not, the error
propagates to the caller unchanged.

>>> def double_then_add(x):
...     doubled = yield ("double", x)
...     total = yield ("add", doubled)
...     return total
>>> def do(request):
...     verb, value = request
...     return value * 2 if verb == "double" else value + 1
>>> run_steps(double_then_add(5), do)
11
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeAlias, TypeVar

__all__ = ["Steps", "arun_steps", "run_steps"]

R = TypeVar("R")
T = TypeVar("T")

#: Steps that yield requests of type ``R`` and return a ``T``.
Steps: TypeAlias = Generator[R, Any, T]


def run_steps(steps: Generator[R, Any, T], do: Callable[[R], Any]) -> T:
    """Drive ``steps`` to the end, carrying out each request with the blocking ``do``."""
    try:
        request = next(steps)
        while True:
            try:
                result = do(request)
            except BaseException as exc:  # handed to the step that asked; re-raised unless it handles it
                request = steps.throw(exc)
            else:
                request = steps.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value


async def arun_steps(steps: Generator[R, Any, T], do: Callable[[R], Awaitable[Any]]) -> T:
    """Drive ``steps`` to the end, carrying out each request with the awaited ``do``."""
    try:
        request = next(steps)
        while True:
            try:
                result = await do(request)
            except BaseException as exc:  # handed to the step that asked; re-raised unless it handles it
                request = steps.throw(exc)
            else:
                request = steps.send(result)
    except StopIteration as stop:
        value: T = stop.value
        return value
