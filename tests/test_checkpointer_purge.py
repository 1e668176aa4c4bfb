"""Issue 24, "forget_user leaves nothing": forgetting reaches CheckpointerStore's history and its SQLite file.

``CheckpointerStore.purge_history`` keeps only the current version of the items it is given (nothing
of a deleted one) and removes a namespace left with nothing; ``Memory.forget_user``, ``forget``,
``forget_about``, ``clear_memory`` and ``delete_idle_threads`` call it after their deletes. Real
components: a CheckpointerStore over a ``SqliteSaver`` on a file (one SQLite transaction) and over
``InMemorySaver`` (checkpoints rewritten one by one). The file is checked twice: every row of every
table, its blobs decoded with the saver's serializer, and — after a ``VACUUM`` and a WAL checkpoint,
which drop what SQLite left in page slack — the file's raw bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import PutOp

from langmem_plugin import Memory
from langmem_plugin.core.scope import Scope
from langmem_plugin.services import Compartment, MemoryLayout, aexecute, execute, save_steps, update_steps
from langmem_plugin.services.context.window import adelete_idle_threads, delete_idle_threads
from langmem_plugin.services.store_steps import HistoryPurger
from langmem_plugin.services.upkeep import clear_reaching_steps
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.stores.checkpointer._log import namespace_thread, registry_thread, thread_config
from langmem_plugin.testing import FakeEmbeddings
from tests.test_checkpointer_contract import postgres_url  # noqa: F401  (a fixture)

INDEX: Any = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
LAYOUT = MemoryLayout()
NS = ("memories", "user", "sam")
USER = [Compartment.USER]


def rows_naming(path: Path, word: str) -> list[tuple[str, str]]:
    """``(table, row)`` of every row of the SQLite file at ``path`` that holds ``word`` (any case),
    its checkpoint blobs also decoded with SqliteSaver's serializer."""
    serde = SqliteSaver(sqlite3.connect(":memory:")).serde
    word = word.lower()
    found = []
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                texts = [str(cell).lower() for cell in row]
                for cell in row:
                    if isinstance(cell, bytes):
                        texts.append(cell.decode("utf-8", "replace").lower())
                        with contextlib.suppress(Exception):  # not a checkpoint blob
                            texts.append(
                                json.dumps(serde.loads_typed(("msgpack", cell)), default=str).lower()
                            )
                if any(word in text for text in texts):
                    found.append((table, str(row)[:300]))
    return found


def vacuumed_bytes(path: Path) -> bytes:
    """The bytes of the closed SQLite file at ``path`` (and of its WAL, if any) after a VACUUM."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _config(user: str, thread: str | None = None) -> Any:
    configurable = {"user_id": user} | ({"thread_id": thread} if thread else {})
    return {"configurable": configurable}


def _memories(memory: Memory, user: str) -> dict[str, str]:
    """Saves, updates and imports a user's memories; returns their ids by name."""
    scope = Scope(user_id=user)
    tea = execute(memory.store, save_steps(scope, LAYOUT, f"{user} drinks oolongmarker tea"))
    execute(
        memory.store,
        update_steps(scope, LAYOUT, tea.id, compartments=USER, content=f"{user} drinks puerhmarker tea"),
    )
    bees = execute(memory.store, save_steps(scope, LAYOUT, f"{user} keeps beesmarker on the roof"))
    chat = [
        {"role": "user", "content": f"I am {user}, I row on the fjordmarker at dawn."},
        {"role": "assistant", "content": f"Noted, {user}."},
    ]
    memory.import_history(chat, _config(user, f"{user}-t1"))
    return {"tea": tea.id, "bees": bees.id}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[CheckpointerStore]:
    with CheckpointerStore.from_sqlite(path, index=INDEX) as opened:
        yield opened


def _every_item(store: CheckpointerStore) -> dict[tuple[tuple[str, ...], str], Any]:
    return {
        (tuple(i.namespace), i.key): i.value
        for ns in store.list_namespaces(limit=10_000)
        for i in store.search(ns, limit=10_000, refresh_ttl=False)
        if tuple(i.namespace) == ns
    }


# --------------------------------------------------------------------------- through Memory


