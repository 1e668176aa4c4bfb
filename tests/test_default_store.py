"""``Memory()`` keeps memory in Qdrant's embedded engine (issue 27, item 1).

In a temporary directory that goes when the memory is closed, collected or the process
exits; in a directory of the user's with ``path=``. Real stores, a real subprocess; only the
embedder is the fake one.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, QdrantStore, memory_index
from langmem_plugin.errors import ConfigurationError, StoreError, StoreLockedError
from langmem_plugin.testing import FakeEmbeddings

pytest.importorskip("qdrant_edge")

CONFIG: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}


def _save_and_recall(memory: Memory, text: str = "Sam drinks green tea every morning") -> str:
    save = next(t for t in memory.tools if t.name == "save_memory")
    save.invoke({"content": text}, CONFIG)
    return memory.recall([HumanMessage("what does Sam drink?")], CONFIG).prompt


def test_memory_without_a_store_is_hybrid_qdrant_in_a_directory_removed_on_close() -> None:
    memory = Memory(embeddings=FakeEmbeddings())
    assert isinstance(memory.store, QdrantStore)
    assert memory.store.search_mode == "hybrid"
    folder = memory.store.path
    assert folder is not None
    assert folder.is_dir()
    assert folder.name.startswith("langmem-memory-")
    assert "green tea" in _save_and_recall(memory)
    memory.close()
    assert not folder.exists()
    with pytest.raises(StoreError, match=r"Memory\(path="):
        memory.recall([HumanMessage("tea?")], CONFIG)  # the data is gone: no silent new store
    assert not folder.exists()


def test_with_block_and_garbage_collection_remove_the_directory() -> None:
    with Memory(embeddings=FakeEmbeddings()) as memory:
        folder = memory.store.path
        assert folder is not None
        _save_and_recall(memory)
    assert not folder.exists()

    memory = Memory(embeddings=FakeEmbeddings())
    folder = memory.store.path
    assert folder is not None
    _save_and_recall(memory)
    del memory
    gc.collect()
    assert not folder.exists()


def test_a_process_that_exits_without_close_leaves_nothing_behind(tmp_path: Path) -> None:
    script = (
        "from langchain_core.messages import HumanMessage\n"
        "from langmem_plugin import Memory\n"
        "from langmem_plugin.testing import FakeEmbeddings\n"
        "memory = Memory(embeddings=FakeEmbeddings())\n"
        "config = {'configurable': {'user_id': 'sam', 'thread_id': 't1'}}\n"
        "save = next(t for t in memory.tools if t.name == 'save_memory')\n"
        "save.invoke({'content': 'Sam drinks green tea'}, config)\n"
        "assert 'green tea' in memory.recall([HumanMessage('tea?')], config).prompt\n"
        "print(memory.store.path, flush=True)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # its temporary directory lands where we look
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip())
    assert folder.parent == tmp_path
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []


def test_path_keeps_memory_across_opens_and_close_releases_it(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    with Memory(path=folder, embeddings=FakeEmbeddings()) as memory:
        _save_and_recall(memory)
        with pytest.raises(StoreLockedError):
            Memory(path=folder, embeddings=FakeEmbeddings())  # one opener at a time
    assert (folder / "store.json").exists()
    with Memory(path=str(folder), embeddings=FakeEmbeddings()) as again:
        assert "green tea" in again.recall([HumanMessage("what does Sam drink?")], CONFIG).prompt
    assert folder.exists()  # a path of the user's stays


def test_a_store_given_is_used_as_is_and_left_open(tmp_path: Path) -> None:
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    with Memory(store) as memory:
        assert memory.store is store
        assert "green tea" in _save_and_recall(memory)
    with QdrantStore(tmp_path / "mine", index=memory_index(FakeEmbeddings())) as mine:
        with Memory(mine) as memory:
            _save_and_recall(memory)
        assert mine.search((), limit=50)  # still open: Memory closes only the store it made


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (42, "must be a directory name"),
        ("", "must be a directory name"),
        (":memory:", "not a directory"),
        ("a-file", "is a file"),
        ("foreign", "holds other files"),
        ("bad\x00name", "cannot be used"),
        ("~no-such-user-here/memory", "cannot be used"),  # a home directory that cannot be found
    ],
)
def test_a_path_that_cannot_be_used_is_a_typed_error(
    path: Any, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a-file").write_text("not a store")
    Path("foreign").mkdir()
    Path("foreign", "notes.txt").write_text("mine")
    with pytest.raises(ConfigurationError, match=message) as raised:
        Memory(path=path, embeddings=FakeEmbeddings())
    assert "Fix" in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "foreign"]  # nothing written


def test_store_and_path_together_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="pass one of them"):
        Memory(InMemoryStore(), path="./memory")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(st.characters(blacklist_characters="/"), min_size=1, max_size=40))
def test_hostile_path_names_open_a_store_there_or_raise_a_typed_error(name: str, tmp_path: Path) -> None:
    base = tmp_path / "hostile"
    base.mkdir(exist_ok=True)
    target = base / name
    try:
        memory = Memory(path=target, embeddings=FakeEmbeddings(16))
    except ConfigurationError as exc:
        assert "Fix" in str(exc)  # noqa: PT017 - the message is the point
        return
    try:
        assert memory.store.path == target
        assert (target / "store.json").exists()
    finally:
        memory.close()


def test_the_memory_bench_times_a_fresh_process_up_to_its_first_recall() -> None:
    from langmem_plugin.bench.memory import MemoryBenchResult, cold_start

    start = cold_start()  # a real interpreter: import, Memory(), one exchange, the first recall
    assert min(start.import_s, start.memory_s, start.remember_s, start.recall_s) > 0
    assert start.import_and_first_recall_s == start.import_s + start.memory_s + start.recall_s
    table = MemoryBenchResult(memories=0, queries=0, cold_start=start).table()
    assert "Memory() in a fresh process: import" in table
