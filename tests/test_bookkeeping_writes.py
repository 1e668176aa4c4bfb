"""A write that changes only bookkeeping never embeds again (issue 27, item 5).

Every store is real (QdrantStore embedded and in qdrant-client's local mode, CheckpointerStore
over a SQLite file and over InMemorySaver, LangGraph's InMemoryStore through the memory
services); only the embedder is counted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin import CheckpointerStore, Memory, RecallConfig
from langmem_plugin.services import execute
from langmem_plugin.testing import FakeEmbeddings

STORES = ["qdrant", "qdrant-local", "sqlite", "inmemory"]
NS = ("memories", "sam")


class CountingEmbeddings(FakeEmbeddings):
    """FakeEmbeddings that count the documents they embed."""

    def __init__(self, dims: int = 64) -> None:
        super().__init__(dims)
        self.documents: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return super().embed_documents(texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)


def _index(embedder: CountingEmbeddings) -> Any:
    return {"dims": embedder.dims, "embed": embedder, "fields": ["content"]}


@contextlib.contextmanager
def _opened(kind: str, folder: Path, embedder: CountingEmbeddings) -> Iterator[BaseStore]:
    index = _index(embedder)
    if kind == "inmemory":
        yield InMemoryStore(index=index)
    elif kind == "sqlite":
        with CheckpointerStore.from_sqlite(folder / "memory.sqlite", index=index) as store:
            yield store
    else:
        from langmem_plugin.stores import QdrantStore

        path = folder / "qdrant" if kind == "qdrant" else ":memory:"
        with QdrantStore(path, index=index) as qdrant:
            yield qdrant


def _run(store: BaseStore, ops: list[Any]) -> list[Any]:
    """The ops through the memory services' executor (what every bookkeeping write goes through)."""

    def steps() -> Generator[Any, Any, list[Any]]:
        results: list[Any] = yield ops
        return results

    return execute(store, steps())


def _put(store: BaseStore, key: str, value: dict[str, Any]) -> None:
    _run(store, [PutOp(NS, key, value, index=["content"])])


def _search(store: BaseStore, query: str) -> list[Any]:
    (found,) = _run(store, [SearchOp(NS, query=query, limit=5)])
    return list(found)


@pytest.mark.parametrize("kind", STORES)
def test_bookkeeping_put_embeds_nothing_and_keeps_the_item_searchable(kind: str, tmp_path: Path) -> None:
    embedder = CountingEmbeddings()
    with _opened(kind, tmp_path, embedder) as store:
        _put(
            store, "tea", {"content": "Sam drinks green tea every morning", "access_count": 0, "m": {"x": 1}}
        )
        _put(store, "run", {"content": "Sam runs the Boston marathon in April", "access_count": 0})
        assert len(embedder.documents) == 2

        for count in (1, 2, 3):  # the access count moves, a nested key goes: no text changes
            _put(store, "tea", {"content": "Sam drinks green tea every morning", "access_count": count})
        assert len(embedder.documents) == 2

        (item,) = _run(store, [GetOp(NS, "tea")])
        assert item.value == {"content": "Sam drinks green tea every morning", "access_count": 3}
        hits = _search(store, "green tea")
        assert hits[0].key == "tea"
        assert hits[0].score is not None
        assert hits[0].value["access_count"] == 3

        # a changed text is embedded again, and searched by its new words
        _put(store, "tea", {"content": "Sam switched to black coffee", "access_count": 3})
        assert embedder.documents[2:] == ["Sam switched to black coffee"]
        assert _search(store, "black coffee")[0].key == "tea"


@pytest.mark.parametrize("kind", ["qdrant", "sqlite"])
def test_kept_vectors_survive_a_reopen(kind: str, tmp_path: Path) -> None:
    embedder = CountingEmbeddings()
    with _opened(kind, tmp_path, embedder) as store:
        _put(store, "tea", {"content": "Sam drinks green tea every morning", "access_count": 0})
        _put(store, "run", {"content": "Sam runs the Boston marathon in April", "access_count": 0})
        _put(store, "tea", {"content": "Sam drinks green tea every morning", "access_count": 1})
    with _opened(kind, tmp_path, embedder) as store:
        hits = _search(store, "green tea")
        assert [h.key for h in hits][:1] == ["tea"]
        assert hits[0].value["access_count"] == 1
        assert len(embedder.documents) == 2  # the reopen reads the vectors back, embeds nothing


