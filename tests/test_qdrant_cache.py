"""The embedded QdrantStore's payload cache (``stores/qdrant/_cache.py``): what it answers, what it
keeps, and that it holds at most its budget of bytes however long the values are."""

from __future__ import annotations

import gc
import json
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.stores.qdrant._cache import CACHE_BYTES, Entry, PayloadCache, entry_bytes, entry_of
from langmem_plugin.testing import FakeEmbeddings
from tests.store_contract import FakeClock


def fake_index(fields: list[str]) -> Any:
    return {"dims": 64, "embed": FakeEmbeddings(64), "fields": fields}


def _cache(store: QdrantStore) -> Any:
    return store._engine.cache  # type: ignore[attr-defined]


def test_searches_and_gets_read_written_items_from_the_cache(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "s", index=fake_index(["text"])) as store:
        for i in range(20):
            store.put(("u",), f"k{i}", {"text": f"note {i} about tea", "n": i})
        cache = _cache(store)
        before = cache.misses
        hits = store.search(("u",), query="tea", limit=5)
        listed = store.search(("u",), filter={"n": {"$gte": 10}}, limit=50)
        got = store.get(("u",), "k3")
        assert len(hits) == 5
        assert len(listed) == 10
        assert got is not None
        assert cache.misses == before
        assert cache.hits >= 15


def test_values_read_from_the_cache_are_fresh_copies(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "s", index=fake_index(["text"])) as store:
        store.put(("u",), "k", {"text": "tea", "tags": ["a"]})
        first = store.get(("u",), "k")
        assert first is not None
        first.value["tags"].append("changed by the caller")
        first.value["text"] = "changed"
        again = store.get(("u",), "k")
        found = store.search(("u",), query="tea")
        assert again is not None
        assert again.value == {"text": "tea", "tags": ["a"]}
        assert found[0].value == {"text": "tea", "tags": ["a"]}


def test_a_reopened_store_reads_the_engine_once_then_the_cache(tmp_path: Path) -> None:
    index = fake_index(["text"])
    with QdrantStore(tmp_path / "s", index=index) as store:
        store.batch([PutOp(("u",), f"k{i}", {"text": f"note {i}", "n": i}) for i in range(30)])
        expected = [(i.key, i.value, i.score) for i in store.search(("u",), query="note 7", limit=10)]
    with QdrantStore(tmp_path / "s", index=index) as store:
        cache = _cache(store)
        cold = [(i.key, i.value, i.score) for i in store.search(("u",), query="note 7", limit=10)]
        misses = cache.misses
        warm = [(i.key, i.value, i.score) for i in store.search(("u",), query="note 7", limit=10)]
        assert cold == warm == expected
        assert misses >= 10
        assert cache.misses == misses


def test_searches_read_ids_only_once_the_cache_answers_most_lookups(tmp_path: Path) -> None:
    index = fake_index(["text"])
    with QdrantStore(tmp_path / "s", index=index) as store:
        store.batch([PutOp(("u",), f"k{i}", {"text": f"note {i}"}) for i in range(40)])
        cache = _cache(store)
        assert not cache.warm  # nothing looked up yet: payloads come with the ids
        first = [(i.key, i.score) for i in store.search(("u",), query="note 3", limit=5)]
        for _ in range(5):
            store.search(("u",), query="note 3", limit=5)
        assert cache.warm
        assert [(i.key, i.score) for i in store.search(("u",), query="note 3", limit=5)] == first
    with QdrantStore(tmp_path / "s", index=index) as store:
        cache = _cache(store)
        assert [(i.key, i.score) for i in store.search(("u",), query="note 3", limit=5)] == first
        assert not cache.warm  # every hit missed: the next search reads payloads in the query again
        assert len(cache) >= 5  # what it read was kept


