"""QdrantStore beyond the shared contract: engines, persistence, locking, search modes, TTL, bad input."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_plugin.core.embeddings import MiniLMEmbeddings
from langmem_plugin.errors import (
    ConfigurationError,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidValueError,
    StoreConfigMismatchError,
    StoreError,
    StoreLockedError,
)
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings
from tests.store_contract import FakeClock

REPO = Path(__file__).resolve().parents[1]


def fake_index(fields: list[str] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"dims": 64, "embed": FakeEmbeddings(64)}
    if fields is not None:
        config["fields"] = fields
    return config


def run_python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        check=False,
    )


# ---------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"path": ":memory:", "url": "http://localhost:6333"}, {"url": "http://localhost:6333", "client": 1}],
    ids=["none", "path+url", "url+client"],
)
def test_exactly_one_place_is_required(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="exactly one of"):
        QdrantStore(**kwargs)


def test_a_server_store_constructor_does_no_io() -> None:
    QdrantStore(url="http://127.0.0.1:9", options={"retries": 0}).close()  # nothing listens there


def test_an_embedded_store_opens_at_construction(tmp_path: Path) -> None:
    store = QdrantStore(tmp_path / "s")
    try:
        assert (tmp_path / "s" / "store.json").exists()
        assert store._engine.is_open
    finally:
        store.close()
    assert not store._engine.is_open


def test_an_unknown_option_is_a_configuration_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown QdrantStore option.*optimise_every") as caught:
        QdrantStore(":memory:", options={"optimise_every": 5})  # type: ignore[typeddict-unknown-key]
    assert "optimize_every" in str(caught.value)


def test_repr_says_where_the_data_lives(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "s") as embedded, QdrantStore(":memory:", collection="mine") as local:
        assert repr(embedded) == f"QdrantStore(path={str(tmp_path / 's')!r}, dims=None, mode='hybrid')"
        assert repr(local) == "QdrantStore(collection='mine', dims=None, mode='hybrid')"
        assert (embedded.optimize_seconds, local.optimize_seconds, local.optimize()) == (0.0, 0.0, False)


def test_unknown_search_mode_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="lexical"):
        QdrantStore(":memory:", search={"mode": "fuzzy"})  # type: ignore[typeddict-item]
    with pytest.raises(ConfigurationError, match="unknown search option"):
        QdrantStore(":memory:").with_search(fuzzy=True)


def test_reopening_with_other_dims_is_a_configuration_error(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "s", index=fake_index()) as store:
        store.put(("a",), "k", {"text": "x"})
    with pytest.raises(StoreConfigMismatchError, match="dims=64"):
        QdrantStore(tmp_path / "s")  # at construction, not at first use
    with QdrantStore(tmp_path / "s", index=fake_index()) as store:  # the failed open left it intact
        assert store.get(("a",), "k") is not None


def test_json_types_round_trip(tmp_path: Path) -> None:
    value = {"f": 1.0, "i": 1, "big": 2**60, "neg": -3, "t": True, "n": None, "e": {}, "l": [], "s": "ü"}
    with QdrantStore(tmp_path / "s") as store:
        store.put(("a",), "k", value)
        item = store.get(("a",), "k")
    assert item is not None
    assert item.value == value
    assert [type(item.value[k]) for k in value] == [type(v) for v in value.values()]


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize("engine", ["embedded", "memory"])
def test_a_bad_op_fails_the_whole_batch_before_anything_is_written(tmp_path: Path, engine: str) -> None:
    store = QdrantStore(tmp_path / "s") if engine == "embedded" else QdrantStore(":memory:")
    with store:
        bad_batches: list[tuple[list[Any], type[Exception]]] = [
            ([PutOp(("a",), "good", {"v": 1}), PutOp(("a",), "bad", {"v": object()})], InvalidValueError),
            ([PutOp(("a",), "good", {"v": 1}), PutOp(("a", "b.c"), "k", {"v": 1})], InvalidNamespaceError),
            ([PutOp(("a",), "good", {"v": 1}), SearchOp(("a",), {"v": {"$regex": "x"}})], InvalidFilterError),
            (
                [PutOp(("a",), "good", {"v": 1}), PutOp(("a",), "big", {"b": "x" * 2_000_000})],
                InvalidValueError,
            ),
            ([PutOp(("a",), "good", {"v": 1}, ttl=-5)], InvalidValueError),
        ]
        for ops, error in bad_batches:
            with pytest.raises(error):
                store.batch(ops)
        assert store.search(()) == []
        assert store.list_namespaces() == []
        assert store.count() == 0


def test_unknown_operator_error_names_the_operator_and_the_supported_ones() -> None:
    with QdrantStore(":memory:") as store, pytest.raises(InvalidFilterError) as info:
        store.search(("a",), filter={"n": {"$regex": "x"}})
    assert "$regex" in str(info.value)
    assert "$exists" in str(info.value)


# ---------------------------------------------------------------------- persistence and locking

WRITER = """
import sys
from datetime import UTC, datetime
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings
from tests.store_contract import FakeClock

