"""Forgotten text leaves the disk: a byte scan of every file of the closed store directory.

Qdrant Edge keeps a deleted point's text in its write-ahead log and segment files; the store
scrubs them when forgetting asks (``QdrantStore.purge_history``, :mod:`langmem_plugin.stores.qdrant._scrub`).
Each user's texts carry markers of their own, so a scan that finds the other user's markers
shows the scan reads what the store wrote. A child process killed at each step of a scrub
leaves a directory that opens with every item. And ``forget_about`` (the ``forget_memories``
tool too) reaches the thread's stored tool results of the caller, on every store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, MemoryState
from langmem_plugin.services.context.results import ResultsConfig
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.stores.qdrant import QdrantStore, _store
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
# what each user says: markers no other text of the store holds
MARKERS = {"alice": (b"quokkamarker", b"xylophonic"), "bob": (b"pangolinmarker", b"zeugmatic")}


def _on_disk(directory: Path, needles: tuple[bytes, ...]) -> dict[str, list[str]]:
    """Which files under ``directory`` hold which of ``needles`` (every file, every byte)."""
    found: dict[str, list[str]] = {}
    for root, _, files in os.walk(directory):
        for name in files:
            data = Path(root, name).read_bytes().lower()
            hits = [n.decode() for n in needles if n in data]
            if hits:
                found[os.path.relpath(Path(root, name), directory)] = hits
    return found


def _config(user: str, thread: str) -> Any:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def _chat(user: str) -> list[dict[str, str]]:
    first, second = (m.decode() for m in MARKERS[user])
    return [
        {"role": "user", "content": f"My secret word is {first} and I keep bees."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": f"I also find {second} poems moving."},
        {"role": "assistant", "content": "Lovely."},
        {"role": "user", "content": f"{user} waters the garden on Sundays."},
        {"role": "assistant", "content": "Good habit."},
    ]


def _items(store: BaseStore) -> dict[tuple[tuple[str, ...], str], dict[str, Any]]:
    return {
        (tuple(i.namespace), i.key): i.value
        for ns in store.list_namespaces(limit=10_000)
        for i in store.search(ns, limit=10_000, refresh_ttl=False)
        if tuple(i.namespace) == ns
    }


def _two_users(path: Path) -> Memory:
    memory = Memory(QdrantStore(path=path, index=INDEX))
    for user in MARKERS:
        memory.import_history(_chat(user), _config(user, f"{user}-1"))
        memory.import_history(_chat(user)[:2], _config(user, "shared"))
    return memory


def _bobs(items: dict[tuple[tuple[str, ...], str], dict[str, Any]]) -> dict[Any, Any]:
    return {k: v for k, v in items.items() if "alice" not in repr((k, v)) and "quokka" not in repr(v)}


def test_forget_user_leaves_no_byte_of_their_text_in_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "q"
    memory = _two_users(path)
    assert _on_disk(path, MARKERS["alice"])  # what the scan looks for is there to find
    before = _items(memory.store)

    memory.forget_user("alice")
    memory.close()
    memory.store.close()

    assert _on_disk(path, (*MARKERS["alice"], b"alice")) == {}
    bobs_words = {w for words in _on_disk(path, MARKERS["bob"]).values() for w in words}
    assert bobs_words == {"pangolinmarker", "zeugmatic"}
    assert sorted(p.name for p in path.iterdir()) == [".lock", "shard", "store.json"]
    with QdrantStore(path=path, index=INDEX) as reopened:  # bob's items, as they were
        after = _items(reopened)
        assert after == {k: v for k, v in _bobs(before).items() if k in after}
        assert {k for k in _bobs(before) if k[0][:3] == ("memories", "user", "bob")} <= set(after)
        hits = reopened.search(("memories", "user", "bob"), query="pangolinmarker secret word")
        assert hits
        assert "pangolinmarker" in hits[0].value["content"]


def test_forget_about_leaves_no_byte_of_the_text_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "q"
    memory = _two_users(path)
    config = _config("alice", "alice-1")

    forgotten = memory.forget_about("quokkamarker", config)
    assert len(forgotten.exchanges) == 2  # her own thread's and the shared thread's
    assert forgotten.history_purged == 0  # the store keeps no old versions; it scrubbed its files
    memory.close()
    memory.store.close()

    assert _on_disk(path, (b"quokkamarker",)) == {}
    assert _on_disk(path, (b"xylophonic", b"pangolinmarker"))  # her other words, and bob's, stay
    with QdrantStore(path=path, index=INDEX) as reopened:
        texts = " ".join(str(v) for v in _items(reopened).values())
        for kept in ("xylophonic", "waters the garden", "pangolinmarker"):
            assert kept in texts
        assert "quokkamarker" not in texts


def test_a_forget_in_a_big_store_waits_for_the_next_scrub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store, "SCRUB_NOW_POINTS", 5)  # "big": more items than this
    path = tmp_path / "q"
    memory = _two_users(path)
    store = memory.store
    assert isinstance(store, QdrantStore)

    memory.forget_about("quokkamarker", _config("alice", "alice-1"))
    store.close()
    assert _on_disk(path, (b"quokkamarker",))  # single items forgotten: left for the next scrub

    with QdrantStore(path=path, index=INDEX) as reopened:
        scrubbed = reopened.scrub()
        assert scrubbed is not None
        assert scrubbed.points == reopened.count() > 5
        assert scrubbed.wiped_bytes > 0
    assert _on_disk(path, (b"quokkamarker",)) == {}


def test_the_scrub_is_not_asked_of_a_server_or_memory_mode() -> None:
    store = QdrantStore(":memory:", index=INDEX)
    store.put(("n",), "k", {"content": "quokkamarker"})
    assert store.scrub() is None
    assert store.purge_history([("n",)]) == 0
    store.close()


# ---------------------------------------------------------------- a kill at each step of a scrub

_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from langmem_plugin.stores.qdrant import QdrantStore, _scrub
    from langmem_plugin.testing import FakeEmbeddings

    path, stop, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
    seen = {"n": 0}

    def step(name):
        if name == stop:
            seen["n"] += 1
            if seen["n"] == nth:
                os.kill(os.getpid(), signal.SIGKILL)

    _scrub._step = step
    store = QdrantStore(path=path, index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})
    store.scrub()
    """
)
# every step, in order; "wiping" is hit once per file of the old shard
_STEPS = [
    ("copying", 1),
    ("built", 1),
    ("ready", 1),
    ("moved-old", 1),
    ("moved-new", 1),
    ("unmarked", 1),
    ("wiping", 1),
    ("wiping", 40),
]


