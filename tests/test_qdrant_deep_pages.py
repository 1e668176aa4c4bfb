"""Listings read light: a page deep in a listing equals the same slice of the whole listing, and
reads the whole payloads of about its own items only, not of every item above it.

A listing (a search without a query) whose ``offset + limit`` reaches ``_LIGHT_FROM`` takes the
order from ids and ``updated_us`` and then reads the page's payloads by id; below it, the order
and the payloads come in one call. The tests force each path (``_LIGHT_FROM`` patched) and compare
them: same items, same order, ties broken by namespace and key, filters, expiry and TTL refresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import PutOp, SearchItem

from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.stores.qdrant import _search as search_steps
from langmem_plugin.stores.qdrant._calls import Hit
from tests.store_contract import FakeClock

PREFIX = ("u",)
ONE_CALL = 10**12  # _LIGHT_FROM that keeps every listing on the one-call path
LIGHT = 0  # _LIGHT_FROM that sends every listing down the light path


def _open(engine: str, path: Path, **kwargs: Any) -> QdrantStore:
    """``embedded``; ``uncached``: embedded without its payload cache (every read goes to the
    engine); ``memory``: qdrant-client's local mode, the server path."""
    if engine == "uncached":
        kwargs["options"] = {**kwargs.get("options", {}), "cache_bytes": 0}
    return QdrantStore(":memory:" if engine == "memory" else path, **kwargs)


def _kind(i: int) -> Any:
    # A list holding "fact" passes the engine's match on "fact" but not the exact filter.
    return ("fact", "note", ["fact", "x"])[i % 3]


def _fill(store: QdrantStore, clock: FakeClock) -> None:
    """About 2,600 items under PREFIX (and some outside), in groups tied on ``updated_at``: a big
    batch, many small ones, two batches at one instant, items rewritten, and expired items."""

    def put(ns: tuple[str, ...], i: int, **kw: Any) -> PutOp:
        return PutOp(ns, f"k{i:05d}", {"kind": _kind(i), "n": i}, index=False, **kw)

    namespaces = [PREFIX, (*PREFIX, "a"), (*PREFIX, "b"), ("v",)]
    store.batch([put(namespaces[i % 4], i) for i in range(1200)])  # ~900 under PREFIX, one instant
    for start in range(1200, 2100, 3):  # 300 groups of three
        clock.advance(seconds=1)
        store.batch([put(namespaces[i % 3], i) for i in range(start, start + 3)])
    store.batch([put(namespaces[i % 3], i) for i in range(2100, 2900)])  # same instant as the last three
    clock.advance(seconds=1)
    store.batch([put(PREFIX, i, ttl=1) for i in range(2900, 3000)])  # expire below
    clock.advance(seconds=1)
    store.batch([put(namespaces[i % 4], i) for i in range(0, 1200, 24)])  # rewritten: newest
    clock.advance(minutes=2)


def _rows(items: list[SearchItem]) -> list[tuple[Any, ...]]:
    return [(i.namespace, i.key, i.value, i.created_at, i.updated_at, i.score) for i in items]


def _listing(store: QdrantStore, light_from: int, **kwargs: Any) -> list[tuple[Any, ...]]:
    saved = search_steps._LIGHT_FROM
    search_steps._LIGHT_FROM = light_from
    try:
        return _rows(store.search(PREFIX, **kwargs))
    finally:
        search_steps._LIGHT_FROM = saved


@pytest.fixture(scope="module", params=["embedded", "uncached", "memory"])
def filled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, QdrantStore]]:
    """The engine's name and a store filled by :func:`_fill` (shared: the tests only read)."""
    clock = FakeClock()
    store = _open(request.param, tmp_path_factory.mktemp("deep") / "s", options={"clock": clock})
    _fill(store, clock)
    yield request.param, store
    store.close()


def _order_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    namespace, key, _, _, updated, _ = row
    return (-updated.timestamp(), namespace, key)