clock = FakeClock(datetime(2025, 3, 1, tzinfo=UTC))
index = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}
with QdrantStore(sys.argv[1], index=index, options={"clock": clock}) as store:
    for i in range(50):
        store.put(("users", f"u{i % 5}"), f"k{i}", {"text": f"memory number {i} about tea", "i": i})
    clock.advance(minutes=1)
    store.put(("users", "u0"), "k0", {"text": "updated green tea", "i": 0})
    store.put(("ttl",), "short", {"text": "soon gone"}, ttl=30)
    store.delete(("users", "u1"), "k1")
print("written")
"""


def test_everything_is_there_after_reopening_in_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "store"
    done = run_python(WRITER, str(path))
    assert done.returncode == 0, done.stderr
    clock = FakeClock(datetime(2025, 3, 1, 0, 10, tzinfo=UTC))
    with QdrantStore(path, index=fake_index(["text"]), options={"clock": clock}) as store:
        assert len(store.search(("users",), limit=100)) == 49
        assert store.get(("users", "u1"), "k1") is None
        item = store.get(("users", "u0"), "k0")
        assert item is not None
        assert item.value == {"text": "updated green tea", "i": 0}
        assert item.created_at == datetime(2025, 3, 1, tzinfo=UTC)
        assert item.updated_at == datetime(2025, 3, 1, 0, 1, tzinfo=UTC)
        assert store.search(("users",), query="green tea", limit=1)[0].key == "k0"
        assert store.list_namespaces(max_depth=1) == [("ttl",), ("users",)]
        assert store.get(("ttl",), "short", refresh_ttl=False) is not None
        clock.advance(minutes=30)
        assert store.get(("ttl",), "short") is None  # its TTL survived the restart
        assert store.sweep_ttl() == 1


HOLDER = """
import sys
from langmem_plugin.stores.qdrant import QdrantStore

with QdrantStore(sys.argv[1]) as store:
    store.put(("a",), "first", {"v": 1})
    print("ready", flush=True)
    sys.stdin.readline()  # the test opens the same path meanwhile
    store.put(("a",), "second", {"v": 2})
    assert store.get(("a",), "first").value == {"v": 1}
    assert store.get(("a",), "second").value == {"v": 2}
    print("still working", flush=True)
