"""Issue 24: a forget killed part-way (SIGKILL in the middle of its batch) leaves the old state or the
new one, never a memory deleted while an exchange that stated it is still there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from langmem_plugin.core.record import MemoryKind, MemoryRecord, exchange_link
from langmem_plugin.stores import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings

USER = ("memories", "user", "sam")

SCRIPT = """
import os, signal, sys
from langmem_plugin import Memory
from langmem_plugin.stores import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings

path, cut = sys.argv[1], int(sys.argv[2])
index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
with CheckpointerStore.from_sqlite(path, index=index) as store:
    original = store.batch

    def dying(ops):
        ops = list(ops)
        if any(getattr(op, "value", 1) is None for op in ops):  # the forget's batch: apply a part, die
            for op in ops[:cut]:
                original([op])  # one op at a time: what a store without atomic batches may leave
            os.kill(os.getpid(), signal.SIGKILL)
        return original(ops)

    store.batch = dying
    Memory(store).forget("m1", {"configurable": {"user_id": "sam"}})
"""


def _setup(path: Path) -> None:
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
    with CheckpointerStore.from_sqlite(path, index=index) as store:  # type: ignore[arg-type]
        link = exchange_link("t1", "ep-1")
        memory = MemoryRecord(content="Sam runs a half marathon", sources=[link])
        store.put(USER, "m1", memory.to_value())
        for key, text in (("ep-1", "User: I'm training for a half marathon"), ("ep-1-p0", "a half marathon")):
            part = {"episode": "ep-1", "passage": "0"} if key != "ep-1" else {"passages": "1"}
            meta = {"thread_id": "t1", **part}
            record = MemoryRecord(content=text, kind=MemoryKind.EPISODE, metadata=meta, derived=["m1"])
            store.put(USER, key, record.to_value())


@pytest.mark.parametrize("cut", [0, 1, 2, 3, 4, 5])
def test_a_forget_killed_part_way_never_leaves_an_exchange_of_a_deleted_memory(
    cut: int, tmp_path: Path
) -> None:
    path = tmp_path / "memory.sqlite"
    _setup(path)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), str(cut)], capture_output=True, timeout=120
    )
    assert done.returncode == -9, done.stderr.decode()[-2000:]  # killed mid-way
    index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
    with CheckpointerStore.from_sqlite(path, index=index) as store:  # type: ignore[arg-type]
        left = {i.key for i in store.search(USER, limit=100)}
    if "m1" not in left:
        assert not left & {"ep-1", "ep-1-p0"}  # the memory is gone only after its exchange
    order = ["ep-1-p0", "ep-1", "m1"]  # the batch's order: passages, the exchange, then the memory
    assert left == set(order) - set(order[:cut])