def test_forget_user_leaves_no_trace_in_history_or_in_the_sqlite_file(
    store: CheckpointerStore, path: Path
) -> None:
    memory = Memory(store)
    ids = {user: _memories(memory, user) for user in ("alice", "bob")}
    memory.flush(timeout=20)
    before = _every_item(store)
    alices = [k for k in before if "alice" in json.dumps([k, before[k]]).lower()]
    histories = {k: store.history(*k) for k in before if k not in alices}
    tea = (("memories", "user", "bob"), ids["bob"]["tea"])
    assert len(histories[tea]) == 2  # bob's tea memory has an old version
    assert rows_naming(path, "alice")

    report = memory.forget_user("alice")

    assert report.history_purged >= len(alices)
    assert all(store.history(*k) == [] for k in alices)
    assert {k: store.history(*k) for k in before if k not in alices} == histories  # bob's, as it was
    assert not any("alice" in json.dumps(ns) for ns in store.list_namespaces(limit=1000))
    assert rows_naming(path, "alice") == []  # every table, every blob decoded: no row names her
    assert rows_naming(path, "bob")
    memory.close()
    store.close()
    with CheckpointerStore.from_sqlite(path, index=INDEX) as reopened:  # what reopening folds agrees
        assert _every_item(reopened) == {k: v for k, v in before.items() if k not in alices}
        assert reopened.history(*tea) == histories[tea]
        assert all(reopened.history(*k) == [] for k in alices)
    data = vacuumed_bytes(path)
    assert b"alice" not in data
    assert b"oolongmarker" in data  # bob's old version is history he keeps


def test_forget_by_id_and_forget_about_purge_the_old_versions_of_what_they_remove(
    store: CheckpointerStore, path: Path
) -> None:
    memory = Memory(store)
    ids = _memories(memory, "sam")
    memory.flush(timeout=20)
    scope = Scope(user_id="sam")
    assert (
        execute(
            store, update_steps(scope, LAYOUT, ids["bees"], compartments=USER, priority=9)
        ).record.priority
        == 9
    )
    tea, bees = (NS, ids["tea"]), (NS, ids["bees"])
    assert len(store.history(*tea)) == 2
    assert len(store.history(*bees)) == 2
    history_before = {
        k: store.history(*k) for k in _every_item(store) if k[0][:2] == ("memory_meta", "history")
    }

    memory.forget(ids["tea"], _config("sam"))

    assert store.history(*tea) == []
    assert len(store.history(*bees)) == 2  # the other memory keeps its history
    for key, versions in history_before.items():  # the tea memory's history entries: redacted, alone
        now = store.history(*key)
        if versions[-1].value and versions[-1].value.get("memory_id") == ids["tea"]:
            assert len(now) == 1
            assert now[0].value is not None
            assert now[0].value["redacted"] is True
    assert rows_naming(path, "oolongmarker") == []
    assert rows_naming(path, "puerhmarker") == []

    forgotten = memory.forget_about("fjordmarker", _config("sam", "sam-t1"))

    assert forgotten.exchanges
    assert forgotten.history_purged >= len(forgotten.exchanges)
    assert rows_naming(path, "fjordmarker") == []
    assert rows_naming(path, "beesmarker")  # not forgotten
    memory.close()
    store.close()
    assert b"marker tea" not in vacuumed_bytes(path)


async def test_aforget_user_purges_through_the_async_path(store: CheckpointerStore, path: Path) -> None:
    memory = Memory(store)
    _memories(memory, "alice")
    await asyncio.to_thread(memory.flush, 20)

    report = await memory.aforget_user("alice")

    assert report.history_purged > 0
    assert rows_naming(path, "alice") == []
    memory.close()