"""


@pytest.mark.slow
def test_a_second_process_gets_our_error_and_the_first_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "store"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        second = run_python(
            """
            import sys
            from langmem_plugin.errors import StoreLockedError
            from langmem_plugin.stores.qdrant import QdrantStore
            try:
                QdrantStore(sys.argv[1])  # the constructor opens: it fails there
            except StoreLockedError as exc:
                print("locked:", exc)
            """,
            str(path),
        )
        assert "locked:" in second.stdout, second.stderr
        assert "another process (holder: pid" in second.stdout
        assert "held by this process" not in second.stdout
        with pytest.raises(StoreLockedError, match="open elsewhere, in another process"):  # here too
            QdrantStore(path)
        out, err = holder.communicate("go\n", timeout=60)
        assert holder.returncode == 0, err
        assert "still working" in out
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with QdrantStore(path) as store:  # released at exit: opens, with both writes
        assert {i.key for i in store.search(("a",))} == {"first", "second"}


def test_a_second_store_object_in_one_process_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    first = QdrantStore(tmp_path / "s")
    first.put(("a",), "k", {"v": 1})
    with pytest.raises(StoreLockedError, match="held by this process") as caught:
        QdrantStore(tmp_path / "s")  # refused by the constructor, before any get or put
    assert "close the other store" in str(caught.value)
    assert "reuse that QdrantStore" in str(caught.value)
    with pytest.raises(StoreLockedError, match="held by this process"):  # by any spelling of the path
        QdrantStore(tmp_path / "s" / ".." / "s")
    first.put(("a",), "j", {"v": 2})  # the first is unharmed
    first.close()
    with QdrantStore(tmp_path / "s") as second:
        assert len(second.search(("a",))) == 2
    with QdrantStore(tmp_path / "s") as third:  # closed and reopened, again and again
        assert len(third.search(("a",))) == 2


def test_a_view_shares_the_lock_and_a_closed_store_reopens_on_use(tmp_path: Path) -> None:
    store = QdrantStore(tmp_path / "s")
    view = store.with_search(mode="lexical")
    view.put(("a",), "k", {"v": 1})
    view.close()  # a view does not close its store
    assert store.get(("a",), "k") is not None
    store.close()
    assert store.get(("a",), "k") is not None  # opened again on use
    with pytest.raises(StoreLockedError, match="held by this process"):
        QdrantStore(tmp_path / "s")
    store.close()


async def test_async_context_manager_and_close_twice(tmp_path: Path) -> None:
    async with QdrantStore(tmp_path / "s") as store:
        await store.aput(("a",), "k", {"v": 1})
        assert (await store.aget(("a",), "k")) is not None
    store.close()
    reopened = QdrantStore(tmp_path / "s")
    assert (await reopened.aget(("a",), "k")) is not None
    await reopened.aclose()


# ---------------------------------------------------------------------- search modes


@pytest.fixture(scope="module")
def semantic_docs() -> dict[str, str]:
    return {
        "cat": "My cat Luna sleeps on the windowsill all afternoon",
        "hike": "We went hiking in the Alps last summer",
        "code": "Error XJ-4471 appears when the build cache is stale",
        "tea": "I drink green tea every morning before work",
        "tax": "The quarterly tax filing deadline is in April",
    }


@pytest.fixture(params=["embedded", "memory"])
def minilm_store(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: MiniLMEmbeddings, semantic_docs: dict[str, str]
) -> Any:
    index = {"dims": 384, "embed": minilm, "fields": ["text"]}
    store = (
        QdrantStore(tmp_path / "s", index=index)  # type: ignore[arg-type]
        if request.param == "embedded"
        else QdrantStore(":memory:", index=index)  # type: ignore[arg-type]
    )
    store.batch([PutOp(("docs",), key, {"text": text}) for key, text in semantic_docs.items()])
    yield store
    store.close()


def test_dense_finds_paraphrases_and_lexical_finds_rare_tokens(minilm_store: QdrantStore) -> None:
    dense = minilm_store.with_search(mode="dense")
    lexical = minilm_store.with_search(mode="lexical")
    assert dense.search(("docs",), query="my kitten naps by the window", limit=1)[0].key == "cat"
    assert lexical.search(("docs",), query="my kitten naps by the window") == []  # no shared word
    assert lexical.search(("docs",), query="XJ-4471", limit=1)[0].key == "code"
    hybrid = minilm_store.search(("docs",), query="XJ-4471 build failure", limit=5)
    assert hybrid[0].key == "code"
    assert hybrid[0].score is not None
    assert 0.0 <= hybrid[0].score <= 2.0  # a DBSF score: two normalised halves summed
    ranked = minilm_store.with_search(fusion="rrf").search(("docs",), query="XJ-4471 build failure", limit=5)
    assert ranked[0].key == "code"
    assert ranked[0].score is not None
    assert ranked[0].score < 0.1  # a fused RRF score, not a cosine
    assert minilm_store.search(("docs",), query="my kitten naps by the window", limit=1)[0].key == "cat"


def test_score_threshold_drops_weak_matches(minilm_store: QdrantStore) -> None:
    loose = minilm_store.with_search(mode="dense")
    strict = minilm_store.with_search(mode="dense", score_threshold=0.5)
    everything = loose.search(("docs",), query="green tea in the morning", limit=10)
    kept = strict.search(("docs",), query="green tea in the morning", limit=10)
    assert len(everything) == 5
    assert [r.key for r in kept] == ["tea"]
    assert all(r.score is not None and r.score >= 0.5 for r in kept)


@pytest.mark.parametrize("engine", ["embedded", "memory"])
def test_lexical_search_without_an_index(tmp_path: Path, engine: str, semantic_docs: dict[str, str]) -> None:
    store = QdrantStore(tmp_path / "s") if engine == "embedded" else QdrantStore(":memory:")
    with store:
        for key, text in semantic_docs.items():
            store.put(("docs",), key, {"text": text, "kind": "note"})
        store.put(("docs",), "silent", {"text": "green tea"}, index=False)
        results = store.search(("docs",), query="the tea deadline", limit=10)
        assert {r.key for r in results[:2]} == {"tea", "tax"}
        assert all(r.score is not None for r in results[:2])
        assert results[-1].key == "silent"
        assert results[-1].score is None  # not indexed: after the scored ones, unscored
        # JSON keys are not words: "kind" and "text" match nothing
        assert [r.key for r in store.search(("docs",), query="kind text", limit=10)] == ["silent"]


# ---------------------------------------------------------------------- TTL


def test_the_sweeper_thread_deletes_expired_items(tmp_path: Path) -> None:
    clock = FakeClock()
    ttl = {"default_ttl": 1, "sweep_interval_minutes": 0.002}  # every 0.12 s
    with QdrantStore(tmp_path / "s", ttl=ttl, options={"clock": clock}) as store:  # type: ignore[arg-type]
        store.put(("t",), "a", {"v": 1})
        store.put(("t",), "b", {"v": 2}, ttl=None)
        clock.advance(minutes=2)
        deadline = time.monotonic() + 10
        while store.count() > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.count() == 1
        store.stop_ttl_sweeper()
        store.put(("t",), "c", {"v": 3})
        clock.advance(minutes=2)
        time.sleep(0.3)
        assert store.count() == 2  # stopped: nothing swept, but expired items are still hidden
        assert store.get(("t",), "c") is None
        store.start_ttl_sweeper()
        deadline = time.monotonic() + 10
        while store.count() > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.count() == 1


def test_start_sweeper_without_interval_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="sweep_interval_minutes"):
        QdrantStore(":memory:").start_ttl_sweeper()


def test_put_ttl_and_read_refresh_use_the_items_own_ttl(tmp_path: Path) -> None:
    clock = FakeClock()
    with QdrantStore(tmp_path / "s", ttl={"default_ttl": 60}, options={"clock": clock}) as store:
        store.put(("t",), "short", {"v": 1}, ttl=5)
        store.put(("t",), "long", {"v": 2})
        clock.advance(minutes=4)
        assert len(store.search(("t",))) == 2  # refreshes both, each by its own TTL
        clock.advance(minutes=8)
        assert store.get(("t",), "short") is None
        assert store.get(("t",), "long") is not None
        assert store.batch([GetOp(("t",), "long", refresh_ttl=False)])[0] is not None


# ---------------------------------------------------------------------- concurrency


def test_threads_and_tasks_mixing_reads_and_writes(tmp_path: Path) -> None:
    import threading

    with QdrantStore(tmp_path / "s", index=fake_index()) as store:
        errors: list[BaseException] = []

        def worker(w: int) -> None:
            try:
                for i in range(30):
                    store.put(("c", str(w)), f"k{i}", {"text": f"worker {w} item {i}"})
                    store.search(("c",), query=f"worker {w}", limit=3)
                    store.list_namespaces(prefix=("c",))
            except BaseException as exc:  # collected for the assertion below
                errors.append(exc)

        async def tasks() -> None:
            async def one(w: int) -> None:
                for i in range(30):
                    await store.aput(("c", f"a{w}"), f"k{i}", {"text": f"task {w} item {i}"})
                    await store.asearch(("c",), query=f"task {w}", limit=3)

            await asyncio.gather(*(one(w) for w in range(4)))

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        asyncio.run(tasks())
        for t in threads:
            t.join()
        assert errors == []
        assert len(store.search(("c",), limit=1000)) == 240
        assert len(store.list_namespaces(prefix=("c",))) == 8


def test_timestamps_are_exact_microseconds(tmp_path: Path) -> None:
    moment = datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=UTC)
    with QdrantStore(tmp_path / "s", options={"clock": lambda: moment}) as store:
        store.put(("a",), "k", {"v": 1})
        item = store.get(("a",), "k")
    assert item is not None
    assert item.created_at == moment
    assert item.updated_at - moment == timedelta(0)


def test_store_json_records_what_decides_what_is_stored(tmp_path: Path) -> None:
    index = {**fake_index(["text", "tags[*]"]), "lexical_fields": ["text"]}
    with QdrantStore(tmp_path / "s", index=index) as store:  # type: ignore[arg-type]
        store.put(("a",), "k", {"text": "x"})
    meta = json.loads((tmp_path / "s" / "store.json").read_text())
    assert meta == {
        "format": 2,
        "dims": 64,
        "fields": ["text", "tags[*]"],
        "lexical_fields": ["text"],
        "embedder": "testing:FakeEmbeddings(hashes_per_word=2)",  # tests/test_embedder_identity.py
        "pending": 1,
    }


@pytest.mark.parametrize(
    ("reopen", "named"),
    [
        ({"fields": ["body"]}, "fields=['text', 'tags[*]'].*fields=['body']"),
        ({"fields": None}, "fields=['text', 'tags[*]'].*fields=None"),
        ({"lexical_fields": ["tags[*]"]}, "lexical_fields=['text'].*lexical_fields=['tags[*]']"),
        ({"lexical_fields": None}, "lexical_fields=['text'].*lexical_fields=None"),
    ],
    ids=["other-fields", "no-fields", "other-lexical", "no-lexical"],
)
def test_reopening_with_another_index_config_names_both_values_and_the_fix(
    tmp_path: Path, reopen: dict[str, Any], named: str
) -> None:
    index = {**fake_index(["text", "tags[*]"]), "lexical_fields": ["text"]}
    with QdrantStore(tmp_path / "s", index=index) as store:  # type: ignore[arg-type]
        store.put(("a",), "k", {"text": "x", "tags": ["y"]})
    other = {key: value for key, value in {**index, **reopen}.items() if value is not None}
    with pytest.raises(StoreConfigMismatchError, match=re.escape(named).replace(r"\.\*", ".*")) as caught:
        QdrantStore(tmp_path / "s", index=other)  # type: ignore[arg-type]  # the constructor refuses
    assert "export" in str(caught.value)
    assert "open it with index" in str(caught.value)
    assert isinstance(caught.value, ConfigurationError)
    with QdrantStore(tmp_path / "s", index=index) as store:  # type: ignore[arg-type]  # still intact
        assert store.get(("a",), "k") is not None


def test_a_format_1_store_is_refused_with_the_way_to_move_it(tmp_path: Path) -> None:
    """Stores written before the split dense layout (one MaxSim multivector per point) are not read."""
    import qdrant_edge as qe

    root = tmp_path / "s"
    root.mkdir()
    multivector = qe.EdgeVectorParams(
        size=64,
        distance=qe.Distance.Cosine,
        multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
    )
    config = qe.EdgeConfig(
        vectors={"dense": multivector},
        sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
    )
    shard = qe.EdgeShard.create(str(root / "shard"), config)
    shard.flush()
    shard.close()
    (root / "store.json").write_text(json.dumps({"format": 1, "dims": 64}))
    with pytest.raises(StoreConfigMismatchError, match="format 1") as caught:
        QdrantStore(root, index=fake_index(["a", "b"]))
    assert "export_jsonl" in str(caught.value)
    assert "import_jsonl" in str(caught.value)
    assert json.loads((root / "store.json").read_text()) == {"format": 1, "dims": 64}  # left as it was
    with pytest.raises(StoreConfigMismatchError, match="format 1"):  # and the lock was released
        QdrantStore(root, index=fake_index(["a", "b"]))


def test_a_format_1_server_collection_is_refused() -> None:
    """Collections created before the split layout (one MaxSim multivector ``dense``) are not read."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    multivector = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
    client.create_collection(
        "langmem",
        vectors_config={
            "dense": models.VectorParams(
                size=64, distance=models.Distance.COSINE, multivector_config=multivector
            )
        },
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    store = QdrantStore(client=client, index=fake_index(["a", "b"]))  # a server store opens on first use
    with pytest.raises(StoreConfigMismatchError, match="format-1 layout") as caught:
        store.put(("d",), "one", {"a": "green tea"})
    assert "another collection" in str(caught.value)
    store.close()
    client.close()


def test_a_new_server_collection_has_the_split_layout() -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    with QdrantStore(client=client, index=fake_index(["a", "b"])) as store:
        store.put(("d",), "one", {"a": "green tea"})
        store.put(("d",), "two", {"a": "tax forms", "b": "green tea leaves"})
    vectors = client.get_collection("langmem").config.params.vectors
    assert isinstance(vectors, dict)
    assert vectors["dense"].multivector_config is None
    assert vectors["dense_multi"].multivector_config is not None
    points, _ = client.scroll("langmem", with_vectors=True)
    layout = {p.payload["key"]: sorted(p.vector) for p in points if p.payload and isinstance(p.vector, dict)}
    assert layout == {"one": ["bm25", "dense"], "two": ["bm25", "dense_multi"]}


@pytest.mark.parametrize("engine", ["embedded", "memory"])
@pytest.mark.parametrize("multi_first", [False, True], ids=["single-then-multi", "multi-then-single"])
def test_single_and_multi_text_items_are_scored_by_their_best_text(
    tmp_path: Path, multi_first: bool, engine: str
) -> None:
    from qdrant_client import QdrantClient

    embed = FakeEmbeddings(64)
    index = {"dims": 64, "embed": embed, "fields": ["a", "b"]}
    items = {"single": {"a": "green tea"}, "multi": {"a": "tax forms", "b": "green tea leaves"}}
    order = ["multi", "single"] if multi_first else ["single", "multi"]
    client = QdrantClient(location=":memory:")

    def open_store() -> QdrantStore:
        where: dict[str, Any] = {"path": tmp_path / "s"} if engine == "embedded" else {"client": client}
        return QdrantStore(**where, index=index, search={"mode": "dense"})  # type: ignore[arg-type]

    with open_store() as store:
        store.put(("d",), order[0], items[order[0]])
        if multi_first:  # a reopened store finds its multi-text items again
            store.close()
            store = open_store()
        store.put(("d",), order[1], items[order[1]])
        query = embed.embed_query("green tea leaves")

        def cosine(text: str) -> float:
            v = embed.embed_documents([text])[0]
            return sum(x * y for x, y in zip(query, v, strict=True)) / (
                sum(x * x for x in query) ** 0.5 * sum(y * y for y in v) ** 0.5
            )

        got = {i.key: i.score for i in store.search(("d",), query="green tea leaves")}
        assert got["single"] == pytest.approx(cosine("green tea"), abs=1e-4)
        assert got["multi"] == pytest.approx(max(cosine("tax forms"), cosine("green tea leaves")), abs=1e-4)
        hybrid = store.with_search(mode="hybrid")
        assert {i.key for i in hybrid.search(("d",), query="green tea leaves")} == {"single", "multi"}
        strict = store.with_search(score_threshold=got["multi"] - 1e-3)
        assert [i.key for i in strict.search(("d",), query="green tea leaves")] == ["multi"]
        store.close()


def test_indexes_are_built_every_optimize_every_points(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "s", index=fake_index(), options={"optimize_every": 50}) as store:
        store.batch([PutOp(("a",), f"k{i}", {"text": f"item {i}"}) for i in range(40)])
        assert store.optimize_seconds == 0.0
        assert json.loads((tmp_path / "s" / "store.json").read_text())["pending"] == 0  # written at open
        store.batch([PutOp(("a",), f"k{i}", {"text": f"item {i}"}) for i in range(40, 60)])
        built = store.optimize_seconds
        assert built > 0.0
        assert json.loads((tmp_path / "s" / "store.json").read_text())["pending"] == 0
        store.put(("a",), "late", {"text": "item late"})
        assert store.optimize_seconds == built
        assert len(store.search(("a",), query="item 7", limit=100)) == 61
    assert json.loads((tmp_path / "s" / "store.json").read_text())["pending"] == 1
    with QdrantStore(tmp_path / "s", index=fake_index(), options={"optimize_every": None}) as store:
        store.batch([PutOp(("a",), f"n{i}", {"text": f"item {i}"}) for i in range(60)])
        assert store.optimize_seconds == 0.0
        store.optimize()
        assert store.optimize_seconds > 0.0


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "10"])
def test_optimize_every_must_be_a_positive_count(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="optimize_every"):
        QdrantStore(":memory:", options={"optimize_every": bad})


