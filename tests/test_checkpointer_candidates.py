"""CheckpointerStore as a CandidateStore: raw dense and BM25 lists, background words, lexical_fields."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import PutOp, SearchItem

from langmem_plugin import CheckpointerStore, ConfigurationError
from langmem_plugin.core.candidates import CandidateQuery, Candidates, CandidateStore
from langmem_plugin.testing import FakeEmbeddings
from tests.store_contract import FakeClock

DIMS = 64
TOPICS = [
    "painted a sunset over the lake",
    "adopted a rescue dog named Biscuit",
    "started pottery classes on Tuesdays",
    "ran a half marathon in the rain",
    "is reading a novel about lighthouses",
    "cooked a spicy lentil curry",
    "planted tomatoes in the garden",
    "went camping near the mountains",
    "learned to play the violin",
    "visited her grandmother in Ohio",
]

Saver = BaseCheckpointSaver[Any]


@pytest.fixture(params=["memory", "sqlite"])
def open_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Saver]]:
    """A saver factory: one InMemorySaver shared by every store, or one SQLite file."""
    connections: list[sqlite3.Connection] = []
    shared = InMemorySaver()

    def open_() -> Saver:
        if request.param == "memory":
            return shared
        conn = sqlite3.connect(tmp_path / "memory.sqlite", check_same_thread=False)
        connections.append(conn)
        return SqliteSaver(conn)

    yield open_
    for conn in connections:
        conn.close()


def _index(mode: str, **extra: Any) -> dict[str, Any]:
    return {"dims": DIMS, "embed": FakeEmbeddings(dims=DIMS), "fields": ["content"], "mode": mode, **extra}


def _fill(store: CheckpointerStore) -> None:
    """("conv","a"): 30 items, Caroline in 12; ("conv","b"): 6, all Caroline; ("conv","c"): 25, 1 Caroline."""
    ops = []
    for i in range(30):
        who = "Caroline" if i % 5 in (0, 1) else "Melanie"
        topic = TOPICS[i % len(TOPICS)]
        value = {"content": f"{who} {topic} (day {i})", "metadata": {"session": i % 3, "context": "chat"}}
        ops.append(PutOp(("conv", "a"), f"a{i}", value))
    for i in range(6):
        ops.append(PutOp(("conv", "b"), f"b{i}", {"content": f"Caroline {TOPICS[i]}", "metadata": {}}))
    for i in range(25):
        who = "Caroline" if i == 0 else "Jon"
        ops.append(PutOp(("conv", "c"), f"c{i}", {"content": f"{who} {TOPICS[i % 10]} #{i}", "metadata": {}}))
    ops.append(PutOp(("elsewhere",), "x", {"content": "Caroline painted a sunset", "metadata": {}}))
    store.batch(ops)


def _pairs(items: list[SearchItem]) -> list[tuple[tuple[str, ...], str, float | None]]:
    return [(tuple(i.namespace), i.key, i.score) for i in items]


def _one(store: CheckpointerStore, query: CandidateQuery) -> Candidates:
    [answer] = store.search_candidates([query])
    return answer


def test_it_is_a_candidate_store() -> None:
    assert isinstance(CheckpointerStore(InMemorySaver()), CandidateStore)


def test_hybrid_lists_equal_the_semantic_and_lexical_rankings(open_saver: Callable[[], Saver]) -> None:
    hybrid = CheckpointerStore(open_saver(), index=_index("hybrid"))  # type: ignore[arg-type]
    _fill(hybrid)
    semantic = CheckpointerStore(open_saver(), index=_index("semantic"))  # type: ignore[arg-type]
    lexical = CheckpointerStore(open_saver(), index=_index("lexical"))  # type: ignore[arg-type]
    for text in ["sunset painting by the lake", "Caroline dog", "violin lessons"]:
        q = CandidateQuery(("conv",), text, limit=7)
        got = _one(hybrid, q)
        assert got.lexical_index
        assert len(got.dense) == 7
        dense_ranking = semantic.search(("conv",), query=got.dense_query, limit=7)
        assert _pairs(got.dense) == _pairs(dense_ranking)
        lexical_ranking = [i for i in lexical.search(("conv",), query=text, limit=7) if i.score is not None]
        assert got.lexical
        assert _pairs(got.lexical) == _pairs(lexical_ranking)
        assert all(isinstance(i, SearchItem) and i.value["content"] for i in got.dense + got.lexical)


def test_prefix_and_filter_are_honoured(open_saver: Callable[[], Saver]) -> None:
    store = CheckpointerStore(open_saver(), index=_index("hybrid"))  # type: ignore[arg-type]
    _fill(store)
    q = CandidateQuery(("conv", "a"), "painted sunset", limit=50, filter={"metadata.session": 1})
    got = _one(store, q)
    for item in got.dense + got.lexical:
        assert item.namespace == ("conv", "a")
        assert item.value["metadata"]["session"] == 1
    assert {i.key for i in got.dense} == {f"a{i}" for i in range(30) if i % 3 == 1}  # all have a vector
    assert [i.key for i in got.lexical] == ["a10"]  # the one of them that shares a word ("a0" is session 0)


def test_expired_items_are_left_out(open_saver: Callable[[], Saver]) -> None:
    clock = FakeClock()
    store = CheckpointerStore(open_saver(), index=_index("hybrid"), clock=clock)  # type: ignore[arg-type]
    _fill(store)
    store.put(("conv", "a"), "short", {"content": "a zeppelin over the harbour"}, ttl=1)
    q = CandidateQuery(("conv",), "zeppelin harbour", limit=100)
    assert "short" in {i.key for i in _one(store, q).lexical}
    clock.advance(minutes=2)
    got = _one(store, q)
    assert "short" not in {i.key for i in got.dense + got.lexical}
    assert got.lexical == []


def test_a_candidate_read_refreshes_ttl_like_search() -> None:
    clock = FakeClock()
    store = CheckpointerStore(
        InMemorySaver(),
        index=_index("hybrid"),  # type: ignore[arg-type]
        ttl={"default_ttl": 10},
        clock=clock,
    )
    store.put(("conv",), "k", {"content": "a zeppelin over the harbour"})
    clock.advance(minutes=8)
    assert _one(store, CandidateQuery(("conv",), "zeppelin")).lexical[0].key == "k"
    clock.advance(minutes=5)
    assert store.get(("conv",), "k") is not None


def test_background_words_are_dropped_from_the_dense_query_where_frequent(
    open_saver: Callable[[], Saver],
) -> None:
    store = CheckpointerStore(open_saver(), index=_index("hybrid"))  # type: ignore[arg-type]
    _fill(store)
    question = "What did Caroline paint?"
    many, few, rare = store.search_candidates(
        [
            CandidateQuery(("conv", "a"), question),  # 30 items, Caroline in 12 (40%)
            CandidateQuery(("conv", "b"), question),  # 6 items: too few to call anything background
            CandidateQuery(("conv", "c"), question),  # 25 items, Caroline in 1: counted here, not store-wide
        ]
    )
    assert many.dense_query == "What did paint?"
    assert few.dense_query == question
    assert rare.dense_query == question
    assert CandidateQuery(("conv", "a"), question, background_df=None).background_df is None
    assert _one(store, CandidateQuery(("conv", "a"), question, background_df=None)).dense_query == question
    # BM25 still reads the whole query
    assert any("Caroline" in i.value["content"] for i in many.lexical)


def test_semantic_and_lexical_modes_answer_one_list(open_saver: Callable[[], Saver]) -> None:
    seed = CheckpointerStore(open_saver(), index=_index("hybrid"))  # type: ignore[arg-type]
    _fill(seed)
    q = CandidateQuery(("conv", "a"), "What did Caroline paint?", limit=5)
    semantic = _one(CheckpointerStore(open_saver(), index=_index("semantic")), q)  # type: ignore[arg-type]
    assert semantic.lexical_index is False
    assert semantic.lexical == []
    assert semantic.dense_query == q.query  # no document frequencies: nothing dropped
    assert len(semantic.dense) == 5
    lexical = _one(CheckpointerStore(open_saver(), index=_index("lexical")), q)  # type: ignore[arg-type]
    assert lexical.lexical_index
    assert lexical.dense == []
    assert lexical.lexical


def test_async_twin_answers_the_same(open_saver: Callable[[], Saver]) -> None:
    store = CheckpointerStore(open_saver(), index=_index("hybrid"))  # type: ignore[arg-type]
    _fill(store)
    queries = [
        CandidateQuery(("conv",), "What did Caroline paint?", limit=6),
        CandidateQuery(("conv", "a"), "dog", filter={"metadata.session": 0}),
    ]
    sync = store.search_candidates(queries)
    async_ = asyncio.run(store.asearch_candidates(queries))
    assert [(_pairs(c.dense), _pairs(c.lexical), c.dense_query) for c in sync] == [
        (_pairs(c.dense), _pairs(c.lexical), c.dense_query) for c in async_
    ]
    assert store.search_candidates([]) == []


def test_lexical_fields_choose_what_bm25_reads(open_saver: Callable[[], Saver]) -> None:
    value = {"content": "We talked about travel", "metadata": {"context": "Zanzibar trip planning"}}
    plain = CheckpointerStore(open_saver(), index=_index("hybrid"))  # type: ignore[arg-type]
    plain.put(("conv",), "k", value)
    q = CandidateQuery(("conv",), "Zanzibar")
    assert _one(plain, q).lexical == []
    wide = CheckpointerStore(
        open_saver(),
        index=_index("hybrid", lexical_fields=["content", "metadata.context"]),  # type: ignore[arg-type]
        name="wide",
    )
    wide.put(("conv",), "k", value)
    assert [i.key for i in _one(wide, q).lexical] == ["k"]
    assert [i.key for i in wide.search(("conv",), query="Zanzibar") if i.score is not None] == ["k"]


@pytest.mark.parametrize(
    ("lexical_fields", "mode", "names", "fix"),
    [
        ("content", "hybrid", "'content'", "a list, even for one field"),
        ([], "hybrid", "[]", "non-empty list"),
        (["content", 3], "hybrid", "[3]", "strings such as"),
        (["content"], "semantic", "['content']", "'mode': 'hybrid'"),
    ],
)
def test_lexical_fields_are_validated(lexical_fields: Any, mode: str, names: str, fix: str) -> None:
    index = _index(mode, lexical_fields=lexical_fields)
    with pytest.raises(ConfigurationError) as caught:
        CheckpointerStore(InMemorySaver(), index=index)  # type: ignore[arg-type]
    message = str(caught.value).replace('"', "'")
    assert names in message
    assert fix in message


class DeletingEmbeddings(FakeEmbeddings):
    """FakeEmbeddings that, while a query is embedded, delete an item and put one elsewhere (in its slot)."""

    def __init__(self) -> None:
        super().__init__(dims=DIMS)
        self.store: CheckpointerStore | None = None

    def embed_query(self, text: str) -> list[float]:
        if self.store is not None:
            self.store.delete(("conv", "a"), "a10")
            self.store.put(("elsewhere",), "new", {"content": "Melanie painted a sunset"})
        return super().embed_query(text)


def test_a_write_during_the_embedding_is_seen() -> None:
    embeddings = DeletingEmbeddings()
    index = {**_index("hybrid"), "embed": embeddings}
    store = CheckpointerStore(InMemorySaver(), index=index)  # type: ignore[arg-type]
    _fill(store)
    embeddings.store = store
    got = _one(store, CandidateQuery(("conv", "a"), "painted sunset", limit=50))
    assert {i.namespace for i in got.dense + got.lexical} == {("conv", "a")}
    assert "a10" not in {i.key for i in got.dense + got.lexical}
    assert len(got.dense) == 29