def test_only_a_store_with_history_is_asked_to_purge() -> None:
    from langgraph.store.memory import InMemoryStore

    assert isinstance(CheckpointerStore(InMemorySaver()), HistoryPurger)
    assert not isinstance(InMemoryStore(), HistoryPurger)
    memory = Memory(InMemoryStore(index=INDEX))
    _memories(memory, "alice")
    memory.flush(timeout=20)
    assert memory.forget_user("alice").history_purged == 0
    memory.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_clear_memory_purges_the_old_versions_of_what_it_clears(
    mode: str, store: CheckpointerStore, path: Path
) -> None:
    scope = Scope(user_id="sam")  # no history recorded: the store's own versions are all there is
    tea = execute(store, save_steps(scope, LAYOUT, "Sam drinks oolongmarker tea", category="drinks"))
    puerh = "Sam drinks puerhmarker tea"
    execute(store, update_steps(scope, LAYOUT, tea.id, compartments=USER, content=puerh))
    coffee = execute(store, save_steps(scope, LAYOUT, "Sam drinks mochamarker", category="drinks/hot"))
    bees = execute(store, save_steps(scope, LAYOUT, "Sam keeps beesmarker", category="hobbies"))
    execute(store, update_steps(scope, LAYOUT, bees.id, compartments=USER, priority=9))
    assert len(store.history(NS, tea.id)) == 2
    bees_history = store.history(NS, bees.id)
    assert len(bees_history) == 2

    steps = clear_reaching_steps(scope, LAYOUT, Compartment.USER, category="drinks")
    cleared = execute(store, steps) if mode == "sync" else await aexecute(store, steps)

    assert sorted(cleared.ids) == sorted([tea.id, coffee.id])
    assert cleared.forgotten.history_purged >= 3  # tea's two versions, coffee's one
    assert store.history(NS, tea.id) == []
    assert store.history(NS, coffee.id) == []
    assert store.history(NS, bees.id) == bees_history  # what was not cleared keeps its history
    for word in ("oolongmarker", "puerhmarker", "mochamarker"):
        assert rows_naming(path, word) == [], word
    assert rows_naming(path, "beesmarker")
    store.close()
    data = vacuumed_bytes(path)
    assert b"marker tea" not in data
    assert b"mochamarker" not in data
    assert b"beesmarker" in data


