"""A bad day for ``delete_idle_threads``: the process killed after any of its store writes.

Its deletes go in pages after an intent that names the threads, their users and what the purge of
old versions must reach (namespaces and keys, never text); the intent stays until that purge is
done. A child process runs ``delete_idle_threads`` over a graph's ``SqliteSaver`` and a store on
disk (``CheckpointerStore`` over a SQLite file, the embedded ``QdrantStore``) and is SIGKILLed
after its Nth write (a batch or a purge), for every N; the parent then finishes the run — a retry
of the same call, or ``Memory.resume()`` — and checks that nothing of the idle threads is left: no
item, no old version in ``CheckpointerStore.history``, no row of the SQLite file or byte of the
Qdrant directory holding their text, no intent nor an old version of it; another thread's memory
and history are as they were. At every cut, a run not yet done has left an intent behind.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore

from langmem_plugin import Memory, MemoryState
from langmem_plugin.core.scope import Scope
from langmem_plugin.services import Compartment, MemoryLayout, execute, save_steps, update_steps
from langmem_plugin.services.context.window import delete_idle_threads
from langmem_plugin.services.intents import INTENTS
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel
from tests.test_checkpointer_purge import rows_naming
from tests.test_forget_user_everything import _everything

INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
LAYOUT = MemoryLayout()
IDLE = ("old-1", "old-2")
MARKERS = ("saunamarker", "steammarker", "lapsedmarker", "resultmarker")
FUTURE = datetime.now(UTC) + timedelta(days=10)


@contextlib.contextmanager
def _opened(kind: str, folder: Path) -> Iterator[BaseStore]:
    if kind == "qdrant":
        from langmem_plugin.stores.qdrant import QdrantStore

        with QdrantStore(folder / "store", index=INDEX) as qdrant:
            yield qdrant
    else:
        with CheckpointerStore.from_sqlite(folder / "store.db", index=INDEX) as checkpointed:
            yield checkpointed


@contextlib.contextmanager
def _saver(folder: Path) -> Iterator[SqliteSaver]:
    with contextlib.closing(sqlite3.connect(folder / "graph.db", check_same_thread=False)) as conn:
        yield SqliteSaver(conn)


def _world(store: BaseStore, folder: Path) -> None:
    """Alice talked in two threads, now idle, and Bob in one still busy; each idle thread keeps a
    plan rewritten once (two versions) and a stored tool result, the first a session item deleted
    long ago, and the busy thread a plan of its own."""
    memory = Memory(store)
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Noted."] * 10))
    with _saver(folder) as saver:
        graph = builder.compile(checkpointer=saver, store=store)
        for user, thread, text in [
            ("alice", "old-1", "alice keeps bees on the roof."),
            ("alice", "old-2", "alice is learning the cello."),
            ("bob", "busy", "bob runs on Sundays."),
        ]:
            graph.invoke(
                {"messages": [HumanMessage(text)]}, {"configurable": {"user_id": user, "thread_id": thread}}
            )
            memory.flush(timeout=20)
        recent = empty_checkpoint()
        recent["ts"] = FUTURE.isoformat()  # bob's thread was used since
        saver.put({"configurable": {"thread_id": "busy", "checkpoint_ns": ""}}, recent, {}, {})
    memory.close()
    for user, thread in [("alice", "old-1"), ("alice", "old-2"), ("bob", "busy")]:
        scope = Scope(user_id=user, thread_id=thread)
        word = "busymarker" if thread == "busy" else "saunamarker"
        plan = execute(store, save_steps(scope, LAYOUT, f"plan: {word}", compartment=Compartment.SESSION))
        again = "busymarker two" if thread == "busy" else "steammarker"
        execute(
            store,
            update_steps(
                scope, LAYOUT, plan.id, compartments=[Compartment.SESSION], content=f"plan: {again}"
            ),
        )
        if thread != "busy":
            results = LAYOUT.namespace(Compartment.RESULTS, scope)
            store.put(results, "r1", {"content": f"resultmarker of {thread}"}, index=False)
    lapsed = LAYOUT.namespace(Compartment.SESSION, Scope(thread_id="old-1"))
    store.put(lapsed, "lapsed", {"content": "lapsedmarker"})
    store.delete(lapsed, "lapsed")


def _idle_keys(items: Any) -> list[tuple[tuple[str, ...], str]]:
    """The keys of what the store keeps for the idle threads (the index entries included)."""
    return [
        k
        for k in items
        if (k[0][:2] in (("memories", "session"), ("memories", "results")) and k[0][2] in IDLE)
        or (k[0][:2] == ("memory_meta", "threads") and k[1] in IDLE)
    ]


def _left(kind: str, store: BaseStore, folder: Path, doomed: list[Any], intents: set[str]) -> list[str]:
    """What is left of the idle threads (and of the intents seen): empty once the run is done."""
    now = _everything(store)
    left = [f"item {k}" for k in _idle_keys(now)] + [f"intent {k}" for k in now if k[0] == INTENTS]
    if isinstance(store, CheckpointerStore):
        left += [f"old version of {k}" for k in doomed if store.history(*k)]
        left += [f"old version of intent {k}" for k in intents if store.history(INTENTS, k)]
        left += [f"row naming {w}" for w in MARKERS if rows_naming(folder / "store.db", w)]
    else:
        files = [p for p in (folder / "store").rglob("*") if p.is_file()]
        left += [f"{w} in {p}" for p in files for w in MARKERS if w.encode() in p.read_bytes()]
    return left


# One process imports everything once, then forks a child per cut (an import costs seconds): each
# child opens the store, is killed after its ``cut``-th write or writes how many it made, and the
# process answers the child's exit status.
ZYGOTE = """
import os, signal, sqlite3, sys, traceback
from datetime import datetime, timedelta
from pathlib import Path
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import PutOp
from langmem_plugin.services.context.window import delete_idle_threads
from langmem_plugin.services.upkeep import forgetting
from langmem_plugin.stores import CheckpointerStore
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings


