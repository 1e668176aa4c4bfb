"""Durability (SIGKILL while writing) and concurrency (threads and tasks at once), on a SqliteSaver file."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import PutOp

from langmem_plugin import CheckpointerStore

_WRITER = r"""
import sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import PutOp
from langmem_plugin import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings

index = {"dims": 32, "embed": FakeEmbeddings(dims=32), "fields": ["t"]}
if sys.argv[2] == "saver":  # the saver as LangGraph makes it (WAL, synchronous=FULL)
    store = CheckpointerStore(SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False)), index=index)
else:  # from_sqlite: WAL, synchronous=NORMAL
    opened = CheckpointerStore.from_sqlite(sys.argv[1], index=index)  # kept: it owns the connection
    store = opened.__enter__()
print("ready", flush=True)
i = 0
while True:
    if i % 5 == 4:  # a batch over two namespaces
        store.batch([PutOp(("w", str(i % 3)), f"k{i}", {"t": f"item {i}", "i": i}),
                     PutOp(("v",), f"k{i}", {"t": f"item {i}", "i": i})])
    else:
        store.put(("w", str(i % 3)), f"k{i}", {"t": f"item {i}", "i": i})
    if i % 7 == 6:
        store.put(("w", str((i - 6) % 3)), f"k{i - 6}", {"t": "updated", "i": -1})
    print(i, flush=True)
    i += 1
"""


@pytest.mark.slow
@pytest.mark.parametrize("opened", ["saver", "from_sqlite"])
def test_sigkill_while_writing_loses_no_acknowledged_write(tmp_path: Path, opened: str) -> None:
    db = tmp_path / "kill.sqlite"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(db), opened], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    acked: list[int] = []
    deadline = time.monotonic() + 60
    while len(acked) < 400 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked.append(int(line))
    os.kill(proc.pid, signal.SIGKILL)  # mid-write: it never stops writing
    rest = proc.stdout.read()
    proc.stdout.close()
    proc.wait()
    acked += [int(x) for x in rest.split()]
    assert len(acked) >= 400, "the writer was too slow or died"

    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        store = CheckpointerStore(SqliteSaver(conn))
        for i in acked:
            item = store.get(("w", str(i % 3)), f"k{i}")
            assert item is not None, i
            updated = i % 7 == 0 and i + 6 in acked
            assert item.value["i"] == (-1 if updated else i), i
            if i % 5 == 4:
                assert store.get(("v",), f"k{i}") is not None, i
    finally:
        conn.close()


def test_threads_and_async_tasks_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "concurrent.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    store = CheckpointerStore(SqliteSaver(conn))
    shared_writes = 0
    count_lock = threading.Lock()

    def thread_writer(w: int) -> None:
        nonlocal shared_writes
        for i in range(30):
            store.put(("t", str(w)), f"k{i}", {"w": w, "i": i})
            store.put(("shared",), "hot", {"by": f"t{w}", "i": i})
            with count_lock:
                shared_writes += 1

    async def task_writer(w: int) -> None:
        nonlocal shared_writes
        for i in range(30):
            if i % 3 == 0:
                await store.abatch(
                    [
                        PutOp(("a", str(w)), f"k{i}", {"w": w, "i": i}),
                        PutOp(("shared",), "hot", {"by": f"a{w}", "i": i}),
                    ]
                )
            else:
                await store.aput(("a", str(w)), f"k{i}", {"w": w, "i": i})
                await store.aput(("shared",), "hot", {"by": f"a{w}", "i": i})
            with count_lock:
                shared_writes += 1

    async def tasks() -> None:
        await asyncio.gather(*(task_writer(w) for w in range(4)))

    threads = [threading.Thread(target=thread_writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    asyncio.run(tasks())
    for t in threads:
        t.join()

    assert len(store.search(("t",), limit=1000)) == 120
    assert len(store.search(("a",), limit=1000)) == 120
    hot_history = store.history(("shared",), "hot")
    assert len(hot_history) == shared_writes == 240
    hot = store.get(("shared",), "hot")
    assert hot is not None
    assert hot.value == hot_history[-1].value  # memory agrees with the newest version in the log
    conn.close()

    conn = sqlite3.connect(db, check_same_thread=False)
    reopened = CheckpointerStore(SqliteSaver(conn))
    assert len(reopened.search((), limit=1000)) == 241
    again = reopened.get(("shared",), "hot")
    assert again is not None
    assert again.value == hot.value
    conn.close()
