"""The LoCoMo harness end to end on a tiny synthetic LoCoMo-shaped file (the real data is not needed)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin.bench.locomo import (
    CATEGORIES,
    KS,
    LOCOMO_RETRIEVAL,
    LOCOMO_RETRIEVAL_FAST,
    conversation_text,
    injected_text,
    load_locomo,
    normalise_evidence,
    run_locomo_bench,
    turn_value,
)
from langmem_plugin.cli import main
from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.testing import FakeEmbeddings


def _turn(speaker: str, dia_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


SAMPLES: list[dict[str, Any]] = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("Ann", "D1:1", "Hey Bo! How have you been?"),
                _turn("Bo", "D1:2", "Busy! I adopted a puppy named Biscuit."),
                _turn("Ann", "D1:3", "Lovely. I started pottery classes on Saturday."),
                _turn(
                    "Bo",
                    "D1:4",
                    "Look at this.",
                    blip_caption="a photo of a sunset over a lake",
                    query="sunset lake",
                ),
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                _turn("Ann", "D2:1", "My marathon training in Boston is going well."),
                _turn("Bo", "D2:2", "Great! Biscuit chewed my violin case yesterday."),
                _turn("Ann", "D2:3", "Oh no. Is the violin okay?"),
                _turn("Bo", "D2:4", "Bye!"),
                _turn("Ann", "D2:5", "Bye!"),  # a repeated text in one conversation
            ],
        },
        "qa": [
            {"question": "What is the name of the puppy?", "evidence": ["D1:2"], "category": 4},
            {"question": "When did Ann start pottery?", "evidence": ["D1:3"], "category": 2},
            # malformed: two ids in one string, and a zero-padded turn number
            {"question": "What did Biscuit do?", "evidence": ["D1:2; D2:02"], "category": 1},
            {"question": "Where is the marathon?", "evidence": ["D2:1"], "category": 3},
            # one id that exists and one that does not (a removed turn): skipped and counted
            {"question": "Where does Bo's sister live?", "evidence": ["D2:1", "D9:9"], "category": 3},
            {
                "question": "What did Ann adopt?",
                "evidence": ["D1:2"],
                "category": 5,
                "adversarial_answer": "x",
            },
            # no parseable evidence: skipped and counted
            {"question": "Anything else?", "evidence": ["D"], "category": 4},
        ],
    },
    {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Cy",
            "speaker_b": "Di",
            "session_1_date_time": "9:00 am on 1 January, 2024",
            "session_1": [
                _turn("Cy", "D1:1", "I moved to Lisbon last month."),
                _turn("Di", "D1:2", "Nice! I got a kayak for the river."),
            ],
        },
        "qa": [
            {"question": "Which city did Cy move to, Lisbon?", "evidence": ["D:1:1"], "category": 4},
        ],
    },
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps(SAMPLES))
    return path


ORDER = ["D8:6", "D9:1", "D9:17", "D4:4", "D4:6", "D11:26", "D30:5", "D1:3"]


def test_normalise_evidence_splits_and_normalises() -> None:
    def ids(*raw: str) -> tuple[str, ...]:
        evidence = normalise_evidence(raw, ORDER)
        assert evidence.missing == ()
        return evidence.ids

    assert ids("D8:6; D9:17") == ("D8:6", "D9:17")
    assert ids("D9:1 D4:4 D4:6") == ("D9:1", "D4:4", "D4:6")
    assert ids("D:11:26", "D30:05") == ("D11:26", "D30:5")
    assert ids("D", "") == ()
    assert ids("D1:3", "D1:3") == ("D1:3",)
    # a range runs in the conversation's order, whatever the numbers say
    assert ids("D9:17-D4:6") == ("D9:17", "D4:4", "D4:6")
    assert ids("D9:17 - D4:4.") == ("D9:17", "D4:4")
    # what names no turn is missing, never guessed
    assert normalise_evidence(["D9:9", "D17;39", "D8:6-D99:1"], ORDER).missing == (
        "D9:9",
        "D17",
        "39",
        "D8:6-D99:1",
    )


def test_load_parses_turns_sessions_questions(data: Path) -> None:
    a, b = load_locomo(data)
    assert a.sample_id == "conv-a"
    assert [t.dia_id for t in a.turns] == [
        "D1:1",
        "D1:2",
        "D1:3",
        "D1:4",
        "D2:1",
        "D2:2",
        "D2:3",
        "D2:4",
        "D2:5",
    ]
    assert a.turns[4].session == 2
    assert a.turns[4].date == "10:37 am on 27 June, 2023"
    assert a.turns[3].line == "Bo: Look at this. [shares a photo of a sunset over a lake]"
    assert len(a.questions) == 5
    assert a.skipped == 2
    assert a.questions[2].evidence == ("D1:2", "D2:2")
    assert b.questions[0].evidence == ("D1:1",)


def test_turn_value_is_a_memory_record_with_context_and_date(data: Path) -> None:
    conv = load_locomo(data)[0]
    value = turn_value(conv.turns[1], conv.turns[0], conv.turns[2])
    record = MemoryRecord.from_value(value)
    assert record.metadata["neighbours"] == "D1:1 D1:3"
    assert record.content == "Bo: Busy! I adopted a puppy named Biscuit."
    assert record.metadata["context"] == "Ann: Hey Bo! How have you been?"
    assert record.metadata["dia_id"] == "D1:2"
    assert record.created_at.year == 2023
    assert (record.created_at.month, record.created_at.day, record.created_at.hour) == (5, 8, 13)
    # each sentence of three words or more is embedded alone too (short ones such as "Busy!" are not)
    assert record.metadata["part_1"] == "I adopted a puppy named Biscuit."
    assert "part_2" not in record.metadata
    # the first turn of a session has no context from the session before
    first = turn_value(conv.turns[4], conv.turns[3], conv.turns[5])["metadata"]
    assert "context" not in first
    assert first["neighbours"] == "D2:2"


def test_conversation_text_has_every_turn_and_session_date(data: Path) -> None:
    conv = load_locomo(data)[0]
    text = conversation_text(conv)
    assert text.count("\n") == len(conv.turns) + 2 - 1  # two session lines
    assert "Session 2 (10:37 am on 27 June, 2023)" in text
    assert "Ann: Oh no. Is the violin okay?" in text


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("not json", "not JSON"),
        ('{"a": 1}', "list of samples"),
        ('[{"conversation": {}}]', "not LoCoMo-shaped"),
    ],
)
def test_bad_files_are_typed_errors(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=needle):
        load_locomo(path)
    with pytest.raises(ConfigurationError, match="--data"):
        load_locomo(tmp_path / "missing.json")


def test_run_end_to_end_recall_categories_and_tokens(data: Path) -> None:
    result = run_locomo_bench(
        data,
        variants=("bm25-turns", "bm25", "inmemory", "qdrant", "dense-clean", "qdrant-fast"),
        embeddings=FakeEmbeddings(64),
    )
    assert (result.conversations, result.questions, result.skipped, result.turns) == (2, 6, 2, 11)
    assert (result.dataset, result.categories) == ("LoCoMo", CATEGORIES)
    convs = load_locomo(data)
    expected_full = sum(count_tokens(conversation_text(c), model="gpt-4") for c in convs) / 2
    assert result.full_tokens == pytest.approx(expected_full)

    lexical = result.variants[0]
    assert lexical.name == "BM25 only (turn text)"
    assert lexical.categories == [4, 2, 1, 3, 5, 4]
    assert len(lexical.seconds) == 6
    # every question's evidence turn is found by its words (the question naming a removed turn
    # was skipped, so none is capped below 1)
    for k in KS:
        assert lexical.recall[k] == [1.0] * 6
        assert lexical.mean_recall(k, 3) == pytest.approx(100.0)
        assert lexical.mean_recall(k) == pytest.approx(100.0)
    assert set(CATEGORIES) == {1, 2, 3, 4, 5}

    # "Which city did Cy move to, Lisbon?" shares words with the Lisbon turn only (BM25 over turns):
    # what is injected at any k is that one turn, counted in cl100k.
    lisbon = turn_value(convs[1].turns[0], None)
    only = count_tokens(injected_text([lisbon]), model="gpt-4")
    assert [lexical.tokens[k][5] for k in KS] == [only, only, only]

    # hybrid returns every turn at k=25 (at most 9 per conversation); tokens grow with k
    hybrid = result.variants[3]
    assert hybrid.mean_tokens(5) <= hybrid.mean_tokens(10) <= hybrid.mean_tokens(25)
    assert hybrid.recall[25] == [1.0] * 6
    # the same recipe over InMemoryStore: no BM25 list there, but every turn at k=25 still
    assert result.variants[2].recall[25] == hybrid.recall[25]
    # the fast recipe differs only in its candidates, which cover these small conversations
    fast = result.variants[5]
    assert fast.name == "QdrantStore + HybridRetriever (recipe, 30 candidates)"
    assert fast.recall == hybrid.recall
    assert LOCOMO_RETRIEVAL_FAST == replace(LOCOMO_RETRIEVAL, candidates=30) != LOCOMO_RETRIEVAL

    # the split by conversation: each question once, in its own half
    first, second = result.only([0]), result.only([1])
    assert first.questions + second.questions == result.questions
    assert first.conversations == second.conversations == 1
    for k in KS:
        assert sorted(first.variants[0].recall[k] + second.variants[0].recall[k]) == sorted(lexical.recall[k])
    assert "1 multi-hop" in first.table()
    assert result.splits() == ""  # both conversations are among the tuning ones
    splits = result.splits(tuned_on=[0])
    assert "Conversations 0-0 (the recipe's weights were tuned on these):" in splits
    assert "Conversations 1-1 (held out):" in splits
    assert splits.count("InMemoryStore + HybridRetriever (recipe; no BM25 there)") == 2

    table = result.table()
    assert "InMemoryStore + HybridRetriever (recipe; no BM25 there)" in table
    assert "56.7 / 66.2 / 76.7" in table
    assert "1 multi-hop" in table
    assert "LoCoMo: 2 conversations, 11 turns, 6 questions (2 skipped: evidence that names no turn" in (
        result.summary()
    )


def test_unknown_variant_is_a_typed_error(data: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown variant"):
        run_locomo_bench(data, variants=("bm42",), embeddings=FakeEmbeddings(16))


def test_cli_runs_the_benchmark(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["bench", "locomo", "--data", str(data), "--variants", "bm25-turns,dense", "--conversations", "1"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "LoCoMo retrieval benchmark" in out
    assert "BM25 only (turn text)" in out
    assert "dense only (MiniLM, query as is)" in out
    assert "1 conversations, 9 turns, 5 questions" in out


def test_cli_runs_the_conversations_first_to_last(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--conversations 1-1`` takes the second conversation alone (the held-out halves are run so)."""
    argv = ["bench", "locomo", "--data", str(data), "--variants", "bm25-turns"]
    assert main([*argv, "--conversations", "1-1"]) == 0
    assert "1 conversations, 2 turns, 1 questions" in capsys.readouterr().out
    assert main([*argv, "--conversations", "0-1"]) == 0
    assert "2 conversations, 11 turns, 6 questions" in capsys.readouterr().out
    for bad, message in (("5-9", "name none of the set's 2 (0-based: 0-1)"), ("five", "FIRST-LAST")):
        assert main([*argv, "--conversations", bad]) != 0
        assert message in capsys.readouterr().err


