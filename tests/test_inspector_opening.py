"""``open_store``: the store a person names, opened as it is; never one created where none was.

Real stores throughout: a memory directory written by ``Memory(path=...)`` (closed, then held open
by a Memory in this process: refused with the way out, or read as a snapshot), SQLite files a
``CheckpointerStore`` wrote (and ones it did not), Postgres (a temporary pgvector cluster, skipped
as the Postgres store's tests are), and specs that name nothing.
"""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin import CheckpointerStore, Memory, QdrantStore, memory_index
from langmem_plugin.core.embeddings import MiniLMEmbeddings
from langmem_plugin.errors import ConfigurationError, StoreError, StoreLockedError
from langmem_plugin.inspector.opening import open_store
from langmem_plugin.surfaces.inspector import Inspector
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)
from tests.test_postgres_contract import fresh_database

EXCHANGES = [
    ("user", "My dog is called Rex"),
    ("assistant", "Noted, Rex it is."),
    ("user", "I live in Lisbon"),
    ("assistant", "Lisbon, got it."),
]
CONFIG: Any = {"configurable": {"thread_id": "t1", "user_id": "sam"}}


def _contents(store: Any) -> list[str]:
    return sorted(row.content for row in Inspector(store).page(user_id="sam").rows)


def _fill(memory: Memory) -> None:
    memory.import_history(EXCHANGES, CONFIG)
    memory.flush()


@pytest.fixture
def memory_dir(tmp_path: Path, minilm: MiniLMEmbeddings) -> Path:
    """A memory directory two exchanges were imported into, closed."""
    path = tmp_path / "memory"
    memory = Memory(path=path, embeddings=minilm)
    _fill(memory)
    memory.close()
    return path


def _files(directory: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in directory.rglob("*")
        if p.is_file()
    }


# --------------------------------------------------------------------------- a memory directory


def test_a_closed_memory_directory_opens_and_is_closed_after(
    memory_dir: Path, minilm: MiniLMEmbeddings
) -> None:
    with open_store(str(memory_dir), embeddings=minilm) as store:
        assert isinstance(store, QdrantStore)
        assert _contents(store) == [
            "User: I live in Lisbon\nAssistant: Lisbon, got it.",
            "User: My dog is called Rex\nAssistant: Noted, Rex it is.",
        ]
    memory = Memory(path=memory_dir, embeddings=minilm)  # released: the next opener gets it
    memory.close()


def test_a_held_directory_is_refused_with_the_way_out(memory_dir: Path, minilm: MiniLMEmbeddings) -> None:
    memory = Memory(path=memory_dir, embeddings=minilm)
    try:
        opening = open_store(str(memory_dir), embeddings=minilm)  # what it is is known: no error yet
        with pytest.raises(StoreLockedError) as info, opening:
            pass
        message = str(info.value)
        assert "--snapshot" in message
        assert "stop the agent" in message
        assert "this process" in message
        assert _contents(memory.store) != []  # the holder goes on
    finally:
        memory.close()


def test_a_snapshot_reads_a_held_directory_and_leaves_it_untouched(
    memory_dir: Path, minilm: MiniLMEmbeddings
) -> None:
    memory = Memory(path=memory_dir, embeddings=minilm)
    try:
        before = _files(memory_dir)
        lock = (memory_dir / ".lock").read_text()
        with open_store(str(memory_dir), snapshot=True, embeddings=minilm) as store:
            assert isinstance(store, QdrantStore)
            copy = store.path
            assert copy is not None
            assert copy != memory_dir
            assert _contents(store) == _contents(memory.store)
            store.put(("memories", "user", "sam"), "only-in-the-copy", {"content": "a change to the copy"})
        assert copy is not None
        assert not copy.exists()  # removed on exit
        assert _files(memory_dir) == before
        assert (memory_dir / ".lock").read_text() == lock
        assert memory.store.get(("memories", "user", "sam"), "only-in-the-copy") is None
        memory.import_history([("user", "I play the cello"), ("assistant", "Nice.")], CONFIG)
        assert len(_contents(memory.store)) == 3  # the holder still writes
    finally:
        memory.close()


# --------------------------------------------------------------------------- SQLite


