"""Remember: episodes, idempotent keys, eviction, and writes that are retried and never lost."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.store.base import Op, Result
from langgraph.store.memory import InMemoryStore

from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, MemoryLimitError
from langmem_plugin.services import (
    Compartment,
    CompartmentLimits,
    EpisodeWriter,
    MemoryLayout,
    RememberConfig,
    episode_from_messages,
    execute,
    remember_steps,
    save_steps,
    search_steps,
)
from tests.memory_fixtures import Runner, fake_store

SESSION_NS = ("memories", "session", "t1")
USER_NS = ("memories", "user", "alice")


class FlakyStore(InMemoryStore):
    """A real InMemoryStore whose first ``failures`` batches raise (an outage)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.calls = 0

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"store unavailable (call {self.calls})")
        return super().batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


def _exchange(question: str = "What's my tea?", answer: str = "Green tea.") -> list[Any]:
    call = AIMessage(
        "", tool_calls=[{"name": "search_memory", "args": {"query": "tea"}, "id": "c1"}], id="a1"
    )
    return [
        HumanMessage("hi", id="h0"),
        AIMessage("hello", id="a0"),
        HumanMessage(question, id="h1"),
        call,
        ToolMessage("[]", tool_call_id="c1", id="tm1"),
        AIMessage(answer, id="a2"),
    ]


def test_episode_is_the_last_exchange() -> None:
    episode = episode_from_messages(_exchange())
    assert episode is not None
    assert episode.content(1000) == "User: What's my tea?\nAssistant: Green tea.\nTools: search_memory"
    assert episode_from_messages([HumanMessage("unanswered")]) is None
    assert episode_from_messages([AIMessage("no user")]) is None
    long = episode_from_messages([HumanMessage("q" * 5000), AIMessage("a" * 5000)])
    assert long is not None
    assert len(long.content(300)) <= 300


def test_remember_writes_one_episode_per_exchange(run: Runner, store: InMemoryStore, scope: Scope) -> None:
    layout = MemoryLayout()
    episode = episode_from_messages(_exchange())
    assert episode is not None
    run(remember_steps(scope, layout, episode))
    run(remember_steps(scope, layout, episode))  # a retry or a replay: still one episode
    items = store.search(USER_NS)  # the run names a user: user memory, by default
    assert len(items) == 1
    assert store.search(SESSION_NS) == []
    assert items[0].value["kind"] == "episode"
    meta = items[0].value["metadata"]
    assert meta["thread_id"] == "t1"
    assert meta["position"] == "1"
    assert meta["role"] == "exchange"
    assert meta["previous"] == episode_from_messages(_exchange()[:2]).key(scope)  # type: ignore[union-attr]
    assert meta["context"] == "User: hi\nAssistant: hello"
    assert "next" not in meta
    run(remember_steps(scope, layout, episode, compartments=["user", "session"]))  # type: ignore[list-item]
    assert len(store.search(USER_NS)) == len(store.search(SESSION_NS)) == 1


def test_full_compartment_evicts_oldest_episodes_only(store: InMemoryStore, scope: Scope) -> None:
    layout = MemoryLayout(limits={"user": CompartmentLimits(max_items=3)})
    execute(store, save_steps(scope, layout, "a fact to keep", compartment="user"))
    for i in range(5):
        episode = episode_from_messages([HumanMessage(f"q{i}"), AIMessage(f"a{i}")])
        assert episode is not None
        execute(store, remember_steps(scope, layout, episode))
    contents = sorted(
        m.record.content for m in execute(store, search_steps(scope, layout, compartments=["user"]))
    )
    assert contents == ["User: q3\nAssistant: a3", "User: q4\nAssistant: a4", "a fact to keep"]

    facts_only = MemoryLayout(limits={"session": CompartmentLimits(max_items=1)})
    episode = episode_from_messages([HumanMessage("q"), AIMessage("a")])
    assert episode is not None
    other = Scope(user_id="alice", thread_id="t9")
    execute(store, save_steps(other, facts_only, "only facts here", compartment="session"))
    with pytest.raises(MemoryLimitError, match="session memory is full"):
        execute(
            store,
            remember_steps(other, facts_only, episode, config=RememberConfig(compartments=("session",))),
        )


def _job(scope: Scope) -> Any:
    episode = episode_from_messages([HumanMessage("q"), AIMessage("a")])
    assert episode is not None
    return lambda: remember_steps(scope, MemoryLayout(), episode)


def test_a_failed_write_is_retried(scope: Scope) -> None:
    store = FlakyStore(failures=2)
    writer = EpisodeWriter(retries=3, retry_delay=0.0)
    writer.submit(store, _job(scope), "episode")
    assert writer.failed == []
    assert len(store.search(USER_NS)) == 1


def test_a_write_that_keeps_failing_is_logged_and_kept(
    scope: Scope, caplog: pytest.LogCaptureFixture
) -> None:
    store = FlakyStore(failures=100)
    writer = EpisodeWriter(retries=2, retry_delay=0.0)
    with caplog.at_level(logging.WARNING, logger="langmem_plugin.services.remember.episodes"):
        writer.submit(store, _job(scope), "episode e1")  # does not raise
    assert len(writer.failed) == 1
    assert isinstance(writer.failed[0].error, ConnectionError)
    assert any("failed after 3 attempts" in r.message for r in caplog.records if r.levelno == logging.ERROR)
    store.failures = 0  # the outage ends
    assert writer.retry_failed() == 1
    assert writer.failed == []
    assert len(store.search(USER_NS)) == 1


def test_background_writes_sync_and_async(scope: Scope) -> None:
    store = fake_store()
    writer = EpisodeWriter(background=True, retries=1, retry_delay=0.0)
    writer.submit(store, _job(scope), "episode")
    writer.flush(timeout=10)
    assert len(store.search(USER_NS)) == 1

    flaky = FlakyStore(failures=100)

    async def main() -> None:
        await writer.asubmit(flaky, _job(scope), "episode")
        await writer.aflush()

    asyncio.run(main())
    assert len(writer.failed) == 1
    flaky.failures = 0
    assert asyncio.run(writer.aretry_failed()) == 1
    writer.close()


def test_remember_config_is_validated() -> None:
    both = RememberConfig(compartments=("user", "session"))  # type: ignore[arg-type]
    assert both.compartments == (Compartment.USER, Compartment.SESSION)
    assert RememberConfig().compartments is None
    for bad, said in [
        (("knowledge",), "cannot hold 'knowledge'"),
        ((), "non-empty tuple"),
        ("session", "non-empty tuple, got 'session'"),
        (("user", "user"), "names 'user' twice"),
    ]:
        with pytest.raises(ConfigurationError, match=said) as caught:
            RememberConfig(compartments=bad)  # type: ignore[arg-type]
        assert "('session',)" in str(caught.value)  # the fix is named
    with pytest.raises(ConfigurationError):
        RememberConfig(retries=-1)
    assert MemoryKind.EPISODE.value == "episode"