@pytest.mark.parametrize("cache_bytes", [0, 1_500])  # 1,500: about three of these items
def test_without_or_with_a_tiny_cache_the_answers_are_the_same(tmp_path: Path, cache_bytes: int) -> None:
    index = fake_index(["text"])
    clock = FakeClock()
    answers = []
    for size in (cache_bytes, CACHE_BYTES):
        with QdrantStore(
            tmp_path / f"s{size}",
            index=index,
            ttl={"default_ttl": 10, "refresh_on_read": True},
            options={"clock": clock, "cache_bytes": size},
        ) as store:
            store.batch(
                [PutOp(("u",), f"k{i}", {"text": f"note {i}", "n": i % 3}, ttl=10) for i in range(12)]
            )
            store.delete(("u",), "k4")
            store.put(("u",), "k5", {"text": "replaced", "n": 9})
            clock.advance(seconds=300)
            store.get(("u",), "k1")  # refreshes k1's TTL to ten minutes from now
            clock.advance(seconds=400)  # the others expire, k1 does not
            answers.append(
                (
                    [(i.key, i.value) for i in store.search(("u",), query="note", limit=20)],
                    [(i.key, i.value) for i in store.search(("u",), limit=20)],
                    store.get(("u",), "k1") is not None,
                    store.get(("u",), "k2") is None,
                )
            )
            clock.advance(seconds=-700)
    assert answers[0] == answers[1]
    assert answers[0][2]
    assert answers[0][3]
    assert [k for k, _ in answers[0][0]] == ["k1"]


def _payload(value: dict[str, Any]) -> dict[str, Any]:
    return {"ns": '["u"]', "key": "k", "value": value, "created_us": 1, "updated_us": 2, "expires_us": 3}


def test_a_read_that_raced_a_write_is_not_kept() -> None:
    cache = PayloadCache(10_000)
    old = entry_of("id", _payload({"v": 1}))
    new = entry_of("id", _payload({"v": 2}))
    (missing,), generation = cache.lookup([1])
    assert missing is None
    cache.written([(1, new)])  # a write lands while the reader reads the old payload
    cache.fill(generation, [(1, old)])
    (held,), _ = cache.lookup([1])
    assert held is not None
    assert held.payload()["value"] == {"v": 2}
    cache.dropped([1])
    (gone,), generation = cache.lookup([1])
    cache.fill(generation, [(1, old)])  # no write since: kept
    (back,), _ = cache.lookup([1])
    assert gone is None
    assert back is not None
    assert back.payload()["value"] == {"v": 1}


def test_the_cache_keeps_the_most_recently_used() -> None:
    entry = entry_of("id", _payload({}))
    cache = PayloadCache(2 * entry_bytes(entry))
    cache.written([(1, entry), (2, entry)])
    cache.lookup([1])  # 1 is now the most recent
    cache.written([(3, entry)])
    found, _ = cache.lookup([1, 2, 3])
    assert [e is not None for e in found] == [True, False, True]


# ---------------------------------------------------------------------- bounded by bytes


def _fresh_payload(i: int, text: str) -> tuple[str, dict[str, Any]]:
    """A point id and payload made of new strings, as the engine's reads and the writer's points are."""
    value = {"content": f"{text} {i}", "kind": "episode", "tags": ["a", f"t{i}"], "priority": 5}
    payload = {
        "ns": '["memories", "u", "user"]',
        "key": str(uuid.uuid4()),
        "value": json.loads(json.dumps(value)),
        "created_us": 1_732_800_000_000_000 + i,
        "updated_us": 1_732_800_000_000_000 + i,
        "expires_us": 2**63 - 1,
        "ttl": None,
        "index_hash": uuid.uuid4().hex,
    }
    return str(uuid.uuid4()), payload


@pytest.mark.parametrize(
    "text",
    ["tea", "a passage of a long answer. " * 40, "ünïcödé 茶と本 " * 30],
    ids=["short", "long", "wide"],
)
def test_what_the_cache_counts_is_what_the_heap_holds(text: str) -> None:
    cache = PayloadCache(2**40)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(3_000):
            point_id, payload = _fresh_payload(i, text)
            cache.written([(i, entry_of(point_id, payload))])
        del point_id, payload
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.bytes == pytest.approx(held, rel=0.15)