@pytest.fixture(scope="module")
def deleted_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Any, Any]]:
    """A closed store of 1,200 items (two pages to copy) and three deleted ones with markers."""
    path = tmp_path_factory.mktemp("kill") / "q"
    with QdrantStore(path=path, index=INDEX) as store:
        for start in range(0, 1_200, 400):
            store.batch(_puts(range(start, start + 400)))
        for n in range(3):
            store.put(("gone",), f"g{n}", {"content": f"quokkamarker {n} xylophonic"})
            store.delete(("gone",), f"g{n}")
        items = _items(store)
    assert _on_disk(path, (b"quokkamarker",))
    return path, items


def _puts(numbers: range) -> list[Any]:
    from langgraph.store.base import PutOp

    return [PutOp(("kept", str(n % 7)), f"k{n}", {"content": f"kept item {n}"}) for n in numbers]


@pytest.mark.slow
@pytest.mark.parametrize(("step", "nth"), _STEPS, ids=[f"{s}-{n}" for s, n in _STEPS])
def test_a_kill_at_any_step_of_a_scrub_leaves_a_store_with_every_item(
    deleted_store: tuple[Path, dict[Any, Any]], tmp_path: Path, step: str, nth: int
) -> None:
    source, items = deleted_store
    path = tmp_path / "q"
    subprocess.run(["cp", "-a", str(source), str(path)], check=True)
    root = Path(__file__).resolve().parent.parent
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), step, str(nth)], cwd=root, capture_output=True, timeout=300
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]  # it stopped there

    with QdrantStore(path=path, index=INDEX) as reopened:  # the open finishes or undoes the scrub
        assert _items(reopened) == items
        assert sorted(p.name for p in path.iterdir()) == [".lock", "shard", "store.json"]
        done = not _on_disk(path, (b"quokkamarker",))
        assert done == (_STEPS.index((step, nth)) >= _STEPS.index(("ready", 1)))  # completed once ready
        reopened.scrub()
        assert _items(reopened) == items
    assert _on_disk(path, (b"quokkamarker",)) == {}


