"""PostgresMemoryStore shared by processes, item limits for every writer, and bad input.

- two real processes on one database see each other's writes at once (get, search, candidates);
- a compartment's limit holds across two store objects (two connections) and two processes;
- a database that is down, a wrong URL, a server without pgvector, an older schema, other dims:
  a typed error naming the fix, raised when the store is opened;
- a connection killed in the middle of a batch (``pg_terminate_backend``) leaves nothing of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp

from langmem_plugin.core.bounded import Bound, BoundedWrite, item_limits
from langmem_plugin.core.candidates import CandidateQuery
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import (
    ConfigurationError,
    InvalidValueError,
    MemoryLimitError,
    StoreConfigMismatchError,
    StoreError,
)
from langmem_plugin.services import CompartmentLimits, MemoryLayout, execute, save_steps
from langmem_plugin.testing import FakeEmbeddings
from tests.postgres_server import pgvector_url, plain_postgres_url  # noqa: F401  (fixtures)
from tests.test_postgres_contract import fresh_database

pytest.importorskip("langgraph.store.postgres")

from langmem_plugin.stores.postgres import PostgresMemoryStore

DIMS = 32
USER = ("memories", "user", "sam")


def _index() -> Any:
    return {"dims": DIMS, "embed": FakeEmbeddings(dims=DIMS), "fields": ["content"]}


@pytest.fixture
def database(pgvector_url: str) -> str:  # noqa: F811
    """A fresh database, migrated."""
    url = fresh_database(pgvector_url)
    with PostgresMemoryStore.from_conn_string(url, index=_index(), setup=True):
        pass
    return url


@pytest.fixture
def open_store(database: str) -> Iterator[Callable[[], PostgresMemoryStore]]:
    managers: list[Any] = []

    def open_() -> PostgresMemoryStore:
        manager = PostgresMemoryStore.from_conn_string(database, index=_index())
        managers.append(manager)
        return manager.__enter__()

    yield open_
    for manager in managers:
        manager.__exit__(None, None, None)


# --------------------------------------------------------------------------- two processes

CHILD = textwrap.dedent(
    """
    import json, sys
    from langmem_plugin.stores.postgres import PostgresMemoryStore
    from langmem_plugin.core.candidates import CandidateQuery
    from langmem_plugin.testing import FakeEmbeddings

    index = {"dims": DIMS, "embed": FakeEmbeddings(dims=DIMS), "fields": ["content"]}
    with PostgresMemoryStore.from_conn_string(sys.argv[1], index=index) as store:
        print("ready", flush=True)
        for line in sys.stdin:
            verb, key, text = json.loads(line)
            if verb == "put":
                store.put(("shared",), key, {"content": text})
                print(json.dumps("done"), flush=True)
            else:
                item = store.get(("shared",), key)
                [found] = store.search_candidates([CandidateQuery(("shared",), text)])
                print(json.dumps([item.value if item else None, [i.key for i in found.lexical]]), flush=True)
    """.replace("DIMS", str(DIMS))
)


def test_two_processes_see_each_others_writes_at_once(
    database: str, open_store: Callable[[], PostgresMemoryStore]
) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, database], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        _converse(child, open_store)
        assert child.wait(timeout=30) == 0


def _converse(child: subprocess.Popen[str], open_store: Callable[[], PostgresMemoryStore]) -> None:
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"

        def ask(*words: str) -> Any:
            assert child.stdin is not None
            assert child.stdout is not None
            child.stdin.write(json.dumps(words) + "\n")
            child.stdin.flush()
            return json.loads(child.stdout.readline())

        store = open_store()
        assert ask("put", "from-child", "a zeppelin over the harbour") == "done"
        assert store.get(("shared",), "from-child") is not None  # no reopen, no wait
        [found] = store.search_candidates([CandidateQuery(("shared",), "zeppelin")])
        assert [i.key for i in found.lexical] == ["from-child"]
        store.put(("shared",), "from-parent", {"content": "a quokka on the ferry"})
        value, lexical = ask("get", "from-parent", "quokka ferry")
        assert value == {"content": "a quokka on the ferry"}
        assert lexical == ["from-parent"]
    finally:
        child.stdin.close()


# --------------------------------------------------------------------------- item limits


def _layout(limit: int) -> MemoryLayout:
    return MemoryLayout(limits={"user": CompartmentLimits(max_items=limit)})


def _save(store: PostgresMemoryStore, layout: MemoryLayout, text: str) -> bool:
    try:
        execute(store, save_steps(Scope(user_id="sam", thread_id="t1"), layout, text))
    except MemoryLimitError:
        return False
    return True


def test_threads_on_two_store_objects_hold_one_limit(open_store: Callable[[], PostgresMemoryStore]) -> None:
    a, b = open_store(), open_store()
    assert item_limits(a) == "shared"
    layout = _layout(7)
    results: list[bool] = []
    start = threading.Barrier(4)

    def fill(store: PostgresMemoryStore, worker: int) -> None:
        start.wait()
        for n in range(5):
            results.append(_save(store, layout, f"worker {worker} fact {n}"))

    threads = [threading.Thread(target=fill, args=(s, w)) for w, s in enumerate((a, b, a, b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(results) == 7
    assert len(a.search(USER, limit=100)) == 7


SAVER = textwrap.dedent(
    """
    import sys
    from langmem_plugin.core.scope import Scope
    from langmem_plugin.errors import MemoryLimitError
    from langmem_plugin.services import CompartmentLimits, MemoryLayout, execute, save_steps
    from langmem_plugin.stores.postgres import PostgresMemoryStore
    from langmem_plugin.testing import FakeEmbeddings

    layout = MemoryLayout(limits={"user": CompartmentLimits(max_items=6)})
    index = {"dims": DIMS, "embed": FakeEmbeddings(dims=DIMS), "fields": ["content"]}
    saved = 0
    with PostgresMemoryStore.from_conn_string(sys.argv[1], index=index) as store:
        for n in range(8):
            try:
                execute(store, save_steps(Scope(user_id="sam", thread_id="t1"), layout, f"{sys.argv[2]} {n}"))
                saved += 1
            except MemoryLimitError:
                pass
    print(saved)
    """.replace("DIMS", str(DIMS))
)


def test_two_processes_hold_one_limit(database: str, open_store: Callable[[], PostgresMemoryStore]) -> None:
    children = [
        subprocess.Popen([sys.executable, "-c", SAVER, database, name], stdout=subprocess.PIPE, text=True)
        for name in ("left", "right")
    ]
    saved = [int(child.communicate(timeout=120)[0]) for child in children]
    assert sum(saved) == 6
    assert len(open_store().search(USER, limit=100)) == 6


@settings(max_examples=15, deadline=None)
@given(limit=st.integers(1, 4), keys=st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6))
def test_a_refused_bounded_write_writes_nothing(pgvector_url: str, limit: int, keys: list[str]) -> None:  # noqa: F811
    with PostgresMemoryStore.from_conn_string(fresh_database(pgvector_url), setup=True) as store:
        refuse = lambda count, adding: MemoryLimitError(f"full: {count} + {adding}")  # noqa: E731
        ops = (*(PutOp(("n",), k, {"v": k}) for k in keys), PutOp(("other",), "log", {"keys": keys}))
        write = BoundedWrite(ops, (Bound(("n",), limit, refuse),))
        if len(set(keys)) > limit:
            with pytest.raises(MemoryLimitError, match="full: 0"):
                store.write_bounded(write)
            assert store.search(("n",)) == []
            assert store.search(("other",)) == []
        else:
            assert store.write_bounded(write) == []
            assert sorted(i.key for i in store.search(("n",))) == sorted(set(keys))


# --------------------------------------------------------------------------- hostile namespaces

LABELS = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="."), min_size=1, max_size=8
)


@pytest.fixture(scope="module")
def one_store(pgvector_url: str) -> Iterator[PostgresMemoryStore]:  # noqa: F811
    with PostgresMemoryStore.from_conn_string(
        fresh_database(pgvector_url), index=_index(), setup=True
    ) as store:
        yield store


HOSTILE = LABELS | st.sampled_from(["%", "_", "\\", "a%", "'); DROP TABLE store;--", "a_b"])


@settings(max_examples=25, deadline=None)
@given(
    label=HOSTILE,
    text=st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=40),
)  # NUL: below
def test_hostile_labels_and_text_stay_in_their_namespace(
    one_store: PostgresMemoryStore, label: str, text: str
) -> None:
    store = one_store
    store.put(("h", "ab"), "other", {"content": "neighbour"})
    store.put(("h", "a-b"), "other", {"content": "neighbour"})
    store.put(("h", label), "k", {"content": text or "x"})
    assert store.get(("h", label), "k") is not None
    expected = {("h", label, "k")} | ({("h", "ab", "other")} if label == "ab" else set())
    expected |= {("h", "a-b", "other")} if label == "a-b" else set()
    assert {(*i.namespace, i.key) for i in store.search(("h", label))} == expected
    [found] = store.search_candidates([CandidateQuery(("h", label), "neighbour " + (text.strip() or "x"))])
    assert all(tuple(i.namespace) == ("h", label) for i in found.dense + found.lexical)
    store.delete(("h", label), "k")


# --------------------------------------------------------------------------- bad input, when opened


def test_a_wrong_url_is_a_configuration_error() -> None:
    with (
        pytest.raises(ConfigurationError, match="connection string"),
        PostgresMemoryStore.from_conn_string("host=x port=notaport ="),
    ):
        pass


def test_a_server_that_is_down_names_the_server(pgvector_url: str) -> None:  # noqa: F811
    down = pgvector_url.rsplit("port=", 1)[0] + "port=1"
    with pytest.raises(StoreError, match="unreachable") as caught, PostgresMemoryStore.from_conn_string(down):
        pass
    assert "port=1" in str(caught.value)


def test_a_server_without_pgvector_is_refused_not_degraded(plain_postgres_url: str) -> None:  # noqa: F811
    with (
        pytest.raises(StoreError, match="pgvector"),
        PostgresMemoryStore.from_conn_string(plain_postgres_url, index=_index(), setup=True),
    ):
        pass
    with (
        pytest.raises(StoreError, match="pgvector"),
        PostgresMemoryStore.from_conn_string(plain_postgres_url, index=_index()),
    ):
        pass


def test_a_schema_from_langgraphs_store_or_none_is_named_then_migrated(pgvector_url: str) -> None:  # noqa: F811
    from langgraph.store.postgres import PostgresStore

    url = fresh_database(pgvector_url)
    with (
        pytest.raises(StoreError, match="setup=True"),
        PostgresMemoryStore.from_conn_string(url, index=_index()),
    ):
        pass
    with PostgresStore.from_conn_string(url, index=_index()) as older:
        older.setup()
        older.put(("docs",), "old", {"content": "written by LangGraph's own store"})
    with (
        pytest.raises(StoreError, match=r"older|missing"),
        PostgresMemoryStore.from_conn_string(url, index=_index()),
    ):
        pass
    with PostgresMemoryStore.from_conn_string(url, index=_index(), setup=True) as store:
        item = store.get(("docs",), "old")
        assert item is not None
        assert item.value["content"].startswith("written")
        store.put(("docs",), "new", {"content": "and by ours"})
    with PostgresStore.from_conn_string(url, index=_index()) as older:
        assert older.get(("docs",), "new") is not None  # LangGraph's store still reads the tables
    other: Any = {"dims": DIMS * 2, "embed": FakeEmbeddings(dims=DIMS * 2), "fields": ["content"]}
    with (
        pytest.raises(StoreConfigMismatchError, match="dims"),
        PostgresMemoryStore.from_conn_string(url, index=other),
    ):
        pass


# --------------------------------------------------------------------------- a connection dropped mid-batch


def test_a_connection_killed_mid_batch_leaves_nothing(
    database: str, open_store: Callable[[], PostgresMemoryStore]
) -> None:
    import psycopg

    store = open_store()
    store.put(("kill",), "k050", {"content": "before"})
    blocker = psycopg.connect(database)  # holds the row the batch reaches half-way
    blocker.execute("SELECT 1 FROM store WHERE prefix = 'kill' AND key = 'k050' FOR UPDATE")
    pid = store.conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]  # type: ignore[union-attr, index]
    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.batch([PutOp(("kill",), f"k{n:03d}", {"content": f"item {n}"}) for n in range(100)])
        except BaseException as exc:
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    with psycopg.connect(database, autocommit=True) as admin:
        for _ in range(200):
            row = admin.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if row and row[0] == "Lock":
                break
            time.sleep(0.05)
        else:
            pytest.fail("the batch never reached the held row")
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        writer.join(timeout=30)
        blocker.rollback()
        blocker.close()
        assert len(errors) == 1, errors
        assert isinstance(errors[0], StoreError), errors
        assert "dropped" in str(errors[0]) or "unreachable" in str(errors[0])
        keys = [r[0] for r in admin.execute("SELECT key FROM store WHERE prefix = 'kill' ORDER BY key")]
    assert keys == ["k050"]  # nothing of the batch: not the 50 rows written before the held one
    with PostgresMemoryStore.from_conn_string(database, index=_index()) as again:
        assert again.get(("kill",), "k050").value == {"content": "before"}  # type: ignore[union-attr]


@settings(max_examples=25, deadline=None)
@given(text=st.text(max_size=30), key=st.text(min_size=1, max_size=10))
def test_nul_is_refused_with_a_typed_error_and_anything_else_round_trips(
    one_store: PostgresMemoryStore, text: str, key: str
) -> None:
    """Postgres's text and jsonb cannot hold NUL: a write holding it is an InvalidValueError (nothing
    written), a read of such a key finds nothing, a filter on such a value matches nothing."""
    value = {"content": text, text: [text]} if text else {"content": "x"}
    if "\x00" in key or "\x00" in text:
        with pytest.raises(InvalidValueError, match="NUL"):
            one_store.put(("nul",), key, value)
        assert one_store.get(("nul",), key) is None
        assert one_store.search(("nul",), filter={"content": text}) == [] or "\x00" not in text
    else:
        one_store.put(("nul",), key, value)
        item = one_store.get(("nul",), key)
        assert item is not None
        assert item.value == value
        assert key in {
            i.key for i in one_store.search(("nul",), filter={"content": value["content"]}, limit=100)
        }
        one_store.delete(("nul",), key)
