"""``Memory()`` keeps memory in the store the run has (issue 37, item 1), with BM25 beside it.

Real graphs over LangGraph's ``InMemoryStore`` (the store ``langgraph dev`` gives a graph): the
memories a turn writes are items of the graph's store, recall on it finds what only the words
of a question find (a ``LexicalStore`` answers BM25 candidates beside the store's vectors), and
what is deleted from the store behind the wrapper's back is never recalled from its cache.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState
from langmem_plugin.core.candidates import CandidateQuery, CandidateStore
from langmem_plugin.stores import LexicalStore, lexical_view
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

USER_NS = ("memories", "user", "sam")


def _config(thread: str) -> Any:
    return {"configurable": {"user_id": "sam", "thread_id": thread}}


def _graph(memory: Memory, replies: list[Any], store: InMemoryStore | None) -> Any:
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(replies))
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def _platform_store() -> InMemoryStore:
    """An InMemoryStore indexed as langgraph.json's ``store.index`` configures the server's."""
    return InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})


def _contents(store: Any, namespace: tuple[str, ...] = USER_NS) -> set[str]:
    return {item.value["content"] for item in store.search(namespace, limit=100)}


def test_memory_without_a_store_writes_to_the_graphs_store_and_recalls_from_it() -> None:
    store = _platform_store()
    with Memory(embeddings=FakeEmbeddings()) as memory:
        graph = _graph(
            memory,
            [tool_call("save_memory", content="Sam's cat is called Zorblax"), "Noted.", "Zorblax!"],
            store,
        )
        graph.invoke({"messages": [HumanMessage("My cat is called Zorblax.")]}, _config("t1"))
        assert "Sam's cat is called Zorblax" in _contents(store)  # the graph's store holds it
        assert _contents(memory.store) == set()  # memory's own default store holds nothing
        out = graph.invoke({"messages": [HumanMessage("Is Zorblax hungry?")]}, _config("t2"))
        recalled = [item["content"] for item in out["memory_context"]["items"]]
        assert "Sam's cat is called Zorblax" in recalled
        page = memory.inspector(store=store).page(user_id="sam")  # what the run kept, inspected
        assert "Sam's cat is called Zorblax" in [row.content for row in page.rows]
        assert memory.inspector().page(user_id="sam").rows == []  # outside a run: its own store


def test_a_graph_without_a_store_uses_memorys_default_store() -> None:
    with Memory(embeddings=FakeEmbeddings()) as memory:
        graph = _graph(memory, [tool_call("save_memory", content="Sam drinks green tea"), "Noted."], None)
        graph.invoke({"messages": [HumanMessage("I drink green tea.")]}, _config("t1"))
        assert "Sam drinks green tea" in _contents(memory.store)


def test_memory_with_a_path_keeps_its_own_store_whatever_the_graph_has(tmp_path: Any) -> None:
    store = _platform_store()
    with Memory(path=tmp_path / "memory", embeddings=FakeEmbeddings()) as memory:
        graph = _graph(memory, [tool_call("save_memory", content="Sam drinks green tea"), "Noted."], store)
        graph.invoke({"messages": [HumanMessage("I drink green tea.")]}, _config("t1"))
        assert "Sam drinks green tea" in _contents(memory.store)
        assert _contents(store) == set()


def test_a_store_given_wins_over_the_graphs() -> None:
    mine, graphs = _platform_store(), _platform_store()
    with Memory(mine) as memory:
        graph = _graph(memory, [tool_call("save_memory", content="Sam drinks green tea"), "Noted."], graphs)
        graph.invoke({"messages": [HumanMessage("I drink green tea.")]}, _config("t1"))
    assert "Sam drinks green tea" in _contents(mine)
    assert _contents(graphs) == set()


@pytest.mark.asyncio
async def test_the_async_path_uses_the_graphs_store_too() -> None:
    store = _platform_store()
    with Memory(embeddings=FakeEmbeddings()) as memory:
        graph = _graph(memory, [tool_call("save_memory", content="Sam plays the oboe"), "Noted."], store)
        await graph.ainvoke({"messages": [HumanMessage("I play the oboe.")]}, _config("t1"))
        assert "Sam plays the oboe" in _contents(store)


def _lexical(store: InMemoryStore, **kwargs: Any) -> LexicalStore:
    view = lexical_view(store) if not kwargs else LexicalStore(store, **kwargs)
    assert isinstance(view, LexicalStore)
    return view


def test_bm25_finds_by_words_what_the_vectors_miss_and_the_store_stays_the_truth() -> None:
    store = InMemoryStore()  # no vector index at all: only BM25 can rank
    view = _lexical(store, fields=["content"], refresh_seconds=0.2)
    assert isinstance(view, CandidateStore)
    view.put(USER_NS, "a", {"content": "Sam adopted a cat named Zorblax"})
    view.put(USER_NS, "b", {"content": "Sam went hiking in the Alps"})
    (found,) = view.search_candidates([CandidateQuery(USER_NS, "Zorblax")])
    assert [hit.key for hit in found.lexical] == ["a"]
    assert found.lexical_index

    store.delete(USER_NS, "a")  # behind the wrapper's back (another process, Studio)
    (found,) = view.search_candidates([CandidateQuery(USER_NS, "Zorblax")])
    assert found.lexical == []  # never answered from the cache
    store.put(USER_NS, "c", {"content": "Sam's new cat is Zorblax the second"})
    time.sleep(0.3)  # past refresh_seconds: the index is built again from the store
    (found,) = view.search_candidates([CandidateQuery(USER_NS, "Zorblax")])
    assert [hit.key for hit in found.lexical] == ["c"]

    store.put(USER_NS, "b", {"content": "Sam went hiking with Zorblax"})  # changed elsewhere
    (found,) = view.search_candidates([CandidateQuery(USER_NS, "Zorblax hiking")])
    assert {hit.key: hit.value["content"] for hit in found.lexical}["b"] == "Sam went hiking with Zorblax"


def test_filters_hold_on_the_lexical_list_and_one_wrapper_serves_one_store() -> None:
    store = _platform_store()
    view = _lexical(store)
    assert lexical_view(store) is view  # its indexes are shared by every surface
    view.put(USER_NS, "a", {"content": "Zorblax likes tuna", "category": "pets"})
    view.put(USER_NS, "b", {"content": "Zorblax the band plays jazz", "category": "music"})
    (found,) = view.search_candidates([CandidateQuery(USER_NS, "Zorblax", filter={"category": "pets"})])
    assert [hit.key for hit in found.lexical] == ["a"]
    assert all(hit.value["category"] == "pets" for hit in found.dense)
    view.delete(USER_NS, "a")
    (found,) = view.search_candidates([CandidateQuery(USER_NS, "Zorblax")])
    assert [hit.key for hit in found.lexical] == ["b"]


class _BlindEmbeddings(Embeddings):
    """One vector for every text: the store's own search ranks nothing, so only BM25 can."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 15 for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0] + [0.0] * 15


def test_memory_over_an_inmemory_store_recalls_a_rare_name_its_vectors_cannot() -> None:
    store = InMemoryStore(index={"dims": 16, "embed": _BlindEmbeddings(), "fields": ["content"]})
    with Memory(store) as memory:
        for i in range(60):
            store.put(
                USER_NS,
                f"f{i}",
                {"content": f"Sam noted a long detailed fact number {i} about the garden beds"},
            )
        save = next(t for t in memory.tools if t.name == "save_memory")
        save.invoke({"content": "Sam's dentist is Dr Quaglieri"}, _config("t1"))
        recall = memory.recall([HumanMessage("When do I see Quaglieri?")], _config("t2"))
        assert "Quaglieri" in recall.prompt


def test_the_wrapper_cache_does_not_keep_a_store_alive() -> None:
    import gc
    import weakref

    store = InMemoryStore()
    lexical_view(store).put(USER_NS, "a", {"content": "tea"})
    gone = weakref.ref(store)
    del store
    gc.collect()
    assert gone() is None
