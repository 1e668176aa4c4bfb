"""Fixtures shared by the memory service and surface tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.services import MemoryLayout, aexecute, execute
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.testing import FakeEmbeddings

Runner = Callable[[StoreSteps[Any]], Any]


class RecordingEmbeddings(FakeEmbeddings):
    """FakeEmbeddings (64 dims) that remember every query they embedded."""

    def __init__(self) -> None:
        super().__init__(64)
        self.queries: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return super().embed_query(text)


def fake_store() -> InMemoryStore:
    """LangGraph's InMemoryStore with deterministic embeddings over record content."""
    return InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})


@pytest.fixture
def store() -> InMemoryStore:
    return fake_store()


@pytest.fixture
def scope() -> Scope:
    return Scope(user_id="alice", thread_id="t1")


@pytest.fixture
def layout() -> MemoryLayout:
    return MemoryLayout()


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest, store: InMemoryStore) -> Runner:
    """Runs a plan through the store's sync batch or its async abatch."""
    if request.param == "sync":
        return lambda plan: execute(store, plan)
    return lambda plan: asyncio.run(aexecute(store, plan))


def record_engine_calls(store: Any) -> list[Any]:
    """The calls a QdrantStore's engine runs from now on, in order (each still runs as before)."""
    calls: list[Any] = []
    execute = store._engine.execute

    def recorded(call: Any) -> Any:
        calls.append(call)
        return execute(call)

    store._engine.execute = recorded
    return calls
