"""Every store of the package (and LangGraph's InMemoryStore, the reference), opened the one way
for the bad-day tests: ``open_store(kind, tmp_path, index)``; Postgres skips, saying why, where no
server with pgvector can be started."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin.stores.checkpointer import CheckpointerStore

#: The kinds ``open_store`` opens.
KINDS = ("in-memory", "qdrant", "qdrant-local", "checkpointer-sqlite", "postgres")


@contextmanager
def open_store(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, index: Any, *, name: str = "store"
) -> Iterator[BaseStore]:
    """The store of ``kind`` over ``tmp_path / name`` (reopened on the same data when called again)."""
    if kind == "in-memory":
        yield InMemoryStore(index=index)
    elif kind == "postgres":  # a real PostgreSQL with pgvector
        from langmem_plugin.stores.postgres import PostgresMemoryStore
        from tests.test_postgres_contract import fresh_database

        url = fresh_database(request.getfixturevalue("pgvector_url"))
        with PostgresMemoryStore.from_conn_string(url, index=index, setup=True) as postgres:
            yield postgres
    elif kind in ("qdrant", "qdrant-local"):
        from langmem_plugin.stores.qdrant import QdrantStore

        where = ":memory:" if kind == "qdrant-local" else tmp_path / name
        with QdrantStore(where, index=index) as qdrant:
            yield qdrant
    else:
        with CheckpointerStore.from_sqlite(tmp_path / f"{name}.db", index=index) as checkpointed:
            yield checkpointed