def test_the_cache_never_holds_more_than_its_budget() -> None:
    budget = 40_000
    cache = PayloadCache(budget)
    counted: list[Entry] = []
    for i in range(300):  # values from a few bytes to 4 kB, in one batch and one at a time
        entry = entry_of(f"id{i}", _payload({"text": "x" * (i * 37 % 4_000)}))
        counted.append(entry)
        if i % 3:
            cache.written([(i, entry)])
        else:
            cache.fill(cache.generation, [(i, entry), (i + 1_000, entry)])
        assert cache.bytes <= budget
    held = cache._entries  # in least recently used order, not reordered by looking
    assert cache.bytes == sum(entry_bytes(e) for e in held.values())
    assert list(held)[-1] == 299  # the last written stays
    assert cache.bytes > budget - 5_000  # full: only what did not fit went
    cache.updated([299], {"value": {"text": "y" * 30_000}})  # an update that grows an entry: room made
    assert cache.bytes <= budget
    assert cache.bytes == sum(entry_bytes(e) for e in held.values())
    assert len(held[299].value_json) > 30_000
    cache.dropped(list(held))
    assert (len(cache), cache.bytes) == (0, 0)


def test_an_entry_larger_than_the_whole_budget_is_not_kept() -> None:
    small = entry_of("a", _payload({"text": "tea"}))
    cache = PayloadCache(entry_bytes(small) * 2)
    cache.written([(1, small), (2, entry_of("b", _payload({"text": "x" * 10_000})))])
    assert (len(cache), cache.bytes) == (0, 0)
    cache.written([(1, small)])
    assert (len(cache), cache.bytes) == (1, entry_bytes(small))


def test_a_store_of_long_values_keeps_to_its_cache_budget_and_answers_as_without_one(
    tmp_path: Path,
) -> None:
    budget = 100_000
    answers = []
    for size in (budget, 0):
        with QdrantStore(
            tmp_path / f"s{size}", index=fake_index(["text"]), options={"cache_bytes": size}
        ) as store:
            for start in range(0, 120, 30):  # 120 values of 3-6 kB: about 600 kB, six times the budget
                store.batch(
                    [
                        PutOp(("u",), f"k{i}", {"text": f"note {i} " + "passage words " * (200 + i * 2)})
                        for i in range(start, start + 30)
                    ]
                )
            for _ in range(3):
                found = [(i.key, i.value) for i in store.search(("u",), query="note 7 passage", limit=30)]
            got = [store.get(("u",), f"k{i}") for i in (0, 60, 119)]
            answers.append((found, [g.value if g else None for g in got]))
            cache = _cache(store)
            assert cache.bytes <= budget
            assert len(cache) < (30 if size else 1)
    assert answers[0] == answers[1]
    assert len(answers[0][0]) == 30


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10"])
def test_cache_bytes_must_be_a_count(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="cache_bytes must be a number of bytes >= 0, got"):
        QdrantStore(":memory:", options={"cache_bytes": bad})


def test_the_old_cache_items_option_names_its_replacement() -> None:
    with pytest.raises(ConfigurationError, match=r"'cache_items' was replaced\. Fix: use cache_bytes"):
        QdrantStore(":memory:", options={"cache_items": 100_000})  # type: ignore[typeddict-unknown-key]


# ---------------------------------------------------------------------- memory an index build freed


def _anonymous_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon:"))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RssAnon from /proc")
def test_trim_heap_gives_freed_memory_back_to_the_system() -> None:
    from langmem_plugin.stores.qdrant._edge import trim_heap

    if not trim_heap():
        pytest.skip("this C library has no malloc_trim")
    blocks = [bytes(4_000) for _ in range(20_000)]  # 80 MB from malloc's heap, each block touched
    held = _anonymous_kb()
    del blocks[:-1]  # freed, but below the last block: malloc keeps the pages
    freed = _anonymous_kb()
    assert trim_heap()
    trimmed = _anonymous_kb()
    assert freed - trimmed > 40_000, (held, freed, trimmed)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
@example({"n": 2**70, "m": [-(2**65), 1.5]})  # orjson refuses these: json reads them
def test_the_cache_reads_back_every_json_value_as_json_would(value: Any) -> None:
    # orjson reads what it can (most of the time), json what orjson refuses (integers past 64 bits)
    entry = entry_of(str(uuid.uuid4()), _payload(value))
    assert entry.payload()["value"] == json.loads(entry.value_json)
    assert entry.select(("value", "key"))["value"] == json.loads(entry.value_json)


def _payload(value: Any) -> dict[str, Any]:
    return {"ns": "n", "key": "k", "value": value, "created_us": 1, "updated_us": 1, "expires_us": 2}
