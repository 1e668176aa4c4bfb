"""The budget spent where the question needs it (issue 36 item 3).

A question that aggregates or hops gets more items and shorter ones (a long memory shown as the
window of it around the question's words), a near duplicate takes no slot, and the shape reader
takes any text. Real ``Memory()`` (embedded Qdrant, the offline MiniLM) for the recall tests.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from langmem_plugin import Memory, RecallConfig
from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services import MemoryLayout, TokenBudgets, execute, save_steps
from langmem_plugin.services.layout import Compartment
from langmem_plugin.services.operations import StoredMemory
from langmem_plugin.services.recall.fit import FIT_BEFORE, FIT_SHAPED, FitConfig, MemoriesFitter
from langmem_plugin.services.recall.shape import SHAPE_CUES, QuestionShape, question_shape

CONFIG: Any = {"configurable": {"user_id": "sam", "thread_id": "now"}}
OLD: Any = {"configurable": {"user_id": "sam", "thread_id": "old"}}
WORDS = [
    "garden", "weather", "morning", "coffee", "train", "office", "meeting", "window", "kitchen",
    "river", "bicycle", "evening", "neighbour", "market", "bread", "summer", "letter", "music",
    "teacher", "street", "holiday", "mountain",
]  # fmt: skip

# --- the shape of a question -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "cues"),
    [
        ("What books has Tim read?", ("plural",)),
        ("What do Jon and Gina both have in common?", ("several people", "both")),
        ("Did Kate & Elise go skiing?", ("several people",)),
        ("How many times did Kevin play basketball?", ("count",)),
        ("List all the times Sam went to the dentist", ("both", "count")),
        ("Who has traveled the most?", ("comparison", "plural")),
        ("Is Emi's apartment bigger than Paola's?", ("comparison",)),
        ("What kind of foods or recipes has Sam recommended?", ("plural",)),
        ("What are Paola's hobbies?", ("plural",)),
    ],
)
def test_questions_that_aggregate_or_hop_are_wide(question: str, cues: tuple[str, ...]) -> None:
    shape = question_shape(question)
    assert shape.cues == cues
    assert shape.wide


@pytest.mark.parametrize(
    "question",
    [
        "When did Melanie paint a sunrise?",
        "What is Joanna's project called?",
        "Where does my sister live?",
        "When did Dave return from San Francisco?",  # two capitalised words, not two people
        "Why does Sam like his bus?",  # a word in -s that is no plural
        "¿Qué libros ha leído Tim?",  # another language: read as narrow, fitted as before
        "",
    ],
)
def test_questions_about_one_thing_are_narrow(question: str) -> None:
    assert question_shape(question) == QuestionShape()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_has_a_shape_and_spacing_does_not_change_it(text: str) -> None:
    shape = question_shape(text)
    assert set(shape.cues) <= set(SHAPE_CUES)
    assert list(shape.cues) == sorted(shape.cues, key=SHAPE_CUES.index)  # each once, in order
    assert question_shape(text) == shape
    assert question_shape(re.sub(r"\s+", "   ", text)) == shape
    assert question_shape(text + " both").wide  # a cue at the end is always read


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["And", "and", "&", "What", "s", "'", "’", "in", "common", "\x00", "ß", "İ"]))
)
def test_odd_words_and_joins_never_break_the_reader(words: list[str]) -> None:
    shape = question_shape(" ".join(words))
    assert set(shape.cues) <= set(SHAPE_CUES)


def test_a_huge_message_is_read_in_linear_time() -> None:
    junk = "Ann and Bo and " * 50_000 + "What " * 50_000 + "\u202e\ufeff" * 10_000
    start = time.perf_counter()
    assert question_shape(junk) == QuestionShape()  # its last part holds no word
    assert question_shape(junk + " Did Ann and Bo meet?").cues == ("several people",)
    assert time.perf_counter() - start < 2.0


def test_fit_config_refuses_nonsense_with_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="wide_share"):
        FitConfig(wide_share=0)
    with pytest.raises(ConfigurationError, match="wide_items"):
        FitConfig(wide_items=0.5)
    with pytest.raises(ConfigurationError, match=r"near_duplicate.*None \(off\)"):
        FitConfig(near_duplicate=1.5)
    with pytest.raises(ConfigurationError, match="fill"):
        FitConfig(fill=-1)


# --- the window of a long memory ---------------------------------------------------------------


def _filler(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))).capitalize() + "."
        for _ in range(sentences)
    )


def _stored(content: str, key: str, *, kind: MemoryKind = MemoryKind.FACT, day: int = 1) -> StoredMemory:
    when = datetime(2024, 3, day, tzinfo=UTC)
    record = MemoryRecord(content=content, kind=kind, created_at=when, updated_at=when)
    return StoredMemory(key, Compartment.USER, ("memories", "user", "sam"), record, 1.0)


@pytest.mark.parametrize("budget", [120, 200, 350, 550, 900])
@pytest.mark.parametrize("question", ["Which cats and dogs has Sam had?", "What is the name of Sam's cat?"])
def test_a_long_memory_shows_its_matching_sentence_within_the_budget(budget: int, question: str) -> None:
    rng = random.Random(budget)
    sentence = "My cat is called Miso and she sleeps on the piano."
    content = f"{_filler(rng, 25)} {sentence} {_filler(rng, 25)}"
    assert count_tokens(content) > 600
    fitter = MemoriesFitter(budget, None, question, FIT_SHAPED)
    cost = fitter.add(_stored(content, "long"))
    assert cost is not None
    assert fitter.used <= budget
    text = fitter.text()
    assert count_tokens(text) <= budget
    line = text.splitlines()[1]
    shown = json.loads(line[line.rindex(') "') + 2 :])
    assert sentence in shown
    assert 'cut "tokens ' in line  # and the fence says which tokens of how many it shows
    share = FIT_SHAPED.wide_share if question_shape(question).wide else FIT_SHAPED.most_share
    assert count_tokens(shown) <= max(budget // share, 16)


def test_a_wide_question_gets_more_and_shorter_items_than_before() -> None:
    rng = random.Random(7)
    memories = [
        _stored(f"{_filler(rng, 4)} I read the book number {n} this week. {_filler(rng, 4)}", f"m{n}")
        for n in range(30)
    ]
    wide = "What books has Sam read?"
    before, shaped = MemoriesFitter(550, None, wide, FIT_BEFORE), MemoriesFitter(550, None, wide, FIT_SHAPED)
    for fitter in (before, shaped):
        for memory in memories:
            fitter.add(memory)
        assert fitter.used <= 550
    assert len(shaped.facts) > len(before.facts)
    assert shaped.item_limit(20) == 30
    assert before.item_limit(20) == 20
    assert all("I read the book number" in line for line in shaped.facts)  # each its matching window
    narrow = MemoriesFitter(550, None, "What is the book called?", FIT_SHAPED)
    assert narrow.most == before.most  # a narrow question: as before
    assert narrow.item_limit(20) == 20


def test_what_does_not_fit_whole_is_shown_as_its_window_in_what_is_left_when_fill_is_set() -> None:
    rng = random.Random(3)
    sentence = "The spare key is under the blue flowerpot."
    long = _stored(f"{_filler(rng, 12)} {sentence} {_filler(rng, 12)}", "long")
    words: list[str] = []
    while count_tokens(" ".join(words)) < 195:  # the first memory takes about 210 of the 300 tokens
        words.append(rng.choice(WORDS))
    first = _stored(" ".join(words), "first")
    for fill, shown in ((0, False), (32, True)):
        fitter = MemoriesFitter(
            300,
            None,
            "Where is the spare key?",
            dataclasses.replace(FIT_SHAPED, fill=fill, near_duplicate=None),
        )
        fitter.most = 1000
        assert fitter.add(first) is not None
        fitter.most = 100  # the second, at its cap, needs more than is left
        cost = fitter.add(long)
        assert (cost is not None) is shown
        assert fitter.used <= 300
        assert count_tokens(fitter.text()) <= 300
        assert (sentence in fitter.text()) is shown
        if not shown:
            assert fitter.refusal == "over budget"


# --- near duplicates ---------------------------------------------------------------------------


def test_near_duplicates_take_one_slot_and_the_same_words_another_day_take_two() -> None:
    fitter = MemoriesFitter(550, None, "Where does Ana live?", FIT_SHAPED)
    assert fitter.add(_stored("Sam's sister Ana lives in Porto and teaches piano.", "a")) is not None
    assert fitter.add(_stored("Sam's sister Ana lives in Porto, and she teaches the piano!", "b")) is None
    assert fitter.refusal == "duplicate"
    assert fitter.add(_stored("Ana lives in Porto.", "c")) is not None  # a part of it: not a near duplicate
    episode = MemoryKind.EPISODE
    swim = "I went swimming in the cold lake with Ana before breakfast today."
    assert fitter.add(_stored(swim, "d", kind=episode, day=2)) is not None
    again = "Went swimming in the cold lake with Ana before breakfast today!"
    assert fitter.add(_stored(again, "e", kind=episode, day=9)) is not None  # another day: another swim
    same_day = "Went swimming in the lake with Ana today, before breakfast, cold!"
    assert fitter.add(_stored(same_day, "f", kind=episode, day=9)) is None
    before = MemoriesFitter(550, None, "Where does Ana live?", FIT_BEFORE)
    before.add(_stored("Sam's sister Ana lives in Porto and teaches piano.", "a"))
    assert before.add(_stored("Sam's sister Ana lives in Porto, and she teaches the piano!", "b")) is not None


def test_a_question_and_the_answer_it_asks_about_are_not_near_duplicates() -> None:
    fitter = MemoriesFitter(550, None, "Which tea do I like?", FIT_SHAPED)
    asked = _stored("User: Which tea do I like?\nAssistant: Noted!", "q", kind=MemoryKind.EPISODE)
    said = _stored("User: I like green tea\nAssistant: Noted!", "a", kind=MemoryKind.EPISODE)
    assert fitter.add(asked) is not None
    assert fitter.add(said) is not None  # the same words, but too few to call it a repeat


@pytest.fixture(scope="module")
def memory() -> Any:
    with Memory() as memory:
        yield memory


def test_a_real_recall_shows_a_near_duplicate_once_and_says_why(memory: Memory) -> None:
    scope = Scope.from_config(CONFIG)
    kept = execute(
        memory.store, save_steps(scope, MemoryLayout(), "Sam's sister Ana lives in Porto and teaches piano.")
    )
    again = execute(
        memory.store, save_steps(scope, MemoryLayout(), "Sam's sister Ana lives in Porto, teaching piano!")
    )
    shaped = Memory(memory.store, recall=RecallConfig(fit=FIT_SHAPED))
    recall = shaped.recall([HumanMessage("Where does Sam's sister Ana live?")], CONFIG)
    injected = {item.id for item in recall.items}
    assert len(injected & {kept.id, again.id}) == 1
    outcomes = {c.id: c.outcome for c in recall.considered}
    assert sorted(outcomes[i] for i in (kept.id, again.id)) == ["duplicate", "injected"]
    plain = Memory(memory.store, recall=RecallConfig(fit=FIT_BEFORE)).recall(
        [HumanMessage("Where does Sam's sister Ana live?")], CONFIG
    )
    assert {kept.id, again.id} <= {item.id for item in plain.items}


def test_a_real_recall_gives_a_wide_question_more_windows_within_the_budget(memory: Memory) -> None:
    rng = random.Random(5)
    titles = ["Dune", "Emma", "Ulysses", "Beloved", "Middlemarch", "Rebecca", "Persuasion", "Kindred",
              "Solaris", "Possession", "Atonement", "Gilead", "Hamnet", "Matilda"]  # fmt: skip
    start = datetime(2024, 1, 1)
    history = [
        {
            "date": (start + timedelta(days=7 * n)).strftime("%Y-%m-%d"),
            "messages": [
                {
                    "role": "user",
                    "content": f"{_filler(rng, 5)} I finished reading the novel {title}. {_filler(rng, 5)}",
                },
                {"role": "assistant", "content": "Noted."},
            ],
        }
        for n, title in enumerate(titles)
    ]
    memory.import_history(history, OLD, per="message")
    question = "What novels have I finished reading?"
    assert question_shape(question).wide
    before = Memory(memory.store, recall=RecallConfig(fit=FIT_BEFORE)).recall(
        [HumanMessage(question)], CONFIG
    )
    shaped = Memory(memory.store, recall=RecallConfig(fit=FIT_SHAPED)).recall(
        [HumanMessage(question)], CONFIG
    )
    budget = TokenBudgets().memories
    for recall in (before, shaped):
        assert recall.tokens["memories"] <= budget

    def titles_in(prompt: str) -> set[str]:
        return {t for t in titles if f"I finished reading the novel {t}." in prompt}

    assert len(titles_in(shaped.prompt)) > len(titles_in(before.prompt))
    assert 'cut "tokens' in shaped.prompt  # each long exchange shown as its window, with where it was cut


def test_a_memory_a_little_over_its_share_is_shown_whole_when_cutting_would_not_save() -> None:
    rng = random.Random(11)
    words: list[str] = []
    while count_tokens(" ".join(words)) < 60:  # a little over a tenth of 550 (55)
        words.append(rng.choice(WORDS))
    memory = _stored(" ".join(words) + ".", "slightly-long")
    wide = "Which gardens and markets did Sam visit?"
    cut = MemoriesFitter(550, None, wide, dataclasses.replace(FIT_SHAPED, cut_saves=0))
    whole = MemoriesFitter(550, None, wide, FIT_SHAPED)  # cut_saves=16
    cut_cost, whole_cost = cut.add(memory), whole.add(memory)
    assert cut_cost is not None
    assert whole_cost is not None
    assert 'cut "tokens' in cut.text()
    assert 'cut "tokens' not in whole.text()
    assert " ".join(words) + "." in whole.text()  # whole: a window would save too little to pay its fields