def test_clear_memory_on_a_store_without_history_purges_nothing() -> None:
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    scope = Scope(user_id="sam")
    execute(store, save_steps(scope, LAYOUT, "Sam drinks tea", category="drinks"))
    cleared = execute(store, clear_reaching_steps(scope, LAYOUT, Compartment.USER, category="drinks"))
    assert len(cleared.ids) == 1
    assert cleared.forgotten.history_purged == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_delete_idle_threads_purges_the_history_of_what_the_store_kept_for_them(
    mode: str, store: CheckpointerStore, path: Path
) -> None:
    old, busy = Scope(user_id="sam", thread_id="old"), Scope(user_id="sam", thread_id="busy")
    session = LAYOUT.namespace(Compartment.SESSION, old)
    plan = execute(store, save_steps(old, LAYOUT, "plan: saunamarker", compartment=Compartment.SESSION))
    execute(
        store,
        update_steps(old, LAYOUT, plan.id, compartments=[Compartment.SESSION], content="plan: steammarker"),
    )
    store.put(session, "lapsed", {"content": "lapsedmarker"})  # deleted long ago: its history stays
    store.delete(session, "lapsed")
    results = LAYOUT.namespace(Compartment.RESULTS, old)
    store.put(results, "r1", {"content": "resultmarker one"})
    store.put(results, "r1", {"content": "resultmarker two"})
    index = ("memory_meta", "threads", "sam")
    for thread in ("old", "busy"):
        store.put(index, thread, {"thread_id": thread, "user_id": "sam", "note": f"{thread}indexmarker"})
    kept = execute(store, save_steps(busy, LAYOUT, "plan: busymarker", compartment=Compartment.SESSION))
    busy_ns = LAYOUT.namespace(Compartment.SESSION, busy)
    execute(
        store,
        update_steps(busy, LAYOUT, kept.id, compartments=[Compartment.SESSION], content="plan: busymarker 2"),
    )
    busy_history = store.history(busy_ns, kept.id)
    assert len(store.history(session, "lapsed")) == 2
    saver = InMemorySaver()  # the graph's checkpointer: the "old" thread's last checkpoint
    saver.put({"configurable": {"thread_id": "old", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
    future = datetime.now(UTC) + timedelta(days=10)

    if mode == "sync":
        deleted = delete_idle_threads(saver, timedelta(days=1), now=future, store=store)
    else:
        deleted = await adelete_idle_threads(saver, timedelta(days=1), now=future, store=store)

    assert deleted == ["old"]
    for key in [(session, plan.id), (session, "lapsed"), (results, "r1"), (index, "old")]:
        assert store.history(*key) == [], key
    assert store.history(busy_ns, kept.id) == busy_history  # another thread keeps its history
    assert len(store.history(index, "busy")) == 1
    for word in ("saunamarker", "steammarker", "lapsedmarker", "resultmarker", "oldindexmarker"):
        assert rows_naming(path, word) == [], word
    assert rows_naming(path, "busymarker")
    store.close()
    data = vacuumed_bytes(path)
    assert not [w for w in (b"saunamarker", b"steammarker", b"lapsedmarker", b"resultmarker") if w in data]
    assert b"busymarker" in data


# --------------------------------------------------------------------------- the store


@pytest.fixture(params=["sqlite-file", "in-memory-saver", "postgres-saver"])
def any_store(request: pytest.FixtureRequest, path: Path) -> Iterator[CheckpointerStore]:
    if request.param == "sqlite-file":
        with CheckpointerStore.from_sqlite(path) as opened:
            yield opened
    elif request.param == "in-memory-saver":
        yield CheckpointerStore(InMemorySaver())
    else:
        with _postgres_saver(request) as saver:
            yield CheckpointerStore(saver, name=f"t{uuid.uuid4().hex}")  # its own threads in the cluster


@contextlib.contextmanager
def _postgres_saver(request: pytest.FixtureRequest) -> Iterator[Any]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    url = request.getfixturevalue("postgres_url")
    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        yield saver


def _fill(store: CheckpointerStore) -> None:
    for n in range(3):
        store.put(("u", "alice"), "a", {"text": f"alice a{n}"})
        store.put(("u", "bob"), "x", {"text": f"bob x{n}"})
    store.batch([])
    store.put(("u", "alice"), "b", {"text": "alice b"})
    store.put(("u", "alice", "sub"), "c", {"text": "alice c"})
    store.delete(("u", "alice", "sub"), "c")


def test_purge_keeps_current_versions_and_every_other_items_history(any_store: CheckpointerStore) -> None:
    store = any_store
    _fill(store)
    bob = store.history(("u", "bob"), "x")

    assert store.purge_history([("u", "alice")]) == 4  # a0, a1 and the deleted c's two versions (below)
    assert [v.value for v in store.history(("u", "alice"), "a")] == [{"text": "alice a2"}]
    assert [v.version for v in store.history(("u", "alice"), "a")] == [1]
    assert store.history(("u", "alice", "sub"), "c") == []
    assert store.history(("u", "bob"), "x") == bob
    assert store.get(("u", "alice"), "a").value == {"text": "alice a2"}  # type: ignore[union-attr]
    assert store.search(("u", "alice"), query="alice") != []
    assert store.purge_history([("u", "alice")]) == 0  # nothing left to purge
    assert store.purge_history(keys=[(("u", "bob"), "x"), (("u", "nobody"), "k")]) == 2
    assert [v.value for v in store.history(("u", "bob"), "x")] == [{"text": "bob x2"}]
    store.put(("u", "bob"), "x", {"text": "bob x3"})  # history goes on from there
    assert len(store.history(("u", "bob"), "x")) == 2
    assert store.restore(("u", "bob"), "x", 1).value == {"text": "bob x2"}  # type: ignore[union-attr]


def test_over_postgres_an_emptied_namespace_leaves_no_row_of_its_thread(
    request: pytest.FixtureRequest,
) -> None:
    """Its thread goes with ``delete_thread``; the registry's checkpoints are written again without
    it (PostgresSaver keeps the dropped entry's blob: docs/forgetting.md, "What it cannot reach")."""
    with _postgres_saver(request) as saver:
        store = CheckpointerStore(saver, name=f"t{uuid.uuid4().hex}")
        _fill(store)
        store.delete(("u", "alice"), "a")
        store.delete(("u", "alice"), "b")
        store.purge_history([("u", "alice")])
        assert store.list_namespaces() == [("u", "bob")]
        threads = [namespace_thread(store.name, ns) for ns in [("u", "alice"), ("u", "alice", "sub")]]
        with saver._cursor() as cur:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                cur.execute(f"SELECT count(*) AS n FROM {table} WHERE thread_id = ANY(%s)", (threads,))
                assert cur.fetchone()["n"] == 0, table
        registry = saver.list(thread_config(registry_thread(store.name)))
        assert [labels for t in registry for labels in t.checkpoint["channel_values"].values()] == [
            ["u", "bob"]
        ]
        reopened = CheckpointerStore(saver, name=store.name)
        assert reopened.list_namespaces() == [("u", "bob")]
        assert len(reopened.history(("u", "bob"), "x")) == 3
        assert reopened.history(("u", "alice"), "a") == []


def test_purge_rejects_what_is_not_a_namespace_or_a_key(any_store: CheckpointerStore) -> None:
    from langmem_plugin.errors import InvalidNamespaceError, InvalidValueError

    with pytest.raises(InvalidNamespaceError):
        any_store.purge_history([()])
    with pytest.raises(InvalidNamespaceError):
        any_store.purge_history(["users"])  # type: ignore[list-item]
    with pytest.raises(InvalidValueError):
        any_store.purge_history(keys=[(("u",), 1)])  # type: ignore[list-item]


@pytest.mark.parametrize("saver", ["sqlite-file", "in-memory-saver"])
def test_an_emptied_namespace_loses_its_thread_and_registration(saver: str, path: Path) -> None:
    kept = InMemorySaver()

    @contextlib.contextmanager
    def opened() -> Iterator[CheckpointerStore]:  # the same data, read afresh each time
        if saver == "sqlite-file":
            with CheckpointerStore.from_sqlite(path) as store:
                yield store
        else:
            yield CheckpointerStore(kept)

    with opened() as store:
        _fill(store)
        store.delete(("u", "alice"), "a")
        store.delete(("u", "alice"), "b")
        store.purge_history([("u", "alice")])
        assert store.list_namespaces() == [("u", "bob")]
        store.put(("u", "alice"), "new", {"text": "back"})  # written again: registered again
    with opened() as store:
        assert store.list_namespaces() == [("u", "alice"), ("u", "bob")]
        assert [v.value for v in store.history(("u", "alice"), "new")] == [{"text": "back"}]
        assert store.history(("u", "alice"), "a") == []
        store.delete(("u", "alice"), "new")
        store.purge_history([("u", "alice")])
        registry = store.checkpointer.list(thread_config(registry_thread("store")))
        assert [labels for t in registry for labels in t.checkpoint["channel_values"].values()] == [
            ["u", "bob"]
        ]
        threads = [namespace_thread("store", ns) for ns in [("u", "alice"), ("u", "alice", "sub")]]
        assert all(list(store.checkpointer.list(thread_config(t))) == [] for t in threads)
    with opened() as store:
        assert store.list_namespaces() == [("u", "bob")]
    if saver == "sqlite-file":
        assert rows_naming(path, "alice") == []


def test_purge_reads_what_another_store_object_wrote_first(path: Path) -> None:
    """Over a SQLite file the purge catches up inside its transaction: another writer's newer items
    are not purged as if the namespace were empty."""
    with CheckpointerStore.from_sqlite(path) as first, CheckpointerStore.from_sqlite(path) as second:
        first.put(("u", "alice"), "a", {"text": "old"})
        first.delete(("u", "alice"), "a")
        second.setup()
        first.put(("u", "alice"), "b", {"text": "written by the other"})
        second.purge_history([("u", "alice")])  # second had not seen b
    with CheckpointerStore.from_sqlite(path) as store:
        assert [i.key for i in store.search(("u", "alice"))] == ["b"]
        assert store.history(("u", "alice"), "a") == []


# --------------------------------------------------------------------------- cut short


class _Failing(InMemorySaver):
    """An InMemorySaver whose ``put`` fails from the ``fail_at``-th call on (0: never)."""

    fail_at = 0
    calls = 0

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.calls += 1
        if self.fail_at and self.calls >= self.fail_at:
            raise OSError("disk full")
        return super().put(config, checkpoint, metadata, new_versions)


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_purge_cut_short_over_another_saver_loses_nothing(fail_at: int) -> None:
    saver = _Failing()
    store = CheckpointerStore(saver)
    for n in range(4):  # a checkpoint per put: the purge rewrites five of them
        store.put(("u", "sam"), "a", {"text": f"a{n}"})
        store.put(("u", "sam"), f"k{n}", {"text": f"k{n}"})
        store.batch([])
    store.delete(("u", "sam"), "k0")
    saver.calls, saver.fail_at = 0, fail_at
    with pytest.raises(Exception, match="disk full"):
        store.purge_history([("u", "sam")])
    saver.fail_at = 0
    expected = {"a": {"text": "a3"}, "k1": {"text": "k1"}, "k2": {"text": "k2"}, "k3": {"text": "k3"}}
    for key in ("a", "k0"):  # this store's history agrees with what the saver holds, and reads back
        assert store.history(("u", "sam"), key) == CheckpointerStore(saver).history(("u", "sam"), key)
    assert store.history(("u", "sam"), "a")[-1].value == {"text": "a3"}
    reopened = CheckpointerStore(saver)  # what the saver holds, read afresh
    for opened in (store, reopened):
        assert {i.key: i.value for i in opened.search(("u", "sam"), limit=100)} == expected
    reopened.purge_history([("u", "sam")])  # purging again finishes it
    assert [v.value for v in reopened.history(("u", "sam"), "a")] == [{"text": "a3"}]
    assert reopened.history(("u", "sam"), "k0") == []
    assert {i.key: i.value for i in CheckpointerStore(saver).search(("u", "sam"), limit=100)} == expected


def test_a_purge_that_fails_in_its_sqlite_transaction_changes_nothing(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langmem_plugin.stores.checkpointer import _sqlite
    from langmem_plugin.stores.checkpointer._log import DropCheckpoints, PutCheckpoint

    keys = [(("u", "alice"), "a"), (("u", "alice"), "b"), (("u", "alice", "sub"), "c")]
    with CheckpointerStore.from_sqlite(path) as store:
        _fill(store)
        store.batch([PutOp(("u", "alice"), "a", {"text": "alice a3"}), PutOp(("u", "alice"), "b", None)])
        histories = {k: store.history(*k) for k in keys}
        writes = 0
        original = _sqlite._carry_out

        def failing(conn: Any, saver: Any, request: Any) -> Any:
            nonlocal writes
            if isinstance(request, PutCheckpoint | DropCheckpoints):
                writes += 1
                if writes == 2:  # the first write of the purge is done: the second fails
                    raise sqlite3.OperationalError("disk I/O error")
            return original(conn, saver, request)

        monkeypatch.setattr(_sqlite, "_carry_out", failing)
        with pytest.raises(Exception, match="disk I/O error"):
            store.purge_history([("u", "alice")])
        monkeypatch.setattr(_sqlite, "_carry_out", original)
        assert writes == 2
        assert {k: store.history(*k) for k in keys} == histories
    with CheckpointerStore.from_sqlite(path) as store:  # the file was rolled back whole
        assert {k: store.history(*k) for k in keys} == histories
        assert store.get(("u", "alice"), "a").value == {"text": "alice a3"}  # type: ignore[union-attr]
        assert store.purge_history([("u", "alice")]) == 7
        assert [v.value for v in store.history(("u", "alice"), "a")] == [{"text": "alice a3"}]


KILLED = """
import os, signal, sys
from langmem_plugin.stores.checkpointer import CheckpointerStore, _purge

path, cut = sys.argv[1], int(sys.argv[2])
original = _purge._rewrite

def dying(thread, by_checkpoint, *, transaction, processed):
    part = dict(list(by_checkpoint.items())[:cut])
    emptied = yield from original(thread, part, transaction=transaction, processed=processed)
    os.kill(os.getpid(), signal.SIGKILL)  # in the middle of the purge's transaction
    return emptied

_purge._rewrite = dying
with CheckpointerStore.from_sqlite(path) as store:
    store.purge_history(keys=[(("u", "sam"), "a")])
"""


@pytest.mark.parametrize("cut", [0, 2])
def test_a_purge_killed_in_its_sqlite_transaction_leaves_the_file_as_it_was(cut: int, path: Path) -> None:
    with CheckpointerStore.from_sqlite(path) as store:
        for n in range(4):
            store.put(("u", "sam"), "a", {"text": f"a{n}"})
            store.put(("u", "sam"), f"k{n}", {"text": f"k{n}"})
            store.batch([])
        versions = store.history(("u", "sam"), "a")
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(path), str(cut)], capture_output=True, timeout=120
    )
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    with CheckpointerStore.from_sqlite(path) as store:
        assert store.history(("u", "sam"), "a") == versions
        assert len(store.search(("u", "sam"), limit=100)) == 5
        assert store.purge_history(keys=[(("u", "sam"), "a")]) == 3
        assert [v.value for v in store.history(("u", "sam"), "a")] == [{"text": "a3"}]


def test_the_registry_keeps_a_namespace_written_while_it_is_purged() -> None:
    store = CheckpointerStore(InMemorySaver())
    store.put(("u", "sam"), "a", {"text": "a"})
    store.delete(("u", "sam"), "a")
    state = store._steps.require_state()
    thread = next(iter(state.heads.keys() - {registry_thread("store")}))
    state.writing[thread] = 1  # a write minted, its checkpoint not yet acknowledged
    store.purge_history([("u", "sam")])
    del state.writing[thread]
    assert store.history(("u", "sam"), "a") == []
    assert ("u", "sam") in state.registered  # its thread and registration stay for the landing write
    registry = store.checkpointer.get_tuple(thread_config(registry_thread("store")))
    assert registry is not None
    assert list(registry.checkpoint["channel_values"].values()) == [["u", "sam"]]
