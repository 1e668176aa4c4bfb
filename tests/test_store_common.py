from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import Item, ListNamespacesOp, MatchCondition, PutOp, SearchItem
from langgraph.store.base.embed import get_text_at_path

from langmem_plugin.errors import InvalidFilterError, InvalidNamespaceError, InvalidValueError
from langmem_plugin.stores._common import (
    TTLSettings,
    TTLSweeper,
    apply_list_namespaces,
    compile_filter,
    expiry,
    index_texts,
    namespace_matches,
    no_query_sort_key,
    parse_filter,
    search_sort_key,
)
from langmem_plugin.stores._validation import (
    MAX_VALUE_BYTES,
    final_puts,
    validate_namespace,
    validate_op,
    validate_value,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_validate_namespace() -> None:
    assert validate_namespace(["a", "b"]) == ("a", "b")
    assert validate_namespace((), for_write=False) == ()
    for bad in [(), ("a.b",), ("",), ("langgraph",), "abc"]:
        with pytest.raises(InvalidNamespaceError, match=r"Fix|tuple"):
            validate_namespace(bad)  # type: ignore[arg-type]


def test_validate_value_copies_and_limits() -> None:
    original = {"a": (1, 2), "b": {"c": "é"}}
    copied = validate_value(original)
    assert copied == {"a": [1, 2], "b": {"c": "é"}}
    copied["b"]["c"] = "changed"
    assert original["b"]["c"] == "é"  # type: ignore[index]
    with pytest.raises(InvalidValueError, match="limit"):
        validate_value({"x": "y" * MAX_VALUE_BYTES})
    with pytest.raises(InvalidValueError, match="must be a dict"):
        validate_value([1])
    for non_str_keys in ({"a": {1: 2}}, {"a": ({True: 2},)}, {"1": "x", 1: "y"}, {"t": (1,), "n": {None: 1}}):
        with pytest.raises(InvalidValueError, match="keys must be strings"):
            validate_value(non_str_keys)
    with pytest.raises(InvalidValueError, match="JSON"):
        validate_value({"a": float("inf")})
    with pytest.raises(InvalidValueError, match="JSON"):
        validate_value({"a": object()})


def test_validate_op_checks_puts_and_filters() -> None:
    with pytest.raises(InvalidValueError):
        validate_op(PutOp(("a",), "k", "nope"))  # type: ignore[arg-type]
    validate_op(PutOp(("a",), "k", None))  # a delete


@pytest.mark.parametrize(
    ("filter", "value", "expected"),
    [
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": [1, 2]}, {"a": [1, 2]}, True),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, True),
        ({"a": {"b": {"c": 1}}}, {"a": {"b": {"c": 1, "d": 0}}}, True),
        ({"a": {"b": None}}, {"a": {}}, True),
        ({"a": None}, {}, True),
        ({"a": {"$ne": None}}, {}, False),
        ({"a": {"$ne": 1}}, {}, True),
        ({"a": {"$gt": 1}}, {"a": "2"}, False),
        ({"a": {"$gt": "1"}}, {"a": "2"}, True),
        ({"a": {"$gt": 1}}, {}, False),
        ({"a": {"$lt": 1}}, {"a": None}, False),
        ({"a": {"$in": [None]}}, {}, True),
        ({"a": {"$nin": [1]}}, {}, True),
        ({"a.b.c": 1}, {"a": {"b": {"c": 1}}}, True),
        ({"a.b.c": 1}, {"a": {"b": 5}}, False),
        ({"a": {"$exists": True}}, {"a": None}, True),
        ({"a": {"$gte": 1, "$lte": 1}}, {"a": 1}, True),
    ],
)
def test_filter_semantics(filter: dict, value: dict, expected: bool) -> None:  # type: ignore[type-arg]
    assert compile_filter(filter)(value) is expected


@pytest.mark.parametrize(
    "filter",
    [
        {"a": {"$like": 1}},
        {"$or": []},
        {"a": {"$in": "x"}},
        {"a": {"$exists": 1}},
        {"a": {"$gt": None}},
        {"": 1},
        {"a..b": 1},
        "x",
    ],
)
def test_bad_filters(filter: object) -> None:
    with pytest.raises(InvalidFilterError):
        parse_filter(filter)  # type: ignore[arg-type]


def test_unknown_operator_message_names_it_and_the_supported_ones() -> None:
    with pytest.raises(InvalidFilterError, match=r"'\$like'.*\$eq, \$ne"):
        parse_filter({"a": {"$like": 1}})


def test_namespace_matching_and_listing() -> None:
    assert namespace_matches(("a", "b", "c"), prefix=("a", "*"), suffix=("c",))
    assert not namespace_matches(("a",), suffix=("x", "a"))
    namespaces = [("a", "b"), ("a", "b", "c"), ("a", "c"), ("b",)]
    op = ListNamespacesOp(
        match_conditions=(MatchCondition("prefix", ("a",)),), max_depth=2, limit=10, offset=0
    )
    assert apply_list_namespaces(namespaces, op) == [("a", "b"), ("a", "c")]
    op = ListNamespacesOp(match_conditions=None, max_depth=None, limit=2, offset=1)
    assert apply_list_namespaces(namespaces, op) == [("a", "b", "c"), ("a", "c")]


def test_sort_keys() -> None:
    old = Item(value={}, key="b", namespace=("x",), created_at=T0, updated_at=T0)
    new = Item(value={}, key="a", namespace=("x",), created_at=T0, updated_at=T0 + timedelta(seconds=1))
    tie = Item(value={}, key="a", namespace=("w",), created_at=T0, updated_at=T0)
    assert sorted([old, new, tie], key=no_query_sort_key) == [new, tie, old]
    s1 = SearchItem(("x",), "a", {}, T0, T0, score=0.5)
    s2 = SearchItem(("x",), "b", {}, T0, T0, score=0.9)
    s3 = SearchItem(("x",), "c", {}, T0, T0, score=None)
    assert [s.key for s in sorted([s3, s1, s2], key=search_sort_key)] == ["b", "a", "c"]


def test_final_puts_later_wins() -> None:
    ops = [
        (0, PutOp(("a",), "k", {"v": 1})),
        (1, PutOp(("a",), "j", {"v": 2})),
        (2, PutOp(("a",), "k", None)),
    ]
    winners = final_puts(ops)
    assert winners[(("a",), "k")][0] == 2
    assert winners[(("a",), "k")][1].value is None


def test_index_texts() -> None:
    value = {"a": {"b": "deep"}, "arr": ["x", "", "y"], "n": 1}
    assert index_texts(value, ["a.b", "arr[*]"]) == ["deep", "x", "y"]
    assert index_texts(value, None)[0].startswith("{")
    assert index_texts(value, ["missing"]) == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=12,
)
_PATHS = st.lists(
    st.sampled_from(["a", "b", "c", "a.b", "b.c.a", "a[*]", "b[0]", "c[-1].a", "{a,b}", "a.{b,c}", "$", "*"]),
    min_size=1,
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abc"), _JSON, max_size=3), _PATHS)
def test_index_texts_reads_a_path_as_langgraph_does(value: dict[str, object], fields: list[str]) -> None:
    expected = [
        text
        for field in fields
        for text in ([value[field]] if isinstance(value.get(field), str) else get_text_at_path(value, field))
        if text and text.strip()
    ]
    assert index_texts(value, fields) == expected
    assert index_texts(value, fields) == expected  # the parsed path, kept, reads the same again


def test_ttl_settings() -> None:
    settings = TTLSettings.from_config(
        {"default_ttl": 5, "refresh_on_read": False, "sweep_interval_minutes": 1}
    )
    assert settings == TTLSettings(5.0, False, 1.0)
    assert settings.refresh(None) is False
    assert settings.refresh(True) is True
    assert TTLSettings.from_config(None) == TTLSettings()
    with pytest.raises(InvalidValueError, match="default_ttl"):
        TTLSettings.from_config({"default_ttl": -1})
    assert expiry(T0, None) is None
    assert expiry(T0, 1.5) == T0 + timedelta(seconds=90)


def test_sweeper_runs_survives_errors_and_stops() -> None:
    calls: list[int] = []
    done = threading.Event()

    def sweep() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first sweep fails")
        if len(calls) >= 3:
            done.set()
        return 1

    sweeper = TTLSweeper(sweep, interval_minutes=0.0005)  # 30 ms
    sweeper.start()
    sweeper.start()  # idempotent
    assert done.wait(5)
    sweeper.stop()
    assert not sweeper.running
    count = len(calls)
    assert count >= 3
    with pytest.raises(InvalidValueError):
        TTLSweeper(sweep, interval_minutes=0)
