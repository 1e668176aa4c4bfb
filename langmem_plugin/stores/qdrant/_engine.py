"""What the store needs of an engine: both engines (:mod:`._edge`, :mod:`._remote`) have this shape.

An engine carries out the engine calls of :mod:`._calls` and nothing more: no
store logic lives in an engine, and the store never asks which engine it holds.
What differs between them (an index build on demand, how the store describes
itself) is a method here whose answer differs.
"""

from __future__ import annotations

from typing import Any, Protocol

from langmem_plugin.stores.qdrant._calls import EngineCall

__all__ = ["Engine"]


class Engine(Protocol):
    """An opened (or openable) Qdrant collection or shard that carries out engine calls."""

    #: The dense vectors' dimension (None: no dense index, or not learned yet: the store sets it
    #: before it opens the engine).
    dims: int | None

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` has run and :meth:`close` has not since."""
        ...

    @property
    def optimize_seconds(self) -> float:
        """Seconds spent building indexes on request (0.0 for an engine that builds in the background)."""
        ...

    def open(self) -> None:
        """Open (creating what is missing) and check the stored layout against the configuration."""
        ...

    def execute(self, call: EngineCall) -> Any:
        """Carry out one call, blocking; failures come out as :mod:`langmem_plugin.errors` types."""
        ...

    async def aexecute(self, call: EngineCall) -> Any:
        """:meth:`execute`, from async code."""
        ...

    def count(self) -> int:
        """How many points there are (expired ones included until swept)."""
        ...

    def optimize(self) -> bool:
        """Build and compact the indexes now, if this engine builds on request; whether anything changed."""
        ...

    def describe(self) -> str:
        """Where the data lives, for the store's ``repr`` (e.g. ``path='./memory'``)."""
        ...

    def close(self) -> None:
        """Release what the engine holds (idempotent)."""
        ...

    async def aclose(self) -> None:
        """:meth:`close`, from async code."""
        ...
