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


def _advance(steps: Generator[R, Any, T], result: Any = None, error: BaseException | None = None) -> Any:
    """Hand ``steps`` a result (or throw it an error): its next request, or ``_Done`` with its answer."""
    try:
        return steps.throw(error) if error is not None else steps.send(result)
    except StopIteration as stop:
        return _Done(stop.value)


class _Done:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def run_steps(steps: Generator[R, Any, T], do: Callable[[R], Any]) -> T:
    """Drive ``steps`` to the end, carrying out each request with the blocking ``do``."""
    request = _advance(steps)
    while not isinstance(request, _Done):
        try:
            request = _advance(steps, do(request))
        except BaseException as exc:
            request = _advance(steps, error=exc)
    value: T = request.value
    return value


async def arun_steps(steps: Generator[R, Any, T], do: Callable[[R], Awaitable[Any]]) -> T:
    """Drive ``steps`` to the end, carrying out each request with the awaited ``do``."""
    request = _advance(steps)
    while not isinstance(request, _Done):
        try:
            request = _advance(steps, await do(request))
        except BaseException as exc:
            request = _advance(steps, error=exc)
    value: T = request.value
    return value
