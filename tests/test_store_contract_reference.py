"""The contract suite against LangGraph's InMemoryStore, the reference: it must pass there too."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from tests.store_contract import StoreContract


@pytest.fixture
def is_reference() -> bool:
    return True


@pytest.fixture
def make_store() -> Callable[..., BaseStore]:
    def make(
        *,
        index: dict[str, Any] | None = None,
        ttl: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> BaseStore:
        if ttl is not None or clock is not None:
            pytest.skip("InMemoryStore has no TTL and no injectable clock (docs/store-contract.md, TTL)")
        return InMemoryStore(index=index)  # type: ignore[arg-type]

    return make


class TestInMemoryStoreReference(StoreContract):
    pass
