"""The store contract (docs/store-contract.md) as one test class every store runs.

A test module subclasses :class:`StoreContract` and provides two fixtures:

- ``make_store``: a callable ``make_store(*, index=None, ttl=None, clock=None) -> BaseStore``
  (``clock`` is a zero-argument callable returning an aware UTC datetime; a store
  that cannot take one must skip the clock-driven tests by returning
  ``pytest.skip``). The fixture closes what it made at teardown.
- ``is_reference``: True only for LangGraph's InMemoryStore, the reference; the
  tests of the behaviour where we deliberately differ from it (created_at kept
  on update, no phantom namespaces, ordering without a query, strict filters,
  value checks, TTL) are skipped for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langmem_plugin.testing import FakeEmbeddings


class MakeStore(Protocol):
    def __call__(
        self,
        *,
        index: dict[str, Any] | None = None,
        ttl: dict[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> BaseStore: ...


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2025, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float = 0.0, seconds: float = 0.0) -> None:
        self.now += timedelta(minutes=minutes, seconds=seconds)


def fake_index(fields: list[str] | None = None) -> dict[str, Any]:
    """An IndexConfig over the deterministic lexical fake embedder."""
    config: dict[str, Any] = {"dims": 256, "embed": FakeEmbeddings(dims=256)}
    if fields is not None:
        config["fields"] = fields
    return config


class StoreContract:
    """Every store of ours passes these; LangGraph's InMemoryStore passes all but the marked ones."""

    @pytest.fixture
    def store(self, make_store: MakeStore) -> BaseStore:
        return make_store()

    @pytest.fixture
    def ours(self, is_reference: bool) -> None:
        if is_reference:
            pytest.skip("an intended difference from LangGraph's InMemoryStore (docs/store-contract.md)")

    # ------------------------------------------------------------------ items

    def test_put_get_delete(self, store: BaseStore) -> None:
        store.put(("users", "u1"), "k1", {"text": "hello", "n": 1})
        item = store.get(("users", "u1"), "k1")
        assert item is not None
        assert item.value == {"text": "hello", "n": 1}
        assert (item.namespace, item.key) == (("users", "u1"), "k1")
        assert item.created_at.tzinfo is not None
        assert item.updated_at.tzinfo is not None
        assert item.created_at.utcoffset() == timedelta(0)
        assert store.get(("users", "u1"), "missing") is None
        assert store.get(("users", "other"), "k1") is None
        store.delete(("users", "u1"), "k1")
        assert store.get(("users", "u1"), "k1") is None
        store.delete(("users", "u1"), "never-existed")

    def test_update_replaces_value(self, store: BaseStore) -> None:
        store.put(("a",), "k", {"v": 1, "old": True})
        store.put(("a",), "k", {"v": 2})
        item = store.get(("a",), "k")
        assert item is not None
        assert item.value == {"v": 2}

    @pytest.mark.usefixtures("ours")
    def test_update_keeps_created_at_and_moves_updated_at(self, make_store: MakeStore) -> None:
        clock = FakeClock()
        store = make_store(clock=clock)
        store.put(("a",), "k", {"v": 1})
        first = store.get(("a",), "k")
        clock.advance(minutes=5)
        store.put(("a",), "k", {"v": 2})
        second = store.get(("a",), "k")
        assert first is not None
        assert second is not None
        assert second.created_at == first.created_at
        assert second.updated_at == first.updated_at + timedelta(minutes=5)

    def test_non_ascii_everywhere(self, store: BaseStore) -> None:
        ns = ("usuários", "ユーザー", "😀")
        value = {"texte": "Ça va? 你好 — naïve café", "emoji": "🎉", "nested": {"ключ": ["значение", 1.5]}}
        store.put(ns, "clé-🔑", value)
        item = store.get(ns, "clé-🔑")
        assert item is not None
        assert item.value == value
        assert ns in store.list_namespaces()

    def test_large_value_round_trips(self, store: BaseStore) -> None:
        value = {"blob": "x" * 300_000, "items": list(range(5_000)), "nested": {"deep": ["é" * 1000] * 20}}
        store.put(("big",), "k", value)
        item = store.get(("big",), "k")
        assert item is not None
        assert item.value == value

    @pytest.mark.parametrize(
        "namespace",
        [(), ("",), ("a.b",), ("ok", ""), ("langgraph", "x"), ("ok", 3)],
        ids=["empty", "empty-label", "dot", "empty-inner", "langgraph-root", "non-string"],
    )
    def test_invalid_namespaces_are_rejected_and_nothing_is_written(
        self, store: BaseStore, namespace: tuple[Any, ...]
    ) -> None:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "k", {"v": 1})
        assert store.list_namespaces() == []

    @pytest.mark.usefixtures("ours")
    @pytest.mark.parametrize(
        "value",
        [
            "a string",
            ["a", "list"],
            42,
            None.__class__,
            {"when": datetime(2024, 1, 1)},
            {"n": float("nan")},
            {1: "x"},
            {"n": 2**64},
            {"deep": [{"n": -(2**63) - 1}]},
        ],
        ids=["str", "list", "int", "type", "datetime", "nan", "int-key", "past-64-bits", "below-64-bits"],
    )
    def test_values_that_are_not_json_objects_are_rejected(self, store: BaseStore, value: Any) -> None:
        with pytest.raises(ValueError, match="value"):
            store.put(("a",), "k", value)
        assert store.get(("a",), "k") is None
        assert store.list_namespaces() == []

    @pytest.mark.usefixtures("ours")
    def test_integers_of_64_bits_come_back_as_the_same_integers(self, store: BaseStore) -> None:
        # Qdrant keeps i64 and u64 numbers as integers and turns larger ones into floats: the
        # boundary refuses those (above), so what is kept is what was written
        value = {"top": 2**64 - 1, "bottom": -(2**63), "list": [2**63, -1, 0]}
        store.put(("a",), "k", value)
        got = store.get(("a",), "k")
        assert got is not None
        assert got.value == value
        assert all(isinstance(n, int) for n in [got.value["top"], got.value["bottom"], *got.value["list"]])

    @pytest.mark.usefixtures("ours")
    def test_oversized_value_is_rejected(self, store: BaseStore) -> None:
        with pytest.raises(ValueError, match="limit"):
            store.put(("a",), "k", {"blob": "x" * (2 * 1024 * 1024)})
        assert store.get(("a",), "k") is None

    # ------------------------------------------------------------------ namespaces

    def test_list_namespaces_prefix_suffix_wildcards_depth_pagination(self, store: BaseStore) -> None:
        namespaces = [
            ("u", "x"),
            ("u", "x", "docs"),
            ("u", "y", "docs"),
            ("users", "x"),
            ("v", "x", "docs"),
            ("v", "z"),
        ]
        for ns in namespaces:
            store.put(ns, "k", {"v": 1})
        assert store.list_namespaces() == sorted(namespaces)
        assert store.list_namespaces(prefix=("u",)) == [("u", "x"), ("u", "x", "docs"), ("u", "y", "docs")]
        assert store.list_namespaces(suffix=("docs",)) == [
            ("u", "x", "docs"),
            ("u", "y", "docs"),
            ("v", "x", "docs"),
        ]
        assert store.list_namespaces(prefix=("*", "x")) == [
            ("u", "x"),
            ("u", "x", "docs"),
            ("users", "x"),
            ("v", "x", "docs"),
        ]
        assert store.list_namespaces(prefix=("u",), suffix=("docs",)) == [
            ("u", "x", "docs"),
            ("u", "y", "docs"),
        ]
        assert store.list_namespaces(suffix=("*", "docs")) == [
            ("u", "x", "docs"),
            ("u", "y", "docs"),
            ("v", "x", "docs"),
        ]
        assert store.list_namespaces(max_depth=1) == [("u",), ("users",), ("v",)]
        assert store.list_namespaces(prefix=("u",), max_depth=2) == [("u", "x"), ("u", "y")]
        assert store.list_namespaces(limit=2) == sorted(namespaces)[:2]
        assert store.list_namespaces(limit=2, offset=2) == sorted(namespaces)[2:4]
        assert store.list_namespaces(prefix=("nothing",)) == []

    @pytest.mark.usefixtures("ours")
    def test_no_phantom_namespaces(self, store: BaseStore) -> None:
        assert store.get(("ghost",), "k") is None
        store.search(("ghost2",))
        store.delete(("ghost3",), "k")
        assert store.list_namespaces() == []
        store.put(("real",), "k", {"v": 1})
        store.delete(("real",), "k")
        assert store.list_namespaces() == []

    # ------------------------------------------------------------------ search

    def test_search_prefix_matches_whole_labels(self, store: BaseStore) -> None:
        store.put(("u", "1"), "a", {"v": 1})
        store.put(("users", "1"), "b", {"v": 2})
        store.put(("u",), "c", {"v": 3})
        assert {i.key for i in store.search(("u",))} == {"a", "c"}
        assert {i.key for i in store.search(("u", "1"))} == {"a"}
        assert {i.key for i in store.search(())} == {"a", "b", "c"}

    @pytest.mark.usefixtures("ours")
    def test_search_without_query_newest_first_then_namespace_then_key(self, make_store: MakeStore) -> None:
        clock = FakeClock()
        store = make_store(clock=clock)
        for ns, key in [(("b",), "2"), (("b",), "1"), (("a",), "9"), (("a", "z"), "0")]:
            store.put(ns, key, {"v": key})
        assert [(i.namespace, i.key) for i in store.search(())] == [
            (("a",), "9"),
            (("a", "z"), "0"),
            (("b",), "1"),
            (("b",), "2"),
        ]
        clock.advance(seconds=1)
        store.put(("b",), "2", {"v": "newer"})
        assert next(i.key for i in store.search(())) == "2"
        assert all(i.score is None for i in store.search(()))

    def test_search_with_query_ranks_by_score(self, make_store: MakeStore) -> None:
        store = make_store(index=fake_index(["text"]))
        store.put(("docs",), "tea", {"text": "green tea is my favourite drink"})
        store.put(("docs",), "tax", {"text": "quarterly tax filing deadline"})
        store.put(("docs",), "hike", {"text": "hiking in the alps with my sister"})
        results = store.search(("docs",), query="favourite green tea drink")
        assert results[0].key == "tea"
        scores = [r.score for r in results if r.score is not None]
        assert scores == sorted(scores, reverse=True)
        assert results[0].score is not None

    @pytest.mark.parametrize("with_query", [False, True])
    def test_pagination_is_stable(self, make_store: MakeStore, with_query: bool) -> None:
        store = make_store(index=fake_index(["text"]))
        for i in range(23):
            store.put(("p", str(i % 3)), f"k{i:02d}", {"text": f"memory {i} about tea", "i": i})
        query = "tea memory" if with_query else None
        whole = [(r.namespace, r.key) for r in store.search(("p",), query=query, limit=100)]
        assert len(whole) == 23
        pages: list[tuple[tuple[str, ...], str]] = []
        for offset in range(0, 23, 5):
            pages += [(r.namespace, r.key) for r in store.search(("p",), query=query, limit=5, offset=offset)]
        assert pages == whole
        assert len(set(pages)) == 23

    def test_limit_and_offset(self, store: BaseStore) -> None:
        for i in range(7):
            store.put(("l",), f"k{i}", {"i": i})
        assert len(store.search(("l",), limit=3)) == 3
        assert len(store.search(("l",), limit=3, offset=6)) == 1
        assert store.search(("l",), limit=3, offset=10) == []

    def test_filters_equality_nested_lists_and_subsets(self, store: BaseStore) -> None:
        store.put(
            ("f",), "a", {"kind": "fact", "tags": ["x", "y"], "meta": {"lang": "en", "src": "chat"}, "n": 3}
        )
        store.put(("f",), "b", {"kind": "episode", "tags": ["x"], "meta": {"lang": "fr"}, "n": 10})

        def keys(filter: dict[str, Any]) -> set[str]:
            return {i.key for i in store.search(("f",), filter=filter)}

        assert keys({"kind": "fact"}) == {"a"}
        assert keys({"tags": ["x", "y"]}) == {"a"}
        assert keys({"tags": ["x"]}) == {"b"}
        assert keys({"kind": "fact", "n": 3}) == {"a"}
        assert keys({"kind": "fact", "n": 10}) == set()
        assert keys({"n": {"$gt": 3}}) == {"b"}
        assert keys({"n": {"$gte": 3, "$lt": 10}}) == {"a"}
        assert keys({"n": {"$ne": 3}}) == {"b"}
        assert keys({"kind": {"$eq": "episode"}}) == {"b"}

    @pytest.mark.usefixtures("ours")
    def test_filters_on_dot_paths_and_subsets(self, store: BaseStore) -> None:
        store.put(("f",), "a", {"meta": {"lang": "en", "src": "chat", "score": 0.5}})
        store.put(("f",), "b", {"meta": {"lang": "fr", "score": 0.9}})

        def keys(filter: dict[str, Any]) -> set[str]:
            return {i.key for i in store.search(("f",), filter=filter)}

        assert keys({"meta.lang": "fr"}) == {"b"}
        assert keys({"meta": {"lang": "en"}}) == {"a"}
        assert keys({"meta": {"lang": "en", "src": "chat"}}) == {"a"}
        assert keys({"meta": {"lang": "en", "src": "mail"}}) == set()
        assert keys({"meta.score": {"$gt": 0.6}}) == {"b"}
        assert keys({"meta.src": {"$exists": False}}) == {"b"}

    @pytest.mark.usefixtures("ours")
    def test_filters_on_missing_keys_and_mixed_types(self, store: BaseStore) -> None:
        store.put(("f",), "num", {"n": 5, "s": "b"})
        store.put(("f",), "str", {"n": "5", "s": 7})
        store.put(("f",), "none", {"other": True})

        def keys(filter: dict[str, Any]) -> set[str]:
            return {i.key for i in store.search(("f",), filter=filter)}

        assert keys({"n": {"$gt": 1}}) == {"num"}  # numbers with numbers only; missing never matches
        assert keys({"n": {"$lte": "5"}}) == {"str"}  # strings with strings
        assert keys({"s": {"$gt": "a"}}) == {"num"}
        assert keys({"n": None}) == {"none"}  # a missing key equals None
        assert keys({"n": {"$ne": 5}}) == {"str", "none"}  # $ne matches a missing key
        assert keys({"n": {"$in": [5, "x"]}}) == {"num"}
        assert keys({"n": {"$nin": [5]}}) == {"str", "none"}
        assert keys({"n": {"$exists": True}}) == {"num", "str"}
        assert keys({"n": {"$exists": False}}) == {"none"}
        assert keys({"n": {"$gt": 1, "$lt": 10}}) == {"num"}
        assert keys({"n": {"$gt": 1}, "s": "b"}) == {"num"}
        assert keys({"deep.er.path": {"$exists": False}}) == {"num", "str", "none"}

    @pytest.mark.usefixtures("ours")
    @pytest.mark.parametrize(
        "filter",
        [
            {"n": {"$regex": "x"}},
            {"n": {"$in": 3}},
            {"n": {"$exists": "yes"}},
            {"n": {"$gt": [1]}},
            {"n": {"$gt": 1, "x": 2}},
        ],
    )
    def test_bad_filters_are_typed_errors(self, store: BaseStore, filter: dict[str, Any]) -> None:
        store.put(("f",), "k", {"n": 1})
        with pytest.raises(ValueError, match=r"\$|filter"):
            store.search(("f",), filter=filter)

    def test_index_fields_and_per_put_index(self, make_store: MakeStore) -> None:
        store = make_store(index=fake_index(["profile.bio", "notes[*]"]))
        store.put(("i",), "nested", {"profile": {"bio": "astronomy and telescopes"}, "notes": ["x"]})
        store.put(("i",), "array", {"profile": {"bio": "y"}, "notes": ["sourdough bread", "baking"]})
        store.put(("i",), "custom", {"title": "violin lessons", "profile": {"bio": "z"}}, index=["title"])
        store.put(("i",), "unindexed", {"profile": {"bio": "astronomy telescopes stars"}}, index=False)
        assert store.search(("i",), query="telescopes astronomy")[0].key == "nested"
        assert store.search(("i",), query="baking sourdough bread")[0].key == "array"
        assert store.search(("i",), query="violin lessons")[0].key == "custom"
        results = store.search(("i",), query="astronomy telescopes", limit=10)
        # an item indexed with index=False is never vector-scored above indexed ones
        seen_unscored = False
        for result in results:
            if result.key == "unindexed" and result.score is None:
                seen_unscored = True
            elif seen_unscored:
                assert result.score is None

    def test_search_with_query_and_filter(self, make_store: MakeStore) -> None:
        store = make_store(index=fake_index(["text"]))
        store.put(("q",), "a", {"text": "green tea", "lang": "en"})
        store.put(("q",), "b", {"text": "green tea", "lang": "fr"})
        results = store.search(("q",), query="green tea", filter={"lang": "fr"})
        assert [r.key for r in results] == ["b"]

    # ------------------------------------------------------------------ batches

    def test_batch_results_in_op_order_reads_before_writes_last_put_wins(self, store: BaseStore) -> None:
        store.put(("b",), "existing", {"v": "old"})
        results = store.batch(
            [
                GetOp(("b",), "existing"),
                PutOp(("b",), "existing", {"v": "new"}),
                PutOp(("b",), "twice", {"v": 1}),
                GetOp(("b",), "twice"),
                PutOp(("b",), "twice", {"v": 2}),
                SearchOp(("b",), None, 10, 0),
                ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("b",)),)),
            ]
        )
        assert len(results) == 7
        first = results[0]
        assert first is not None
        assert first.value == {"v": "old"}  # type: ignore[union-attr]
        assert results[1] is None
        assert results[2] is None
        assert results[3] is None  # reads see the state before the batch's writes
        assert [i.key for i in results[5]] == ["existing"]  # type: ignore[union-attr]
        assert results[6] == [("b",)]
        twice = store.get(("b",), "twice")
        assert twice is not None
        assert twice.value == {"v": 2}
        existing = store.get(("b",), "existing")
        assert existing is not None
        assert existing.value == {"v": "new"}

    async def test_async_twins_agree(self, make_store: MakeStore) -> None:
        store = make_store(index=fake_index(["text"]))
        await store.aput(("as", "1"), "k", {"text": "async green tea"})
        await store.aput(("as", "2"), "j", {"text": "async tax forms"})
        item = await store.aget(("as", "1"), "k")
        assert item is not None
        assert item.value == {"text": "async green tea"}
        found = await store.asearch(("as",), query="green tea")
        assert found[0].key == "k"
        assert await store.alist_namespaces(prefix=("as",)) == [("as", "1"), ("as", "2")]
        await store.adelete(("as", "1"), "k")
        assert await store.aget(("as", "1"), "k") is None
        results = await store.abatch([GetOp(("as", "2"), "j"), PutOp(("as", "3"), "z", {"text": "z"})])
        assert results[0] is not None
        assert store.get(("as", "3"), "z") is not None

    # ------------------------------------------------------------------ concurrency

    def test_concurrent_thread_writers_lose_nothing(self, store: BaseStore) -> None:
        def writer(worker: int) -> None:
            for i in range(40):
                store.put(("c", str(worker)), f"k{i}", {"worker": worker, "i": i})

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(store.search(("c",), limit=1000)) == 240
        assert len(store.list_namespaces(prefix=("c",))) == 6

    async def test_concurrent_async_writers_lose_nothing(self, store: BaseStore) -> None:
        async def writer(worker: int) -> None:
            for i in range(20):
                await store.aput(("ac", str(worker)), f"k{i}", {"worker": worker, "i": i})

        await asyncio.gather(*(writer(w) for w in range(8)))
        assert len(await store.asearch(("ac",), limit=1000)) == 160

    # ------------------------------------------------------------------ TTL

    @pytest.mark.usefixtures("ours")
    def test_expired_items_are_never_returned_even_before_a_sweep(self, make_store: MakeStore) -> None:
        clock = FakeClock()
        store = make_store(ttl={"default_ttl": 10, "refresh_on_read": False}, clock=clock)
        assert store.supports_ttl
        store.put(("t",), "short", {"v": 1}, ttl=1)
        store.put(("t",), "default", {"v": 2})
        store.put(("t2",), "forever", {"v": 3}, ttl=None)
        clock.advance(minutes=2)
        assert store.get(("t",), "short") is None
        assert {i.key for i in store.search(("t",))} == {"default"}
        clock.advance(minutes=9)
        assert store.get(("t",), "default") is None
        assert store.search(("t",)) == []
        assert store.list_namespaces() == [("t2",)]
        assert store.sweep_ttl() == 2  # type: ignore[attr-defined]
        assert store.sweep_ttl() == 0  # type: ignore[attr-defined]
        assert store.get(("t2",), "forever") is not None

    @pytest.mark.usefixtures("ours")
    def test_reads_refresh_ttl(self, make_store: MakeStore) -> None:
        clock = FakeClock()
        store = make_store(ttl={"default_ttl": 10, "refresh_on_read": True}, clock=clock)
        store.put(("r",), "got", {"v": 1})
        store.put(("r",), "searched", {"v": 2})
        store.put(("r",), "untouched", {"v": 3})
        clock.advance(minutes=8)
        assert store.get(("r",), "got") is not None
        assert {i.key for i in store.search(("r",), filter={"v": 2})} == {"searched"}
        assert store.get(("r",), "untouched", refresh_ttl=False) is not None
        clock.advance(minutes=8)  # 16 minutes after the writes, 8 after the refreshing reads
        assert store.get(("r",), "got", refresh_ttl=False) is not None
        assert store.get(("r",), "searched", refresh_ttl=False) is not None
        assert store.get(("r",), "untouched") is None

    @pytest.mark.usefixtures("ours")
    def test_refresh_on_read_false_by_config(self, make_store: MakeStore) -> None:
        clock = FakeClock()
        store = make_store(ttl={"default_ttl": 10, "refresh_on_read": False}, clock=clock)
        store.put(("r",), "k", {"v": 1})
        clock.advance(minutes=8)
        assert store.get(("r",), "k") is not None
        clock.advance(minutes=3)
        assert store.get(("r",), "k") is None
