"""PostgresMemoryStore as a CandidateStore: the same lists as CheckpointerStore's indexes, background
words, prefix, filter and TTL; and recall through ``Memory`` fusing its two lists."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp, SearchItem

from langmem_plugin import CheckpointerStore, Memory, memory_index
from langmem_plugin.core.candidates import CandidateQuery, Candidates, CandidateStore
from langmem_plugin.testing import FakeEmbeddings
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)
from tests.store_contract import FakeClock
from tests.test_checkpointer_candidates import DIMS, _fill
from tests.test_postgres_contract import fresh_database

pytest.importorskip("langgraph.store.postgres")

from langmem_plugin.stores.postgres import PostgresMemoryStore


def _index(**extra: Any) -> dict[str, Any]:
    return {"dims": DIMS, "embed": FakeEmbeddings(dims=DIMS), "fields": ["content"], **extra}


@pytest.fixture
def open_store(pgvector_url: str) -> Iterator[Callable[..., PostgresMemoryStore]]:  # noqa: F811
    managers: list[Any] = []

    def open_(**kwargs: Any) -> PostgresMemoryStore:
        manager = PostgresMemoryStore.from_conn_string(
            fresh_database(pgvector_url), index=kwargs.pop("index", _index()), setup=True, **kwargs
        )
        managers.append(manager)
        return manager.__enter__()

    yield open_
    for manager in managers:
        manager.__exit__(None, None, None)


def _pairs(items: list[SearchItem]) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(i.namespace), i.key) for i in items]


def _one(store: PostgresMemoryStore, query: CandidateQuery) -> Candidates:
    [answer] = store.search_candidates([query])
    return answer


def test_the_lists_are_the_dense_and_the_bm25_rankings(
    open_store: Callable[..., PostgresMemoryStore],
) -> None:
    store = open_store()
    assert isinstance(store, CandidateStore)
    _fill(store)  # type: ignore[arg-type]
    reference = CheckpointerStore(InMemorySaver(), index={**_index(), "mode": "lexical"})  # type: ignore[arg-type]
    _fill(reference)
    reference.delete(("elsewhere",), "x")  # our idf counts the searched items (the prefix), not the store
    for text in ["sunset painting by the lake", "Caroline dog", "violin lessons"]:
        got = _one(store, CandidateQuery(("conv",), text, limit=7))
        assert got.lexical_index
        assert _pairs(got.dense) == _pairs(store.search(("conv",), query=got.dense_query, limit=7))
        expected = [i for i in reference.search(("conv",), query=text, limit=7) if i.score is not None]
        assert [(i.key, round(i.score or 0, 4)) for i in got.lexical] == [
            (i.key, round(i.score or 0, 4)) for i in expected
        ]  # the same BM25 (weights stored as float4: equal to 4 places)
        assert all(i.value["content"] for i in got.dense + got.lexical)


def test_prefix_filter_background_and_expiry(open_store: Callable[..., PostgresMemoryStore]) -> None:
    clock = FakeClock()
    store = open_store(clock=clock, ttl={"default_ttl": 10})
    _fill(store)  # type: ignore[arg-type]
    got = _one(
        store, CandidateQuery(("conv", "a"), "painted sunset", limit=50, filter={"metadata.session": 1})
    )
    assert {i.key for i in got.dense} == {f"a{i}" for i in range(30) if i % 3 == 1}
    assert [i.key for i in got.lexical] == ["a10"]
    # a filter Postgres cannot check exactly is checked on each row
    got = _one(
        store,
        CandidateQuery(("conv", "a"), "painted sunset", limit=50, filter={"metadata.session": {"$in": [1]}}),
    )
    assert [i.key for i in got.lexical] == ["a10"]
    question = "What did Caroline paint?"
    many, few, rare = store.search_candidates(
        [
            CandidateQuery(("conv", "a"), question),
            CandidateQuery(("conv", "b"), question),
            CandidateQuery(("conv", "c"), question),
        ]
    )
    assert (many.dense_query, few.dense_query, rare.dense_query) == ("What did paint?", question, question)
    store.put(("conv", "a"), "short", {"content": "a zeppelin over the harbour"}, ttl=1)
    assert [i.key for i in _one(store, CandidateQuery(("conv",), "zeppelin")).lexical] == ["short"]
    clock.advance(minutes=2)
    got = _one(store, CandidateQuery(("conv",), "zeppelin harbour", limit=100))
    assert "short" not in {i.key for i in got.dense + got.lexical}
    # a candidate read pushes the expiry of what it returns, as search does
    store.put(("ttl",), "dog", {"content": "a rescue dog named Biscuit"})
    store.put(("ttl",), "pots", {"content": "pottery classes on Tuesdays"})
    clock.advance(minutes=8)
    assert _one(store, CandidateQuery(("ttl",), "Biscuit", limit=1)).lexical[0].key == "dog"
    clock.advance(minutes=5)
    assert store.get(("ttl",), "dog") is not None
    assert store.get(("ttl",), "pots") is None


def test_lexical_fields_index_for_put_and_async_twin(open_store: Callable[..., PostgresMemoryStore]) -> None:
    store = open_store(index=_index(lexical_fields=["metadata.context", "content"]))
    store.batch(
        [
            PutOp(("m",), "ctx", {"content": "we talked", "metadata": {"context": "zanzibar trip"}}),
            PutOp(("m",), "off", {"content": "zanzibar again"}, index=False),
        ]
    )
    queries = [CandidateQuery(("m",), "zanzibar"), CandidateQuery(("empty",), "zanzibar")]
    sync = store.search_candidates(queries)
    assert [i.key for i in sync[0].lexical] == ["ctx"]  # index=False: in neither list
    assert [i.key for i in sync[0].dense] == ["ctx"]
    assert sync[1].dense == sync[1].lexical == []
    async_ = asyncio.run(store.asearch_candidates(queries))
    assert [(_pairs(c.dense), _pairs(c.lexical)) for c in async_] == [
        (_pairs(c.dense), _pairs(c.lexical)) for c in sync
    ]
    assert store.search_candidates([]) == []


def test_without_an_index_the_store_says_it_has_no_lexical_index(
    open_store: Callable[..., PostgresMemoryStore],
) -> None:
    store = open_store(index=None)
    store.put(("m",), "k", {"content": "zanzibar"})
    [got] = store.search_candidates([CandidateQuery(("m",), "zanzibar")])
    assert got.lexical_index is False
    assert [i.key for i in got.unscored] == ["k"]


def test_recall_through_memory_finds_a_rare_name(open_store: Callable[..., PostgresMemoryStore]) -> None:
    embeddings = FakeEmbeddings(dims=DIMS)
    store = open_store(index=memory_index(embeddings))
    memory = Memory(store=store, embeddings=embeddings)
    config: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
    history: list[dict[str, str]] = []
    for n in range(20):
        history += [
            {"role": "user", "content": f"I went to the market on day {n}"},
            {"role": "assistant", "content": "Nice."},
        ]
    history += [
        {"role": "user", "content": "My sister Quorra lives in Lisbon"},
        {"role": "assistant", "content": "Noted."},
    ]
    assert memory.import_history(history, config).written == 21
    recalled = memory.recall([HumanMessage("Where does Quorra live?")], config)
    assert "Quorra lives in Lisbon" in recalled.prompt
    assert "Quorra" in recalled.items[0].content


def test_a_dense_list_behind_many_expired_items_is_read_again_whole(
    open_store: Callable[..., PostgresMemoryStore],
) -> None:
    clock = FakeClock()
    store = open_store(clock=clock)
    for n in range(30):  # more expired best matches than the capped read leaves room for
        store.put(("x",), f"gone{n}", {"content": f"zeppelin zeppelin harbour {n}"}, ttl=1)
    store.put(("x",), "live", {"content": "a harbour"})
    clock.advance(minutes=2)
    got = _one(store, CandidateQuery(("x",), "zeppelin zeppelin harbour", limit=1))
    assert [i.key for i in got.dense] == ["live"]
    assert [i.key for i in got.lexical] == ["live"]


def test_ties_are_cut_in_the_contract_order_under_a_prefix(
    open_store: Callable[..., PostgresMemoryStore],
) -> None:
    # equal scores and one write time: the limit cuts by namespace labels, then key — the
    # searched namespace first, then its children label by label ("b" < "b.x" < "b-c", though
    # "-" sorts before "." as text)
    store = open_store(clock=FakeClock())
    namespaces = [("t", "b-c"), ("t", "b", "x"), ("t",), ("t", "b"), ("t", " ")]
    store.batch([PutOp(ns, key, {"content": "violin lessons"}) for ns in namespaces for key in ("2", "1")])
    order = sorted(((ns, key) for ns in namespaces for key in ("2", "1")), key=lambda p: (list(p[0]), p[1]))
    assert _pairs(store.search(("t",), limit=20)) == order
    assert _pairs(store.search(("t",), limit=3)) == order[:3]
    for limit in (3, 7, 20):
        got = _one(store, CandidateQuery(("t",), "violin lessons", limit=limit))
        assert _pairs(got.dense) == _pairs(got.lexical) == order[:limit]
        assert _pairs(store.search(("t",), query="violin lessons", limit=limit)) == order[:limit]


def test_the_two_lexical_shapes_give_the_same_lists(
    open_store: Callable[..., PostgresMemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # terms seen as common read the namespace twice; others keep the items holding a term
    from langmem_plugin.stores.postgres import _candidates

    store = open_store()
    _fill(store)  # type: ignore[arg-type]
    queries = [
        CandidateQuery(("conv",), "Caroline sunset painting", limit=7),
        CandidateQuery(("conv", "a"), "Melanie", limit=5),
        CandidateQuery(("conv",), "violin lessons", limit=50, filter={"metadata.session": 1}),
        CandidateQuery(("conv", "c"), "Caroline", limit=3),
        CandidateQuery(("conv",), "zanzibar", limit=3),
    ]
    answers = []
    for share in (0.0, float("inf")):  # every query common, then none
        monkeypatch.setattr(_candidates, "COMMON_SHARE", share)
        store.search_candidates(queries)  # the counts the next call decides by
        got = store.search_candidates(queries)
        answers.append([([*map(_scored, c.dense)], [*map(_scored, c.lexical)], c.dense_query) for c in got])
    assert answers[0] == answers[1]
    assert any(lexical for _, lexical, _ in answers[0])


def _scored(item: SearchItem) -> tuple[tuple[str, ...], str, float]:
    return (tuple(item.namespace), item.key, round(item.score or 0.0, 6))