def test_the_recipe_lifts_are_bench_code_over_the_products_hook() -> None:
    from langmem_plugin.bench.locomo.lifts import SalienceLift

    assert [type(lift) for lift in LOCOMO_RETRIEVAL.lifts] == [SalienceLift]
    assert (LOCOMO_RETRIEVAL.speaker_weight, LOCOMO_RETRIEVAL.time_weight) == (1.2, 1.4)  # recall's own
    assert LOCOMO_RETRIEVAL_FAST.lifts == LOCOMO_RETRIEVAL.lifts


def test_bench_demo_and_cli_import_only_public_modules() -> None:
    import ast

    import langmem_plugin

    package = Path(langmem_plugin.__file__).parent
    files = [
        *sorted((package / "bench").glob("*.py")),
        package / "demo.py",
        *sorted((package / "cli").glob("*.py")),
    ]
    for path in files:
        own = f"langmem_plugin.{path.parent.name}" if path.parent != package else "langmem_plugin"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                module = node.module
            elif isinstance(node, ast.Import):
                module = node.names[0].name
            else:
                continue
            if not module.startswith("langmem_plugin.") or module.startswith(f"{own}._"):
                continue
            private = [part for part in module.split(".") if part.startswith("_")]
            assert not private, f"{path.name} imports {module}"