# ---------------------------------------------------------------------- filter indexes


@pytest.mark.parametrize("engine", ["embedded", "memory"])
def test_filter_indexes_are_created_and_filters_agree(tmp_path: Path, engine: str) -> None:
    indexes: dict[str, Any] = {"kind": "keyword", "priority": "integer", "meta.score": "float"}
    where: dict[str, Any] = {"path": tmp_path / "s"} if engine == "embedded" else {"path": ":memory:"}
    with QdrantStore(**where, options={"filter_indexes": indexes}) as store:
        for i in range(40):
            value = {"kind": ["fact", "episode"][i % 2], "priority": i % 7, "meta": {"score": i / 10}}
            store.put(("f",), f"k{i}", value)
        store.put(("f",), "odd", {"kind": ["fact"], "priority": "3", "meta": {"score": "high"}})
        facts = {
            i.key for i in store.search(("f",), filter={"kind": "fact", "priority": {"$gte": 5}}, limit=100)
        }
        assert facts == {f"k{i}" for i in range(0, 40, 2) if i % 7 >= 5}
        scored = {i.key for i in store.search(("f",), filter={"meta.score": {"$gt": 3.5}}, limit=100)}
        assert scored == {f"k{i}" for i in range(36, 40)}
        assert store.search(("f",), filter={"kind": ["fact"]})[0].key == "odd"  # a list equals only a list
        if engine == "embedded":
            schema = store._engine._require().info().payload_schema  # type: ignore[attr-defined]
            assert {"value.kind", "value.priority", "value.meta.score"} <= set(schema)
    if engine == "embedded":  # reopening with the same (or more) indexes is fine
        more = {**indexes, "extra": "keyword"}
        with QdrantStore(tmp_path / "s", options={"filter_indexes": more}) as store:
            assert len(store.search(("f",), filter={"priority": 3}, limit=100)) == 6


