"""The turn salience prior: which turns tell and which only react or ask back."""

from __future__ import annotations

import pytest

from langmem_plugin.bench.locomo.salience import (
    FEATURES,
    SALIENCE_WEIGHTS,
    memory_salience,
    salience_features,
    turn_salience,
)


def test_one_weight_per_feature() -> None:
    assert len(SALIENCE_WEIGHTS) == len(FEATURES) == len(salience_features("Hi there."))


@pytest.mark.parametrize(
    ("tells", "asks"),
    [
        (
            "I painted a sunset by the lake last week, it took me two whole days.",
            "Wow, that's so cool! What did you paint last week?",
        ),
        ("We adopted another puppy from the shelter, her name is Pixie.", "Did you adopt a puppy?"),
        (
            "Hey Dave! Guess what, I just got a new car and I love driving it around town.",
            "Thanks, you're the best! Your support means a lot to me.",
        ),
        ("My kids and I went camping at the beach and roasted marshmallows.", "Sounds great!"),
    ],
)
def test_a_turn_that_tells_scores_above_one_that_reacts_or_asks(tells: str, asks: str) -> None:
    assert turn_salience(tells) > turn_salience(asks)


def test_features_read_the_text_without_speaker_label_and_brackets() -> None:
    plain = salience_features("I finished my first marathon today!")
    assert (
        salience_features("Tim: I finished my first marathon today! [shares a photo of you and your dog]")
        == plain
    )
    names = dict(zip(FEATURES, plain, strict=True))
    assert names["asks_last"] == 0.0
    assert names["more_self"] == 1.0
    assert names["listener_words"] == 0.0
    assert names["exclamation"] == 1.0


def test_question_features() -> None:
    names = dict(
        zip(FEATURES, salience_features("I moved. Where do you live now? How is work?"), strict=True)
    )
    assert names["asks_last"] == 1.0
    assert names["asks_share"] == pytest.approx(2 / 3)


def test_memory_salience_reads_content() -> None:
    assert memory_salience({"content": "I adopted a cat."}) == turn_salience("I adopted a cat.")
    assert memory_salience({"content": 3}) == 0.0
    assert memory_salience({}) == 0.0
    assert turn_salience("") == turn_salience("   ")
