"""A time or a speaker named in a question lifts what was said then, or by them: ``RetrievalConfig``'s
``time_weight`` and ``speaker_weight``.

The periods are read by dateparser in the configured languages (``services/recall/when.py``);
recall lifts a memory dated in one of them. Real components: ``Memory()``'s default store
(embedded Qdrant, dense + BM25) with FakeEmbeddings, histories written by ``import_history``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.runnables import RunnableConfig

from langmem_plugin import Memory, RecallConfig
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.recall import RetrievalConfig, when
from langmem_plugin.services.recall.when import question_periods

NOW = datetime(2024, 2, 1, 12, 0, tzinfo=UTC)
CONFIG: RunnableConfig = {"configurable": {"thread_id": "t-2023", "user_id": "u1"}}
HIKES = [  # one session a season, each about a hike; no text names its month
    ("2023-01-15T10:00", "I went hiking near Chamonix with friends."),
    ("2023-04-02T10:00", "I went hiking on the cliffs of Madeira with friends."),
    ("2023-07-10T10:00", "I went hiking in the Dolomites with friends."),
    ("2023-10-20T10:00", "I went hiking up Mount Olympus with friends."),
]


def _periods(query: str, *languages: str) -> list[tuple[str, str, str]]:
    found = question_periods(query, NOW, languages or ("en",))
    return [(p.start.date().isoformat(), p.end.date().isoformat(), p.granularity) for p in found]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did Sam do on December 4, 2023?", [("2023-12-04", "2023-12-05", "day")]),
        ("What book was Emi reading on 21.01.2024?", [("2024-01-21", "2024-01-22", "day")]),
        ("How many roadtrips did Evan take in May 2023?", [("2023-05-01", "2023-06-01", "month")]),
        ("Which cities did Dave visit in 2023?", [("2023-01-01", "2024-01-01", "year")]),
        ("What did I do last week?", [("2024-01-22", "2024-01-29", "week")]),
        ("When did Melanie go camping in July?", [("2023-07-01", "2023-08-01", "month")]),
    ],
)
def test_a_question_names_a_day_a_week_a_month_or_a_year(question: str, expected: list[Any]) -> None:
    assert _periods(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "Did she say she may come?",  # a verb, not the month
        "Who won the march madness?",
        "Did she enjoy the sun at the beach?",
        "What will she do next week?",  # after now: nothing was said then yet
        "What inspired Joanna's new script?",
        "",
    ],
)
def test_words_that_are_not_a_time_in_the_past_name_no_period(question: str) -> None:
    assert _periods(question) == []


def test_time_is_read_in_the_languages_given() -> None:
    question = "Was hat Anna letzte Woche gemacht?"
    assert _periods(question) == []
    assert _periods(question, "en", "de") == [("2024-01-22", "2024-01-29", "week")]
    assert question_periods("What did I do last week?", NOW, ()) == ()


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"time_languages": ("en", "xx-nope")}, "dateparser does not know"),
        ({"time_languages": "en"}, "tuple of language codes"),
        ({"time_weight": -1.0}, "time_weight"),
        ({"time_weight": float("nan")}, "time_weight"),
        ({"time_after_days": -3.0}, "time_after_days"),
    ],
)
def test_a_bad_time_setting_is_refused_when_the_config_is_made(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        RetrievalConfig(**fields)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_question_reads_as_periods_or_none_quickly(question: str) -> None:
    started = time.perf_counter()
    for period in question_periods(question, NOW, ("en", "de", "fr")):
        assert period.start < period.end
        assert period.start <= NOW
    assert time.perf_counter() - started < 5.0  # bounded: no pathological parse of hostile text


_DATE_WORDS = [
    "in",
    "a",
    "an",
    "the",
    "of",
    "last",
    "next",
    "this",
    "week",
    "weeks",
    "month",
    "year",
    "may",
    "march",
    "june",
    "monday",
    "friday",
    "yesterday",
    "today",
    "tonight",
    "noon",
    "ago",
    "one",
    "two",
    "twenty",
    "fortnight",
    "morning",
    "early",
    "day",
    "before",
    "after",
    "from",
    "now",
    "est",
    "pst",
]
_OTHER_WORDS = ["Caroline", "went", "did", "what", "when", "her", "art", "get", "time", "pet", "s", "'s", "?"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_DATE_WORDS + _OTHER_WORDS) | st.text(max_size=8), max_size=9))
def test_the_cheap_check_never_hides_a_time_the_search_would_read(words: list[str]) -> None:
    """Questions without a date word skip dateparser's search (``when._may_name_a_date``); the
    periods read must be the same as with the search always run."""
    question = " ".join(words)
    base = NOW.replace(tzinfo=None)
    checked = when._periods.__wrapped__(question, base, ("en",))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(when, "_may_name_a_date", lambda query, languages: True)
        searched = when._periods.__wrapped__(question, base, ("en",))
    assert checked == searched


def _memory(weight: float) -> Memory:
    retrieval = RetrievalConfig(time_weight=weight, time_after_days=0.0)
    return Memory(recall=RecallConfig(retrieval=retrieval, min_relevance=None), embeddings=_embeddings())


def _embeddings() -> Any:
    from langmem_plugin.testing import FakeEmbeddings

    return FakeEmbeddings()


@pytest.fixture
def hikes() -> list[dict[str, Any]]:
    return [
        {
            "date": when,
            "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "Lovely!"}],
        }
        for when, text in HIKES
    ]


@pytest.fixture
def lifted(hikes: list[dict[str, Any]]) -> Iterator[Memory]:
    with _memory(2.0) as memory:
        memory.import_history(hikes, CONFIG)
        yield memory


def _first(recall: Any) -> str:
    return str(recall.items[0].content)


def test_the_memory_of_the_day_the_question_names_comes_first(lifted: Memory) -> None:
    recall = lifted.recall("Where did I go hiking on 10 July 2023?", CONFIG, as_of=NOW)
    assert "Dolomites" in _first(recall)
    lifts = {c.content.split(" with")[0]: dict(c.lifts) for c in recall.considered}
    timed = [text for text, added in lifts.items() if "time" in added]
    assert len(timed) == 1
    assert "Dolomites" in timed[0]
    assert lifts[timed[0]]["time"] == pytest.approx(2.0)


def test_a_month_lifts_every_memory_of_that_month(lifted: Memory) -> None:
    recall = lifted.recall("Where did I go hiking in October 2023?", CONFIG, as_of=NOW)
    assert "Olympus" in _first(recall)


def test_last_week_is_measured_from_as_of(lifted: Memory) -> None:
    recall = lifted.recall(
        "Where did I go hiking last week?", CONFIG, as_of="2023-04-08T09:00"
    )  # a Saturday: last week held the 2nd
    assert "Madeira" in _first(recall)
    assert any(dict(c.lifts).get("time") for c in recall.considered)


def test_without_the_time_weight_no_time_is_read(hikes: list[dict[str, Any]]) -> None:
    with _memory(0.0) as memory:
        memory.import_history(hikes, CONFIG)
        recall = memory.recall("Where did I go hiking on 10 July 2023?", CONFIG, as_of=NOW)
    assert not any("time" in dict(c.lifts) for c in recall.considered)


CHAT: RunnableConfig = {"configurable": {"thread_id": "chat", "user_id": "u2"}}


def _chat() -> list[dict[str, Any]]:
    return [
        {
            "date": "2023-05-08T10:00",
            "messages": [
                {"role": "Kevin", "content": "We adopted a puppy from the shelter last week."},
                {"role": "Elise", "content": "We adopted a puppy too, from a farm near Lyon."},
                {"role": "Kevin", "content": "Ours is a beagle called Max."},
            ],
        }
    ]


def _speaking(weight: float) -> Memory:
    retrieval = RetrievalConfig(speaker_weight=weight, neighbour_weight=0.0, group_weight=0.0)
    return Memory(recall=RecallConfig(retrieval=retrieval, min_relevance=None), embeddings=_embeddings())


@pytest.mark.parametrize(("asked", "said"), [("Elise", "Lyon"), ("Kevin", "shelter"), ("elise's", "Lyon")])
def test_what_the_named_speaker_said_comes_first(asked: str, said: str) -> None:
    with _speaking(3.0) as memory:
        memory.import_history(_chat(), CHAT, per="message")
        recall = memory.recall(f"Where did {asked} adopt a puppy from?", CHAT)
    assert said in _first(recall)
    lifted = [c for c in recall.considered if "speaker" in dict(c.lifts)]
    assert lifted
    assert all(dict(c.lifts)["speaker"] == pytest.approx(3.0) for c in lifted)


def test_a_question_naming_no_speaker_lifts_nothing() -> None:
    with _speaking(3.0) as memory:
        memory.import_history(_chat(), CHAT, per="message")
        recall = memory.recall("Where was the puppy adopted from?", CHAT)
    assert not any("speaker" in dict(c.lifts) for c in recall.considered)


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=60), st.text(max_size=200))
def test_any_speaker_name_and_question_lift_by_the_weight_or_not_at_all(name: str, question: str) -> None:
    from langmem_plugin.services.recall.signals import SPEAKERS

    lifted = SPEAKERS.lift(question, [name, ""], [0.0, 1.0], 0.7)
    assert lifted[0] in (0.0, 0.7)
    assert lifted[1] == 1.0


def test_recall_presets_trade_candidates_and_time_for_speed() -> None:
    from langmem_plugin.services.recall import RECALL_PRESETS

    assert RECALL_PRESETS == ("fast", "default", "best")
    fast, default, best = (RecallConfig.preset(name) for name in RECALL_PRESETS)
    assert default == RecallConfig()
    assert fast.retrieval is not None
    assert (fast.retrieval.candidates, fast.retrieval.time_weight) == (30, 0.0)
    assert best.retrieval is not None
    assert best.retrieval.candidates == 100
    assert RecallConfig.preset("fast", max_items=5).max_items == 5
    with pytest.raises(ConfigurationError, match="unknown recall preset 'quick'"):
        RecallConfig.preset("quick")


def test_a_preset_recalls_through_memory() -> None:
    with Memory(recall=RecallConfig.preset("fast"), embeddings=_embeddings()) as memory:
        memory.import_history(_chat(), CHAT, per="message")
        assert "Lyon" in memory.recall("Where did Elise adopt a puppy from?", CHAT).prompt