def _offsets(rows: list[tuple[Any, ...]], boundaries: int) -> list[int]:
    """Offsets on both sides of about ``boundaries`` boundaries between tied groups (the first
    and last among them), at the start and beyond the end."""
    cuts = [i for i in range(1, len(rows)) if rows[i][4] != rows[i - 1][4]]
    step = max(1, (len(cuts) - 1) // max(1, boundaries - 1))
    picked = {0, len(rows) - 3, len(rows), len(rows) + 5, *cuts[::step], cuts[-1]}
    return sorted({max(0, o + d) for o in picked for d in (-1, 0, 1)})


@pytest.mark.parametrize("flt", [None, {"kind": "fact"}, {"n": {"$gte": 1500}}], ids=["all", "kind", "n"])
def test_a_deep_page_is_the_same_slice_of_the_whole_listing(
    filled: tuple[str, QdrantStore], flt: dict[str, Any] | None
) -> None:
    engine, filled_store = filled
    # qdrant-client's local mode scans in Python: fewer pages there
    boundaries, limits = (3, (7,)) if engine == "memory" else (12, (1, 7, 60))
    whole = _listing(filled_store, ONE_CALL, filter=flt, limit=5000)
    assert whole == sorted(whole, key=_order_key)  # newest first, ties by namespace then key
    assert len({r[4] for r in whole}) < len(whole) - 500  # big groups of ties
    assert len(whole) > 1500 if flt is None else len(whole) > 400
    assert whole == _listing(filled_store, LIGHT, filter=flt, limit=5000)
    for offset in _offsets(whole, boundaries):
        for limit in limits:
            page = _listing(filled_store, LIGHT, filter=flt, offset=offset, limit=limit)
            assert page == whole[offset : offset + limit], (offset, limit)


def test_walking_deep_pages_gives_every_item_once(filled: tuple[str, QdrantStore]) -> None:
    _, store = filled
    whole = _listing(store, ONE_CALL, limit=5000)
    walked: list[tuple[Any, ...]] = []
    while page := _listing(store, LIGHT, offset=len(walked), limit=311):
        walked += page
    assert walked == whole
    deep = len(whole) - 100  # the shipped threshold: this page is read light
    assert deep + 50 >= search_steps._LIGHT_FROM
    assert _rows(store.search(PREFIX, offset=deep, limit=50)) == whole[deep : deep + 50]


@pytest.mark.parametrize("engine", ["embedded", "memory"])
def test_a_deep_page_read_with_refresh_ttl_pushes_the_expiry_of_its_items(
    tmp_path: Path, engine: str
) -> None:
    clock = FakeClock()
    ttl = {"default_ttl": 10, "refresh_on_read": True}
    with _open(engine, tmp_path / "s", ttl=ttl, options={"clock": clock}) as store:  # type: ignore[arg-type]
        for start in range(0, 40, 4):  # groups of four tied items
            clock.advance(seconds=1)
            store.batch(
                [PutOp(PREFIX, f"k{i:02d}", {"n": i}, index=False, ttl=10) for i in range(start, start + 4)]
            )
        clock.advance(minutes=5)
        whole = _listing(store, ONE_CALL, limit=100, refresh_ttl=False)
        page = _listing(store, LIGHT, offset=10, limit=12)  # refresh_ttl from the config: True
        assert page == whole[10:22]
        clock.advance(minutes=6)  # past the first expiry of all, not past the pushed one
        assert _listing(store, ONE_CALL, limit=100) == page


# ---------------------------------------------------------------------- what a deep page reads


def _hits(result: Any) -> list[Hit]:
    if isinstance(result, Hit):
        return [result]
    if isinstance(result, list | tuple):
        return [h for part in result for h in _hits(part)]
    return []


@pytest.mark.parametrize("engine", ["embedded", "uncached", "memory"])
@pytest.mark.parametrize("flt", [None, {"kind": {"$in": ["fact", "note"]}}], ids=["all", "filtered"])
def test_a_deep_page_reads_whole_payloads_of_its_items_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, flt: dict[str, Any] | None
) -> None:
    clock = FakeClock()
    with _open(engine, tmp_path / "s", options={"clock": clock}) as store:
        for start in range(0, 3000, 5):  # groups of five tied items
            clock.advance(seconds=1)
            store.batch(
                [
                    PutOp(PREFIX, f"k{i:05d}", {"kind": _kind(i), "n": i}, index=False)
                    for i in range(start, start + 5)
                ]
            )
        read: list[Hit] = []
        execute = store._engine.execute

        def counted(call: Any) -> Any:
            out = execute(call)
            read.extend(_hits(out))
            return out

        monkeypatch.setattr(store._engine, "execute", counted)
        deep = 1500
        page = store.search(PREFIX, filter=flt, offset=deep, limit=20)
        assert len(page) == 20
        whole = [h for h in read if "created_us" in h.payload]  # what only a whole payload has
        values = [h for h in read if "value" in h.payload]
        assert len(whole) <= 20 + 8  # the page and the items tied with its ends
        if flt is None:
            assert len(values) == len(whole)  # the order came without any value
        else:
            assert len(values) > deep  # the exact filter re-checked every item above the page
        read.clear()
        monkeypatch.setattr(search_steps, "_LIGHT_FROM", ONE_CALL)
        assert _rows(store.search(PREFIX, filter=flt, offset=deep, limit=20)) == _rows(page)
        assert len([h for h in read if "created_us" in h.payload]) > deep  # what the one call reads
