"""``bench realtalk``: REALTALK read by the LoCoMo loader, end to end on tiny REALTALK-shaped chats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langmem_plugin.bench.datasets import realtalk_path
from langmem_plugin.bench.locomo import (
    CATEGORIES,
    REALTALK_CATEGORIES,
    load_conversations,
    load_realtalk,
    normalise_evidence,
)
from langmem_plugin.bench.realtalk import REALTALK_DATA, run_realtalk_bench
from langmem_plugin.cli import build_parser, main
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.testing import FakeEmbeddings


def _turn(speaker: str, dia_id: str, text: str, when: str) -> dict[str, Any]:
    return {
        "clean_text": text,
        "speaker": speaker,
        "date_time": when,
        "img_file": [],
        "img_url": [],
        "dia_id": dia_id,
    }


def _chat(a: str, b: str, qa: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": {"speaker_1": a, "speaker_2": b},
        "session_1": [
            _turn(a, "D1:1", "Hey! How was the ski trip to Zermatt?", "29.12.2023, 22:42:04"),
            _turn(b, "D1:2", "Amazing, I finally learned to snowboard.", "29.12.2023, 22:43:10"),
            # D1:3 was a removed message: its id is missing from the file
            _turn(a, "D1:4", "I am baking sourdough bread tonight.", "29.12.2023, 22:45:00"),
        ],
        "session_1_date_time": "29.12.2023, 22:42:04",
        # the second session continues the first one's numbering, as REALTALK's sessions may
        "session_2": [
            _turn(b, "D1:5", "My cat Mochi knocked over the christmas tree.", "02.01.2024, 09:05:00"),
            _turn(a, "D2:1", "Haha, poor tree. Is Mochi okay?", "02.01.2024, 09:07:00"),
        ],
        "session_2_date_time": "02.01.2024, 09:05:00",
        "events_session_1": [],
        "qa": qa,
    }


QA: list[dict[str, Any]] = [
    {"question": "Where did they go skiing?", "answer": "Zermatt", "evidence": ["D1:1"], "category": 1},
    {"question": "What did the cat knock over?", "answer": "tree", "evidence": ["D1:5."], "category": 2},
    # a range across the two sessions, through the turn order
    {"question": "Is the cat Mochi okay?", "answer": "yes", "evidence": ["D1:5-D2:1"], "category": 3},
    # evidence of a removed message, and "D17;39": skipped and counted
    {"question": "What did they say then?", "answer": "x", "evidence": ["D1:3", "D1:4"], "category": 1},
    {"question": "What else?", "answer": "x", "evidence": ["D17;39"], "category": 2},
    {"question": "Anything?", "answer": "x", "evidence": [""], "category": 3},
]


@pytest.fixture
def realtalk(tmp_path: Path) -> Path:
    folder = tmp_path / "realtalk"
    folder.mkdir()
    (folder / "Chat_10_Cy_Di.json").write_text(json.dumps(_chat("Cy", "Di", QA[:2])))
    (folder / "Chat_2_Emi_Elise.json").write_text(json.dumps(_chat("Emi", "Elise", QA)))
    (folder / "README.md").write_text("not a chat")
    return folder


def test_the_loader_reads_realtalk_chats_in_their_numbers_order(realtalk: Path) -> None:
    dataset = load_conversations(realtalk)
    assert dataset.name == "REALTALK"
    assert dataset.categories == REALTALK_CATEGORIES
    first, second = dataset.conversations
    assert (first.sample_id, second.sample_id) == ("Chat_2_Emi_Elise", "Chat_10_Cy_Di")
    assert [t.dia_id for t in first.turns] == ["D1:1", "D1:2", "D1:4", "D1:5", "D2:1"]
    assert [t.session for t in first.turns] == [1, 1, 1, 2, 2]
    # clean_text is the text; dates are in LoCoMo's form, the session's for each of its turns
    assert first.turns[0].line == "Emi: Hey! How was the ski trip to Zermatt?"
    assert first.turns[2].date == "10:42 pm on 29 December, 2023"
    assert first.turns[3].date == "9:05 am on 2 January, 2024"
    assert [q.evidence for q in first.questions] == [("D1:1",), ("D1:5",), ("D1:5", "D2:1")]
    assert first.skipped == 3
    assert (len(second.questions), second.skipped) == (2, 0)
    # one chat file alone is REALTALK too
    alone = load_conversations(realtalk / "Chat_10_Cy_Di.json")
    assert (alone.name, [c.sample_id for c in alone.conversations]) == ("REALTALK", ["Chat_10_Cy_Di"])
    assert load_realtalk(realtalk / "Chat_10_Cy_Di.json") == list(alone.conversations)


def test_a_locomo_file_is_told_apart_from_a_realtalk_folder(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    conversation = {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."}],
    }
    qa = [{"question": "What did Ann adopt?", "evidence": ["D1:1"], "category": 4}]
    path.write_text(json.dumps([{"sample_id": "s", "conversation": conversation, "qa": qa}]))
    dataset = load_conversations(path)
    assert (dataset.name, dataset.categories, len(dataset.conversations)) == ("LoCoMo", CATEGORIES, 1)


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("Chat_1.json", "not json", "not JSON"),
        ("Chat_1.json", '{"qa": []}', "is not a REALTALK chat"),
        ("Chat_1.json", '{"session_1": [{"speaker": "A"}], "qa": []}', "is not a REALTALK chat"),
        ("notes.txt", "", "no REALTALK chat"),
    ],
)
def test_bad_realtalk_data_is_a_typed_error_naming_the_path(
    tmp_path: Path, name: str, content: str, needle: str
) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(ConfigurationError, match=needle) as caught:
        load_conversations(tmp_path)
    assert str(tmp_path) in str(caught.value)
    with pytest.raises(ConfigurationError, match="REALTALK folder"):
        load_conversations(tmp_path / "missing")


@given(st.lists(st.text(max_size=30), max_size=6))
def test_hostile_evidence_is_read_without_raising_and_names_only_turns(raw: list[str]) -> None:
    order = ["D1:1", "D1:2", "D2:1", "D3:7"]
    evidence = normalise_evidence(raw, order)
    assert set(evidence.ids) <= set(order)
    assert len(set(evidence.ids)) == len(evidence.ids)
    assert all(piece and any(c.isdigit() for c in piece) for piece in evidence.missing)


def test_the_rows_and_the_per_category_table_on_realtalk(realtalk: Path) -> None:
    result = run_realtalk_bench(realtalk, variants=("bm25-turns", "product"), embeddings=FakeEmbeddings(64))
    assert (result.dataset, result.conversations, result.questions, result.skipped) == ("REALTALK", 2, 5, 3)
    lexical, product = result.variants
    assert lexical.categories == product.categories == [1, 2, 3, 1, 2]
    assert lexical.recall[10] == [1.0] * 5  # each question's words find its turns
    assert product.injected
    assert len(product.seconds) == 5
    assert [i.turns for i in product.imports.values()] == [5, 5]
    assert all(0.0 <= r <= 1.0 for r in product.recall[5])
    table = result.table()
    assert "1 multi-hop" in table
    assert "3 commonsense" in table
    assert "4 single-hop" not in table
    assert "anchor" not in table  # LoCoMo's anchors are not REALTALK's
    assert result.splits() == ""  # nothing was tuned on REALTALK
    assert result.summary().startswith("REALTALK: 2 conversations, 10 turns, 5 questions (3 skipped")


def test_cli_runs_both_sets_in_one_run(
    realtalk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locomo = tmp_path / "locomo.json"
    conversation = {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Luna."}],
    }
    qa = [{"question": "What is the cat's name?", "evidence": ["D1:1"], "category": 4}]
    locomo.write_text(json.dumps([{"sample_id": "s", "conversation": conversation, "qa": qa}]))
    code = main(
        ["bench", "locomo", "--data", str(locomo), "--data", str(realtalk), "--variants", "bm25-turns"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "LoCoMo: 1 conversations" in out
    assert "REALTALK: 2 conversations" in out
    assert "4 single-hop" in out
    assert "3 commonsense" in out

    assert main(["bench", "realtalk", "--data", str(realtalk), "--variants", "bm25-turns"]) == 0
    assert "REALTALK retrieval benchmark" in capsys.readouterr().out
    # the default folder lies inside the checkout (or $LANGMEM_PLUGIN_DATA) and is overridable
    assert build_parser().parse_args(["bench", "realtalk"]).data is None
    assert realtalk_path() == REALTALK_DATA
    assert main(["bench", "realtalk", "--data", str(tmp_path / "nowhere"), "--variants", "bm25"]) == 2
    assert "LoCoMo data not found" in capsys.readouterr().err


def test_cli_refuses_an_unknown_embedder(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "realtalk", "--embedder", "all-MiniLM-L6-v2,bge-huge"])
    assert "unknown embedder 'bge-huge'; choose from: all-MiniLM-L6-v2" in capsys.readouterr().err
