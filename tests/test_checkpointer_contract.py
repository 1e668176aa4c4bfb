"""The store contract against CheckpointerStore over InMemorySaver, SqliteSaver (a file) and PostgresSaver.

PostgreSQL: ``POSTGRES_URL`` when set; else, when PostgreSQL's ``initdb`` is installed, a
temporary cluster on a Unix socket for the session; else those tests are skipped.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import uuid
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

SaverFactory = Callable[[], BaseCheckpointSaver[Any]]


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(versions[-1]) if versions else None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """``POSTGRES_URL``, or a temporary PostgreSQL cluster (Unix socket only) for the session."""
    pytest.importorskip("langgraph.checkpoint.postgres")
    if os.environ.get("POSTGRES_URL"):
        yield os.environ["POSTGRES_URL"]
        return
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("no POSTGRES_URL and no PostgreSQL installed")
    root = Path(tempfile.mkdtemp(prefix="langmem-pg-"))  # not under pytest's root-only temp dir
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: run the cluster as the postgres user
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = root / "data"
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": root}
    init = [*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
    subprocess.run(init, check=True, **quiet)
    options = f"-k {root} -p {port} -c listen_addresses=''"
    start = [*as_user, pg_ctl, "-D", str(data), "-o", options, "-w", "-l", str(root / "log"), "start"]
    subprocess.run(start, check=True, **quiet)
    try:
        yield f"postgresql://postgres@/postgres?host={root}&port={port}"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], check=False, **quiet)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def is_reference() -> bool:
    return False


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SaverFactory]:
    closers: list[Callable[[], None]] = []

    def make() -> BaseCheckpointSaver[Any]:
        if request.param == "memory":
            return InMemorySaver()
        if request.param == "sqlite":
            conn = sqlite3.connect(tmp_path / f"store{len(closers)}.sqlite", check_same_thread=False)
            closers.append(conn.close)
            return SqliteSaver(conn)
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        url = request.getfixturevalue("postgres_url")
        pg = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        closers.append(pg.close)
        saver = PostgresSaver(pg)  # type: ignore[arg-type]
        saver.setup()
        return saver

    yield make
    for close in closers:
        close()


@pytest.fixture
def make_store(saver_factory: SaverFactory) -> Iterator[Callable[..., BaseStore]]:
    stores: list[CheckpointerStore] = []

    def make(
        *,
        index: dict[str, Any] | None = None,
        ttl: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> BaseStore:
        # a fresh name per store: one PostgreSQL database holds every test's stores
        name = f"t{uuid.uuid4().hex}"
        store = CheckpointerStore(saver_factory(), index=index, ttl=ttl, clock=clock, name=name)  # type: ignore[arg-type]
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


class TestCheckpointerStoreContract(StoreContract):
    pass
