"""The import throughput bench runs (on a tiny LoCoMo-shaped file, with fake embeddings)."""

from __future__ import annotations

import json
from pathlib import Path

from langmem_plugin.bench.import_history import locomo_history, measure_import
from langmem_plugin.testing import FakeEmbeddings
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)


def _locomo(tmp_path: Path) -> Path:
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a photo of a dog"},
        ],
        "session_2_date_time": "10:00 am on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Her name is Luna."}],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"conversation": conversation, "qa": []}]), encoding="utf-8")
    return path


def test_locomo_history_and_measure(tmp_path: Path) -> None:
    history = locomo_history(_locomo(tmp_path))
    assert [s["date"] for s in history] == ["1:56 pm on 8 May, 2023", "10:00 am on 9 May, 2023"]
    assert history[0]["messages"][1] == {
        "role": "user",
        "name": "Bob",
        "content": "Nice! [shares a photo of a dog]",
        "id": "D1:2",
    }
    assert sum(len(s["messages"]) for s in locomo_history(_locomo(tmp_path), max_turns=2)) == 2
    runs = measure_import(history, FakeEmbeddings(dims=384), batch_sizes=(8, 1), workdir=tmp_path)
    assert [(r.batch_size, r.report.turns, r.report.written) for r in runs] == [(8, 3, 3), (1, 3, 3)]
    assert "turns/s" in runs[0].line()


def test_word_pieces_hold_every_word_once_in_200_token_pieces() -> None:
    from tokenizers import Tokenizer

    from langmem_plugin.bench.import_history import word_pieces
    from langmem_plugin.core.onnx_session import default_tokenizer_path

    text = " ".join(f"word{n} is the {n}th of many." for n in range(400))
    pieces = word_pieces(text)
    tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.no_truncation()
    sizes = [len(tokenizer.encode(p, add_special_tokens=False).ids) for p in pieces]
    assert all(abs(s - 200) <= 2 for s in sizes[:-1])
    assert 0 < sizes[-1] <= 202
    assert "".join("".join(p.split()) for p in pieces) == "".join(text.split())  # each character once


def test_the_stream_bench_reports_each_chat_with_its_rss_then_times_recalls(tmp_path: Path) -> None:
    from langmem_plugin.bench.import_history import measure_stream

    lines: list[str] = []
    run = measure_stream(5, exchanges=5, users=2, recalls=4, workdir=tmp_path, progress=lines.append)
    assert [seen.turns for seen in run.chats] == [5, 10, 15, 20, 25]  # users' imports add up
    seconds = [seen.seconds for seen in run.chats]
    assert seconds == sorted(seconds)
    assert all(
        seen.rss > 10 and (seen.anonymous is None or 0 < seen.anonymous <= seen.rss) for seen in run.chats
    )
    assert len(lines) == 5
    assert lines[-1].startswith("5 chats, 25 turns, ")
    assert len(run.recall_ms) == 4
    assert all(ms > 0 for ms in run.recall_ms)
    assert run.recall_line().startswith("4 recalls: p50 ")


def test_the_stream_bench_streams_into_postgres_when_given_a_server(pgvector_url: str) -> None:  # noqa: F811
    from langmem_plugin.bench.import_history import measure_stream
    from tests.test_postgres_contract import fresh_database

    run = measure_stream(3, exchanges=5, recalls=2, postgres_url=fresh_database(pgvector_url), progress=None)
    assert [seen.turns for seen in run.chats] == [5, 10, 15]
    assert len(run.recall_ms) == 2
