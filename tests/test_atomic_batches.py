"""Issue 35, class 1 at the store: a batch that fails part-way leaves the old state or the new one.

An embedder that raises (an embedding API's timeout) on any call of a batch that deletes some
items and writes others leaves every store as it was: embeddings are made before the first
write. On the default store (embedded Qdrant) a process killed at any engine update of a batch
leaves, once reopened, the whole batch (its journal is finished by the open), and one killed
while embedding leaves the old state; an engine error part-way is finished before anything else
reads the store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.errors import StoreError
from langmem_plugin.testing import FailingEmbeddings, FakeEmbeddings
from tests.every_store import KINDS, open_store
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)

NS = ("memories", "user", "sam")
OLD = {"a": "Sam keeps bees on the roof", "b": "Sam runs a half marathon in May", "c": "Sam likes green tea"}
#: The batch: ``a`` deleted, ``b`` rewritten (other words: embedded again), ``d`` new, ``c`` kept.
NEW = {"b": "Sam walks the dog at noon", "c": "Sam likes green tea", "d": "Sam learns the cello"}


def _batch() -> list[PutOp]:
    return [
        PutOp(NS, "a", None),
        PutOp(NS, "b", {"content": NEW["b"]}),
        PutOp(NS, "d", {"content": NEW["d"]}),
    ]


def _state(store: BaseStore) -> dict[str, str]:
    return {i.key: i.value["content"] for i in store.search(NS, limit=100)}


@pytest.mark.parametrize("kind", KINDS)
def test_an_embedder_that_fails_leaves_the_batch_undone_on_every_store(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    embeddings = FailingEmbeddings(FakeEmbeddings(64))
    index: Any = {"dims": 64, "embed": embeddings, "fields": ["content"]}
    with open_store(kind, request, tmp_path, index) as store:
        store.batch([PutOp(NS, key, {"content": text}) for key, text in OLD.items()])
        embeddings.fail_on = frozenset({embeddings.calls + 1})
        with pytest.raises(Exception, match="injected"):
            store.batch(_batch())
        assert _state(store) == OLD  # nothing deleted, nothing written
        store.batch(_batch())  # the retry applies it whole
        assert _state(store) == NEW
        # the rewritten item is found by its new words, not its old ones
        assert [i.key for i in store.search(NS, query="dog at noon", limit=1)] == ["b"]


KILLED = """
import os, signal, sys
from langgraph.store.base import PutOp
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.stores.qdrant import _edge
from langmem_plugin.stores.qdrant._calls import Delete, SetPayload, SetPayloads, Upsert
from langmem_plugin.testing import FakeEmbeddings

path, cut = sys.argv[1], int(sys.argv[2])
ns = ("memories", "user", "sam")


class Dying(FakeEmbeddings):
    def embed_documents(self, texts):
        if cut == 0:
            os.kill(os.getpid(), signal.SIGKILL)  # killed while embedding: nothing written yet
        return super().embed_documents(texts)


original = _edge.EdgeEngine._execute
updates = 0


def dying(self, shard, call):
    global updates
    if isinstance(call, Upsert | Delete | SetPayload | SetPayloads):
        updates += 1
        if updates == cut:
            os.kill(os.getpid(), signal.SIGKILL)
    return original(self, shard, call)


index = {"dims": 64, "embed": Dying(64), "fields": ["content"]}
store = QdrantStore(path, index=index)
_edge.EdgeEngine._execute = dying
store.batch([
    PutOp(ns, "a", None),
    PutOp(ns, "b", {"content": "Sam walks the dog at noon"}),
    PutOp(ns, "d", {"content": "Sam learns the cello"}),
    PutOp(ns, "c", {"content": "Sam likes green tea", "tags": ["drinks"]}),
])
print("not killed", updates)
"""


@pytest.mark.parametrize("cut", [0, 1, 2, 3])
def test_a_process_killed_at_any_step_of_a_batch_leaves_it_undone_or_whole(cut: int, tmp_path: Path) -> None:
    from langmem_plugin.stores.qdrant import QdrantStore

    index: Any = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
    path = tmp_path / "q"
    with QdrantStore(path, index=index) as store:
        store.batch([PutOp(NS, key, {"content": text}) for key, text in OLD.items()])
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(path), str(cut)], capture_output=True, timeout=120, text=True
    )
    assert done.returncode == -9, done.stdout + done.stderr[-2000:]  # killed mid-batch
    with QdrantStore(path, index=index) as store:
        state = _state(store)
        tags = store.get(NS, "c")
        assert not (path / "journal.json").exists()
        if cut == 0:
            assert state == OLD
        else:  # the journal was in place before the first update: the open finished the batch
            assert state == NEW
            assert tags is not None
            assert tags.value["tags"] == ["drinks"]
            assert [i.key for i in store.search(NS, query="cello", limit=1)] == ["d"]


def test_an_engine_error_part_way_is_finished_before_the_store_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langmem_plugin.stores.qdrant import QdrantStore, _edge
    from langmem_plugin.stores.qdrant._calls import Upsert

    index: Any = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
    original = _edge.EdgeEngine._execute
    failures = {"left": 0}

    def flaky(self: Any, shard: Any, call: Any) -> Any:
        if isinstance(call, Upsert) and failures["left"] > 0:
            failures["left"] -= 1
            raise OSError("No space left on device (injected)")
        return original(self, shard, call)

    monkeypatch.setattr(_edge.EdgeEngine, "_execute", flaky)
    with QdrantStore(tmp_path / "q", index=index) as store:
        store.batch([PutOp(NS, key, {"content": text}) for key, text in OLD.items()])
        failures["left"] = 1  # fails once: the batch is applied again at once, and reported done
        store.batch(_batch())
        assert _state(store) == NEW
        store.batch([PutOp(NS, key, {"content": text}) for key, text in OLD.items()] + [PutOp(NS, "d", None)])
        failures["left"] = 2  # fails twice: reported failed, finished by the next call
        with pytest.raises(StoreError, match="No space left"):
            store.batch(_batch())
        assert (tmp_path / "q" / "journal.json").exists()
        assert _state(store) == NEW  # the next call finished the batch before reading
        assert not (tmp_path / "q" / "journal.json").exists()


def test_a_journal_that_is_not_ours_is_a_store_error_naming_it(tmp_path: Path) -> None:
    from langmem_plugin.stores.qdrant import QdrantStore

    index: Any = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
    path = tmp_path / "q"
    with QdrantStore(path, index=index) as store:
        store.put(NS, "a", {"content": OLD["a"]})
    for garbage in ("{not json", json.dumps({"version": 1, "calls": [{"upsert": [{"id": 3}]}]}), "[]"):
        (path / "journal.json").write_text(garbage)
        with pytest.raises(StoreError, match=r"journal\.json"):
            QdrantStore(path, index=index)
    (path / "journal.json").unlink()
    (path / "journal.json.tmp").write_text('{"version": 1, "calls": [{"delete"')  # torn: never in place
    with QdrantStore(path, index=index) as store:
        assert _state(store) == {"a": OLD["a"]}
    assert not (path / "journal.json.tmp").exists()
