"""Issue 35, class 2 in the services: two writers that read an item and write it back changed (a
provenance link added by remember, a memory updated by a tool) never lose one's change — the steps
hold the store (``store_steps.HOLD``) from their read to their end, in threads and coroutines."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable
from typing import Any

import pytest
from langgraph.store.base import GetOp, Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langmem_plugin.core.record import exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.services import MemoryLayout, save_steps, update_steps
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute
from langmem_plugin.services.upkeep import link_memories_steps

SCOPE = Scope(user_id="sam", thread_id="t1")
LAYOUT = MemoryLayout()


class SlowReads(InMemoryStore):
    """Every read takes a while: two unheld read-modify-writes would interleave."""

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results = super().batch(ops)
        if any(isinstance(op, GetOp) for op in ops):
            time.sleep(0.03)  # after the read: what was read grows stale meanwhile
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results = super().batch(ops)
        if any(isinstance(op, GetOp) for op in ops):
            await asyncio.sleep(0.03)
        return results


def _link(n: int, memory_id: str) -> StoreSteps[None]:
    ops: list[PutOp] = yield from link_memories_steps(
        SCOPE, LAYOUT, [(exchange_link("t1", f"ep-{n}"), [memory_id])]
    )
    yield ops


def _final(store: InMemoryStore, memory_id: str) -> dict[str, Any]:
    item = store.get(LAYOUT.namespace("user", SCOPE), memory_id)
    assert item is not None
    return item.value


@pytest.mark.parametrize("trial", range(3))
def test_threads_linking_and_updating_one_memory_lose_nothing(trial: int) -> None:
    store = SlowReads()
    memory = execute(store, save_steps(SCOPE, LAYOUT, "Prefers green tea"))
    work = [
        lambda: execute(store, update_steps(SCOPE, LAYOUT, memory.id, content="Prefers coffee")),
        *(lambda n=n: execute(store, _link(n, memory.id)) for n in range(3)),
    ]
    threads = [threading.Thread(target=w) for w in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    value = _final(store, memory.id)
    assert value["content"] == "Prefers coffee"
    assert sorted(value["sources"]) == sorted(exchange_link("t1", f"ep-{n}") for n in range(3))


async def test_coroutines_linking_and_updating_one_memory_lose_nothing() -> None:
    store = SlowReads()
    memory = await aexecute(store, save_steps(SCOPE, LAYOUT, "Prefers green tea"))
    await asyncio.gather(
        aexecute(store, update_steps(SCOPE, LAYOUT, memory.id, content="Prefers coffee")),
        *(aexecute(store, _link(n, memory.id)) for n in range(3)),
        asyncio.to_thread(execute, store, _link(3, memory.id)),  # a thread among them
    )
    value = _final(store, memory.id)
    assert value["content"] == "Prefers coffee"
    assert sorted(value["sources"]) == sorted(exchange_link("t1", f"ep-{n}") for n in range(4))
