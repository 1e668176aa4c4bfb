"""Remember never rejects or loses a long exchange: passages, all searchable, rebuilt exactly."""

from __future__ import annotations

import random

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services import MemoryLayout, execute
from langmem_plugin.services.recall.passages import focus_window, join_passages, split_passages
from langmem_plugin.services.remember.episodes import (
    EPISODE_PART_FIELDS,
    PASSAGE_CATEGORY,
    RememberConfig,
    episode_text_steps,
    passage_key,
    remember_steps,
)
from langmem_plugin.services.remember.exchanges import episode_from_messages
from tests.memory_fixtures import Runner, fake_store

EPISODES_NS = ("memories", "user", "alice")  # the run names a user: user memory
_WORDS = [
    "tea",
    "garden",
    "river",
    "stone",
    "violin",
    "harbour",
    "lantern",
    "cedar",
    "meadow",
    "quartz",
    "falcon",
    "ember",
]


def _long_answer(chars: int = 76_560, seed: int = 3) -> str:
    """A long answer of sentences, paragraphs, a list and one very long unbroken token."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    n = 0
    while size < chars:
        n += 1
        if n % 17 == 0:
            piece = "\n\n- item " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9))) + "\n"
        elif n % 101 == 0:
            piece = "x" * 3000 + " "  # a token-dense blob with no sentence end
        else:
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 30)))
            piece = f"Sentence {n} says {words}{rng.choice('.!?')} "
        parts.append(piece)
        size += len(piece)
    return "".join(parts)[:chars]


def test_split_passages_rebuilds_any_text_and_fits() -> None:
    text = _long_answer(20_000)
    passages = split_passages(text, max_tokens=120, overlap_tokens=20)
    assert len(passages) > 10
    assert join_passages((p.text, p.overlap) for p in passages) == text
    assert all(count_tokens(p.text) <= 120 + 8 for p in passages)  # sums of sentence counts ~ the whole
    assert any(p.overlap > 0 for p in passages[1:])  # neighbours share a sentence
    for p in passages:
        assert text[p.offset : p.offset + len(p.text)] == p.text
    for tricky in ["", "short.", "a" * 5000, "日本語の文章です。" * 400, "no ends " * 900]:
        cut = split_passages(tricky, max_tokens=64, overlap_tokens=8)
        assert join_passages((p.text, p.overlap) for p in cut) == tricky


def test_focus_window_is_the_earliest_run_of_sentences_holding_the_most_query_words() -> None:
    text = _long_answer(6_000)
    needle = "The violinist Zarathustra tuned the viola with a brass fork."
    at = len(text) // 2
    at = text.index(" ", at) + 1
    text = text[:at] + needle + " " + text[at:]
    start, end = focus_window(text, "who tuned the viola with a fork?", 60)
    shown = text[start:end]
    assert needle in shown
    assert count_tokens(shown) <= 60 + 8
    assert start > 0
    # no query word anywhere: the head, as a cut from the start would give
    head_start, head_end = focus_window(text, "xylophones quokkas", 60)
    assert head_start == 0
    assert head_end < len(text)
    assert count_tokens(text[:head_end]) <= 60 + 8
    for tricky in ["", "short.", "a" * 5000, "日本語の文章です。" * 400, "no ends " * 900]:
        a, b = focus_window(tricky, "文章 ends", 32)
        assert 0 <= a <= b <= len(tricky)
        assert tricky[a:b] or not tricky


def test_config_rejects_bad_passage_sizes() -> None:
    with pytest.raises(ConfigurationError):
        RememberConfig(passage_tokens=4)
    with pytest.raises(ConfigurationError):
        RememberConfig(passage_tokens=100, passage_overlap_tokens=60)
    with pytest.raises(ConfigurationError):
        RememberConfig(index_fields=())


def test_a_76560_character_answer_is_stored_whole(run: Runner, store: InMemoryStore, scope: Scope) -> None:
    answer = _long_answer()
    assert len(answer) == 76_560
    messages = [HumanMessage("Tell me everything about the harbour.", id="h1"), AIMessage(answer, id="a1")]
    episode = episode_from_messages(messages)
    assert episode is not None
    layout = MemoryLayout()
    run(remember_steps(scope, layout, episode))
    key = episode.key(scope)
    head = store.get(EPISODES_NS, key)
    assert head is not None
    assert len(head.value["content"]) <= layout.limits_for("user").max_chars
    count = int(head.value["metadata"]["passages"])
    assert count > 50
    whole = run(episode_text_steps(EPISODES_NS, key))
    assert whole == episode.text()
    assert whole.endswith(answer)
    # every passage is its own searchable item, linked to its episode
    for n in (0, count // 2, count - 1):
        item = store.get(EPISODES_NS, passage_key(key, n))
        assert item is not None
        meta = item.value["metadata"]
        assert (meta["episode"], meta["passage"], meta["passages"]) == (key, str(n), str(count))
        assert item.value["category"] == PASSAGE_CATEGORY
        assert item.value["kind"] == "episode"
        hits = store.search(EPISODES_NS, query=item.value["content"], limit=3)
        assert passage_key(key, n) in [h.key for h in hits]
    # a replay writes the same items, no more
    run(remember_steps(scope, layout, episode))
    assert len(store.search(EPISODES_NS, limit=1000)) == count + 1


def test_short_exchange_has_no_passages_and_carries_its_fields(store: InMemoryStore, scope: Scope) -> None:
    messages = [
        HumanMessage("Hello there, how are you today?", id="h0"),
        AIMessage("Fine, thank you. And you?", id="a0"),
        HumanMessage("I adopted a cat last week. Her name is Luna.", id="h1", name="ann"),
        AIMessage("What a lovely name for a cat! How is she settling in?", id="a1"),
    ]
    episode = episode_from_messages(messages)
    assert episode is not None
    execute(store, remember_steps(scope, MemoryLayout(), episode))
    (item,) = [i for i in store.search(EPISODES_NS) if i.key == episode.key(scope)]
    meta = item.value["metadata"]
    assert "passages" not in meta
    first = episode_from_messages(messages[:2])
    assert first is not None
    assert meta["previous"] == meta["neighbours"] == first.key(scope)
    assert meta["position"] == "1"
    assert meta["speaker"] == "ann"
    assert meta["thread_id"] == "t1"
    assert meta["context"].startswith("User: Hello there")
    assert meta["part_1"] == "User: I adopted a cat last week."
    assert meta["time"] == item.value["created_at"]
    assert meta["message_ids"] == "h1 a1"


def test_sentences_can_be_embedded_as_several_vectors(scope: Scope) -> None:
    store = InMemoryStore(
        index={"embed": fake_store().index_config["embed"], "dims": 256, "fields": ["content"]}  # type: ignore[index]
    )
    config = RememberConfig(index_fields=("content", *EPISODE_PART_FIELDS))
    episode = episode_from_messages(
        [
            HumanMessage("My sister lives in Lisbon with three dogs."),
            AIMessage("Lisbon is a sunny city to live in."),
        ]
    )
    assert episode is not None
    execute(store, remember_steps(scope, MemoryLayout(), episode, config=config))
    hits = store.search(EPISODES_NS, query="sister lives in Lisbon with three dogs")
    assert hits
    assert hits[0].key == episode.key(scope)


def test_hostile_text_is_stored_not_rejected(store: InMemoryStore, scope: Scope) -> None:
    tools = tuple(f"tool_{n}_{'x' * 80}" for n in range(40))
    calls = [{"name": t, "args": {}, "id": f"c{n}"} for n, t in enumerate(tools)]
    messages = [
        HumanMessage("bad \ud800 text " + "y" * 30_000),
        AIMessage("", tool_calls=calls),
        AIMessage("done " * 4000),
    ]
    episode = episode_from_messages(messages)
    assert episode is not None
    execute(store, remember_steps(scope, MemoryLayout(), episode))
    item = store.get(EPISODES_NS, episode.key(scope))
    assert item is not None
    assert "\ufffd" in item.value["content"]
    assert len(item.value["tags"]) == 32
