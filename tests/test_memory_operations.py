"""Memory operations over LangGraph's InMemoryStore, through the sync and the async driver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import (
    CompartmentError,
    ConfigurationError,
    InvalidFilterError,
    InvalidRecordError,
    MemoryLimitError,
    MemoryNotFoundError,
    ScopeError,
)
from langmem_plugin.services import (
    CompartmentLimits,
    MemoryLayout,
    categories_steps,
    clear_steps,
    delete_steps,
    get_steps,
    save_steps,
    search_steps,
    update_steps,
)
from tests.memory_fixtures import Runner


def test_default_layout_keeps_compartments_apart() -> None:
    layout = MemoryLayout()
    tricky = Scope(user_id="session", thread_id="alice", agent="user")
    namespaces = {layout.namespace(c, tricky) for c in ("user", "session", "knowledge")}
    assert namespaces == {
        ("memories", "user", "session"),
        ("memories", "session", "alice"),
        ("memories", "agent", "user", "knowledge"),
    }


def test_layout_is_configurable_and_validated() -> None:
    layout = MemoryLayout(namespaces={"user": ("app", "u-{user_id}")}, default_agent="bot")
    assert layout.namespace("user", Scope(user_id="x")) == ("app", "u-x")
    assert layout.namespace("knowledge", Scope()) == ("memories", "agent", "bot", "knowledge")
    with pytest.raises(ConfigurationError, match="share one namespace"):
        MemoryLayout(namespaces={"user": ("memories", "session", "{thread_id}")})
    with pytest.raises(CompartmentError, match="unknown compartment 'users'"):
        MemoryLayout(namespaces={"users": ("x",)})
    with pytest.raises(ScopeError, match="user_id"):
        MemoryLayout().namespace("user", Scope(thread_id="t"))


def test_save_search_get_update_delete(run: Runner, store: InMemoryStore, scope: Scope) -> None:
    layout = MemoryLayout()
    tea = run(save_steps(scope, layout, "Prefers green tea", category="preferences/drinks", tags=["tea"]))
    run(save_steps(scope, layout, "Works on the rockbot project", category="project/rockbot", priority=8))
    run(save_steps(scope, layout, "Meeting notes for today", compartment="session"))
    assert store.get(("memories", "user", "alice"), tea.id) is not None
    assert store.get(("memories", "session", "t1"), tea.id) is None

    found = run(search_steps(scope, layout, "green tea"))
    assert found[0].id == tea.id
    assert found[0].score is not None
    assert set(found[0].compact()) == {"id", "content", "category", "score"}

    got = run(get_steps(scope, layout, tea.id))
    assert got.record.content == "Prefers green tea"
    value = store.get(("memories", "user", "alice"), tea.id).value  # type: ignore[union-attr]
    assert value["access_count"] == 2  # once by search, once by get

    updated = run(update_steps(scope, layout, tea.id, content="Prefers oolong tea", priority=9))
    assert updated.record.content == "Prefers oolong tea"
    assert updated.record.priority == 9
    assert updated.record.category == "preferences/drinks"
    assert updated.record.updated_at > updated.record.created_at
    assert run(search_steps(scope, layout, "oolong"))[0].id == tea.id

    deleted = run(delete_steps(scope, layout, tea.id))
    assert deleted.record.content == "Prefers oolong tea"
    with pytest.raises(MemoryNotFoundError, match=tea.id):
        run(get_steps(scope, layout, tea.id))


def test_search_filters(run: Runner, scope: Scope) -> None:
    layout = MemoryLayout()
    run(save_steps(scope, layout, "Likes jazz", category="preferences/music", tags=["music", "evening"]))
    run(save_steps(scope, layout, "Likes rock", category="preferences/music", tags=["music"]))
    run(save_steps(scope, layout, "Allergic to nuts", category="health", tags=["food"]))
    run(save_steps(scope, layout, "Prefix trap", category="preferences-old"))

    prefs = run(search_steps(scope, layout, category="preferences"))
    assert {m.record.content for m in prefs} == {"Likes jazz", "Likes rock"}  # not 'preferences-old'
    assert [m.record.content for m in run(search_steps(scope, layout, tags=["music", "evening"]))] == [
        "Likes jazz"
    ]
    narrowed = run(search_steps(scope, layout, "nuts", category="preferences"))
    assert {m.record.category for m in narrowed} == {"preferences/music"}
    assert run(search_steps(scope, layout, "nuts"))[0].record.content == "Allergic to nuts"
    newest_first = run(search_steps(scope, layout))
    assert newest_first[0].record.content == "Prefix trap"

    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    assert run(search_steps(scope, layout, since=tomorrow)) == []
    assert len(run(search_steps(scope, layout, since=yesterday, until=tomorrow))) == 4
    assert run(search_steps(scope, layout, until=yesterday)) == []
    with pytest.raises(InvalidFilterError, match="since must be an ISO 8601 date"):
        run(search_steps(scope, layout, since="last week"))
    with pytest.raises(InvalidFilterError, match="limit"):
        run(search_steps(scope, layout, limit=0))


def test_since_until_bound_created_at(store: InMemoryStore, scope: Scope) -> None:
    from langmem_plugin.services import execute

    layout = MemoryLayout()
    old = MemoryRecord(content="old fact", created_at=datetime(2020, 5, 1, tzinfo=UTC))
    new = MemoryRecord(content="new fact", created_at=datetime(2024, 5, 1, tzinfo=UTC))
    store.put(("memories", "user", "alice"), "a", old.to_value())
    store.put(("memories", "user", "alice"), "b", new.to_value())
    found = execute(store, search_steps(scope, layout, since="2021-01-01", until="2024-05-01"))
    assert [m.id for m in found] == ["b"]
    found = execute(store, search_steps(scope, layout, until="2020-05-01"))
    assert [m.id for m in found] == ["a"]


def test_items_that_are_not_records_are_skipped(run: Runner, store: InMemoryStore, scope: Scope) -> None:
    store.put(("memories", "user", "alice"), "foreign", {"text": "written by another client"})
    layout = MemoryLayout()
    run(save_steps(scope, layout, "a real memory"))
    assert [m.record.content for m in run(search_steps(scope, layout))] == ["a real memory"]
    assert run(categories_steps(scope, layout)) == {"general": 1}


def test_bad_fields_raise_typed_errors(run: Runner, scope: Scope) -> None:
    layout = MemoryLayout()
    with pytest.raises(InvalidRecordError, match="content"):
        run(save_steps(scope, layout, "   "))
    with pytest.raises(InvalidRecordError, match="category"):
        run(save_steps(scope, layout, "x", category="../../etc"))
    with pytest.raises(InvalidRecordError, match="priority"):
        run(save_steps(scope, layout, "x", priority=11))
    with pytest.raises(CompartmentError, match="'run'"):
        run(save_steps(scope, layout, "x", compartment="run"))
    with pytest.raises(MemoryNotFoundError):
        run(get_steps(scope, layout, "../bob/x"))


def test_limits_per_compartment(run: Runner, scope: Scope) -> None:
    layout = MemoryLayout(limits={"user": CompartmentLimits(max_items=2, max_chars=20)})
    run(save_steps(scope, layout, "one"))
    run(save_steps(scope, layout, "two"))
    with pytest.raises(
        MemoryLimitError, match=r"user memory is full: it holds 2 memories and the limit is 2"
    ):
        run(save_steps(scope, layout, "three"))
    run(save_steps(scope, layout, "three", compartment="session"))  # another compartment, its own limit
    with pytest.raises(MemoryLimitError, match="is 21 characters; user memory takes at most 20"):
        run(save_steps(scope, layout, "x" * 21))
    first = run(search_steps(scope, layout, compartments=["user"]))[0]
    with pytest.raises(MemoryLimitError, match="at most 20"):
        run(update_steps(scope, layout, first.id, content="y" * 21))
    with pytest.raises(ConfigurationError):
        CompartmentLimits(max_items=0)


def test_categories_and_clear(run: Runner, store: InMemoryStore, scope: Scope) -> None:
    layout = MemoryLayout()
    run(save_steps(scope, layout, "a", category="project/rockbot"))
    run(save_steps(scope, layout, "b", category="project/rockbot/api", tags=["x"]))
    run(save_steps(scope, layout, "c", category="project/other"))
    run(save_steps(scope, layout, "d", category="personal", compartment="session"))
    assert run(categories_steps(scope, layout)) == {
        "personal": 1,
        "project": 3,
        "project/other": 1,
        "project/rockbot": 2,
        "project/rockbot/api": 1,
    }
    removed = run(clear_steps(scope, layout, "user", category="project/rockbot"))
    assert sorted(m.record.content for m in removed) == ["a", "b"]
    assert run(categories_steps(scope, layout, compartments=["user"])) == {"project": 1, "project/other": 1}
    assert run(clear_steps(scope, layout, "session", everything=True))
    assert run(clear_steps(scope, layout, "session", everything=True)) == []


def test_one_users_memory_is_invisible_to_another(run: Runner, scope: Scope) -> None:
    layout = MemoryLayout()
    secret = run(save_steps(scope, layout, "alice's secret"))
    bob = Scope(user_id="bob", thread_id="t2")
    assert run(search_steps(bob, layout, "secret")) == []
    with pytest.raises(MemoryNotFoundError):
        run(get_steps(bob, layout, secret.id))
    with pytest.raises(MemoryNotFoundError):
        run(delete_steps(bob, layout, secret.id))
    assert run(get_steps(scope, layout, secret.id)).record.content == "alice's secret"


@pytest.mark.parametrize("spelling", [" {id}", "{id} ", "{id}\n", "\t{id}"])
def test_an_id_is_taken_exactly_never_stripped_into_another_memorys(
    run: Runner, store: InMemoryStore, scope: Scope, spelling: str
) -> None:
    layout = MemoryLayout()
    tea = run(save_steps(scope, layout, "Prefers green tea"))
    with pytest.raises(MemoryNotFoundError, match="exactly as written"):
        run(update_steps(scope, layout, spelling.format(id=tea.id), content="Prefers coffee"))
    with pytest.raises(MemoryNotFoundError):
        run(delete_steps(scope, layout, spelling.format(id=tea.id)))
    assert run(get_steps(scope, layout, tea.id)).record.content == "Prefers green tea"
