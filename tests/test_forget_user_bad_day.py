"""Issue 35, class 1 across batches: a ``forget_user`` that fails or is killed between its batches.

The user's items go in pages; before the first page the operation records its intent (the user
and every thread it found) and rewrites the other users' exchanges that quote the user (a shared
thread), so at no point can another user's next exchange show the forgotten user's words, and a
retry — or the first recall of a ``Memory`` opened afterwards — finishes it, knowing the shared
thread although the user's thread index went with an earlier page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore

from langmem_plugin import Memory, MemoryState
from langmem_plugin.services import store_steps
from langmem_plugin.services.intents import INTENTS
from langmem_plugin.services.upkeep import forgetting
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel
from tests.counting_stores import RUN_BATCH, FailingWrites
from tests.every_store import open_store
from tests.test_forget_user_everything import _everything

INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
PAGE = 4  # small pages: several batches for a handful of items


def _world(store: BaseStore) -> None:
    """Alice in two threads of her own and in one she shares with Bob, who answers after her."""
    memory = Memory(store)
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Noted."] * 40))
    graph = builder.compile(checkpointer=InMemorySaver(), store=store)
    turns = [
        ("alice", "alice-1", "I am alice and I keep bees on the roof."),
        ("alice", "alice-1", "alice wants to repaint the door blue."),
        ("alice", "alice-2", "alice is learning the cello."),
        ("alice", "shared", "alice here: the kettle is broken again."),
        ("bob", "shared", "bob here: I will buy a new kettle."),
        ("bob", "bob-1", "bob runs on Sundays."),
    ]
    for user, thread, text in turns:
        graph.invoke(
            {"messages": [HumanMessage(text)]}, {"configurable": {"user_id": user, "thread_id": thread}}
        )
        memory.flush(timeout=20)
    memory.close()


def _alices(items: dict[tuple[tuple[str, ...], str], dict[str, Any]]) -> list[Any]:
    return [k for k, v in items.items() if "alice" in json.dumps([k, v]).lower() and k[0] != INTENTS]


def _bobs_quote_alice(items: dict[tuple[tuple[str, ...], str], dict[str, Any]]) -> bool:
    return any(
        "alice" in json.dumps(v).lower() for k, v in items.items() if k[0][:3] == ("memories", "user", "bob")
    )


def _check_done(store: BaseStore, report: Any) -> None:
    after = _everything(store)
    assert _alices(after) == []
    assert not [k for k in after if k[0] == INTENTS]  # the intent went after the purge
    assert any(k[0][:3] == ("memories", "user", "bob") for k in after)  # bob's memory stays
    if report is not None:
        assert report.shared_threads == ["shared"]
    if isinstance(store, CheckpointerStore):  # the intent named her: no old version of it is kept
        assert store.history(INTENTS, "forget_user:alice") == []


@pytest.mark.parametrize("kind", ["in-memory", "qdrant", "checkpointer-sqlite"])
def test_forget_user_failing_at_any_batch_is_finished_by_a_retry_and_never_shows_her_to_bob(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forgetting, "_PAGE", PAGE)
    n = 1
    while True:
        with open_store(kind, request, tmp_path, INDEX, name=f"s{n}") as store:
            _world(store)
            before = _everything(store)
            assert _bobs_quote_alice(before)  # bob's exchange keeps the beginning of alice's
            failing = FailingWrites(n)
            monkeypatch.setattr(store_steps, "run_batch", failing)
            try:
                Memory(store).forget_user("alice")
            except OSError:
                pass
            else:
                assert failing.writes >= 3  # several pages were written; each was failed in turn
                return
            monkeypatch.setattr(store_steps, "run_batch", RUN_BATCH)
            middle = _everything(store)
            assert middle == before or not _bobs_quote_alice(middle)  # nothing done, or bob's first
            if n % 2:  # a retry finishes it (and says what it removed, if anything was left)
                retried = Memory(store).forget_user("alice")
                report = retried if _alices(middle) else None
            else:  # or the first recall of a Memory opened afterwards
                memory = Memory(store)
                memory.recall(
                    [HumanMessage("kettle")], {"configurable": {"user_id": "bob", "thread_id": "b"}}
                )
                report = None
            _check_done(store, report)
        n += 1


KILLED = """
import os, signal, sys
from langmem_plugin import Memory
from langmem_plugin.services.upkeep import forgetting
from langmem_plugin.stores import CheckpointerStore
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings

kind, path, cut = sys.argv[1], sys.argv[2], int(sys.argv[3])
forgetting._PAGE = 4
index = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
if kind == "qdrant":
    store = QdrantStore(path, index=index)
else:
    opened = CheckpointerStore.from_sqlite(path, index=index)  # kept: it closes the file when collected
    store = opened.__enter__()
original = store.batch
writes = 0


def dying(ops):
    global writes
    ops = list(ops)
    if any(type(op).__name__ == "PutOp" for op in ops):
        writes += 1
        if writes == cut:
            os.kill(os.getpid(), signal.SIGKILL)
    return original(ops)


store.batch = dying
Memory(store).forget_user("alice")
print("done", writes)
"""


@pytest.mark.parametrize("kind", ["qdrant", "checkpointer-sqlite"])
def test_forget_user_killed_between_its_batches_is_finished_on_the_next_open(
    kind: str, tmp_path: Path
) -> None:
    from langmem_plugin.stores import CheckpointerStore
    from langmem_plugin.stores.qdrant import QdrantStore

    def opened(path: Path) -> Any:
        return (
            QdrantStore(path, index=INDEX)
            if kind == "qdrant"
            else CheckpointerStore.from_sqlite(path, index=INDEX)
        )

    origin = tmp_path / "origin"
    with opened(origin) as store:
        _world(store)
    cut = 1
    while True:
        path = tmp_path / f"cut{cut}"
        subprocess.run(["cp", "-r", str(origin), str(path)], check=True)
        done = subprocess.run(
            [sys.executable, "-c", KILLED, kind, str(path), str(cut)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode == 0:  # the cut is past the last write batch
            assert int(done.stdout.split()[-1]) >= 3
            return
        assert done.returncode == -9, done.stderr[-2000:]
        with opened(path) as store:
            middle = _everything(store)
            # killed part-way: something of hers is left, or the purge of the old versions ...
            assert _alices(middle) or [k for k in middle if k[0] == INTENTS]
            if cut == 1:  # killed before its first batch was applied: nothing was done
                assert Memory(store).resume() == 0
                assert _everything(store) == middle
            else:  # ... but bob no longer quotes her, and the next open finishes it
                assert not _bobs_quote_alice(middle)
                assert Memory(store).resume() == 1
                _check_done(store, None)
        cut += 1
