"""The store contract against CheckpointerStore over InMemorySaver and SqliteSaver (a real file)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore

from langmem_plugin import CheckpointerStore
from tests.store_contract import StoreContract


@pytest.fixture
def is_reference() -> bool:
    return False


@pytest.fixture(params=["memory", "sqlite"])
def saver_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], BaseCheckpointSaver[Any]]]:
    connections: list[sqlite3.Connection] = []

    def make() -> BaseCheckpointSaver[Any]:
        if request.param == "memory":
            return InMemorySaver()
        conn = sqlite3.connect(tmp_path / f"store{len(connections)}.sqlite", check_same_thread=False)
        connections.append(conn)
        return SqliteSaver(conn)

    yield make
    for conn in connections:
        conn.close()


@pytest.fixture
def make_store(saver_factory: Callable[[], BaseCheckpointSaver[Any]]) -> Iterator[Callable[..., BaseStore]]:
    stores: list[CheckpointerStore] = []

    def make(
        *,
        index: dict[str, Any] | None = None,
        ttl: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> BaseStore:
        store = CheckpointerStore(saver_factory(), index=index, ttl=ttl, clock=clock)  # type: ignore[arg-type]
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


class TestCheckpointerStoreContract(StoreContract):
    pass
