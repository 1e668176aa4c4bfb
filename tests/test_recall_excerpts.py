"""How recall shows past exchanges: under their day, in the order they were said, without ids."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, QdrantStore, memory_index
from langmem_plugin.core.fence import entry
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.services import MemoryLayout, RecallConfig, TokenBudgets, execute, save_steps
from langmem_plugin.testing import FakeEmbeddings

CONFIG: Any = {"configurable": {"user_id": "sam", "thread_id": "now"}}
HISTORY = [
    {
        "date": "2023-06-02",
        "messages": [
            {"role": "Sam", "content": "The cello lesson moved to Friday."},
            {"role": "Ana", "content": "Friday works, the cello is tuned."},
        ],
    },
    {
        "date": "2023-05-08",
        "messages": [
            {"role": "Sam", "content": "I bought a cello today."},
            {"role": "Ana", "content": "A cello! Which maker?"},
            {"role": "Sam", "content": "A German one, from 1920."},
        ],
    },
]


def _memory(**recall: Any) -> Memory:
    store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    memory = Memory(store, recall=RecallConfig(min_relevance=None, **recall))
    old_thread: Any = {"configurable": {"user_id": "sam", "thread_id": "old"}}
    report = memory.import_history(HISTORY, old_thread, per="message")
    assert report.written == 5, report
    return memory


def test_exchanges_are_grouped_by_day_in_the_order_they_were_said() -> None:
    memory = _memory()
    scope = Scope.from_config(CONFIG)
    cello = save_steps(scope, MemoryLayout(), "Sam plays the cello", category="hobbies")
    saved = execute(memory.store, cello)
    recall = memory.recall([HumanMessage("cello")], CONFIG)
    lines = recall.prompt.splitlines()[2:-1]
    assert lines == [
        "[memories about this user and conversation]",
        entry("Sam plays the cello", id=saved.id, category="hobbies"),  # a saved memory keeps its id
        "[past conversation, by date]",
        '(date "2023-05-08")',
        '- "Sam: I bought a cello today."',
        '- "Ana: A cello! Which maker?"',
        '- "Sam: A German one, from 1920."',
        '(date "2023-06-02")',
        '- "Sam: The cello lesson moved to Friday."',
        '- "Ana: Friday works, the cello is tuned."',
    ]
    # the record keeps the rank order and every item's id, for state and the tools
    assert len(recall.items) == 6
    assert all(i.id for i in recall.items)
    assert json.loads(lines[4][2:]) == "Sam: I bought a cello today."


def test_the_headings_are_paid_for_within_the_budget() -> None:
    full = _memory().recall([HumanMessage("cello")], CONFIG)
    section = full.tokens["memories"]
    for budget in range(section - 12, section + 1):
        recall = _memory(budgets=TokenBudgets(memories=budget)).recall([HumanMessage("cello")], CONFIG)
        assert recall.tokens["memories"] <= budget
        body = recall.prompt.splitlines()[2:-1]
        assert count_tokens("\n".join(body)) == recall.tokens["memories"]
        heads = [i for i, line in enumerate(body) if line.startswith("(date ")]
        assert all(body[i + 1].startswith("- ") for i in heads)  # no day is shown without an exchange
        assert sum(i.tokens for i in recall.items) >= recall.tokens["memories"] - 1
    assert full.tokens["memories"] == sum(i.tokens for i in full.items)


def test_a_memory_longer_than_a_fifth_of_the_budget_shows_the_sentences_the_question_names() -> None:
    memory = _memory(budgets=TokenBudgets(memories=300))
    steps = [f"Step {n}: turn the peg of string {n % 4} a little." for n in range(12)]
    steps[8] = "Step 8: the A string is tuned with a tuning fork."
    answer = " ".join(steps)
    long_ask: Any = {"configurable": {"user_id": "sam", "thread_id": "lesson"}}
    memory.import_history(
        [{"role": "user", "content": "How do I set up a cello?"}, {"role": "assistant", "content": answer}],
        long_ask,
    )
    text = f"User: How do I set up a cello?\nAssistant: {answer}"
    assert 60 < count_tokens(text) <= 180  # longer than a fifth of 300, and in no passages
    recall = memory.recall([HumanMessage("which tuning fork for the A string?")], CONFIG)
    cut = [line for line in recall.prompt.splitlines() if ', cut "tokens ' in line]
    assert len(cut) == 1  # the long exchange is shown, cut, not left out
    key = json.loads(cut[0].split("(id ", 1)[1].split(", cut", 1)[0])
    stored = memory.store.get(("memories", "user", "sam"), key)
    assert stored is not None
    assert stored.value["content"] == text
    shown = json.loads(cut[0].split(") ", 1)[1])
    assert "the A string is tuned with a tuning fork." in shown  # the sentences the question names
    assert shown in text
    assert count_tokens(shown) <= 60
    first, last, total = map(int, re.fullmatch(r'.*cut "tokens (\d+)-(\d+) of (\d+)"\).*', cut[0]).groups())
    assert 1 < first <= last <= total == count_tokens(text)
    assert first == count_tokens(text[: text.index(shown)]) + 1
    assert recall.tokens["memories"] <= 300


def test_a_long_exchange_shows_each_of_its_parts_once_naming_the_episode(tmp_path: Path) -> None:
    store = QdrantStore(path=tmp_path / "q", index=memory_index(FakeEmbeddings(64)))
    memory = Memory(store, recall=RecallConfig(min_relevance=None))
    answer = " ".join(f"Step {n}: tune the cello string number {n % 4} a little." for n in range(60))
    long_ask: Any = {"configurable": {"user_id": "sam", "thread_id": "lesson"}}
    memory.import_history(
        [{"role": "user", "content": "How do I tune a cello?"}, {"role": "assistant", "content": answer}],
        long_ask,
    )
    recall = memory.recall([HumanMessage("how do I tune the cello")], CONFIG)
    parts = [line for line in recall.prompt.splitlines() if ', part "' in line]
    assert parts  # the long exchange is shown, in passages
    ids = {json.loads(line.split("(id ", 1)[1].split(", part", 1)[0]) for line in parts}
    assert len(ids) == 1  # every part names the episode, which the memory tools read
    (key,) = ids
    stored = memory.store.get(("memories", "user", "sam"), key)
    assert stored is not None
    assert stored.value["kind"] == "episode"
    count = int(stored.value["metadata"]["passages"])
    numbers = [line.split(', part "', 1)[1].split(" of ", 1)[0] for line in parts]
    assert len(numbers) == len(set(numbers))  # the episode's head is its first part: never shown twice
    assert all(f' of {count}"' in line for line in parts)
    texts = [json.loads(line.split(") ", 1)[1]) for line in parts]
    assert all(count_tokens(text) <= TokenBudgets().memories // 5 for text in texts)
    assert all(text in f"User: How do I tune a cello?\nAssistant: {answer}" for text in texts)
    shown = [i for i in recall.items if i.id == key or i.id.startswith(f"{key}-p")]
    assert len(shown) == len(parts)  # the record names what the fence shows, in rank order
    memory.close()
    store.close()
