"""Issue 22, class 6: a compartment's item limit holds across store objects and processes.

The limit is enforced where the data lives, in one exclusive section of the engine:

- CheckpointerStore over a SQLite file: two store objects (each with its own connection
  and its own locks) and two real processes (spawned) saving into one compartment never
  leave it over its limit; every refused save is a ``MemoryLimitError`` (or the tool's
  "is full" error message) and writes nothing, not even its history entry; a full
  compartment evicts the episodes another writer wrote, never a memory saved on purpose;
- embedded QdrantStore: a second process opening the same path is refused, so the store
  is the data's one writer; threads writing through the store and a view share its limit;
- where the engine cannot count and write in one step (a Qdrant server, a checkpointer
  other than a SQLite file) the store says so (``item_limits == "process"``) and refuses
  ``write_bounded`` rather than pretend; the services then hold the limit within one process.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin import create_memory_tools
from langmem_plugin.core.bounded import Bound, BoundedWrite, item_limits
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, MemoryLimitError, StoreLockedError
from langmem_plugin.services import (
    Compartment,
    CompartmentLimits,
    MemoryLayout,
    aexecute,
    execute,
    save_steps,
)
from langmem_plugin.services.history import HISTORY_NAMESPACE
from langmem_plugin.services.remember import Episode, remember_steps
from langmem_plugin.stores import CheckpointerStore, QdrantStore
from langmem_plugin.testing import FakeEmbeddings

SCOPE = Scope(user_id="sam", thread_id="t1")
USER = ("memories", "user", "sam")
HISTORY = ("memory_meta", "history", "sam")
CONFIG: RunnableConfig = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
assert SCOPE.namespace(HISTORY_NAMESPACE) == HISTORY


def _layout(limit: int) -> MemoryLayout:
    return MemoryLayout(limits={"user": CompartmentLimits(max_items=limit)})


def _items(store: BaseStore, namespace: tuple[str, ...]) -> list[Any]:
    return [i for i in store.search(namespace, limit=1000) if tuple(i.namespace) == namespace]


def _reopened_count(path: Path, namespace: tuple[str, ...] = USER) -> int:
    """What the file holds, read by a store opened after every writer is done."""
    with CheckpointerStore.from_sqlite(path) as store:
        return len(_items(store, namespace))


def _save(store: BaseStore, layout: MemoryLayout, text: str) -> bool:
    """Save one memory (with its history entry); False when the limit refused it."""
    try:
        execute(store, save_steps(SCOPE, layout, text, recorded_by="tool:save_memory"))
    except MemoryLimitError as exc:
        message = str(exc)
    else:
        return True
    assert "user memory is full" in message
    return False


# --------------------------------------------------------------------------- the failing case, fixed


def test_two_store_objects_on_one_sqlite_file_hold_one_limit(tmp_path: Path) -> None:
    layout = _layout(3)
    path = tmp_path / "memory.db"
    with CheckpointerStore.from_sqlite(path) as a, CheckpointerStore.from_sqlite(path) as b:
        a.setup()
        b.setup()  # both folded the (empty) log: neither has seen the other's writes
        saved = [
            _save(store, layout, f"fact {n} from {name}")
            for n in range(4)
            for name, store in (("a", a), ("b", b))
        ]
        assert a.item_limits == b.item_limits == "shared"
    assert sum(saved) == 3
    assert _reopened_count(path) == 3
    assert _reopened_count(path, HISTORY) == 3  # a refused save left no history entry either


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(1, 6), schedule=st.lists(st.sampled_from("ab"), min_size=1, max_size=12))
def test_any_interleaving_of_two_store_objects_stays_within_the_limit(
    limit: int, schedule: list[str]
) -> None:
    layout = _layout(limit)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        with CheckpointerStore.from_sqlite(path) as a, CheckpointerStore.from_sqlite(path) as b:
            stores = {"a": a, "b": b}
            saved = [_save(stores[name], layout, f"fact {n}") for n, name in enumerate(schedule)]
        assert sum(saved) == min(limit, len(schedule))
        assert saved == sorted(saved, reverse=True)  # once full, every later save is refused
        assert _reopened_count(path) == min(limit, len(schedule))
        assert _reopened_count(path, HISTORY) == min(limit, len(schedule))


# ids a namespace label may hold (no ".", control character or lone surrogate): quotes, JSON, SQL,
# invisible and right-to-left characters, any script. Each id is its own compartment, with its own limit.
LABEL_CHARACTERS = st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters=".")
NASTY_IDS = ["'); DROP TABLE checkpoints;--", '["sam"]', "sam\u200b", "\u202esam", "%", "_", "*"]
HOSTILE_IDS = st.text(alphabet=LABEL_CHARACTERS, min_size=1, max_size=12) | st.sampled_from(NASTY_IDS)


@settings(max_examples=15, deadline=None)
@given(ids=st.lists(HOSTILE_IDS, min_size=2, max_size=3, unique=True), limit=st.integers(1, 3))
def test_each_hostile_user_id_has_its_own_limit_across_two_store_objects(ids: list[str], limit: int) -> None:
    layout = _layout(limit)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        with CheckpointerStore.from_sqlite(path) as a, CheckpointerStore.from_sqlite(path) as b:
            for n in range(limit + 1):
                for user, store in zip(ids, [a, b, a], strict=False):
                    scope = Scope(user_id=user, thread_id="t1")
                    try:
                        execute(store, save_steps(scope, layout, f"fact {n}"))
                    except MemoryLimitError:
                        assert n == limit
                    else:
                        assert n < limit
        for user in ids:
            assert _reopened_count(path, ("memories", "user", user)) == limit


def test_threads_on_two_store_objects_hold_one_limit(tmp_path: Path) -> None:
    """Each object has its own connection and locks: only SQLite's write lock is shared."""
    layout = _layout(10)
    path = tmp_path / "memory.db"
    results: list[bool] = []
    with CheckpointerStore.from_sqlite(path) as a, CheckpointerStore.from_sqlite(path) as b:
        start = threading.Barrier(4)

        def fill(store: BaseStore, worker: int) -> None:
            start.wait()
            for n in range(6):
                results.append(_save(store, layout, f"worker {worker} fact {n}"))

        threads = [threading.Thread(target=fill, args=(s, w)) for w, s in enumerate((a, b, a, b))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sum(results) == 10
    assert len(results) == 24
    assert _reopened_count(path) == 10


async def test_async_writers_on_two_store_objects_hold_one_limit(tmp_path: Path) -> None:
    layout = _layout(5)
    path = tmp_path / "memory.db"
    with CheckpointerStore.from_sqlite(path) as a, CheckpointerStore.from_sqlite(path) as b:

        async def save(store: BaseStore, n: int) -> bool:
            try:
                await aexecute(store, save_steps(SCOPE, layout, f"fact {n}"))
            except MemoryLimitError:
                return False
            return True

        saved = await asyncio.gather(*(save(a if n % 2 else b, n) for n in range(12)))
    assert sum(saved) == 5
    assert _reopened_count(path) == 5


def test_a_full_compartment_evicts_the_episodes_another_writer_wrote(tmp_path: Path) -> None:
    layout = _layout(4)
    path = tmp_path / "memory.db"
    with CheckpointerStore.from_sqlite(path) as a, CheckpointerStore.from_sqlite(path) as b:
        b.setup()  # b folds the log before a writes anything
        for n in range(4):
            episode = Episode(f"question {n}", f"answer {n}")
            execute(a, remember_steps(SCOPE, layout, episode, compartments=[Compartment.USER]))
        assert _save(b, layout, "Sam is allergic to peanuts")  # an episode of a's made room
        contents = sorted(i.value["content"] for i in _items(b, USER))
        assert len(contents) == 4
        assert "Sam is allergic to peanuts" in contents
        assert "User: question 0\nAssistant: answer 0" not in contents  # the oldest went
        for n in range(3):
            assert _save(a, layout, f"fact {n}")
        assert not _save(b, layout, "one fact too many")  # saved on purpose: never evicted
    with CheckpointerStore.from_sqlite(path) as reopened:
        kinds = sorted(i.value["kind"] for i in _items(reopened, USER))
    assert kinds == ["fact"] * 4


# --------------------------------------------------------------------------- two real processes


def _fill_in_a_process(path: str, worker: int, count: int, limit: int, start: Any, out: Any) -> None:
    """A spawned process: save ``count`` memories through the save_memory tool."""
    layout = _layout(limit)
    with CheckpointerStore.from_sqlite(path) as store:
        (save,) = create_memory_tools(store=store, layout=layout, include=["save_memory"])
        store.setup()
        start.wait(timeout=60)
        answers = [
            str(save.invoke({"content": f"process {worker} memory {n}"}, CONFIG)) for n in range(count)
        ]
    out.put(answers)


def test_two_processes_hold_one_limit(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with CheckpointerStore.from_sqlite(path) as store:
        store.setup()  # the tables exist before both processes start
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(2), ctx.Queue()
    workers = [
        ctx.Process(target=_fill_in_a_process, args=(str(path), w, 8, 10, start, out)) for w in range(2)
    ]
    for worker in workers:
        worker.start()
    answers = [a for _ in workers for a in out.get(timeout=120)]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    saved = [a for a in answers if a.startswith("Saved memory")]
    full = [a for a in answers if a.startswith("Error: user memory is full")]
    assert len(saved) == 10
    assert len(full) == 6
    assert len(saved) + len(full) == len(answers)
    assert _reopened_count(path) == 10
    assert _reopened_count(path, HISTORY) == 10


def _open_embedded(path: str, out: Any) -> None:
    try:
        QdrantStore(path).close()
    except StoreLockedError as exc:
        out.put(f"StoreLockedError: {exc}")
    else:
        out.put("opened")


def test_embedded_qdrant_refuses_a_second_process(tmp_path: Path) -> None:
    """Why the embedded store's writer lock is enough: no other process can write its directory."""
    pytest.importorskip("qdrant_edge")
    path = str(tmp_path / "q")
    with QdrantStore(path) as store:
        assert store.item_limits == "shared"
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        other = ctx.Process(target=_open_embedded, args=(path, out))
        other.start()
        answer = out.get(timeout=120)
        other.join(timeout=60)
    assert answer.startswith("StoreLockedError")
    assert "another process" in answer


def test_embedded_qdrant_and_its_view_share_one_limit(tmp_path: Path) -> None:
    pytest.importorskip("qdrant_edge")
    layout = _layout(10)
    index: Any = {"dims": 16, "embed": FakeEmbeddings(16), "fields": ["content"]}
    with QdrantStore(tmp_path / "q", index=index) as store:
        view = store.with_search(mode="lexical")
        assert view.item_limits == "shared"
        results: list[bool] = []
        start = threading.Barrier(4)

        def fill(target: BaseStore, worker: int) -> None:
            start.wait()
            for n in range(5):
                results.append(_save(target, layout, f"worker {worker} fact {n}"))

        threads = [
            threading.Thread(target=fill, args=(t, w)) for w, t in enumerate((store, view, store, view))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sum(results) == 10
        assert len(_items(store, USER)) == 10
        assert len(_items(store, HISTORY)) == 10


# --------------------------------------------------------------------------- stores that refuse to pretend


def _write() -> BoundedWrite:
    refuse = lambda count, adding: MemoryLimitError(f"full: {count}")  # noqa: E731
    return BoundedWrite((PutOp(("n",), "k", {"v": 1}),), (Bound(("n",), 1, refuse),))


@pytest.fixture
def unshared(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "qdrant-server":
        yield QdrantStore(url="http://127.0.0.1:9")  # no I/O until used: nothing is reached
    elif request.param == "inmemory-saver":
        yield CheckpointerStore(InMemorySaver())
    else:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        yield CheckpointerStore(SqliteSaver(conn))
        conn.close()


@pytest.mark.parametrize("unshared", ["qdrant-server", "inmemory-saver", "sqlite-in-memory"], indirect=True)
async def test_a_store_that_cannot_lock_its_data_says_so_and_refuses(unshared: Any) -> None:
    assert unshared.item_limits == "process"
    assert item_limits(unshared) == "process"
    with pytest.raises(ConfigurationError, match="item_limits is 'process'"):
        unshared.write_bounded(_write())
    with pytest.raises(ConfigurationError, match="item_limits is 'process'"):
        await unshared.awrite_bounded(_write())


def test_langgraphs_own_stores_count_as_one_process() -> None:
    assert item_limits(InMemoryStore()) == "process"


def test_the_services_still_hold_the_limit_within_a_process_on_such_a_store() -> None:
    store = CheckpointerStore(InMemorySaver())
    layout = _layout(2)
    assert [_save(store, layout, f"fact {n}") for n in range(4)] == [True, True, False, False]
    assert len(_items(store, USER)) == 2


@settings(max_examples=30, deadline=None)
@given(limit=st.integers(1, 5), keys=st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=6))
def test_a_refused_bounded_write_writes_nothing(limit: int, keys: list[str]) -> None:
    """The store's own answer, for any write: within the limit it all lands; over it, nothing."""
    with tempfile.TemporaryDirectory() as tmp, CheckpointerStore.from_sqlite(Path(tmp) / "m.db") as store:
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
            assert store.get(("other",), "log") is not None
