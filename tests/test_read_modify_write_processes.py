"""Issue 35, class 2 across processes: a lock where the data lives.

Real child processes (spawned) open one store — a ``CheckpointerStore`` over one SQLite file,
or a ``PostgresMemoryStore`` on one database of a real server — and race:

- linking (and updating) one memory many times: every link and the update are there at the
  end (``store_steps.HOLD`` holds the other processes too: a byte-range lock beside the file and a
  catch-up of what they wrote; a Postgres advisory lock);
- adding two versions of one source at once: one version is left, whole;
- a key held in one process is refused to another (``wait=False``), never to a holder of
  another key, nor to a store on another table.

Without the cross-process hold each race loses changes (tried: the SQLite store folds only its
own writes, so every process writes back its own list of links; on Postgres two reads land
before either write).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langgraph.store.base import BaseStore

from langmem_plugin.core.record import MemoryRecord, exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, InvalidRecordError
from langmem_plugin.services import (
    MemoryLayout,
    add_documents,
    aexecute,
    execute,
    save_steps,
    update_steps,
)
from langmem_plugin.services.knowledge.versions import STEPS_NAMESPACE, source_id, source_key
from langmem_plugin.services.store_steps import READ_MODIFY_WRITE, HoldingStore, StoreSteps
from langmem_plugin.services.upkeep import link_memories_steps
from langmem_plugin.stores import CheckpointerStore
from tests.postgres_server import pgvector_url  # noqa: F401  (fixture)

SCOPE = Scope(user_id="sam", thread_id="t1")
LAYOUT = MemoryLayout()
USER = LAYOUT.namespace("user", SCOPE)
KNOWLEDGE = ("memories", "agent", "assistant", "knowledge")
SPLIT = RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0)
CHILDREN, ROUNDS = 2, 15
SPAWN = multiprocessing.get_context("spawn")


# ---- the stores, opened the same way in the test and in each child ------------------------------


@contextmanager
def opened(where: str) -> Iterator[BaseStore]:
    """``where``: a SQLite file's path, or a Postgres URL."""
    if where.startswith("postgresql:"):
        from langmem_plugin.stores.postgres import PostgresMemoryStore

        with PostgresMemoryStore.from_conn_string(where) as pg:
            yield pg
    else:
        with CheckpointerStore.from_sqlite(where) as store:
            yield store


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    from tests.test_postgres_contract import fresh_database

    pytest.importorskip("langgraph.store.postgres")
    from langmem_plugin.stores.postgres import PostgresMemoryStore

    url = fresh_database(request.getfixturevalue("pgvector_url"))
    with PostgresMemoryStore.from_conn_string(url, setup=True):
        pass
    return url


def _children(target: Callable[..., None], args: list[tuple[Any, ...]], trials: int) -> Iterator[int]:
    """One child per ``args``, kept for every trial: each trial starts them at once, and yields
    its number once they have all finished it; then each child must have ended well."""
    barrier = SPAWN.Barrier(len(args) + 1)
    children = [SPAWN.Process(target=target, args=(*a, trials, barrier)) for a in args]
    for child in children:
        child.start()
    try:
        for trial in range(trials):
            barrier.wait(120)  # every child has opened the store: go
            barrier.wait(120)  # every child is done
            yield trial
    except BaseException:
        barrier.abort()  # a failed check: the children stop waiting
        raise
    finally:
        for child in children:
            child.join(60)
            if child.exitcode is None:  # pragma: no cover - a hung child, shown by the assert
                child.kill()
    assert [c.exitcode for c in children] == [0] * len(children)


def _each_trial(barrier: Barrier, trials: int, work: Callable[[int], None]) -> None:
    for trial in range(trials):
        barrier.wait(120)
        work(trial)
        barrier.wait(120)


# ---- many links to one memory -------------------------------------------------------------------


def _link(link: str, memory_id: str) -> StoreSteps[None]:
    ops = yield from link_memories_steps(SCOPE, LAYOUT, [(link, [memory_id])])
    yield ops


