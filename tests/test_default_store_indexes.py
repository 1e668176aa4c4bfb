"""The default store (``Memory()``'s) keeps payload indexes for a thread's memories (issue 39 item 2).

The inspector's thread page and ``memories list --thread`` filter a user's memories on
``metadata.thread_id``; without a payload index the engine reads every memory of the user to
answer. A store made before the index existed gets it when ``Memory(path=...)`` opens it.
"""

from __future__ import annotations

from pathlib import Path

from langmem_plugin import Memory, memory_index
from langmem_plugin.stores import QdrantStore
from langmem_plugin.surfaces._default_store import DEFAULT_FILTER_INDEXES
from langmem_plugin.testing import FakeEmbeddings

_INDEXED = {"value.metadata.thread_id", "value.thread_id"}


def _schema(store: object) -> set[str]:
    return set(store._engine._require().info().payload_schema)  # type: ignore[attr-defined]


def _import(memory: Memory, thread: str, n: int) -> None:
    config = {"configurable": {"user_id": "u1", "thread_id": thread}}
    history = [("user" if i % 2 == 0 else "assistant", f"{thread} message {i} about tea") for i in range(n)]
    memory.import_history(history, config, progress=False)  # type: ignore[arg-type]


def test_the_default_store_indexes_the_thread_of_each_memory(tmp_path: Path) -> None:
    assert set(DEFAULT_FILTER_INDEXES) == {"metadata.thread_id", "thread_id"}
    with Memory(path=tmp_path / "memory", embeddings=FakeEmbeddings(dims=32)) as memory:
        _import(memory, "t1", 6)
        _import(memory, "t2", 4)
        assert _schema(memory.store) >= _INDEXED
        found = memory.store.search(("memories",), filter={"metadata": {"thread_id": "t2"}}, limit=100)
        assert found
        assert {item.value["metadata"]["thread_id"] for item in found} == {"t2"}


def test_a_store_made_without_the_index_gets_it_when_memory_opens_it(tmp_path: Path) -> None:
    embeddings = FakeEmbeddings(dims=32)
    with QdrantStore(tmp_path / "memory", index=memory_index(embeddings)) as older:
        older.put(("memories", "u1"), "k1", {"content": "tea", "metadata": {"thread_id": "t1"}})
        assert not _INDEXED & _schema(older)
    with Memory(path=tmp_path / "memory", embeddings=embeddings) as memory:
        assert _schema(memory.store) >= _INDEXED
        hits = memory.store.search(("memories",), filter={"metadata": {"thread_id": "t1"}})
        assert [item.key for item in hits] == ["k1"]
