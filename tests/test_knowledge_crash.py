"""Issue 35: a re-add or removal of a document killed at any write (SIGKILL half-way through the
batch) leaves a state where readers see one version at most, and a resume — the next add or
remove of any source, or ``resume_knowledge_steps`` when a store opens — makes one version whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langgraph.store.base import BaseStore

from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.errors import InvalidRecordError
from langmem_plugin.services.knowledge import (
    STEPS_NAMESPACE,
    add_documents,
    remove_documents,
    resume_knowledge_steps,
)
from langmem_plugin.services.store_steps import execute
from langmem_plugin.stores import CheckpointerStore, QdrantStore
from langmem_plugin.testing import FakeEmbeddings

KNOWLEDGE = ("memories", "agent", "assistant", "knowledge")
SPLIT = RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0)

SCRIPT = """
import os, signal, sys
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langgraph.store.base import PutOp
from langmem_plugin.services.knowledge import add_documents, remove_documents
from tests.test_knowledge_crash import opened, version

kind, path, action, cut = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
split = RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0)
writes = 0

with opened(kind, path) as store:
    original = store.batch

    def die_half_way(ops):
        for op in ops[: len(ops) // 2]:
            original([op])  # one op at a time: what a store without atomic batches may leave
        os.kill(os.getpid(), signal.SIGKILL)

    def batch(ops):
        global writes
        ops = list(ops)
        if any(isinstance(op, PutOp) for op in ops):
            if writes == cut:
                die_half_way(ops)
            writes += 1
        return original(ops)

    store.batch = batch
    if hasattr(store, "write_bounded"):
        bounded_original = store.write_bounded

        def bounded(request):
            global writes
            if writes == cut:
                die_half_way(list(request.ops))
            writes += 1
            return bounded_original(request)

        store.write_bounded = bounded
    if action == "readd":
        new = Document(page_content=version("new", 4), metadata={"source": "h.md"})
        add_documents(store, [new], splitter=split)
    else:
        remove_documents(store, ["h.md"])
"""


def version(tag: str, facts: int) -> str:
    return "\n\n".join(f"Fact {i} of the handbook, {tag} edition." for i in range(facts))


class opened:
    """The store of ``kind`` at ``path``, opened with fake embeddings and closed after."""

    def __init__(self, kind: str, path: str) -> None:
        index: Any = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
        self.store: Any = (
            CheckpointerStore.from_sqlite(path, index=index)
            if kind == "sqlite"
            else QdrantStore(path, index=index)
        )

    def __enter__(self) -> Any:
        return self.store.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.store.__exit__(*exc)


def _chunks(store: BaseStore) -> tuple[list[str], int]:
    """The chunks a reader sees, and how many hidden ones are there."""
    shown, hidden = [], 0
    for item in store.search(KNOWLEDGE, limit=1000):
        try:
            shown.append(MemoryRecord.from_value(item.value).content)
        except InvalidRecordError:
            hidden += 1
    return sorted(shown), hidden


def _editions(texts: list[str]) -> set[str]:
    return {t.split(", ")[1] for t in texts}


# Every write of a re-add on one store (intent, staging, commit, deletes, reveals, intent gone, and
# none), the middle ones on the other, and a removal killed half-way through its deletes on both.
CUTS = [
    *(("sqlite", "readd", cut) for cut in range(7)),
    *(("qdrant", "readd", cut) for cut in (1, 3, 4)),
    ("sqlite", "remove", 1),
    ("qdrant", "remove", 1),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "action", "cut"), CUTS)
def test_a_change_killed_at_any_write_leaves_one_whole_version(
    kind: str, action: str, cut: int, tmp_path: Path
) -> None:
    path = str(tmp_path / ("k.sqlite" if kind == "sqlite" else "q"))
    with opened(kind, path) as store:
        add_documents(
            store, [Document(page_content=version("old", 7), metadata={"source": "h.md"})], splitter=SPLIT
        )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, path, action, str(cut)],
        capture_output=True,
        timeout=120,
        cwd=Path(__file__).parent.parent,
    )
    finished = done.returncode == 0
    assert finished or done.returncode == -9, done.stderr.decode()[-2000:]
    assert finished == (cut >= (6 if action == "readd" else 3))  # every write was a place to die
    old, new = sorted(version("old", 7).split("\n\n")), sorted(version("new", 4).split("\n\n"))
    with opened(kind, path) as store:
        shown, _ = _chunks(store)
        assert len(_editions(shown)) <= 1, shown  # killed or not: never two versions shown
        resumed = execute(store, resume_knowledge_steps())
        assert resumed == (0 if finished or cut == 0 else 1)  # cut 0: killed before the intent was written
        shown, hidden = _chunks(store)
        assert hidden == 0
        assert store.search(STEPS_NAMESPACE) == []
        wholes = [old, new] if action == "readd" else [old, []]
        assert shown in wholes, shown  # the old version whole, or the new one whole
        if finished:
            assert shown == wholes[1]
        again = add_documents(store, [Document(page_content=version("new", 4), metadata={"source": "h.md"})])
        assert again[0].error is None
        assert _chunks(store) == ([version("new", 4)], 0)  # one chunk with the default splitter


@pytest.mark.slow
def test_a_retry_of_add_documents_finishes_a_killed_change_first(tmp_path: Path) -> None:
    path = str(tmp_path / "k.sqlite")
    with opened("sqlite", path) as store:
        add_documents(
            store, [Document(page_content=version("old", 7), metadata={"source": "h.md"})], splitter=SPLIT
        )
    killed = subprocess.run(
        [sys.executable, "-c", SCRIPT, "sqlite", path, "readd", "4"],  # after the commit, mid-deletes
        capture_output=True,
        timeout=120,
        cwd=Path(__file__).parent.parent,
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    with opened("sqlite", path) as store:
        assert store.search(STEPS_NAMESPACE) != []  # left half-done
        other = add_documents(store, [Document(page_content="Unrelated.", metadata={"source": "o.md"})])
        assert other[0].error is None
        assert store.search(STEPS_NAMESPACE) == []
        shown, hidden = _chunks(store)
        assert (hidden, _editions([s for s in shown if "," in s])) == (0, {"new edition."})
        assert remove_documents(store, ["h.md"])[0].removed == 4