def test_product_rows_import_history_and_measure_what_recall_injects(data: Path) -> None:
    from langmem_plugin.bench.locomo import VARIANTS
    from langmem_plugin.bench.locomo.product import history_of

    assert {"product", "product-qdrant", "product-inmemory", "product-sqlite", "product-postgres"} <= set(
        VARIANTS
    )
    conv = load_locomo(data)[0]
    sessions = history_of(conv)
    assert [s["date"] for s in sessions] == ["1:56 pm on 8 May, 2023", "10:37 am on 27 June, 2023"]
    assert sessions[0]["messages"][1] == {
        "role": "Bo",
        "content": "Busy! I adopted a puppy named Biscuit.",
        "id": "D1:2",
    }
    assert sessions[0]["messages"][3]["content"] == "Look at this. [shares a photo of a sunset over a lake]"

    stores = ("product", "product-qdrant", "product-inmemory", "product-sqlite")
    result = run_locomo_bench(data, variants=("bm25-turns", *stores), embeddings=FakeEmbeddings(64))
    lexical, product, qdrant, inmemory, sqlite = result.variants
    assert product.name == "product: import_history + Memory.recall, Memory() (the default)"
    assert inmemory.name == "product: the same, LangGraph's InMemoryStore (its vectors + our BM25)"
    assert "CheckpointerStore" in sqlite.name
    for row in (product, qdrant, inmemory, sqlite):
        assert row.injected
        assert not lexical.injected
        assert row.categories == lexical.categories == [4, 2, 1, 3, 5, 4]
        assert row.conversations == [0, 0, 0, 0, 0, 1]
        assert len(row.seconds) == len(row.items) == 6
        # every turn imported, one episode per message, nothing lost
        assert sorted(row.imports) == [0, 1]
        assert [i.turns for i in row.imports.values()] == [9, 2]
        assert all(i.evicted == 0 and i.failed == 0 for i in row.imports.values())
        assert row.import_rate() > 0
        # one number per question, whatever k: what was injected
        for k in KS:
            assert row.recall[k] == row.recall[KS[0]]
            assert row.tokens[k] == row.tokens[KS[0]]
        assert all(0.0 <= r <= 1.0 for r in row.recall[KS[0]])
        assert all(t > 0 for t in row.tokens[KS[0]])
        assert all(n >= 1 for n in row.items)
    # with Memory()'s default (embedded Qdrant, hybrid with BM25), each question's words find its turn
    assert product.recall[KS[0]] == [1.0] * 6

    table = result.table()
    assert "product: import_history + Memory.recall, Memory() (the default)" in table
    assert "(inj)" in table
    assert "turns/s" in table
    split = result.only([1])
    assert split.variants[1].imports.keys() == {1}
    assert split.variants[1].items == product.items[5:]
    assert "turns/s" in result.splits(tuned_on=[0])