def _linker(where: str, child: int, memory_id: str, trials: int, barrier: Barrier) -> None:
    def work(_: int) -> None:
        for n in range(ROUNDS):
            if child == 0 and n == ROUNDS // 2:
                execute(store, update_steps(SCOPE, LAYOUT, memory_id, content="Prefers coffee"))
            steps = _link(exchange_link("t1", f"ep-{child}-{n}"), memory_id)
            if n % 2:
                asyncio.run(aexecute(store, steps))  # the async path holds alike
            else:
                execute(store, steps)

    with opened(where) as store:
        assert isinstance(store, HoldingStore)
        store.get(USER, memory_id)  # open (the SQLite store folds its log) before the race
        _each_trial(barrier, trials, work)


def test_processes_linking_and_updating_one_memory_lose_nothing(where: str) -> None:
    with opened(where) as store:
        memory = execute(store, save_steps(SCOPE, LAYOUT, "Prefers green tea"))
    for _ in _children(_linker, [(where, child, memory.id) for child in range(CHILDREN)], trials=1):
        pass
    with opened(where) as store:
        item = store.get(USER, memory.id)
    assert item is not None
    assert item.value["content"] == "Prefers coffee"
    wanted = {exchange_link("t1", f"ep-{c}-{n}") for c in range(CHILDREN) for n in range(ROUNDS)}
    assert set(item.value["sources"]) == wanted


