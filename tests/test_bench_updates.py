"""`langmem-plugin bench updates`: the generated histories, and a small run through the default store."""

from __future__ import annotations

from datetime import datetime

import pytest

from langmem_plugin.bench.updates import (
    DATE_FORMAT,
    KINDS,
    ROWS,
    UpdateHistory,
    make_histories,
    make_history,
    run_updates_bench,
)
from langmem_plugin.cli import main
from langmem_plugin.services.remember.history_input import parse_time
from langmem_plugin.testing import FakeEmbeddings


@pytest.fixture(scope="module")
def histories() -> list[UpdateHistory]:
    return make_histories(4, seed=3)


def test_the_same_seed_makes_the_same_histories(histories: list[UpdateHistory]) -> None:
    assert make_histories(4, seed=3) == histories
    assert make_histories(4, seed=4) != histories


def test_sessions_are_dated_in_increasing_order_over_about_six_months(histories: list[UpdateHistory]) -> None:
    for history in histories:
        assert len(history.sessions) == 30
        dates = [datetime.strptime(s["date"], DATE_FORMAT) for s in history.sessions]
        assert dates == sorted(dates)
        assert len(set(dates)) == len(dates)
        assert 60 <= (dates[-1] - dates[0]).days <= 182
        assert dates[-1] == history.last
        # the format LongMemEval writes, read by import_history as the same instant
        parsed = parse_time(history.sessions[0]["date"])
        assert parsed is not None
        assert parsed.replace(tzinfo=None) == dates[0]


def test_messages_alternate_user_and_assistant_with_unique_ids(histories: list[UpdateHistory]) -> None:
    for history in histories:
        ids = []
        for session in history.sessions:
            roles = [m["role"] for m in session["messages"]]
            assert roles == ["user", "assistant"] * (len(roles) // 2)
            assert roles
            ids += [m["id"] for m in session["messages"]]
            assert all(m["content"].strip() for m in session["messages"])
        assert len(ids) == len(set(ids))


def test_every_fact_is_updated_later_in_other_words_with_another_value(
    histories: list[UpdateHistory],
) -> None:
    twice = 0
    for history in histories:
        assert len(history.facts) == 10
        assert len({f.kind for f in history.facts}) == 10
        for fact in history.facts:
            statements = fact.statements
            assert len(statements) in (2, 3)
            twice += len(statements) == 3
            sessions = [s.session for s in statements]
            assert sessions == sorted(sessions)
            assert len(set(sessions)) == len(sessions)
            assert len({s.value for s in statements}) == len(statements)
            assert len({s.text for s in statements}) == len(statements)
            # not a copy: the words around the value differ, too
            frames = {s.text.replace(s.value, "{v}") for s in statements}
            assert len(frames) == len(statements)
            assert fact.newest is statements[-1]
    assert twice > 0


def test_every_question_has_its_statements_in_the_history(histories: list[UpdateHistory]) -> None:
    questions = {kind.name: kind.question for kind in KINDS}
    for history in histories:
        said = {
            m["id"]: (n, m["content"])
            for n, session in enumerate(history.sessions)
            for m in session["messages"]
            if m["role"] == "user"
        }
        for fact in history.facts:
            assert fact.question == questions[fact.kind]
            assert fact.question.endswith("?")
            for statement in fact.statements:
                session, content = said[statement.id]
                assert session == statement.session
                assert statement.text in content
                assert statement.value in content
                assert statement.value not in fact.question


def test_a_history_outside_its_bounds_is_refused() -> None:
    with pytest.raises(ValueError, match="facts must be from 1"):
        make_history(facts=len(KINDS) + 1)
    with pytest.raises(ValueError, match="at least 3 sessions"):
        make_history(sessions=40, days=30)


def test_a_small_run_through_the_default_store_gives_consistent_answers() -> None:
    said: list[str] = []
    result = run_updates_bench(histories=2, seed=1, embeddings=FakeEmbeddings(), progress=said.append)
    histories = make_histories(2, seed=1)
    assert len(said) == 2
    assert result.exchanges == sum(h.exchanges for h in histories)
    assert set(result.answers) == set(ROWS)
    for answers in result.answers.values():
        assert len(answers) == sum(len(h.facts) for h in histories)
        for answer, fact in zip(answers, [f for h in histories for f in h.facts], strict=True):
            assert answer.kind == fact.kind
            assert answer.statements == len(fact.statements)
            ranks = [r for r in (answer.newest, *answer.older) if r is not None]
            assert len(set(ranks)) == len(ranks)  # one exchange per injected item here
            assert all(1 <= r <= answer.items for r in ranks)
            assert len(answer.older) <= answer.statements - 1
            assert answer.only_older == (answer.newest is None and bool(answer.older))
            assert answer.tokens >= 0
            assert answer.seconds > 0
            assert (answer.items == 0) == (answer.tokens == 0)
    # something of the facts reaches the prompt (the number is the bench's to print, not pinned)
    assert any(a.newest is not None or a.older for a in result.answers[ROWS[0]])
    table = result.table()
    assert all(row in table for row in ROWS)
    assert "newest injected" in table
    kinds = result.kinds_table()
    assert all(f"| {fact.kind} " in kinds for h in histories for fact in h.facts)


def test_the_command_is_registered_with_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "updates", "--help"])
    out = capsys.readouterr().out
    assert "--histories" in out
    assert "--seed" in out
    with pytest.raises(SystemExit) as info:
        main(["bench", "updates", "--histories", "0"])
    assert info.value.code == 2
    assert "--histories: must be a whole number of at least 1" in capsys.readouterr().err
