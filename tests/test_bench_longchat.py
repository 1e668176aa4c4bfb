"""`langmem-plugin bench longchat`: the generated chat's shape, and a tiny run through the default store."""

from __future__ import annotations

from datetime import datetime

import pytest

from langmem_plugin.bench.longchat import (
    HEADERS,
    LongChat,
    make_long_chat,
    run_longchat_bench,
)
from langmem_plugin.cli import main
from langmem_plugin.services.remember.history_import import history_episodes, parse_time
from langmem_plugin.testing import FakeEmbeddings


@pytest.fixture(scope="module")
def chat() -> LongChat:
    return make_long_chat(seed=3)


def test_the_same_seed_makes_the_same_chat(chat: LongChat) -> None:
    assert make_long_chat(seed=3) == chat
    assert make_long_chat(seed=4) != chat


def test_fifty_dated_sessions_of_250_exchanges(chat: LongChat) -> None:
    assert len(chat.sessions) == 50
    assert chat.exchanges == 250
    assert sum(len(s["messages"]) for s in chat.sessions) == 500
    dates = [datetime.fromisoformat(s["date"]) for s in chat.sessions]
    assert dates == sorted(dates)
    assert len({d.date() for d in dates}) == 50
    assert parse_time(chat.sessions[0]["date"]) is not None  # import_history reads the date
    ids = []
    for session in chat.sessions:
        roles = [m["role"] for m in session["messages"]]
        assert roles
        assert roles == ["user", "assistant"] * (len(roles) // 2)
        ids += [m["id"] for m in session["messages"]]
    assert len(ids) == len(set(ids))
    assert len(history_episodes(chat.sessions)) == 250  # one episode per exchange


def test_user_messages_are_short_and_answers_long(chat: LongChat) -> None:
    users = [m["content"] for s in chat.sessions for m in s["messages"] if m["role"] == "user"]
    assert all(0 < len(u) < 300 for u in users)
    assert 1 <= max(u.count(".") + u.count("?") for u in users) <= 3
    lengths = [len(a) for a in chat.answers]
    assert min(lengths) >= 1000
    assert max(lengths) <= 5400  # 5,000 and the sentence that crossed it
    assert max(lengths) > 4000
    assert min(lengths) < 2000
    assert sum(a.count("\n\n") > 0 for a in chat.answers) > 200  # paragraphs


def test_forty_facts_each_in_its_exchange_with_its_question(chat: LongChat) -> None:
    assert len(chat.facts) == 40
    assert {f.speaker for f in chat.facts} == {"user", "assistant"}
    assert len({f.question for f in chat.facts}) == 40
    assert len({f.message_ids for f in chat.facts}) == 40
    messages = {m["id"]: (n, m) for n, s in enumerate(chat.sessions) for m in s["messages"]}
    everything = "\n".join(m["content"] for _, m in messages.values())
    for fact in chat.facts:
        user_id, assistant_id = fact.message_ids
        said = messages[user_id if fact.speaker == "user" else assistant_id]
        assert said[0] == fact.session
        assert said[1]["role"] == fact.speaker
        assert fact.text in said[1]["content"]
        assert fact.value in fact.text
        assert fact.value.lower() not in fact.question.lower()
        assert fact.question.endswith("?")
        assert everything.count(fact.value) == 1  # nothing else in the chat gives the answer away
    assert len({f.session for f in chat.facts}) > 20  # spread over the chat


def test_a_chat_outside_its_bounds_is_refused() -> None:
    with pytest.raises(ValueError, match="facts must be"):
        make_long_chat(facts=41)
    with pytest.raises(ValueError, match="sessions"):
        make_long_chat(sessions=20, exchanges=10, facts=5)


def test_a_tiny_run_through_the_default_store_gives_consistent_rows() -> None:
    said: list[str] = []
    result = run_longchat_bench(
        sessions=4,
        exchanges=12,
        embedders=("a", "b"),
        batch_sizes=(8, 3),
        make=lambda name: FakeEmbeddings(),
        progress=said.append,
    )
    chat = make_long_chat(0, sessions=4, exchanges=12, facts=12)
    assert (result.exchanges, result.messages, result.facts) == (12, 24, 12)
    assert result.answer_chars == sum(map(len, chat.answers))
    labels = [r.label for r in result.rows]
    assert labels == [
        "a, batch_size 8",
        "a passages, b queries, batch_size 8",
        "b passages, a queries, batch_size 8",
        "b, batch_size 8",
        "a, batch_size 3",
    ]
    assert len(said) == len(labels)
    for row in result.rows:
        assert row.report.turns == 12
        assert row.report.failed == 0
        assert row.report.evicted == 0
        assert row.report.passages > 12  # the long answers are stored as passages too
        assert sum(row.calls) >= 12 + row.report.passages  # every episode and passage embedded
        assert 0 < row.embed_seconds <= row.report.seconds
        assert len(row.recall_seconds) == len(row.found) == len(row.answered) == len(row.tokens) == 12
        assert len(row.query_seconds) >= 12  # at least one query embedding per recall
        assert all(s > 0 for s in row.recall_seconds)
        assert all(t > 0 for t in row.tokens)
        assert len(row.row()) == len(HEADERS)
    # batch_size: at most that many exchanges' texts per embedding call
    assert max(result.rows[-1].calls) < max(result.rows[0].calls)
    assert len(result.rows[-1].calls) > len(result.rows[0].calls)
    # something of the facts reaches the prompt (the share is the bench's to print, not pinned)
    assert any(result.rows[0].found)
    assert any(result.rows[0].answered)
    assert set(result.throughput) == {"a", "b"}
    assert all(rate > 0 for rate in result.throughput.values())
    assert 0 < result.sample <= sum(result.rows[-1].calls)
    assert "a " in result.throughput_line()
    table = result.table()
    assert all(f"| {label} " in table for label in labels)
    assert all(header in table for header in HEADERS)


def test_the_command_is_registered_with_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "longchat", "--help"])
    out = capsys.readouterr().out
    for option in ("--sessions", "--exchanges", "--seed", "--embedder", "--batch-sizes"):
        assert option in out
    with pytest.raises(SystemExit) as info:
        main(["bench", "longchat", "--embedder", "float,bf16"])
    assert info.value.code == 2
    assert "unknown embedder 'bf16'" in capsys.readouterr().err
    assert main(["bench", "longchat", "--sessions", "30", "--exchanges", "20"]) == 2
    assert "--sessions must be at most --exchanges" in capsys.readouterr().err
