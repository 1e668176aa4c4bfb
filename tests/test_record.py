from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from langmem_plugin.core.record import (
    DEFAULT_MAX_CONTENT_CHARS,
    MemoryKind,
    MemoryRecord,
    validate_category,
)
from langmem_plugin.errors import InvalidRecordError


def test_defaults_and_round_trip_through_json() -> None:
    record = MemoryRecord(
        content="Likes hiking", tags=["outdoors", "outdoors", " hobby "], metadata={"src": "chat"}
    )
    assert record.category == "general"
    assert record.priority == 5
    assert record.kind is MemoryKind.FACT
    assert record.tags == ["outdoors", "hobby"]
    assert record.created_at.tzinfo is not None
    value = json.loads(json.dumps(record.to_value()))
    assert MemoryRecord.from_value(value) == record


def test_timestamps_are_normalised_to_utc() -> None:
    paris = timezone(timedelta(hours=2))
    record = MemoryRecord(content="x", created_at=datetime(2024, 5, 1, 12, tzinfo=paris))
    assert record.created_at == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert record.to_value()["created_at"] == "2024-05-01T10:00:00+00:00"


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("content", "", "must not be empty"),
        ("content", "   ", "must not be empty"),
        ("content", 12, "must be text"),
        ("content", "x" * (DEFAULT_MAX_CONTENT_CHARS + 1), "more than the limit"),
        ("category", "../etc", "category"),
        ("category", "/leading", "category"),
        ("category", "trailing/", "category"),
        ("category", "a//b", "category"),
        ("category", "with space", "category"),
        ("category", "a/../b", "category"),
        ("tags", "single-string", "list of strings"),
        ("tags", ["ok", ""], "non-empty string"),
        ("tags", ["x" * 65], "longer than"),
        ("tags", [f"t{i}" for i in range(33)], "more than 32"),
        ("metadata", {"k": 1}, "must be a string"),
        ("metadata", ["k"], "string keys"),
        ("priority", 0, "1 to 10"),
        ("priority", 11, "1 to 10"),
        ("priority", 5.5, "1 to 10"),
        ("priority", True, "1 to 10"),
        ("kind", "gossip", "must be one of"),
        ("access_count", -1, "at least 0"),
        ("created_at", "yesterday", "ISO 8601"),
        ("created_at", datetime(2024, 1, 1), "timezone-aware"),
        ("updated_at", 3, "datetime"),
        ("owner", "me", "is not a field"),
    ],
)
def test_each_bad_field_is_named(field: str, value: object, fragment: str) -> None:
    data = {"content": "valid content", field: value}
    with pytest.raises(InvalidRecordError) as info:
        MemoryRecord(**data)
    assert info.value.field == field
    assert field in str(info.value)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_every_bad_field_is_reported() -> None:
    with pytest.raises(InvalidRecordError) as info:
        MemoryRecord(content="", priority=99, category="/x")
    assert {f for f, _ in info.value.errors} == {"content", "priority", "category"}


def test_configurable_content_limit() -> None:
    assert MemoryRecord.validate_value({"content": "x" * 10}, max_content_chars=10).content == "x" * 10
    with pytest.raises(InvalidRecordError, match="limit of 10"):
        MemoryRecord.validate_value({"content": "x" * 11}, max_content_chars=10)


def test_records_are_immutable_and_touched_copies_validate() -> None:
    record = MemoryRecord(content="v1", created_at=datetime(2024, 1, 1, tzinfo=UTC))
    with pytest.raises(ValueError, match="frozen"):
        record.content = "v2"  # type: ignore[misc]
    newer = record.touched(content="v2", priority=9)
    assert (newer.content, newer.priority, newer.created_at) == ("v2", 9, record.created_at)
    assert newer.updated_at > record.updated_at
    with pytest.raises(InvalidRecordError, match="priority"):
        record.touched(priority=42)


def test_validate_category() -> None:
    assert validate_category("project/rockbot_2-x") == "project/rockbot_2-x"
    with pytest.raises(InvalidRecordError, match="category"):
        validate_category("..")


def test_value_is_plain_json_readable_by_any_client() -> None:
    value = MemoryRecord(content="c", kind="preference", source="tool:save_memory").to_value()
    assert json.loads(json.dumps(value)) == value
    assert value["kind"] == "preference"
    assert isinstance(value["created_at"], str)
