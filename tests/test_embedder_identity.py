"""The embedder is part of the store (issue 28, item 2).

A durable store records what names its embedder (``core.embeddings.embedder_id``) and refuses
to open with another known one — an ``EmbedderMismatchError`` naming both and the fix — instead
of answering one model's queries with another model's vectors. A store made before identities
were recorded keeps working and names its embedder with the first vectors written; an unknown
embedder (a plain function) is neither recorded nor checked. QdrantStore embedded, through
qdrant-client (its local mode, and a server when ``QDRANT_URL`` is set), PostgresMemoryStore
(on the temporary Postgres of ``tests/postgres_server.py``; skipped when none can start), and
CheckpointerStore (each put record names its embedder; a SQLite file, and any other saver).
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp
from langgraph.store.base.embed import ensure_embeddings

from langmem_plugin import CheckpointerStore, Memory, MiniLMEmbeddings, QdrantStore, memory_index
from langmem_plugin.core.bounded import Bound, BoundedWrite
from langmem_plugin.core.embeddings import (
    DEFAULT_EMBEDDINGS,
    INT8_EMBEDDINGS,
    embedder_id,
    embedding_dims,
    resolve_embeddings,
)
from langmem_plugin.errors import ConfigurationError, EmbedderMismatchError, StoreConfigMismatchError
from langmem_plugin.stores.checkpointer._log import namespace_thread, thread_config
from langmem_plugin.testing import FakeEmbeddings
from tests.postgres_server import pgvector_url  # noqa: F401  (fixture)

pytest.importorskip("qdrant_edge")

FAKE = "testing:FakeEmbeddings(hashes_per_word=2)"
OTHER_FAKE = "testing:FakeEmbeddings(hashes_per_word=3)"
NS = ("memories", "user", "sam")


def _unknown(dims: int) -> Callable[[list[str]], list[list[float]]]:
    """A plain function embedder: nothing names it."""
    fake = FakeEmbeddings(dims)
    return lambda texts: fake.embed_documents(list(texts))


def _index(embed: Any, dims: int) -> Any:
    return {"dims": dims, "embed": embed, "fields": ["content"]}


def _recorded(path: Path) -> Any:
    return json.loads((path / "store.json").read_text(encoding="utf-8"))["embedder"]


# --------------------------------------------------------------------------- what names an embedder


def test_the_identity_names_the_model_and_its_products() -> None:
    assert embedder_id(MiniLMEmbeddings()) == DEFAULT_EMBEDDINGS == "local:all-MiniLM-L6-v2"
    assert embedder_id(MiniLMEmbeddings(quantized=True)) == INT8_EMBEDDINGS == "local:all-MiniLM-L6-v2-int8"
    # the local names are spec strings: resolving one makes that embedder again
    for name in (DEFAULT_EMBEDDINGS, INT8_EMBEDDINGS):
        assert embedder_id(resolve_embeddings(name)) == name
    assert (
        embedder_id(resolve_embeddings(None))
        == embedder_id(resolve_embeddings("local"))
        == DEFAULT_EMBEDDINGS
    )
    # FakeEmbeddings is named, stably, by what changes its vectors (dims are checked apart)
    assert embedder_id(FakeEmbeddings(8)) == embedder_id(FakeEmbeddings(64)) == FAKE
    assert embedder_id(FakeEmbeddings(8, hashes_per_word=3)) == OTHER_FAKE
    # nothing names a plain function, sync or async: unknown
    assert embedder_id(resolve_embeddings(_unknown(8))) is None

    async def aembed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    assert embedder_id(ensure_embeddings(aembed)) is None


def test_openai_is_named_by_its_model_and_its_dimensions_are_the_dims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    openai = pytest.importorskip("langchain_openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # nothing is called
    small = openai.OpenAIEmbeddings(model="text-embedding-3-small")
    assert embedder_id(small) == "openai:text-embedding-3-small"
    assert embedder_id(resolve_embeddings("openai:text-embedding-3-small")) == "openai:text-embedding-3-small"
    shortened = openai.OpenAIEmbeddings(model="text-embedding-3-small", dimensions=512)
    assert embedder_id(shortened) == "openai:text-embedding-3-small"  # the name stays a spec string:
    assert embedding_dims(shortened) == 512  # dimensions= shows in the dims every store records
    assert (
        embedder_id(openai.OpenAIEmbeddings(model="text-embedding-3-large"))
        == "openai:text-embedding-3-large"
    )


def test_the_error_is_a_typed_config_mismatch_that_survives_pickling() -> None:
    from langmem_plugin.stores._embedder import embedder_mismatch

    error = embedder_mismatch("the store at ./m", DEFAULT_EMBEDDINGS, INT8_EMBEDDINGS)
    assert isinstance(error, StoreConfigMismatchError)
    assert isinstance(error, ConfigurationError)
    assert isinstance(error, ValueError)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.written_with, copy.opened_with) == (
        str(error),
        DEFAULT_EMBEDDINGS,
        INT8_EMBEDDINGS,
    )


# --------------------------------------------------------------------------- QdrantStore, embedded


def test_an_embedded_store_refuses_another_embedder_and_opens_with_its_own(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    with QdrantStore(path, index=memory_index(MiniLMEmbeddings())) as store:
        store.put(NS, "tea", {"content": "Sam drinks green tea every morning"})
    assert _recorded(path) == DEFAULT_EMBEDDINGS
    # the int8 products are another embedder of the same dims: refused when the store is
    # constructed (the embedded engine opens there), before anything is embedded
    with pytest.raises(EmbedderMismatchError) as caught:
        QdrantStore(path, index=memory_index(MiniLMEmbeddings(quantized=True)))
    message = str(caught.value)
    assert f"the store at {path} was written with the embedder 'local:all-MiniLM-L6-v2'" in message
    assert "but is opened with 'local:all-MiniLM-L6-v2-int8'" in message
    assert "embeddings='local:all-MiniLM-L6-v2'" in message  # the fix, as a spec string
    assert "copy_items" in message  # and how to change embedders
    assert "export_jsonl" in message
    assert (caught.value.written_with, caught.value.opened_with) == (DEFAULT_EMBEDDINGS, INT8_EMBEDDINGS)
    with pytest.raises(EmbedderMismatchError, match="testing:FakeEmbeddings"):
        QdrantStore(path, index=memory_index(FakeEmbeddings(384)))
    # the refusals released the directory: its own embedder opens it, and it answers
    with QdrantStore(path, index=memory_index("local:all-MiniLM-L6-v2")) as store:
        assert [i.key for i in store.search(NS, query="what does Sam drink?")] == ["tea"]
    assert _recorded(path) == DEFAULT_EMBEDDINGS


def test_a_new_store_records_its_embedder_before_any_write(tmp_path: Path) -> None:
    QdrantStore(tmp_path / "s", index=_index(FakeEmbeddings(16), 16)).close()
    assert _recorded(tmp_path / "s") == FAKE
    with pytest.raises(EmbedderMismatchError):
        QdrantStore(tmp_path / "s", index=_index(FakeEmbeddings(16, hashes_per_word=3), 16))


def test_a_store_from_before_identities_keeps_working_and_is_named_by_its_first_write(tmp_path: Path) -> None:
    path = tmp_path / "old"
    with QdrantStore(path, index=_index(FakeEmbeddings(16), 16)) as store:
        store.put(NS, "old", {"content": "written before embedders were recorded"})
    meta = json.loads((path / "store.json").read_text(encoding="utf-8"))
    del meta["embedder"]  # what an earlier version wrote
    (path / "store.json").write_text(json.dumps(meta), encoding="utf-8")
    # opened with any embedder of its dims; reading names nothing
    with QdrantStore(path, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16)) as store:
        assert store.get(NS, "old") is not None
        assert [i.key for i in store.search(NS, query="written")] == ["old"]
    assert _recorded(path) is None
    # a write without vectors names nothing either
    with QdrantStore(path, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16)) as store:
        store.put(NS, "bare", {"content": "not indexed"}, index=False)
    assert _recorded(path) is None
    # the first vectors a known embedder writes name it; from then on it is checked
    with QdrantStore(path, index=_index(FakeEmbeddings(16), 16)) as store:
        store.put(NS, "new", {"content": "written after"})
        assert _recorded(path) == FAKE  # at once, not at close
    with pytest.raises(EmbedderMismatchError, match="hashes_per_word=3"):
        QdrantStore(path, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16))


def test_an_unknown_embedder_is_neither_recorded_nor_checked(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with QdrantStore(path, index=_index(_unknown(16), 16)) as store:
        store.put(NS, "a", {"content": "green tea"})
    assert _recorded(path) is None
    with QdrantStore(path, index=_index(FakeEmbeddings(16), 16)) as store:  # unchecked: opens
        store.put(NS, "b", {"content": "black coffee"})
    assert _recorded(path) == FAKE
    with QdrantStore(path, index=_index(_unknown(16), 16)) as store:  # a known record, unknown embedder
        store.put(NS, "c", {"content": "oolong"})
        assert len(store.search(NS, query="tea")) == 3
    assert _recorded(path) == FAKE  # kept


def test_memory_at_a_path_refuses_another_embedder_when_constructed(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    config: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
    memory = Memory(path=path, embeddings=FakeEmbeddings(384))
    next(t for t in memory.tools if t.name == "save_memory").invoke({"content": "Sam likes tea"}, config)
    memory.close()
    # Memory() opens its default store in its constructor (the embedded engine checks store.json
    # there), so the error comes at Memory(...), not at the first recall or save
    with pytest.raises(
        EmbedderMismatchError, match=r"written with the embedder 'testing:.*opened with 'local:"
    ):
        Memory(path=path)
    with pytest.raises(EmbedderMismatchError, match="'local:all-MiniLM-L6-v2-int8'"):
        Memory(path=path, embeddings="local:all-MiniLM-L6-v2-int8")
    again = Memory(path=path, embeddings=FakeEmbeddings(384))
    try:
        assert "Sam likes tea" in again.recall([HumanMessage("What does Sam like?")], config).prompt
    finally:
        again.close()


# ---------------------------------------------------------------- QdrantStore, through qdrant-client


@pytest.fixture(params=["local", "server"])
def client_store(request: pytest.FixtureRequest) -> Iterator[Callable[[Any], QdrantStore]]:
    """Stores on one collection through one client: qdrant-client's local mode, or QDRANT_URL's server."""
    from qdrant_client import QdrantClient

    if request.param == "server":
        url = os.environ.get("QDRANT_URL")
        if not url:
            pytest.skip("set QDRANT_URL to run against a Qdrant server")
        client = QdrantClient(url=url, api_key=os.environ.get("QDRANT_API_KEY"))
    else:
        client = QdrantClient(location=":memory:")
    collection = f"test-{uuid.uuid4().hex[:12]}"
    made: list[QdrantStore] = []

    def make(index: Any) -> QdrantStore:
        store = QdrantStore(client=client, collection=collection, index=index)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
    if client.collection_exists(collection):
        client.delete_collection(collection)
    client.close()


def _metadata(store: QdrantStore) -> Any:
    engine: Any = store._engine
    return engine.client.get_collection(engine.collection).config.metadata


def test_a_collection_refuses_another_embedder_in_setup(client_store: Callable[[Any], QdrantStore]) -> None:
    first = client_store(_index(FakeEmbeddings(16), 16))
    first.put(NS, "a", {"content": "green tea"})
    assert _metadata(first)["langmem_plugin"] == {"embedder": FAKE, "dims": 16}
    other = client_store(_index(FakeEmbeddings(16, hashes_per_word=3), 16))  # no I/O yet
    with pytest.raises(EmbedderMismatchError) as caught:
        other.setup()
    assert f"the Qdrant collection {other._engine.collection!r} was written with" in str(caught.value)  # type: ignore[attr-defined]
    assert (caught.value.written_with, caught.value.opened_with) == (FAKE, OTHER_FAKE)
    same = client_store(_index(FakeEmbeddings(16), 16))
    assert [i.key for i in same.search(NS, query="tea")] == ["a"]


async def test_a_collection_without_a_record_is_named_by_its_first_write(
    client_store: Callable[[Any], QdrantStore],
) -> None:
    unknown = client_store(_index(_unknown(16), 16))
    await unknown.aput(NS, "a", {"content": "green tea"})  # made by an unknown embedder: no record
    assert not (_metadata(unknown) or {}).get("langmem_plugin")
    known = client_store(_index(FakeEmbeddings(16), 16))
    assert len(await known.asearch(NS, query="tea")) == 1  # opens; reading names nothing
    assert not (_metadata(known) or {}).get("langmem_plugin")
    await known.aput(NS, "b", {"content": "black coffee"})  # the async path records alike
    assert _metadata(known)["langmem_plugin"] == {"embedder": FAKE, "dims": 16}
    with pytest.raises(EmbedderMismatchError):
        await client_store(_index(FakeEmbeddings(16, hashes_per_word=3), 16)).asetup()
    await client_store(_index(_unknown(16), 16)).aput(NS, "c", {"content": "oolong"})  # unknown: unchecked


# --------------------------------------------------------------------------- PostgresMemoryStore


@pytest.fixture
def database(pgvector_url: str) -> str:  # noqa: F811
    pytest.importorskip("langgraph.store.postgres")
    from tests.test_postgres_contract import fresh_database

    return fresh_database(pgvector_url)


def _pg(url: str, embed: Embeddings | Callable[..., Any], dims: int = 16, *, setup: bool = False) -> Any:
    from langmem_plugin.stores.postgres import PostgresMemoryStore

    return PostgresMemoryStore.from_conn_string(url, index=_index(embed, dims), setup=setup)


def _pg_recorded(url: str) -> Any:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT embedder, dims FROM langmem_store_embedder").fetchone()
    return row


def test_a_postgres_store_refuses_another_embedder_when_opened(database: str) -> None:
    with _pg(database, MiniLMEmbeddings(), 384, setup=True) as store:
        store.put(NS, "tea", {"content": "Sam drinks green tea every morning"})
    assert _pg_recorded(database) == (DEFAULT_EMBEDDINGS, 384)
    with pytest.raises(EmbedderMismatchError) as caught, _pg(database, MiniLMEmbeddings(quantized=True), 384):
        pass
    message = str(caught.value)
    assert "the Postgres store at postgresql://" in message  # the URL, without its password
    assert (
        "written with the embedder 'local:all-MiniLM-L6-v2' but is opened with 'local:all-MiniLM-L6-v2-int8'"
        in (message)
    )
    assert "copy_items" in message
    with pytest.raises(EmbedderMismatchError), _pg(database, FakeEmbeddings(384), 384, setup=True):
        pass  # setup does not overwrite the record
    with _pg(database, MiniLMEmbeddings(), 384) as store:
        assert [i.key for i in store.search(NS, query="what does Sam drink?")] == ["tea"]


def test_a_postgres_store_from_before_identities_is_named_once_set_up_and_written(database: str) -> None:
    import psycopg

    with _pg(database, FakeEmbeddings(16), setup=True) as store:
        store.put(NS, "old", {"content": "written before embedders were recorded"})
    with psycopg.connect(database, autocommit=True) as conn:  # the schema of the previous version
        conn.execute("DROP TABLE langmem_store_embedder")
        conn.execute("DELETE FROM langmem_store_migrations WHERE kind = 'vector' AND v > 0")
    # it opens without setup, with any embedder of its dims: nothing is recorded, nothing checked
    with _pg(database, FakeEmbeddings(16, hashes_per_word=3)) as store:
        assert store.get(NS, "old") is not None
        store.put(NS, "meanwhile", {"content": "an unchecked write"})
    # setup adds the table; a database that holds vectors is not named by setup, but by the
    # first vectors a known embedder writes
    with _pg(database, FakeEmbeddings(16), setup=True) as store:
        assert _pg_recorded(database) is None
        store.put(NS, "new", {"content": "written after"})
    assert _pg_recorded(database) == (FAKE, 16)
    with (
        pytest.raises(EmbedderMismatchError, match="hashes_per_word=3"),
        _pg(database, FakeEmbeddings(16, hashes_per_word=3)),
    ):
        pass


def test_postgres_unknown_embedders_and_two_first_writers(database: str) -> None:
    with _pg(database, _unknown(16), setup=True) as store:
        store.put(NS, "a", {"content": "green tea"})
    assert _pg_recorded(database) is None  # an unknown embedder records nothing
    # two stores open on a database that names no embedder; the first to write names its own,
    # and the other's write is refused in its transaction: nothing of it is stored
    with (
        _pg(database, FakeEmbeddings(16)) as first,
        _pg(database, FakeEmbeddings(16, hashes_per_word=3)) as second,
    ):
        first.put(NS, "b", {"content": "black coffee"})
        with pytest.raises(EmbedderMismatchError):
            second.put(NS, "c", {"content": "oolong"})
        assert first.get(NS, "c") is None
    assert _pg_recorded(database) == (FAKE, 16)
    with _pg(database, _unknown(16)) as store:  # unknown: unchecked
        store.put(NS, "d", {"content": "rooibos"})
        assert len(store.search(NS, query="tea")) == 3


# --------------------------------------------------------------------------- CheckpointerStore


def _put_records(saver: BaseCheckpointSaver[Any], namespace: tuple[str, ...] = NS) -> list[dict[str, Any]]:
    """Every put record of ``namespace`` in the log of the store called ``"store"``, oldest first."""
    saved = sorted(
        saver.list(thread_config(namespace_thread("store", namespace))), key=lambda t: t.checkpoint["id"]
    )
    return [r for t in saved for r in t.checkpoint["channel_values"].values() if r["op"] == "put"]


def _checkpoints(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    return int(count)


def test_a_checkpointer_file_refuses_another_embedder_and_opens_with_its_own(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")
    path = tmp_path / "memory.db"
    with CheckpointerStore.from_sqlite(path, index=memory_index(MiniLMEmbeddings())) as store:
        store.put(NS, "tea", {"content": "Sam drinks green tea every morning"})
        store.put(NS, "bare", {"content": "not indexed"}, index=False)
        tea, bare = _put_records(store.checkpointer)
    assert (tea["embedder"], tea["dims"], tea["fields"]) == (DEFAULT_EMBEDDINGS, 384, ["content"])
    assert "embedder" not in bare  # no vectors, nothing named
    written = _checkpoints(path)
    # the int8 products are another embedder of the same dims: refused when the log is read
    # (setup, or the first call), before anything is embedded
    with CheckpointerStore.from_sqlite(path, index=memory_index(MiniLMEmbeddings(quantized=True))) as store:
        with pytest.raises(EmbedderMismatchError) as caught:
            store.setup()
        message = str(caught.value)
        assert f"the CheckpointerStore at {os.path.realpath(path)} was written with the embedder " in message
        assert "'local:all-MiniLM-L6-v2' but is opened with 'local:all-MiniLM-L6-v2-int8'" in message
        assert "embeddings='local:all-MiniLM-L6-v2'" in message  # the fix, as a spec string
        assert "copy_items" in message
        assert (caught.value.written_with, caught.value.opened_with) == (DEFAULT_EMBEDDINGS, INT8_EMBEDDINGS)
        # the store stays refused: every call raises again, and none writes
        with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2-int8"):
            store.get(NS, "tea")
        with pytest.raises(EmbedderMismatchError):
            store.put(NS, "coffee", {"content": "and black coffee"})
    assert _checkpoints(path) == written
    # its own embedder opens it, and it answers
    with CheckpointerStore.from_sqlite(path, index=memory_index("local:all-MiniLM-L6-v2")) as store:
        assert store.search(NS, query="what does Sam drink?")[0].key == "tea"


async def test_any_saver_refuses_another_embedder_sync_and_async() -> None:
    saver = InMemorySaver()
    store = CheckpointerStore(saver, index=_index(FakeEmbeddings(16), 16))
    store.put(NS, "a", {"content": "green tea"})
    assert _put_records(saver)[0]["embedder"] == FAKE
    with pytest.raises(EmbedderMismatchError) as caught:
        await CheckpointerStore(saver, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16)).asetup()
    assert str(caught.value).startswith(
        f"the CheckpointerStore over InMemorySaver was written with the embedder {FAKE!r}"
    )
    assert (caught.value.written_with, caught.value.opened_with) == (FAKE, OTHER_FAKE)
    with pytest.raises(EmbedderMismatchError):
        CheckpointerStore(saver, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16)).search(
            NS, query="tea"
        )
    # another store on the same saver (its own name, its own log) is not concerned
    other = CheckpointerStore(saver, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16), name="notes")
    await other.aput(NS, "b", {"content": "black coffee"})
    with pytest.raises(EmbedderMismatchError, match="the CheckpointerStore 'notes' over InMemorySaver"):
        CheckpointerStore(saver, index=_index(FakeEmbeddings(16), 16), name="notes").setup()
    same = CheckpointerStore(saver, index=_index(FakeEmbeddings(16), 16))
    assert [i.key for i in await same.asearch(NS, query="tea")] == ["a"]


def test_a_checkpointer_log_from_before_identities_or_an_unknown_embedder_keeps_working(
    tmp_path: Path,
) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")
    path = tmp_path / "memory.db"
    # an unknown embedder writes records that name none: what an earlier version wrote
    with CheckpointerStore.from_sqlite(path, index=_index(_unknown(16), 16)) as store:
        store.put(NS, "old", {"content": "green tea, written before embedders were recorded"})
        assert "embedder" not in _put_records(store.checkpointer)[0]
    # a known embedder opens it (nothing to check), reuses its vectors, and names its own writes
    with CheckpointerStore.from_sqlite(path, index=_index(FakeEmbeddings(16), 16)) as store:
        assert [i.key for i in store.search(NS, query="green tea")] == ["old"]
        store.put(NS, "new", {"content": "black coffee, written after"})
        assert [r.get("embedder") for r in _put_records(store.checkpointer)] == [None, FAKE]
    # from then on another known embedder is refused
    with (
        CheckpointerStore.from_sqlite(path, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16)) as store,
        pytest.raises(EmbedderMismatchError, match="hashes_per_word=3"),
    ):
        store.setup()
    # and an unknown one is not checked: it opens, writes (naming nothing) and searches
    with CheckpointerStore.from_sqlite(path, index=_index(_unknown(16), 16)) as store:
        store.put(NS, "third", {"content": "oolong tea"})
        assert len(store.search(NS, query="tea")) == 3
        assert [r.get("embedder") for r in _put_records(store.checkpointer)] == [None, FAKE, None]
    with CheckpointerStore.from_sqlite(path, index=_index(FakeEmbeddings(16), 16)) as store:
        assert {i.key for i in store.search(NS, query="tea")} == {"old", "new", "third"}


def test_a_bounded_write_refuses_what_another_embedder_wrote_meanwhile(tmp_path: Path) -> None:
    """Two stores open on one file that names no embedder yet: the second's bounded write reads
    the first's records in its transaction, and is refused; nothing of it is written."""
    pytest.importorskip("langgraph.checkpoint.sqlite")
    path = tmp_path / "memory.db"

    def refuse(count: int, adding: int) -> Exception:
        return AssertionError("no limit is reached here")

    write = BoundedWrite((PutOp(NS, "b", {"content": "oolong"}),), (Bound(NS, 100, refuse),))
    with (
        CheckpointerStore.from_sqlite(path, index=_index(FakeEmbeddings(16), 16)) as first,
        CheckpointerStore.from_sqlite(
            path, index=_index(FakeEmbeddings(16, hashes_per_word=3), 16)
        ) as second,
    ):
        first.setup()
        second.setup()
        first.put(NS, "a", {"content": "green tea"})
        written = _checkpoints(path)
        with pytest.raises(EmbedderMismatchError, match="hashes_per_word=3"):
            second.write_bounded(write)
        assert _checkpoints(path) == written
        with pytest.raises(EmbedderMismatchError):
            second.get(NS, "a")
        assert [i.key for i in first.search(NS, query="tea")] == ["a"]


def test_memory_over_a_checkpointer_file_refuses_another_embedder_at_its_first_use(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")
    path = tmp_path / "memory.db"
    config: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
    with CheckpointerStore.from_sqlite(path, index=memory_index(FakeEmbeddings(384))) as store:
        memory = Memory(store=store)
        next(t for t in memory.tools if t.name == "save_memory").invoke({"content": "Sam likes tea"}, config)
    index = memory_index(FakeEmbeddings(384, hashes_per_word=3))
    with CheckpointerStore.from_sqlite(path, index=index) as store:
        memory = Memory(store=store)  # a store given to Memory is not read when it is constructed
        with pytest.raises(
            EmbedderMismatchError, match=r"written with the embedder 'testing:.*=2\)' but is opened"
        ):
            memory.recall([HumanMessage("What does Sam like?")], config)
    with CheckpointerStore.from_sqlite(path, index=memory_index(FakeEmbeddings(384))) as store:
        again = Memory(store=store)
        assert "Sam likes tea" in again.recall([HumanMessage("What does Sam like?")], config).prompt