def test_two_store_objects_on_one_file_in_one_process_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with CheckpointerStore.from_sqlite(path) as one, CheckpointerStore.from_sqlite(path) as two:
        memory = execute(one, save_steps(SCOPE, LAYOUT, "Prefers green tea"))
        two.get(USER, memory.id)  # both have read the log before the race

        def links(store: BaseStore, tag: str) -> None:
            for n in range(ROUNDS):
                execute(store, _link(exchange_link("t1", f"ep-{tag}-{n}"), memory.id))

        threads = [
            threading.Thread(target=links, args=(store, tag)) for store, tag in [(one, "a"), (two, "b")]
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    with CheckpointerStore.from_sqlite(path) as store:
        item = store.get(USER, memory.id)
    assert item is not None
    assert set(item.value["sources"]) == {
        exchange_link("t1", f"ep-{t}-{n}") for t in "ab" for n in range(ROUNDS)
    }


# ---- two versions of one source -----------------------------------------------------------------


def version(tag: str, facts: int) -> str:
    return "\n\n".join(f"Fact {i} of the handbook, {tag} edition." for i in range(facts))


def _adder(where: str, facts: int, trials: int, barrier: Barrier) -> None:
    def work(trial: int) -> None:
        # one chunk a fact: "Fact 9 of the handbook, v14t0 edition."
        text = version(f"v{facts}t{trial}", facts)
        source = Document(page_content=text, metadata={"source": "handbook.md"})
        add_documents(store, [source], splitter=SPLIT)

    with opened(where) as store:
        store.search(KNOWLEDGE, limit=1)  # open before the race
        _each_trial(barrier, trials, work)


def _shown(store: BaseStore) -> list[str]:
    """The chunks a reader sees (memory records; a staged chunk is none)."""
    out = []
    for item in store.search(KNOWLEDGE, limit=10_000):
        try:
            out.append(MemoryRecord.from_value(item.value).content)
        except InvalidRecordError:
            continue
    return sorted(out)


def test_two_processes_adding_two_versions_of_one_source_leave_one_whole(where: str) -> None:
    for trial in _children(_adder, [(where, 14), (where, 9)], trials=3):
        with opened(where) as store:
            shown = _shown(store)
            every = store.search(KNOWLEDGE, limit=10_000)
            left = store.search(STEPS_NAMESPACE, limit=10)
        editions = {text.split(", ")[1] for text in shown}
        assert len(editions) == 1, (trial, editions)
        (edition,) = editions
        facts, of_trial = edition.split()[0][1:].split("t")
        assert of_trial == str(trial)
        assert len(shown) == int(facts)
        assert len(every) == len(shown)  # nothing staged left behind
        assert left == []  # no unfinished change


# ---- what a hold holds --------------------------------------------------------------------------

SOURCE = source_key(KNOWLEDGE, source_id("handbook.md"))


def _holder(where: str, held: Event, give_back: Event) -> None:
    with opened(where) as store:
        assert isinstance(store, HoldingStore)
        first, second = store.hold([READ_MODIFY_WRITE]), store.hold([SOURCE])
        assert first is not None
        assert second is not None
        held.set()
        give_back.wait(60)
        first.release()
        time.sleep(120)  # holds SOURCE until killed


def test_a_key_held_in_another_process_waits_until_given_back_or_its_holder_dies(
    where: str, tmp_path: Path
) -> None:
    held, give_back = SPAWN.Event(), SPAWN.Event()
    child = SPAWN.Process(target=_holder, args=(where, held, give_back))
    child.start()
    try:
        assert held.wait(60)
        with opened(where) as store:
            assert isinstance(store, HoldingStore)
            assert store.hold([READ_MODIFY_WRITE], wait=False) is None
            assert store.hold([SOURCE], wait=False) is None
            other_key = store.hold([source_key(KNOWLEDGE, source_id("other.md"))], wait=False)
            assert other_key is not None  # another source: no wait
            other_key.release()
            _elsewhere_is_not_held(where, tmp_path)
            if where.startswith("postgresql:"):
                _a_pool_is_held_too(where)
            asyncio.run(_waits_until_given_back(store, give_back))
            assert store.hold([READ_MODIFY_WRITE, SOURCE], wait=False) is None  # all or nothing
            assert store.hold([READ_MODIFY_WRITE], wait=False) is not None  # ... so that one is free
            child.kill()
            child.join(30)
            source = _taken_within(store, SOURCE, seconds=20)  # the holder died: its lock with it
            source.release()
    finally:
        child.kill()
        child.join(30)


async def _waits_until_given_back(store: HoldingStore, give_back: Event) -> None:
    waiting = asyncio.ensure_future(store.ahold([READ_MODIFY_WRITE]))
    await asyncio.sleep(0.5)
    assert not waiting.done()  # the child holds it: the coroutine waits (and the loop runs)
    give_back.set()
    taken = await asyncio.wait_for(waiting, 30)
    assert taken is not None
    taken.release()


def _taken_within(store: HoldingStore, key: str, seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    while (taken := store.hold([key], wait=False)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert taken is not None
    return taken


def _a_pool_is_held_too(url: str) -> None:
    """A store over a pool of one connection: held by the child too, and its hold takes a connection
    of its own (the pool's one stays free for the batches run while held)."""
    from langmem_plugin.stores.postgres import PostgresMemoryStore

    with PostgresMemoryStore.from_conn_string(url, pool_config={"min_size": 1, "max_size": 1}) as pooled:
        assert pooled.hold([READ_MODIFY_WRITE], wait=False) is None
        other = pooled.hold([source_key(KNOWLEDGE, source_id("other.md"))], wait=False)
        assert other is not None
        pooled.put(("pooled",), "k", {"v": 1})
        assert pooled.get(("pooled",), "k") is not None
        other.release()


def _elsewhere_is_not_held(where: str, tmp_path: Path) -> None:
    """Another database file, or another table of the server: not held by the child."""
    if where.startswith("postgresql:"):
        import psycopg

        from langmem_plugin.stores.postgres import PostgresMemoryStore

        with psycopg.connect(where, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA IF NOT EXISTS elsewhere")
        url = (
            f"{where}&options=-csearch_path%3Delsewhere"
            if "?" in where
            else f"{where}?options=-csearch_path%3Delsewhere"
        )
        with PostgresMemoryStore.from_conn_string(url, setup=True) as other:
            taken = other.hold([READ_MODIFY_WRITE], wait=False)
    else:
        assert Path(where + ".hold").exists()  # the lock file, beside the database
        assert os.path.getsize(where + ".hold") == 0  # locks only, no data
        with CheckpointerStore.from_sqlite(tmp_path / "other.db") as other:
            taken = other.hold([READ_MODIFY_WRITE], wait=False)
    assert taken is not None
    taken.release()


def test_a_hold_given_a_bare_key_says_how_to_pass_it(tmp_path: Path) -> None:
    with CheckpointerStore.from_sqlite(tmp_path / "memory.db") as store:
        with pytest.raises(ConfigurationError, match=r"store\.hold\(\['docs:a\.md'\]\)"):
            store.hold("docs:a.md")
        with pytest.raises(ConfigurationError, match="must be a str"):
            store.hold([b"docs:a.md"])  # type: ignore[list-item]
        held = store.hold(["docs:a.md"])  # nothing was left taken by the refusals
        assert held is not None
        held.release()
        held.release()  # twice: no error, nothing given back twice
        again = store.hold(["docs:a.md"], wait=False)
        assert again is not None
        again.release()