@pytest.mark.parametrize(
    "spec", [{"a b": "keyword"}, {"kind": "text"}, {"": "keyword"}], ids=["space", "type", "empty"]
)
def test_bad_filter_index_specs_are_configuration_errors(spec: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="filter index"):
        QdrantStore(":memory:", options={"filter_indexes": spec})


# ---------------------------------------------------------------------- remote engine


def test_an_unreachable_server_is_a_store_error_at_first_use_not_at_construction() -> None:
    store = QdrantStore(url="http://127.0.0.1:9", options={"retries": 0})  # the discard port: no one there
    with pytest.raises(StoreError, match="could not set up the Qdrant collection"):
        store.get(("a",), "k")
    store.close()


def test_a_given_client_is_used_and_left_open() -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    with QdrantStore(client=client, collection="mine") as store:
        store.put(("a",), "k", {"v": 1})
    assert client.collection_exists("mine")
    assert client.count("mine").count == 1  # the store did not close the client
    with QdrantStore(client=client, collection="mine") as again:
        assert again.get(("a",), "k") is not None
    client.close()


def test_calls_during_the_full_optimize_wait_for_it_and_succeed(tmp_path: Path) -> None:
    import threading

    with QdrantStore(tmp_path / "s", index=fake_index(), options={"optimize_every": None}) as store:
        store.batch([PutOp(("a",), f"k{i}", {"text": f"item {i}"}) for i in range(300)])
        errors: list[BaseException] = []
        counts: list[int] = []
        stop = threading.Event()

        def reader() -> None:
            while not stop.is_set():
                try:
                    counts.append(len(store.search(("a",), query="item", limit=5)))
                except BaseException as exc:  # collected for the assertion below
                    errors.append(exc)
                    return

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            for _ in range(3):
                store.optimize()
        finally:
            stop.set()
            thread.join()
        assert errors == []
        assert counts
        assert set(counts) == {5}
        store.put(("a",), "after", {"text": "item after"})
        assert store.get(("a",), "after") is not None


