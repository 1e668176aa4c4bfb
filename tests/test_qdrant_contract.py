"""The store contract against QdrantStore: embedded (Qdrant Edge), qdrant-client ":memory:", and a server.

The server run needs ``QDRANT_URL`` (e.g. ``http://localhost:6333``); each test
gets its own collection, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore

from langmem_plugin.stores.qdrant import QdrantStore
from tests.store_contract import StoreContract

ENGINES = ["embedded", "memory", "server"]


@pytest.fixture
def is_reference() -> bool:
    return False


def _open(engine: str, tmp_path: Path, n: int, **kwargs: Any) -> QdrantStore:
    if engine == "embedded":
        return QdrantStore(tmp_path / f"store{n}", **kwargs)
    if engine == "memory":
        return QdrantStore(":memory:", **kwargs)
    url = os.environ.get("QDRANT_URL")
    if not url:
        pytest.skip("set QDRANT_URL to run the contract against a Qdrant server")
    return QdrantStore(url=url, collection=f"test-{uuid.uuid4().hex[:12]}", **kwargs)


@pytest.fixture(params=ENGINES)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., BaseStore]]:
    made: list[QdrantStore] = []

    def make(
        *,
        index: dict[str, Any] | None = None,
        ttl: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> BaseStore:
        options: dict[str, Any] = {"clock": clock} if clock is not None else {}
        store = _open(request.param, tmp_path, len(made), index=index, ttl=ttl, options=options)
        made.append(store)
        return store

    yield make
    for store in made:
        if request.param == "server" and store._engine.is_open:
            engine = store._engine
            engine.client.delete_collection(engine.collection)  # type: ignore[attr-defined]
        store.close()


class TestQdrantStoreContract(StoreContract):
    pass