def test_a_put_that_indexes_other_fields_is_embedded(tmp_path: Path) -> None:
    embedder = CountingEmbeddings()
    with _opened("qdrant", tmp_path, embedder) as store:
        value = {"content": "green tea", "note": "every morning"}
        _run(store, [PutOp(NS, "tea", value, index=["content"])])
        _run(store, [PutOp(NS, "tea", value, index=["note"])])
        assert embedder.documents == ["green tea", "every morning"]
        _run(store, [PutOp(NS, "tea", value, index=False)])  # no vector now: nothing to embed
        _run(store, [PutOp(NS, "tea", value, index=["note"])])  # indexed again: embedded again
        assert embedder.documents[2:] == ["every morning"]
        assert _search(store, "every morning")[0].score is not None


def test_inmemory_store_keeps_embedding_an_item_first_put_without_vectors() -> None:
    embedder = CountingEmbeddings()
    store = InMemoryStore(index=_index(embedder))
    _run(store, [PutOp(NS, "tea", {"content": "green tea"}, index=False)])
    _run(store, [PutOp(NS, "tea", {"content": "green tea", "access_count": 1})])
    assert embedder.documents == ["green tea"]  # it had no vector: this put embeds it
    assert _search(store, "green tea")[0].score is not None


@pytest.mark.parametrize("kind", STORES)
def test_recall_with_access_counts_embeds_no_memory(kind: str, tmp_path: Path) -> None:
    embedder = CountingEmbeddings()
    config: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
    with _opened(kind, tmp_path, embedder) as store:
        memory = Memory(store, recall=RecallConfig(min_relevance=None, track_access=True))
        try:
            save = next(t for t in memory.tools if t.name == "save_memory")
            save.invoke({"content": "Sam drinks green tea every morning"}, config)
            save.invoke({"content": "Sam runs the Boston marathon in April"}, config)
            written = len(embedder.documents)
            for _ in range(3):
                memory.recall([HumanMessage("what does Sam drink?")], config)
            assert len(embedder.documents) == written
            search = next(t for t in memory.tools if t.name == "search_memory")
            search.invoke({"query": "green tea"}, config)
            assert len(embedder.documents) == written
            counts = {
                m.value["content"]: m.value["access_count"]
                for m in store.search((), limit=50)
                if "access_count" in m.value
            }
            assert counts["Sam drinks green tea every morning"] >= 4  # three recalls and a search
            recalled = memory.recall([HumanMessage("what does Sam drink?")], config)
            assert "green tea" in recalled.prompt
        finally:
            memory.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(min_size=1, max_size=60).filter(lambda s: s.strip()),
    other=st.text(min_size=1, max_size=60).filter(lambda s: s.strip()),
)
def test_hostile_texts_embed_only_when_they_change(text: str, other: str) -> None:
    for store_of in (
        lambda e: InMemoryStore(index=_index(e)),
        lambda e: CheckpointerStore(InMemorySaver(), index=_index(e)),
    ):
        embedder = CountingEmbeddings(16)
        store = store_of(embedder)
        _put(store, "k", {"content": text, "n": 0})
        _put(store, "k", {"content": text, "n": 1})
        assert len(embedder.documents) == 1
        _put(store, "k", {"content": other, "n": 2})
        assert len(embedder.documents) == (1 if other == text else 2)
        (item,) = _run(store, [GetOp(NS, "k")])
        assert item.value == {"content": other, "n": 2}


@pytest.mark.parametrize("kind", ["qdrant", "qdrant-local"])
def test_a_kept_point_reads_back_the_whole_new_value_after_a_reopen(kind: str, tmp_path: Path) -> None:
    """The embedded engine writes only what changed (the value's changed keys under ``value``); what
    is read back, from a fresh process's view of the files, is still exactly the value put."""
    embedder = CountingEmbeddings()
    first = {"content": "Sam drinks green tea", "access_count": 0, "metadata": {"a": "1", "b": "2"}, "x": 1}
    changed = {"content": "Sam drinks green tea", "access_count": 3, "metadata": {"b": "3"}, "x": 1, "y": [1]}
    fewer = {"content": "Sam drinks green tea", "access_count": 4}  # keys left: a whole write
    with _opened(kind, tmp_path, embedder) as store:
        _put(store, "tea", first)
        before = store.get(NS, "tea")
        _put(store, "tea", changed)
        assert store.get(NS, "tea").value == changed  # type: ignore[union-attr]
        if kind == "qdrant":
            store.close()  # type: ignore[attr-defined]
            with _opened(kind, tmp_path, embedder) as reopened:
                got = reopened.get(NS, "tea")
                assert got is not None
                assert got.value == changed
                assert before is not None
                assert got.created_at == before.created_at
                assert got.updated_at > before.updated_at
                _put(reopened, "tea", fewer)
            with _opened(kind, tmp_path, embedder) as reopened:
                assert reopened.get(NS, "tea").value == fewer  # type: ignore[union-attr]
        else:
            _put(store, "tea", fewer)
            assert store.get(NS, "tea").value == fewer  # type: ignore[union-attr]
    assert len(embedder.documents) == 1  # one text, embedded once
