"""Issue 22, class 7: a bad call to the public API raises a typed error and writes nothing.

``Memory.import_history`` reads the whole history before its first write: any part that is not one
of the documented shapes (``langmem_plugin.services.remember.history_input``) raises
``ConfigurationError`` naming its place (``session 2, message 3``), the value and the fix, and
the store is never touched — not even read. Histories are generated with a bad part anywhere
(the history itself, a session, a message, a tool call) among valid ones; valid histories of
every shape still import. ``forget_user`` refuses a non-id with ``ScopeError`` before anything is
read; ``recall``, ``history``, ``forget`` and ``add_documents`` refuse arguments of the wrong type
the same way. On InMemoryStore, embedded Qdrant and a SQLite CheckpointerStore.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory
from langmem_plugin.errors import ConfigurationError, ScopeError
from langmem_plugin.services.remember.history_import import history_episodes
from langmem_plugin.services.remember.history_input import read_history
from tests.counting_stores import STORE_KINDS, counting, opened_store
from tests.history_strategies import (
    Unprintable,
    as_container,
    not_ids,
    poisoned,
    scalars,
    valid_messages,
    valid_sessions,
)

DIMS = 16
STORES = STORE_KINDS
HOSTILE = settings(
    max_examples=120,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
VALID = settings(
    max_examples=20,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_fresh = itertools.count()

# --------------------------------------------------------------------------- stores


@pytest.fixture(scope="module", params=STORES)
def untouched(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BaseStore]:
    """One store per kind that only bad calls reach: never read, never written, empty at the end."""
    with opened_store(request.param, tmp_path_factory.mktemp(f"api-hostile-{request.param}"), DIMS) as store:
        yield store
        assert store.ops_seen == 0  # type: ignore[attr-defined]
        assert store.list_namespaces() == []
        assert store.search(()) == []


@pytest.fixture(scope="module", params=STORES)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseStore]:
    """One store per kind for valid imports (each into a fresh thread)."""
    with opened_store(request.param, tmp_path_factory.mktemp(f"api-valid-{request.param}"), DIMS) as store:
        yield store


@contextlib.contextmanager
def _memory(store: BaseStore) -> Iterator[Memory]:
    memory = Memory(store=store, tokenizer_model="gpt-4o-mini")
    try:
        yield memory
    finally:
        memory.close()


def _config() -> dict[str, Any]:
    n = next(_fresh)
    return {"configurable": {"user_id": f"u{n}", "thread_id": f"t{n}"}}


# --------------------------------------------------------------------------- import_history


def _refused(call: Callable[[], object], where: str, store: BaseStore) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as info:
        call()
    assert not isinstance(info.value, ScopeError)
    message = str(info.value)
    assert re.match(re.escape(where) + r"(:|, tool call \d+:) ", message), (where, message)
    assert "Fix:" in message, message
    assert store.ops_seen == 0  # type: ignore[attr-defined]  # not even read
    return info.value


def test_a_bad_part_anywhere_in_a_history_is_refused_before_anything_is_read(untouched: BaseStore) -> None:
    with _memory(untouched) as memory:

        @HOSTILE
        @given(case=poisoned(), way=st.sampled_from(["sync", "async"]))
        def check(case: tuple[Any, str, str], way: str) -> None:
            history, per, where = case
            config = _config()
            if way == "sync":
                _refused(lambda: memory.import_history(history, config, per=per), where, untouched)  # type: ignore[arg-type]
            else:
                _refused(
                    lambda: asyncio.run(memory.aimport_history(history, config, per=per)),  # type: ignore[arg-type]
                    where,
                    untouched,
                )

        check()


def test_valid_histories_of_every_shape_still_import(shared: BaseStore) -> None:
    with _memory(shared) as memory:

        @VALID
        @given(data=st.data())
        def check(data: st.DataObject) -> None:
            per = data.draw(st.sampled_from(["exchange", "message"]))
            if data.draw(st.booleans()):
                history: list[Any] = data.draw(st.lists(valid_sessions(per), max_size=3))
            else:
                history = data.draw(st.lists(valid_messages(per), max_size=6))
            how = data.draw(st.sampled_from(["list", "tuple", "iterator"]))
            config = _config()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                report = memory.import_history(as_container(history, how), config, per=per)  # type: ignore[arg-type]
            assert report.turns == len(history_episodes(history, per=per))  # type: ignore[arg-type]
            assert report.failed == 0
            said = sum(len(s.messages) for s in read_history(history, per=per))  # system messages aside
            # messages that hold no turn warn, with the fix (tests/test_quiet_traps.py)
            assert [str(w.message)[:28] for w in caught] == (
                ["import_history wrote nothing"] if said and not report.turns else []
            )
            user_ns = ("memories", "user", config["configurable"]["user_id"])
            assert bool(shared.search(user_ns, limit=1)) == (report.turns > 0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # the same warning again
                again = memory.import_history(as_container(history, how), config, per=per)  # type: ignore[arg-type]
            assert (again.turns, again.written, again.failed) == (report.turns, 0, 0)

        check()


def test_a_bad_last_message_leaves_a_long_valid_history_unwritten(untouched: BaseStore) -> None:
    history: list[Any] = [
        {"role": role, "content": f"{role} says {n}"} for n in range(300) for role in ("user", "assistant")
    ]
    history.append(
        {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "args": "{}", "id": "c"}]}
    )
    with _memory(untouched) as memory:
        error = _refused(lambda: memory.import_history(history, _config()), "history, message 601", untouched)
    assert "tool call 1: args must be a dict" in str(error)


def test_the_message_names_the_value_and_the_fix() -> None:
    store: Any = counting(InMemoryStore)()
    with _memory(store) as memory:
        cases: list[tuple[Any, str, str]] = [
            (None, "history: a history must be a list, got NoneType None", "pass a list"),
            ({"messages": []}, "history: a history must be a list, got dict", "wrap it in a list"),
            (
                [{"messages": "hi"}],
                "history, session 1: messages must be a list, got str 'hi'",
                "pass a list",
            ),
            ([{"role": "user", "content": 5}], "history, message 1: content must be a str", "as a str"),
            (
                [{"role": "bot", "content": "hi"}],
                "history, message 1: the role 'bot' is not user",
                "per='message'",
            ),
            (
                [{"date": "someday", "messages": []}],
                "history, session 1: the date is not a datetime, a date or text in a known format, "
                "got str 'someday'",
                "ISO text",
            ),
            (
                [
                    ("user", "q"),
                    {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "args": {}}]},
                ],
                "history, message 2, tool call 1: a tool call is {'name': str, 'args': dict, 'id': str}; "
                "missing ['id']",
                "convert it",
            ),
            ([Unprintable()], "history, message 1: a message must be", "<Unprintable object>"),
        ]
        for history, start, fix in cases:
            with pytest.raises(ConfigurationError) as info:
                memory.import_history(history, _config())
            assert str(info.value).startswith(start), str(info.value)
            assert fix in str(info.value)
    assert store.ops_seen == 0


def test_dates_and_pairs_that_read() -> None:
    history = [
        {"date": "8 May 2023", "messages": [("user", "I moved to Porto."), ("assistant", "Welcome!")]},
        {"date": date(2023, 6, 1), "messages": [("user", "It rains."), ("assistant", "Take an umbrella.")]},
        {"date": datetime(2023, 7, 1, 9, tzinfo=UTC), "id": "july", "messages": []},
    ]
    episodes = history_episodes(history)
    assert [e.time for e in episodes] == [datetime(2023, 5, 8, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC)]
    assert [e.session for e in episodes] == ["8 May 2023", "2023-06-01"]


# --------------------------------------------------------------------------- forget_user and the rest


def test_forget_user_refuses_what_is_not_an_id_before_anything_is_read(untouched: BaseStore) -> None:
    with _memory(untouched) as memory:

        @HOSTILE
        @given(
            user=not_ids,
            threads=st.one_of(
                st.none(),
                scalars,
                st.uuids(),
                st.text(max_size=4),  # one str, not a list of them
                st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=1),
                st.lists(not_ids, min_size=1, max_size=2),
            ),
            way=st.sampled_from(["sync", "async"]),
        )
        def check(user: Any, threads: Any, way: str) -> None:
            run: Callable[[Any, Any], object]
            if way == "sync":
                run = lambda u, t: memory.forget_user(u, threads=t)  # noqa: E731
            else:
                run = lambda u, t: asyncio.run(memory.aforget_user(u, threads=t))  # noqa: E731
            with pytest.raises(ScopeError, match="user_id"):
                run(user, ())
            with pytest.raises(ScopeError, match="thread"):
                run("u-valid", threads)
            assert untouched.ops_seen == 0  # type: ignore[attr-defined]

        check()


def test_other_calls_with_arguments_of_the_wrong_type(untouched: BaseStore) -> None:
    good = [HumanMessage("What do I like?")]
    config = {"configurable": {"user_id": "u", "thread_id": "t"}}
    with _memory(untouched) as memory:
        calls: list[tuple[Callable[[], object], str]] = [
            (lambda: memory.import_history([("user", "hi")], "t1"), "config must be a RunnableConfig dict"),  # type: ignore[arg-type]
            (lambda: memory.import_history([], {"configurable": "t1"}), "config['configurable']"),  # type: ignore[typeddict-item]
            (lambda: memory.import_history([], config, batch_size="8"), "batch_size"),  # type: ignore[arg-type]
            (lambda: memory.import_history([], config, per="turn"), "per must be"),  # type: ignore[arg-type]
            (lambda: memory.import_history([], config, progress="yes"), "progress"),  # type: ignore[arg-type]
            (lambda: memory.recall(None, config), "recall(messages) takes a str or a list"),  # type: ignore[arg-type]
            (lambda: memory.recall([{"role": "wizard", "content": "x"}], config), "messages[0] is dict"),
            (lambda: asyncio.run(memory.arecall([("user",)], config)), "messages[0] is tuple"),
            (lambda: memory.recall(("user", "x"), config), "put it in a list"),
            (lambda: memory.recall(good, ["t"]), "config must be"),  # type: ignore[arg-type]
            (lambda: memory.history({"$ne": "x"}, config), "memory_id must be a non-empty str"),  # type: ignore[arg-type]
            (lambda: asyncio.run(memory.ahistory(None, config)), "memory_id"),  # type: ignore[arg-type]
            (lambda: memory.forget(7, config), "memory_id"),  # type: ignore[arg-type]
            (lambda: asyncio.run(memory.aforget("", config)), "memory_id"),
            (lambda: memory.add_documents("Support hours are 9 to 5."), "wrap it in a list"),  # type: ignore[arg-type]
            (lambda: memory.add_documents(None), "takes a list of sources"),  # type: ignore[arg-type]
            (lambda: memory.add_documents(["fine text", b"raw bytes"]), "decode bytes"),  # type: ignore[list-item]
            (lambda: asyncio.run(memory.aadd_documents([7])), "must be a str"),  # type: ignore[list-item]
        ]
        for call, words in calls:
            with pytest.raises(ConfigurationError, match=re.escape(words)):
                call()
            assert untouched.ops_seen == 0  # type: ignore[attr-defined]
