"""CheckpointerStore beyond the contract: the checkpoint mapping, reopening, history, search modes, async."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.store.base import GetOp, PutOp

from langmem_plugin import CheckpointerStore, ConfigurationError
from langmem_plugin.core.embeddings import MiniLMEmbeddings
from langmem_plugin.errors import BlockingCallError, StoreError
from langmem_plugin.testing import FakeEmbeddings
from tests.store_contract import FakeClock


class CountingEmbeddings(FakeEmbeddings):
    """FakeEmbeddings that count the texts they embed (to prove reopening does not re-embed)."""

    def __init__(self) -> None:
        super().__init__(dims=64)
        self.documents = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite"


@pytest.fixture
def open_sqlite(db: Path) -> Iterator[Any]:
    connections: list[sqlite3.Connection] = []

    def open_() -> SqliteSaver:
        conn = sqlite3.connect(db, check_same_thread=False)
        connections.append(conn)
        return SqliteSaver(conn)

    yield open_
    for conn in connections:
        conn.close()


def test_a_put_writes_only_the_changed_item(open_sqlite: Any, db: Path) -> None:
    store = CheckpointerStore(open_sqlite())
    store.put(("big",), "first", {"text": "x" * 1000})
    first_size = _last_checkpoint_size(db)
    store.batch([PutOp(("big",), f"k{i}", {"text": "y" * 1000}) for i in range(300)])
    store.put(("big",), "last", {"text": "z" * 1000})
    # the 302nd item's checkpoint is as small as the first's: it holds one item, not the namespace
    assert _last_checkpoint_size(db) < first_size * 1.2
    saver = InMemorySaver()
    mem = CheckpointerStore(saver)
    mem.batch([PutOp(("big",), f"k{i}", {"n": i}) for i in range(50)])
    blobs = len(saver.blobs)
    mem.put(("big",), "k7", {"n": -7})
    assert len(saver.blobs) == blobs + 1


def _last_checkpoint_size(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT length(checkpoint) FROM checkpoints WHERE thread_id NOT LIKE '%registry' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
    return int(row[0])


def test_reopen_rebuilds_items_and_indexes_without_re_embedding(open_sqlite: Any) -> None:
    clock = FakeClock()
    embed = CountingEmbeddings()
    index = {"dims": 64, "embed": embed, "fields": ["text"]}
    store = CheckpointerStore(open_sqlite(), index=index, clock=clock)  # type: ignore[arg-type]
    store.put(("u", "1"), "tea", {"text": "green tea every morning", "kind": "fact"})
    store.put(("u", "1"), "tax", {"text": "tax filing deadline in april", "kind": "todo"})
    clock.advance(minutes=1)
    store.put(("u", "2"), "hike", {"text": "hiking in the alps"})
    store.put(("u", "1"), "tea", {"text": "green tea and jasmine tea", "kind": "fact"})
    store.delete(("u", "2"), "hike")
    embedded = embed.documents
    reopened = CheckpointerStore(open_sqlite(), index=index, clock=clock)  # type: ignore[arg-type]
    assert reopened.list_namespaces() == [("u", "1")]
    tea = reopened.get(("u", "1"), "tea")
    assert tea is not None
    assert tea.value == {"text": "green tea and jasmine tea", "kind": "fact"}
    assert tea.updated_at == tea.created_at + timedelta(minutes=1)
    assert reopened.search(("u",), query="jasmine tea")[0].key == "tea"
    assert [i.key for i in reopened.search(("u",), filter={"kind": "todo"})] == ["tax"]
    assert embed.documents == embedded  # vectors came from the checkpoints
    # a store opened with other fields re-embeds once, on open
    other = CheckpointerStore(open_sqlite(), index={**index, "fields": ["kind"]})  # type: ignore[arg-type]
    assert other.search(("u",), query="todo")[0].key == "tax"
    assert embed.documents == embedded + 2


def test_history_restore_and_namespace_at(open_sqlite: Any) -> None:
    clock = FakeClock()
    start = clock.now
    store = CheckpointerStore(open_sqlite(), clock=clock)
    ns = ("users", "u1")
    store.put(ns, "diet", {"text": "vegetarian"})
    store.put(ns, "city", {"text": "Lisbon"})
    clock.advance(minutes=1)
    store.put(ns, "diet", {"text": "vegan"})
    clock.advance(minutes=1)
    store.delete(ns, "diet")
    clock.advance(minutes=1)
    history = store.history(ns, "diet")
    assert [(v.version, v.value, v.reason) for v in history] == [
        (1, {"text": "vegetarian"}, "put"),
        (2, {"text": "vegan"}, "put"),
        (3, None, "delete"),
    ]
    assert [v.timestamp - start for v in history] == [
        timedelta(0),
        timedelta(minutes=1),
        timedelta(minutes=2),
    ]
    assert store.history(ns, "never") == []
    # the namespace as it was after one minute
    past = store.namespace_at(ns, start + timedelta(minutes=1, seconds=30))
    assert [(i.key, i.value) for i in past] == [("city", {"text": "Lisbon"}), ("diet", {"text": "vegan"})]
    assert store.namespace_at(ns, start - timedelta(seconds=1)) == []
    # roll one item back
    restored = store.restore(ns, "diet", 1)
    assert restored is not None
    assert restored.value == {"text": "vegetarian"}
    assert restored.created_at == clock.now  # it had been deleted: a new life
    history = store.history(ns, "diet")
    assert (history[-1].version, history[-1].reason, history[-1].value) == (
        4,
        "restore",
        {"text": "vegetarian"},
    )
    assert store.restore(ns, "diet", 3) is None
    assert store.get(ns, "diet") is None
    with pytest.raises(ConfigurationError, match=r"versions 1\.\.5"):
        store.restore(ns, "diet", 9)
    # history survives reopening
    reopened = CheckpointerStore(open_sqlite(), clock=clock)
    assert [v.reason for v in reopened.history(ns, "diet")] == ["put", "put", "delete", "restore", "restore"]


def test_ttl_sweep_records_expiry_in_history() -> None:
    clock = FakeClock()
    store = CheckpointerStore(InMemorySaver(), ttl={"default_ttl": 5}, clock=clock)
    store.put(("t",), "k", {"v": 1})
    clock.advance(minutes=6)
    assert store.sweep_ttl() == 1
    assert [v.reason for v in store.history(("t",), "k")] == ["put", "expired"]


def test_refresh_survives_reopen(open_sqlite: Any) -> None:
    clock = FakeClock()
    store = CheckpointerStore(open_sqlite(), ttl={"default_ttl": 10}, clock=clock)
    store.put(("r",), "k", {"v": 1})
    clock.advance(minutes=8)
    assert store.get(("r",), "k") is not None  # pushes the expiry to minute 18
    clock.advance(minutes=8)
    reopened = CheckpointerStore(open_sqlite(), ttl={"default_ttl": 10}, clock=clock)
    assert reopened.get(("r",), "k", refresh_ttl=False) is not None
    assert [v.reason for v in reopened.history(("r",), "k")] == ["put"]  # a refresh is not a version


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "semantic"])
def test_search_modes(mode: str) -> None:
    index: dict[str, Any] = {"mode": mode, "fields": ["text"]}
    if mode != "lexical":
        index |= {"dims": 64, "embed": FakeEmbeddings(dims=64)}
    store = CheckpointerStore(InMemorySaver(), index=index)  # type: ignore[arg-type]
    store.put(("d",), "cat", {"text": "I adopted a cat named Luna"})
    store.put(("d",), "alps", {"text": "We went hiking in the Alps"})
    store.put(("d",), "quiet", {"text": "cats everywhere"}, index=False)
    results = store.search(("d",), query="my cat Luna")
    assert results[0].key == "cat"
    assert results[0].score is not None
    scores = {r.key: r.score for r in results}
    assert scores["quiet"] is None  # index=False: neither embedded nor in BM25
    unscored = [r.score is None for r in results]
    assert unscored == sorted(unscored)  # unscored ones come last


def test_default_without_index_is_lexical_over_every_string() -> None:
    store = CheckpointerStore(InMemorySaver())
    store.put(("d",), "a", {"title": "Pottery", "meta": {"notes": ["signed up for a pottery class"]}})
    store.put(("d",), "b", {"title": "Budget", "meta": {"notes": ["quarterly review"]}})
    results = store.search(("d",), query="pottery class")
    assert [(r.key, r.score is not None) for r in results] == [("a", True), ("b", False)]


def test_semantic_search_with_the_real_embedder(minilm: MiniLMEmbeddings) -> None:
    store = CheckpointerStore(InMemorySaver(), index={"dims": 384, "embed": minilm, "fields": ["text"]})
    store.put(("m",), "pet", {"text": "My dog loves running on the beach"})
    store.put(("m",), "tax", {"text": "The quarterly tax return is due"})
    assert store.search(("m",), query="puppy playing by the sea")[0].key == "pet"


def test_bad_configuration_is_a_typed_error() -> None:
    with pytest.raises(ConfigurationError, match="BaseCheckpointSaver"):
        CheckpointerStore(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="mode"):
        CheckpointerStore(InMemorySaver(), index={"mode": "fuzzy"})  # type: ignore[typeddict-item]
    with pytest.raises(ConfigurationError, match="dims"):
        CheckpointerStore(InMemorySaver(), index={"embed": FakeEmbeddings()})  # type: ignore[typeddict-item]


def test_saver_failures_are_store_errors_and_leave_memory_unchanged(db: Path) -> None:
    conn = sqlite3.connect(db, check_same_thread=False)
    store = CheckpointerStore(SqliteSaver(conn))
    store.put(("a",), "k", {"v": 1})
    conn.close()
    with pytest.raises(StoreError, match="SqliteSaver failed to write a checkpoint"):
        store.put(("a",), "k", {"v": 2})
    item = store.get(("a",), "k")
    assert item is not None
    assert item.value == {"v": 1}


async def test_async_sqlite_saver_native_path(db: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
        store = CheckpointerStore(
            saver, index={"dims": 64, "embed": FakeEmbeddings(dims=64), "fields": ["t"]}
        )
        await store.asetup()

        async def writer(w: int) -> None:
            for i in range(15):
                await store.aput(("a", str(w)), f"k{i}", {"t": f"writer {w} item {i}", "w": w})

        await asyncio.gather(*(writer(w) for w in range(6)))
        assert len(await store.asearch(("a",), limit=500)) == 90
        await store.aput(("a", "0"), "k0", {"t": "changed", "w": 0})
        assert [v.value for v in await store.ahistory(("a", "0"), "k0")] == [
            {"t": "writer 0 item 0", "w": 0},
            {"t": "changed", "w": 0},
        ]
        assert (await store.arestore(("a", "0"), "k0", 1)) is not None
        with pytest.raises(BlockingCallError, match="aput"):
            store.put(("a",), "sync", {"v": 1})
        reopened = CheckpointerStore(saver)
        got = await reopened.abatch([GetOp(("a", "0"), "k0"), GetOp(("a", "5"), "k14")])
        assert [g.value["t"] for g in got] == ["writer 0 item 0", "writer 5 item 14"]  # type: ignore[union-attr]


async def test_sync_only_saver_from_async_code(open_sqlite: Any) -> None:
    store = CheckpointerStore(open_sqlite())
    await store.aput(("s",), "k", {"v": 1})
    assert (await store.aget(("s",), "k")) is not None
    assert [v.version for v in await store.ahistory(("s",), "k")] == [1]


class FailingOnThread(InMemorySaver):
    """A real InMemorySaver that fails to write one thread (fault injection)."""

    def __init__(self, fragment: str) -> None:
        super().__init__()
        self.fragment = fragment

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if self.fragment in config["configurable"]["thread_id"]:
            raise OSError("disk full")
        return super().put(config, checkpoint, metadata, new_versions)


def test_a_failure_part_way_through_a_batch_leaves_memory_agreeing_with_the_log() -> None:
    saver = FailingOnThread('["zz"]')
    store = CheckpointerStore(saver)
    store.put(("a",), "k", {"v": 0})
    with pytest.raises(StoreError, match="disk full"):
        store.batch([PutOp(("a",), "k", {"v": 1}), PutOp(("zz",), "k", {"v": 1})])
    written = store.get(("a",), "k")
    assert written is not None
    assert written.value == {"v": 1}  # its checkpoint was acknowledged before the failure
    assert store.get(("zz",), "k") is None
    assert store.list_namespaces() == [("a",)]
    saver.fragment = "nothing"
    reopened = CheckpointerStore(saver)
    assert _snapshot(reopened) == _snapshot(store)


def _snapshot(store: CheckpointerStore) -> dict[tuple[tuple[str, ...], str], Any]:
    return {(i.namespace, i.key): i.value for i in store.search((), limit=100)}


def test_one_sqlite_saver_serves_a_graph_and_its_memory(open_sqlite: Any) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    class State(TypedDict):
        text: str
        seen: int

    def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        runtime.store.put(("notes",), f"n{state['seen']}", {"text": state["text"]})
        return {"seen": len(runtime.store.search(("notes",), limit=100))}

    saver = open_sqlite()
    store = CheckpointerStore(saver)
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(checkpointer=saver, store=store)
    config = {"configurable": {"thread_id": "chat-1"}}
    graph.invoke({"text": "green tea", "seen": 0}, config)  # type: ignore[arg-type]
    result = graph.invoke({"text": "black tea", "seen": 1}, config)  # type: ignore[arg-type]
    assert result["seen"] == 2
    assert graph.get_state(config).values["text"] == "black tea"  # type: ignore[arg-type]
    assert {i.value["text"] for i in store.search(("notes",))} == {"green tea", "black tea"}
    reopened = CheckpointerStore(open_sqlite())
    assert len(reopened.search(("notes",))) == 2


def test_rollback_a_namespace_to_a_past_time(open_sqlite: Any) -> None:
    clock = FakeClock()
    store = CheckpointerStore(
        open_sqlite(), index={"dims": 64, "embed": FakeEmbeddings(dims=64), "fields": ["text"]}, clock=clock
    )
    ns = ("users", "u1")
    store.put(ns, "diet", {"text": "vegetarian"})
    store.put(ns, "city", {"text": "Lisbon"})
    store.put(ns, "pet", {"text": "a cat named Luna"})
    clock.advance(minutes=1)
    checkpoint = clock.now
    clock.advance(minutes=1)
    store.put(ns, "diet", {"text": "carnivore"})  # a bad extraction we want to undo
    store.delete(ns, "pet")
    store.put(ns, "spam", {"text": "buy cheap watches"})
    store.put(("users", "u2"), "other", {"text": "untouched"})
    clock.advance(minutes=1)
    assert store.rollback(ns, checkpoint) == 3
    now = {i.key: i.value["text"] for i in store.search(ns)}
    assert now == {"diet": "vegetarian", "city": "Lisbon", "pet": "a cat named Luna"}
    assert store.search(ns, query="cat Luna")[0].key == "pet"  # restored items are indexed again
    assert store.get(("users", "u2"), "other") is not None
    assert [v.reason for v in store.history(ns, "spam")] == ["put", "restore"]
    assert store.rollback(ns, checkpoint) == 0


def test_a_prefix_searched_before_sees_namespaces_that_come_and_go() -> None:
    # Each prefix's namespaces are kept between searches: a namespace made or emptied after a
    # search under its prefix must still be found, or no longer be, by the next search.
    store = CheckpointerStore(
        InMemorySaver(), index={"dims": 16, "embed": FakeEmbeddings(16), "fields": ["content"]}
    )
    store.put(("u", "a"), "k1", {"content": "green tea"})
    assert [i.namespace for i in store.search(("u",), query="tea")] == [("u", "a")]
    store.put(("u", "b"), "k2", {"content": "black tea"})
    assert {i.namespace for i in store.search(("u",), query="tea")} == {("u", "a"), ("u", "b")}
    store.delete(("u", "a"), "k1")
    assert [i.namespace for i in store.search(("u",), query="tea")] == [("u", "b")]
    assert [i.namespace for i in store.search(("u",))] == [("u", "b")]
    store.put(("u", "a"), "k3", {"content": "oolong tea"})
    assert {i.key for i in store.search(("u",), query="tea")} == {"k2", "k3"}