def run(kind, folder, cut, now):
    forgetting._PAGE = 4  # small pages: several batches for a handful of items
    index = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
    if kind == "qdrant":
        store = QdrantStore(folder / "store", index=index)
    else:
        opened = CheckpointerStore.from_sqlite(folder / "store.db", index=index)  # closes when collected
        store = opened.__enter__()
    writes = 0

    def written(call, counts):
        def run(*args, **kwargs):
            nonlocal writes
            done = call(*args, **kwargs)
            if counts(*args):
                writes += 1
                if writes == cut:
                    os.kill(os.getpid(), signal.SIGKILL)
            return done
        return run

    store.batch = written(store.batch, lambda ops: any(isinstance(op, PutOp) for op in ops))
    store.purge_history = written(store.purge_history, lambda *args: True)
    saver = SqliteSaver(sqlite3.connect(folder / "graph.db", check_same_thread=False))
    delete_idle_threads(saver, timedelta(days=1), now=datetime.fromisoformat(now), store=store)
    (folder / "writes").write_text(str(writes))


for line in sys.stdin:
    kind, folder, cut, now = line.split()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            run(kind, Path(folder), int(cut), now)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


@pytest.mark.parametrize(
    "kind", ["checkpointer-sqlite", pytest.param("qdrant", marks=pytest.mark.slow)]
)  # the embedded Qdrant scrubs its directory at each purge: about a second each
def test_delete_idle_threads_killed_after_any_write_is_finished_by_a_retry_or_the_next_resume(
    kind: str, tmp_path: Path
) -> None:
    if kind == "qdrant":
        pytest.importorskip("qdrant_edge")
    origin = tmp_path / "origin"
    origin.mkdir()
    with _opened(kind, origin) as store:
        _world(store, origin)
        before = _everything(store)
        doomed = [
            *_idle_keys(before),
            (LAYOUT.namespace(Compartment.SESSION, Scope(thread_id="old-1")), "lapsed"),
        ]
        busy = [k for k in before if k[0][:3] == ("memories", "session", "busy")]
        assert len(_idle_keys(before)) == 6  # 2 plans, 2 tool results, 2 index entries
        assert busy
        busy_history: dict[Any, Any] = {}
        if isinstance(store, CheckpointerStore):
            assert all(store.history(*k) for k in doomed)
            busy_history = {k: store.history(*k) for k in busy}
        assert _left(kind, store, origin, [], set())  # there is something to delete
    intents: set[str] = set()
    zygote = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    with zygote:
        for cut in range(1, 20):
            folder = tmp_path / f"cut{cut}"
            shutil.copytree(origin, folder)
            zygote.stdin.write(f"{kind} {folder} {cut} {FUTURE.isoformat()}\n")
            zygote.stdin.flush()
            returncode = int(zygote.stdout.readline())
            if returncode == 0:  # the cut is past the last write
                assert int((folder / "writes").read_text()) >= 4  # an intent, pages, a purge, its removal
                assert len(intents) == 1  # every cut before saw the same intent (or its erasure)
                zygote.stdin.close()
                return
            assert returncode == -signal.SIGKILL
            _check_cut(kind, folder, cut, (doomed, busy, busy_history), intents)
    raise AssertionError("delete_idle_threads wrote more than 18 times")


def _check_cut(
    kind: str, folder: Path, cut: int, world: tuple[list[Any], list[Any], dict[Any, Any]], intents: set[str]
) -> None:
    """The store a run killed at ``cut`` left: done, or an intent left; then finished (a retry of the
    same call at an odd cut, ``Memory.resume()`` at an even one), nothing of the idle threads left."""
    doomed, busy, busy_history = world
    with _opened(kind, folder) as store:
        middle = _everything(store)
        recorded = [k for (ns, k) in middle if ns == INTENTS]
        intents.update(k for k in recorded if k.startswith("delete_threads:"))
        # killed part-way: the run is done, or it left an intent that says what is left
        assert recorded or _left(kind, store, folder, doomed, intents) == []
        if cut % 2:  # a retry of the same call finishes it
            with _saver(folder) as saver:
                assert delete_idle_threads(saver, timedelta(days=1), now=FUTURE, store=store) == list(IDLE)
                assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {"busy"}
        else:  # or the next Memory on the store
            Memory(store).resume()
        assert _left(kind, store, folder, doomed, intents) == []
        after = _everything(store)
        assert [k for k in after if k[0][:3] == ("memories", "session", "busy")] == busy
        assert [k for k in after if k[0][:3] == ("memories", "user", "alice")]  # her memory stays
        if isinstance(store, CheckpointerStore):
            assert {k: store.history(*k) for k in busy} == busy_history
