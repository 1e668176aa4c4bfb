"""Every store of the package, each counting the ops its batches carry (shared by the hostile-input tests).

A test that says "refused before anything is read or written" opens one of these, makes the call,
and checks ``store.ops_seen`` did not move: every read and write of every store goes through
``batch`` / ``abatch``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin.services import store_steps
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings

STORE_KINDS = ["inmemory", "qdrant", "sqlite"]  # sqlite: CheckpointerStore over a SQLite file


def counting(cls: type[BaseStore]) -> type[BaseStore]:
    """``cls`` that also counts the ops its batches carry in ``ops_seen``."""

    def batch(self: Any, ops: Any) -> Any:
        ops = list(ops)
        self.ops_seen += len(ops)
        return cls.batch(self, ops)

    async def abatch(self: Any, ops: Any) -> Any:
        ops = list(ops)
        self.ops_seen += len(ops)
        return await cls.abatch(self, ops)

    return type(f"Counting{cls.__name__}", (cls,), {"batch": batch, "abatch": abatch, "ops_seen": 0})


@contextlib.contextmanager
def opened_store(kind: str, folder: Path, dims: int) -> Iterator[BaseStore]:
    """A counting store of ``kind`` (one of :data:`STORE_KINDS`) with a fake embedder, closed after."""
    index: Any = {"dims": dims, "embed": FakeEmbeddings(dims), "fields": ["content"]}
    if kind == "inmemory":
        yield counting(InMemoryStore)(index=index)
    elif kind == "qdrant":
        pytest.importorskip("qdrant_edge")
        from langmem_plugin.stores.qdrant import QdrantStore

        store = counting(QdrantStore)(path=folder / "q", index=index)  # type: ignore[call-arg]
        try:
            yield store
        finally:
            store.close()  # type: ignore[attr-defined]
    else:
        counted: Any = counting(CheckpointerStore)
        with counted.from_sqlite(folder / "memory.sqlite", index=index) as store:
            yield store


#: The services' own store driver, to put back after a test replaced it with :class:`FailingWrites`.
RUN_BATCH = store_steps.run_batch


class FailingWrites:
    """The services' store driver (``store_steps.run_batch``), raising on the ``n``-th batch that
    writes, before the store sees it: a crash between the batches of a multi-batch operation."""

    def __init__(self, n: int) -> None:
        self.n, self.writes = n, 0

    def __call__(self, store: BaseStore, request: Any) -> Any:
        if isinstance(request, list) and any(isinstance(op, PutOp) for op in request):
            self.writes += 1
            if self.writes == self.n:
                raise OSError(f"write batch {self.n} failed (injected)")
        return RUN_BATCH(store, request)
