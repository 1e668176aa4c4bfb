"""JSONL export/import between any two BaseStores, exact between QdrantStores."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_plugin.errors import InvalidNamespaceError, InvalidValueError
from langmem_plugin.stores._transfer import (
    StoredItem,
    TransferableStore,
    copy_items,
    export_jsonl,
    import_jsonl,
    iter_items,
)
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings
from tests.store_contract import FakeClock

INDEX: dict[str, Any] = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["text"]}


def _fill(store: Any, clock: FakeClock | None = None) -> None:
    for i in range(30):
        store.put(("users", f"u{i % 3}"), f"k{i}", {"text": f"note {i} about tea", "i": i, "ü": ["é", None]})
        if clock is not None:
            clock.advance(seconds=1)
    store.put(("agents", "a1"), "doc", {"text": "agent knowledge"})


def _snapshot(store: Any, prefix: tuple[str, ...] = ()) -> list[StoredItem]:
    return sorted(iter_items(store, prefix), key=lambda i: (i.namespace, i.key))


def test_qdrant_store_is_transferable() -> None:
    assert isinstance(QdrantStore(":memory:"), TransferableStore)
    assert not isinstance(InMemoryStore(), TransferableStore)


def test_exact_round_trip_between_qdrant_stores_keeps_timestamps_and_ttl(tmp_path: Path) -> None:
    clock = FakeClock()
    source = QdrantStore(tmp_path / "a", index=INDEX, ttl={"default_ttl": 60}, options={"clock": clock})  # type: ignore[arg-type]
    target = QdrantStore(":memory:", index=INDEX, options={"clock": clock})  # type: ignore[arg-type]
    with source, target:
        _round_trip(source, target, clock, tmp_path / "export.jsonl")


def _round_trip(source: QdrantStore, target: QdrantStore, clock: FakeClock, path: Path) -> None:
    _fill(source, clock)
    source.put(("users", "u0"), "forever", {"text": "kept forever"}, ttl=None)
    clock.advance(minutes=5)
    source.put(("users", "u0"), "k0", {"text": "updated later", "i": 0})  # created_at kept, updated_at moves
    assert export_jsonl(source, path) == 32
    assert import_jsonl(target, path) == 32
    assert _snapshot(target) == _snapshot(source)
    again = io.StringIO()
    export_jsonl(target, again)
    assert sorted(again.getvalue().splitlines()) == sorted(path.read_text(encoding="utf-8").splitlines())

    k0 = target.get(("users", "u0"), "k0", refresh_ttl=False)
    assert k0 is not None
    assert k0.created_at == datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
    assert k0.updated_at == datetime(2025, 1, 1, 12, 5, 30, tzinfo=UTC)
    forever = next(i for i in iter_items(target) if i.key == "forever")
    assert (forever.ttl, forever.expires_at) == (None, None)
    assert target.search(("users",), query="updated later", limit=1)[0].key == "k0"  # vectors rebuilt
    clock.advance(minutes=61)  # the imported expiry holds in the target too
    assert [i.key for i in target.search(("users",), limit=100)] == ["forever"]


def test_in_memory_store_to_qdrant_and_back(tmp_path: Path) -> None:
    memory = InMemoryStore()
    _fill(memory)
    buffer = io.StringIO()
    assert export_jsonl(memory, buffer, prefix=("users",)) == 30
    buffer.seek(0)
    with QdrantStore(tmp_path / "q", index=INDEX) as store:  # type: ignore[arg-type]
        assert import_jsonl(store, buffer) == 30
        assert _snapshot(store) == _snapshot(memory, ("users",))  # timestamps too: imported exactly
        assert store.list_namespaces() == [("users", "u0"), ("users", "u1"), ("users", "u2")]
        back = InMemoryStore()
        assert copy_items(store, back) == 30
    assert [(i.namespace, i.key, i.value) for i in _snapshot(back)] == [
        (i.namespace, i.key, i.value) for i in _snapshot(memory, ("users",))
    ]


def test_embedded_to_memory_copy(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "q") as embedded, QdrantStore(":memory:") as memory:
        _fill(embedded)
        assert copy_items(embedded, memory, prefix=("agents",)) == 1
        assert memory.search(("agents",), query="knowledge")[0].key == "doc"


def test_expired_items_are_neither_exported_nor_imported(tmp_path: Path) -> None:
    clock = FakeClock()
    with QdrantStore(tmp_path / "q", options={"clock": clock}) as store:
        store.put(("t",), "short", {"v": 1}, ttl=1)
        store.put(("t",), "long", {"v": 2}, ttl=100)
        buffer = io.StringIO()
        export_jsonl(store, buffer)
        clock.advance(minutes=2)
        assert [i.key for i in iter_items(store)] == ["long"]
        buffer.seek(0)
        with QdrantStore(":memory:", options={"clock": clock}) as target:
            assert import_jsonl(target, buffer) == 1
            assert [i.key for i in iter_items(target)] == ["long"]


def _file(*lines: Any) -> io.StringIO:
    header = {"format": "langmem-store-export", "version": 1}
    return io.StringIO("\n".join(json.dumps(x) for x in (header, *lines)) + "\n")


GOOD = {
    "namespace": ["a"],
    "key": "k",
    "value": {"v": 1},
    "created_at": "2025-01-01T00:00:00+00:00",
    "updated_at": "2025-01-01T00:00:00+00:00",
    "ttl": None,
    "expires_at": None,
}


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ({**GOOD, "value": ["not", "an", "object"]}, InvalidValueError, "dict"),
        ({**GOOD, "namespace": ["a.b"]}, InvalidNamespaceError, "periods"),
        ({**GOOD, "created_at": "yesterday"}, InvalidValueError, "line 3"),
        ({**GOOD, "created_at": "2025-01-01T00:00:00"}, InvalidValueError, "timezone"),
        ({**GOOD, "ttl": -1}, InvalidValueError, "ttl"),
        ({k: v for k, v in GOOD.items() if k != "key"}, InvalidValueError, "'key'"),
    ],
    ids=["value", "namespace", "timestamp", "naive", "ttl", "missing"],
)
def test_a_bad_line_is_a_typed_error_and_nothing_is_written(
    bad: dict[str, Any], error: type[Exception], match: str
) -> None:
    for store in (QdrantStore(":memory:"), InMemoryStore()):
        with pytest.raises(error, match=match):
            import_jsonl(store, _file(GOOD, bad))
        assert store.search(()) == []


def test_a_file_without_the_header_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="header"):
        import_jsonl(InMemoryStore(), io.StringIO(json.dumps(GOOD) + "\n"))
    with pytest.raises(InvalidValueError, match="version"):
        import_jsonl(
            InMemoryStore(), io.StringIO(json.dumps({"format": "langmem-store-export", "version": 9}))
        )


def test_stored_item_json_round_trip() -> None:
    moment = datetime(2025, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    item = StoredItem(("a", "b"), "k", {"x": [1, 2.5]}, moment, moment, 30.0, moment + timedelta(minutes=30))
    assert StoredItem.from_json(json.loads(json.dumps(item.to_json()))) == item