@pytest.mark.parametrize("name", ["memory.sqlite", "agent-state.bin"])
def test_an_sqlite_file_a_checkpointer_store_wrote_opens(
    tmp_path: Path, minilm: MiniLMEmbeddings, name: str
) -> None:
    path = tmp_path / name  # any name: the header says it is SQLite
    with CheckpointerStore.from_sqlite(path, index=memory_index(minilm)) as written:
        memory = Memory(written)
        _fill(memory)
        memory.close()
    with open_store(str(path), embeddings=minilm) as store:
        assert isinstance(store, CheckpointerStore)
        assert len(_contents(store)) == 2
        considered = Inspector(store).explain("my dog's name", user_id="sam").considered
        assert considered[0].outcome == "injected"


def test_an_sqlite_file_with_no_memory_store_is_refused_and_not_changed(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    plain = tmp_path / "notes.db"
    with sqlite3.connect(plain) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    checkpoints = tmp_path / "checkpoints.sqlite"  # a graph's checkpoints, as the demo keeps them
    with SqliteSaver.from_conn_string(str(checkpoints)) as saver:
        saver.setup()
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "store.json").write_text("{}")
    for path, said in [(plain, "holds no checkpoints"), (checkpoints, "checkpoints but no memory store")]:
        before = path.read_bytes()
        with pytest.raises(ConfigurationError, match=said) as info:
            open_store(str(path)).__enter__()
        assert str(tmp_path / "memory") in str(info.value)  # the memory directory beside it
        assert path.read_bytes() == before


# --------------------------------------------------------------------------- servers


def test_an_unreachable_qdrant_server_is_a_store_error_naming_it() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(StoreError, match=f"could not reach the Qdrant server at {url}"):
        open_store(url).__enter__()


@pytest.fixture
def postgres_url(pgvector_url: str) -> str:  # noqa: F811
    return fresh_database(pgvector_url)


def _postgres_index(minilm: MiniLMEmbeddings) -> Any:
    made = memory_index(minilm)
    return {key: made[key] for key in ("dims", "embed", "fields", "lexical_fields")}


def test_a_postgres_url_opens_the_memory_store_there(postgres_url: str, minilm: MiniLMEmbeddings) -> None:
    from langmem_plugin.stores import PostgresMemoryStore

    with PostgresMemoryStore.from_conn_string(
        postgres_url, index=_postgres_index(minilm), setup=True
    ) as written:
        memory = Memory(written)
        _fill(memory)
        memory.close()
    with open_store(postgres_url, embeddings=minilm) as store:
        assert isinstance(store, PostgresMemoryStore)
        assert len(_contents(store)) == 2


def test_a_postgres_database_without_the_schema_is_refused_and_left_so(
    postgres_url: str, minilm: MiniLMEmbeddings
) -> None:
    import psycopg

    with pytest.raises(StoreError, match="missing"):
        open_store(postgres_url, embeddings=minilm).__enter__()
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert tables == []  # nothing was created


# --------------------------------------------------------------------------- names of nothing


@pytest.fixture
def nothing(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("hello")
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "fake.sqlite").write_text("not a database at all")
    (tmp_path / "empty.db").write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("missing", "no store at"),
        ("missing/memory.sqlite", "no store at"),
        ("empty", "no memory store (no store.json)"),
        ("other", "no memory store (no store.json)"),
        ("notes.txt", "not an store"),
        ("fake.sqlite", "not an SQLite file"),
        ("empty.db", "not an SQLite file"),
    ],
)
def test_a_path_that_holds_no_store_names_what_is_accepted(nothing: Path, spec: str, said: str) -> None:
    before = sorted(p.name for p in nothing.rglob("*"))
    with pytest.raises(ConfigurationError) as info:
        open_store(str(nothing / spec))
    message = str(info.value)
    assert said in message
    assert "memory directory" in message  # what is accepted
    assert "postgresql://" in message
    assert sorted(p.name for p in nothing.rglob("*")) == before  # nothing created


@pytest.mark.parametrize("spec", ["", "   ", "a\x00b", "ftp://example.com/store", "mysql://sam:hunter2@db/x"])
def test_a_spec_that_is_no_path_nor_a_known_url_is_refused(spec: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        open_store(spec)
    assert "hunter2" not in str(info.value)
