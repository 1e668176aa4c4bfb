"""memory_index(): one index config that gives both our stores what recall's fused search reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore

from langmem_plugin import CheckpointerStore, Memory, memory_index
from langmem_plugin.core.candidates import CandidateQuery
from langmem_plugin.testing import FakeEmbeddings

HISTORY = [
    {"date": "8 May 2023", "messages": [{"role": "Ana", "content": "Where did you go?"}]},
    {"date": "9 May 2023", "messages": [{"role": "Sam", "content": "To the lake, by bike."}]},
]


def _stores(tmp_path: Path) -> list[BaseStore]:
    pytest.importorskip("qdrant_edge")
    from langmem_plugin import QdrantStore

    index = memory_index(FakeEmbeddings(32))
    return [QdrantStore(path=tmp_path / "q", index=index), CheckpointerStore(InMemorySaver(), index=index)]


def test_both_stores_take_it_and_answer_both_candidate_lists(tmp_path: Path) -> None:
    for store in _stores(tmp_path):
        memory = Memory(store)
        memory.import_history(HISTORY, {"configurable": {"user_id": "sam", "thread_id": "t"}}, per="message")
        ns = ("memories", "user", "sam")
        # BM25 reads the date a session was given in, and the turn before: "9 May" and "where" find the answer
        (found,) = store.search_candidates([CandidateQuery(ns, "where on 9 May?", limit=5)])  # type: ignore[attr-defined]
        assert found.lexical_index
        assert found.lexical[0].value["content"] == "Sam: To the lake, by bike."
        recall = memory.recall([HumanMessage("where on 9 May?")], {"configurable": {"user_id": "sam"}})
        assert recall.items[0].content == "Sam: To the lake, by bike."
        close = getattr(store, "close", None)
        if close:
            close()


def test_semantic_mode_leaves_bm25_out() -> None:
    index = memory_index(FakeEmbeddings(32), mode="semantic")
    assert "lexical_fields" not in index
    store = CheckpointerStore(InMemorySaver(), index=index)
    (found,) = store.search_candidates([CandidateQuery(("n",), "anything", limit=5)])
    assert not found.lexical_index