def test_scores_stay_exact_cosines_once_the_index_is_built_and_quantized(tmp_path: Path) -> None:
    embed = FakeEmbeddings(64)
    texts = [f"note {i} about topic {i % 37}" for i in range(1200)]
    with QdrantStore(tmp_path / "s", index=fake_index(["text"]), search={"mode": "dense"}) as store:
        store.batch([PutOp(("n",), f"k{i}", {"text": t}) for i, t in enumerate(texts)])
        store.optimize()  # HNSW over int8-quantized vectors: scores must still be exact
        info = store._engine._require().info()  # type: ignore[attr-defined]
        assert info.indexed_vectors_count >= 1200
        query = embed.embed_query("note about topic 5")
        qn = sum(x * x for x in query) ** 0.5
        for item in store.search(("n",), query="note about topic 5", limit=10):
            v = embed.embed_documents([item.value["text"]])[0]
            cosine = sum(x * y for x, y in zip(query, v, strict=True)) / (qn * sum(y * y for y in v) ** 0.5)
            assert item.score == pytest.approx(cosine, abs=1e-5)


def test_a_waiting_optimize_is_not_starved_by_new_engine_calls() -> None:
    """Writer preference: once the optimize waits, a new call queues behind it."""
    import threading

    from langmem_plugin.stores.qdrant._lock import ReadWriteLock

    lock = ReadWriteLock()
    order: list[str] = []
    first_reading, writer_waiting = threading.Event(), threading.Event()

    def first_reader() -> None:
        with lock.read():
            first_reading.set()
            assert writer_waiting.wait(5)
            time.sleep(0.05)  # the second reader arrives while the writer waits
            order.append("reader 1")

    def writer() -> None:
        assert first_reading.wait(5)
        writer_waiting.set()
        with lock.write():
            order.append("writer")

    def second_reader() -> None:
        deadline = time.monotonic() + 5
        while not lock._writers_waiting and time.monotonic() < deadline:  # the writer is queued
            time.sleep(0.001)
        with lock.read():
            order.append("reader 2")

    threads = [threading.Thread(target=f) for f in (first_reader, writer, second_reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert order == ["reader 1", "writer", "reader 2"]
