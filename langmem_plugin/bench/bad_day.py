"""``langmem-plugin bench forgetting`` (its bad-day rows): ``forget_user`` failing at each write.

A LoCoMo conversation is imported message by message as user ``a``'s own thread (many items:
``forget_user`` writes in pages), and its first ``shared`` messages are said in turn by ``a`` and
``b`` in one shared thread through a real graph (a scripted model answers), so ``b``'s exchanges
keep a copy of the beginning of ``a``'s before them (what ``forget_user`` strips). Then, for each
write batch of ``forget_user("a")`` in turn, a fresh copy of the store has that batch fail (the
store raises, as a full disk would: :class:`FlakyStore`); it counts the items of ``a`` the failed
run removed and ``b``'s exchanges still quoting ``a``; ``forget_user("a")`` is then run again, and
the items of ``a`` left are counted. Goals: never both (a mix: part of ``a`` forgotten while ``b``
still shows ``a``'s words), 0 items of ``a`` left after the retry.
Through the public API (``Memory(path=...)``, its defaults) on the default store.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore, Op, PutOp, Result

from langmem_plugin.bench.locomo.data import load_locomo
from langmem_plugin.core.embeddings import EmbeddingsSpec

__all__ = ["BadDayResult", "FlakyStore", "run_bad_day_bench"]


class FlakyStore(BaseStore):
    """A store whose ``fail_at``-th batch that writes raises ``OSError`` before reaching ``inner``."""

    def __init__(self, inner: BaseStore, fail_at: int) -> None:
        self.inner, self.fail_at, self.writes = inner, fail_at, 0

    def _count(self, ops: list[Op]) -> None:
        if any(isinstance(op, PutOp) for op in ops):
            self.writes += 1
            if self.writes == self.fail_at:
                raise OSError(f"No space left on device (write batch {self.fail_at}, injected)")

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self._count(ops)
        return self.inner.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self._count(ops)
        return await self.inner.abatch(ops)


@dataclass
class BadDayResult:
    """Per failed write batch: ``(batch, a's items the failed run removed, b's exchanges quoting a
    after it, a's items left after the retry)``; and before: a's items, b's exchanges quoting a."""

    items: int
    quoted: int
    rows: list[tuple[int, int, int, int]]
    seconds: float

    def table(self) -> str:
        """One line per failed batch, and the totals."""
        lines = [
            f"forget_user failing at write batch {n}: {removed} of a's items removed, b's exchanges "
            f"quoting a {quoting}; a's items left after a retry {left}"
            for n, removed, quoting, left in self.rows
        ]
        mixed = sum(removed > 0 and quoting > 0 for _, removed, quoting, _ in self.rows)
        left = max((x for *_, x in self.rows), default=0)
        return "\n".join(
            [
                *lines,
                f"{len(self.rows)} failures injected over {self.items} items of a ({self.quoted} of b's "
                f"exchanges quoting a before): {mixed} mixed (goal 0), "
                f"at most {left} left after the retry (goal 0); {self.seconds:.1f} s",
            ]
        )


def _quoting(store: BaseStore, theirs: set[str]) -> int:
    """How many of b's exchanges keep the beginning of one of ``theirs`` (a's exchanges)."""
    return sum(
        "context" in (meta := i.value.get("metadata") or {}) and meta.get("previous") in theirs
        for i in _items(store, ("memories", "user", "b"))
    )


def _items(store: BaseStore, prefix: tuple[str, ...]) -> list[Any]:
    out = []
    for namespace in store.list_namespaces(prefix=prefix, limit=100_000):
        out += [i for i in store.search(namespace, limit=100_000) if tuple(i.namespace) == namespace]
    return out


def run_bad_day_bench(
    path: str | Path,
    *,
    conversation: int = 0,
    turns: int | None = None,
    shared: int = 40,
    embeddings: EmbeddingsSpec | None = None,
) -> BadDayResult:
    """Run it on conversation ``conversation`` of the LoCoMo file at ``path`` (its first ``turns``)."""
    from langmem_plugin import Memory, MemoryState
    from langmem_plugin.core.embeddings import MiniLMEmbeddings
    from langmem_plugin.stores.qdrant import QdrantStore
    from langmem_plugin.testing import ScriptedChatModel

    started = time.perf_counter()
    chats = load_locomo(path)
    chat = chats[conversation]
    other = chats[(conversation + 1) % len(chats)]
    embedder = embeddings or MiniLMEmbeddings()
    work = Path(tempfile.mkdtemp(prefix="langmem-bench-bad-day-"))
    try:
        origin = work / "origin"
        memory = Memory(path=origin, embeddings=embedder)
        # a's own thread: the conversation's messages (several pages of items to forget)
        said = [*chat.turns, *other.turns][:turns]
        own = [HumanMessage(t.line, name=t.speaker, id=f"{n}-{t.dia_id}") for n, t in enumerate(said)]
        memory.import_history(own, {"configurable": {"user_id": "a", "thread_id": "a-own"}}, per="message")
        # the shared thread: a and b take turns through a real graph, so b's exchanges quote a's
        builder = StateGraph(MemoryState)
        memory.add_to(builder, ScriptedChatModel(["Noted."] * (2 * shared)))
        graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
        for n, turn in enumerate(chat.turns[:shared]):
            config: Any = {"configurable": {"user_id": "ab"[n % 2], "thread_id": "shared"}}
            graph.invoke({"messages": [HumanMessage(turn.line)]}, config)
            memory.flush(timeout=60)
        keys = {i.key for i in _items(memory.store, ("memories", "user", "a"))}
        quoted = _quoting(memory.store, keys)
        memory.close()
        rows: list[tuple[int, int, int, int]] = []
        fail_at = 1
        while True:
            copy = work / f"fail{fail_at}"
            shutil.copytree(origin, copy, ignore=shutil.ignore_patterns(".lock"))
            store = QdrantStore(copy, index=memory.store.index_config)  # type: ignore[attr-defined]
            flaky = FlakyStore(store, fail_at)
            try:
                Memory(flaky).forget_user("a")
            except OSError:
                removed = len(keys) - len(_items(store, ("memories", "user", "a")))
                quoting = _quoting(store, keys)
                Memory(store).forget_user("a")
                rows.append((fail_at, removed, quoting, len(_items(store, ("memories", "user", "a")))))
                store.close()
                fail_at += 1
                continue
            store.close()
            return BadDayResult(len(keys), quoted, rows, time.perf_counter() - started)
    finally:
        shutil.rmtree(work, ignore_errors=True)