# ---------------------------------------------------------------- forget_about reaches stored tool results

PAGE = "Report: the quokkamarker colony counted " + " ".join(
    f"finding {i}: {i * 7 % 101}." for i in range(900)
)


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return PAGE


@pytest.fixture(params=["in-memory", "qdrant", "checkpointer-sqlite"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    if request.param == "in-memory":
        yield InMemoryStore(index=INDEX)
    elif request.param == "qdrant":
        with QdrantStore(path=tmp_path / "q", index=INDEX) as qdrant:
            yield qdrant
    else:
        with CheckpointerStore.from_sqlite(tmp_path / "store.db", index=INDEX) as checkpointed:
            yield checkpointed


def _results_memory(store: BaseStore) -> Memory:
    results = ResultsConfig(full_tokens=8000, keep_calls=1, compact_above_tokens=None)
    return Memory(store, tokenizer_model="gpt-4o-mini", context=ContextConfig(results=results), tools="full")


def _fetch(memory: Memory, user: str, thread: str, *, then: list[Any] | None = None) -> dict[str, Any]:
    builder = StateGraph(MemoryState)
    script = [tool_call("fetch_page", url="colony"), "Read it.", *(then or [])]
    memory.add_to(builder, ScriptedChatModel(script), tools=[fetch_page])
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    out = graph.invoke({"messages": [HumanMessage("Fetch the colony report.")]}, _config(user, thread))
    if then:
        forget = HumanMessage("Forget the quokkamarker colony.")
        out = graph.invoke({"messages": [forget]}, _config(user, thread))
    return out


def _results(store: BaseStore) -> dict[tuple[str, ...], int]:
    namespaces = store.list_namespaces(prefix=("memories", "results"))
    counts = {ns: len(store.search(ns, limit=100)) for ns in namespaces}
    return {ns: n for ns, n in counts.items() if n}  # InMemoryStore lists a namespace it emptied


def test_forget_about_removes_the_callers_stored_tool_results_in_the_thread(any_store: BaseStore) -> None:
    memory = _results_memory(any_store)
    for user, thread in (("alice", "t1"), ("bob", "t1"), ("alice", "t2")):
        _fetch(memory, user, thread)
    assert _results(any_store) == {
        ("memories", "results", "t1", "user", "alice"): 1,
        ("memories", "results", "t1", "user", "bob"): 1,
        ("memories", "results", "t2", "user", "alice"): 1,
    }
    nothing = memory.forget_about("pelican", _config("alice", "t1"))
    assert nothing.tool_results == []

    forgotten = memory.forget_about("quokkamarker colony", _config("alice", "t1"))

    assert len(forgotten.tool_results) == 1
    assert "1 stored tool results removed" in forgotten.summary()
    assert _results(any_store) == {  # bob's in the thread, and hers in another thread, stay
        ("memories", "results", "t1", "user", "bob"): 1,
        ("memories", "results", "t2", "user", "alice"): 1,
    }
    if isinstance(any_store, CheckpointerStore):  # nor is it kept in the store's history
        (key,) = forgotten.tool_results
        assert any_store.history(("memories", "results", "t1", "user", "alice"), key) == []
    memory.close()


def test_the_forget_tool_removes_the_stored_tool_results_too() -> None:
    store = InMemoryStore(index=INDEX)
    memory = _results_memory(store)
    forget = [tool_call("forget_memories", query="quokkamarker"), "Forgotten."]
    out = _fetch(memory, "alice", "t1", then=forget)
    answer = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "forget_memories"]
    assert "1 stored tool results removed" in str(answer[-1].content)
    assert _results(store) == {}
    memory.close()
