"""QdrantStore.search_candidates: the raw dense and BM25 lists hybrid search fuses, over both engines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langmem_plugin.core.candidates import CandidateQuery, CandidateStore
from langmem_plugin.errors import LangMemPluginError
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.stores.qdrant._calls import Count, Nearest, Query, QueryBatch
from langmem_plugin.stores.qdrant._layout import DENSE, SPARSE
from langmem_plugin.testing import FakeEmbeddings
from tests.memory_fixtures import RecordingEmbeddings, record_engine_calls
from tests.store_contract import FakeClock

NS = ("users", "u1")
DOCS = {
    "tea": "Sam drinks green tea every morning",
    "run": "Sam runs the Boston marathon in April",
    "tax": "The tax deadline is in April",
    "dog": "A puppy named Biscuit joined the family",
}


def _index(embeddings: Embeddings | None = None) -> Any:
    return {"dims": 64, "embed": embeddings or FakeEmbeddings(64), "fields": ["content"]}


@pytest.fixture(params=["embedded", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QdrantStore]:
    where: Any = tmp_path / "q" if request.param == "embedded" else ":memory:"
    with QdrantStore(where, index=_index()) as opened:
        for key, text in DOCS.items():
            opened.put(NS, key, {"content": text, "kind": "fact" if key != "dog" else "pet"})
        opened.put(("users", "u2"), "other", {"content": "Sam drinks black tea"})
        yield opened


def test_the_lists_are_the_stores_own_dense_and_bm25_rankings(store: QdrantStore) -> None:
    assert isinstance(store, CandidateStore)
    (found,) = store.search_candidates([CandidateQuery(NS, "green tea in April", limit=10)])
    dense = store.with_search(mode="dense").search(NS, query="green tea in April", limit=10)
    lexical = store.with_search(mode="lexical").search(NS, query="green tea in April", limit=10)
    assert [i.key for i in found.dense] == [i.key for i in dense]
    assert [i.score for i in found.dense] == pytest.approx([i.score for i in dense])
    assert [i.key for i in found.lexical] == [i.key for i in lexical if i.score is not None]
    assert [i.score for i in found.lexical] == pytest.approx(
        [i.score for i in lexical if i.score is not None]
    )
    assert found.lexical_index
    assert found.dense_query == "green tea in April"
    assert {i.key for i in found.lexical} == {"tea", "run", "tax"}  # a shared word each


def test_prefix_filter_and_limit_are_honoured(store: QdrantStore) -> None:
    wide, narrow, one = store.search_candidates(
        [
            CandidateQuery(("users",), "tea", limit=10),
            CandidateQuery(NS, "tea", limit=10, filter={"kind": "pet"}),
            CandidateQuery(NS, "April", limit=1),
        ]
    )
    assert {i.key for i in wide.lexical} == {"tea", "other"}
    assert [i.key for i in narrow.dense] == ["dog"]
    assert narrow.lexical == []
    assert len(one.dense) == len(one.lexical) == 1


def test_expired_items_are_never_candidates(tmp_path: Path) -> None:
    clock = FakeClock()
    with QdrantStore(tmp_path / "q", index=_index(), options={"clock": clock}) as store:
        store.put(NS, "short", {"content": "green tea for a minute"}, ttl=1)
        store.put(NS, "long", {"content": "green tea for good"})
        (before,) = store.search_candidates([CandidateQuery(NS, "green tea")])
        assert {i.key for i in before.lexical} == {"short", "long"}
        clock.advance(minutes=2)
        (after,) = store.search_candidates([CandidateQuery(NS, "green tea")])
        assert {i.key for i in after.lexical} == {i.key for i in after.dense} == {"long"}


def _filled(embeddings: Embeddings, where: Any, n: int) -> QdrantStore:
    store = QdrantStore(where, index=_index(embeddings))
    for i in range(n):
        store.put(NS, f"k{i}", {"content": f"Caroline: note number {i} about topic{i}"})
    store.put(NS, "pottery", {"content": "Melanie: I signed up for a pottery class"})
    return store


def test_background_words_leave_the_dense_query_and_verdicts_are_kept(tmp_path: Path) -> None:
    embeddings = RecordingEmbeddings()
    with _filled(embeddings, tmp_path / "q", 20) as store:
        calls = record_engine_calls(store)
        query = CandidateQuery(NS, "When did Caroline sign up for pottery?")
        (found,) = store.search_candidates([query])
        assert found.dense_query == "When did sign up for pottery?"
        assert embeddings.queries[-1] == "When did sign up for pottery?"
        assert "pottery" in {i.key for i in found.lexical}  # BM25 reads the whole query
        batches = [c for c in calls if isinstance(c, QueryBatch)]
        assert len(batches) == 2  # the probes, then the dense and the BM25 list: one round trip each
        probes, ranked = batches[0].queries, batches[1].queries
        assert all(not c.with_payload and isinstance(c.rank, Nearest) for c in probes)  # ids only
        assert {c.limit for c in probes} == {5}, [c.limit for c in probes]  # ceil(0.2 * 21)
        assert [c.rank.using for c in ranked if isinstance(c.rank, Nearest)] == [DENSE, SPARSE]
        assert not [c for c in calls if isinstance(c, Query)]  # nothing outside the batches
        calls.clear()
        store.search_candidates([query])
        assert sum(isinstance(c, Count) for c in calls) == 1
        (ranked_again,) = [c for c in calls if isinstance(c, QueryBatch)]  # the verdicts held: no probe
        assert len(ranked_again.queries) == 2
        for i in range(20, 30):  # the namespace grows by more than 5%: the verdicts are taken again
            store.put(NS, f"k{i}", {"content": f"Caroline: note number {i}"})
        calls.clear()
        store.search_candidates([query])
        assert len([c for c in calls if isinstance(c, QueryBatch)]) == 2


def test_small_namespaces_and_background_none_keep_the_query(tmp_path: Path) -> None:
    embeddings = RecordingEmbeddings()
    with _filled(embeddings, tmp_path / "q", 5) as store:
        (small,) = store.search_candidates([CandidateQuery(NS, "When did Caroline sign up?")])
        assert small.dense_query == "When did Caroline sign up?"
    with _filled(embeddings, tmp_path / "r", 30) as store:
        (kept,) = store.search_candidates([CandidateQuery(NS, "Caroline pottery", background_df=None)])
        assert kept.dense_query == "Caroline pottery"


async def test_async_gives_the_same_lists(store: QdrantStore) -> None:
    queries = [CandidateQuery(NS, "tea April"), CandidateQuery(("users",), "Biscuit")]
    sync = store.search_candidates(queries)
    asynchronous = await store.asearch_candidates(queries)
    for a, b in zip(sync, asynchronous, strict=True):
        assert [i.key for i in a.dense] == [i.key for i in b.dense]
        assert [i.key for i in a.lexical] == [i.key for i in b.lexical]


def test_a_store_without_embeddings_answers_bm25_only(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "q") as store:
        store.put(NS, "tea", {"content": "green tea"})
        (found,) = store.search_candidates([CandidateQuery(NS, "tea")])
        assert found.dense == []
        assert [i.key for i in found.lexical] == ["tea"]


def test_bad_queries_are_typed_errors(store: QdrantStore) -> None:
    with pytest.raises(LangMemPluginError):
        store.search_candidates([CandidateQuery(("bad.ns",), "tea")])
    with pytest.raises(LangMemPluginError):
        store.search_candidates([CandidateQuery(NS, "tea", filter={"kind": {"$regex": "x"}})])
    with pytest.raises(LangMemPluginError, match="CandidateQuery"):
        store.search_candidates(["tea"])  # type: ignore[list-item]


def test_the_client_engine_sends_each_batch_as_one_query_batch_points(tmp_path: Path) -> None:
    """Through qdrant-client (its local mode here; a server alike): the same lists as the embedded
    engine, with the probes in one ``query_batch_points`` and the lists in another."""
    query = CandidateQuery(NS, "When did Caroline sign up for pottery?")
    with _filled(RecordingEmbeddings(), tmp_path / "q", 20) as embedded:
        (expected,) = embedded.search_candidates([query])
    with _filled(RecordingEmbeddings(), ":memory:", 20) as remote:
        client = remote._engine.client  # type: ignore[attr-defined]
        sent: list[str] = []
        for method in ("query_points", "query_batch_points", "count", "scroll"):
            original = getattr(client, method)

            def recorded(*args: Any, _method: str = method, _original: Any = original, **kwargs: Any) -> Any:
                sent.append(_method)
                return _original(*args, **kwargs)

            setattr(client, method, recorded)
        (found,) = remote.search_candidates([query])
    assert sent == ["count", "query_batch_points", "query_batch_points"]
    assert found.dense_query == expected.dense_query == "When did sign up for pottery?"
    assert [i.key for i in found.lexical] == [i.key for i in expected.lexical]
    assert [i.key for i in found.dense] == [i.key for i in expected.dense]
