"""``langmem-plugin bench scale`` runs end to end on a tiny LoCoMo-shaped file (numbers are not checked).

Real stores (embedded Qdrant at a path, CheckpointerStore over a SQLite file, Postgres from the
test extra), the offline MiniLM for the few distinct texts, each cell in its own process.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from langmem_plugin.bench.scale import ScaleRow, _Copies, _load_table, run_scale_bench
from langmem_plugin.bench.scale_interleave import InterleavedRow
from langmem_plugin.cli import main
from tests.postgres_server import pgvector_url  # noqa: F401  (a fixture)


def _turns(n: int, a: str, b: str, topic: str) -> list[dict[str, str]]:
    return [
        {
            "speaker": a if i % 2 == 0 else b,
            "dia_id": f"D1:{i}",
            "text": f"{b if i % 2 == 0 else a}, {topic} {i}",
        }
        for i in range(n)
    ]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Two conversations of 5 and 4 turns, with questions that name their speakers."""
    conversations = []
    for a, b, topic, n in (
        ("Caroline", "Melanie", "the pottery class on day", 5),
        ("Jon", "Gina", "the dance studio", 4),
    ):
        conversations.append(
            {
                "conversation": {
                    "speaker_a": a,
                    "speaker_b": b,
                    "session_1_date_time": "1:56 pm on 8 May, 2023",
                    "session_1": _turns(n, a, b, topic),
                },
                "qa": [{"question": f"What did {a} say about {topic}?"}, {"question": f"When did {b} go?"}],
            }
        )
    path = tmp_path / "locomo" / "locomo10.json"
    path.parent.mkdir()
    path.write_text(json.dumps(conversations), encoding="utf-8")
    return path


def test_a_renamed_copy_gets_the_originals_vector_offset_by_a_little(data: Path, tmp_path: Path) -> None:
    table = _load_table(data, tmp_path / "vectors.npz", lambda _: None)
    copies = _Copies(table)
    original = "Caroline: Melanie, the pottery class on day 0"
    assert copies.vector(original) == pytest.approx(
        np.asarray(copies.vectors[copies.rows[original]]).tolist()
    )
    copies.renaming = lambda text: text.replace("Amara", "Caroline").replace("Bastien", "Melanie")
    copy = copies.vector("Amara: Bastien, the pottery class on day 0")
    assert copy is not None
    cosine = float(np.dot(copy, copies.vector(original) or []))
    assert 0.95 < cosine < 0.99
    assert copies.vector("Amara: Bastien, the pottery class on day 0") == copy  # the same every time
    assert copies.vector("Amara: something nobody said") is None
    copies.question = copies.vector("What did Caroline say about the pottery class on day?")
    assert copies.embed_query("What did Amara say pottery?") == copies.question  # recall's shortened query
    assert copies.live == 0


@pytest.mark.slow
def test_each_store_at_each_size_one_row(data: Path, tmp_path: Path, pgvector_url: str) -> None:  # noqa: F811
    result = run_scale_bench(
        [6, 12],
        data=data,
        stores=("qdrant", "postgres", "checkpointer"),
        queries=4,
        cache=tmp_path / "vectors.npz",
        postgres_url=pgvector_url,
        workdir=tmp_path,
    )
    assert [(r.store, r.size) for r in result.rows] == [
        (store, size) for store in ("qdrant", "postgres", "checkpointer") for size in (6, 12)
    ]
    for row in result.rows:
        assert isinstance(row, ScaleRow)
        # 6 memories: the first conversation (5 turns) and one turn of the second; 12: three users
        assert row.users == (2 if row.size == 6 else 3)
        assert row.recalls == 4
        assert 0 < row.recall_p50 <= row.recall_p95
        assert row.import_seconds > 0
        assert row.open_seconds > 0
        assert row.disk_bytes > 0
        assert row.embedded_live == 0  # every text the import embedded was a renamed copy of a cached one
    table = result.table()
    assert "| qdrant       | 12 " in table
    assert "1.00x" in table
    assert not list(tmp_path.glob("langmem-scale-*"))  # the stores' files are gone


@pytest.mark.slow
@pytest.mark.parametrize("store", ["qdrant", "checkpointer"])
def test_interleaved_recalls_give_each_size_a_ratio_to_the_smallest(
    data: Path, tmp_path: Path, store: str
) -> None:
    result = run_scale_bench(
        [300, 900, 30],
        data=data,
        stores=(store,),
        queries=7,
        cache=tmp_path / "vectors.npz",
        workdir=tmp_path,
        interleave=True,
    )
    assert [(r.store, r.size) for r in result.rows] == [(store, 300), (store, 900), (store, 30)]
    assert [(r.store, r.size) for r in result.interleaved] == [(store, 300), (store, 900), (store, 30)]
    # 30 memories: three copies of each conversation (27) and the first 3 turns of a seventh copy
    assert [r.users for r in result.rows] == [67, 200, 7]
    for cell, row in zip(result.rows, result.interleaved, strict=True):
        assert isinstance(row, InterleavedRow)
        assert row.users == cell.users
        assert row.asked_users == 6  # every size asked by the users the smallest holds in full
        assert row.recalls == 7
        assert 0 < row.recall_p50 <= row.recall_p95
        assert row.paired > 0
    smallest = result.interleaved[2]
    assert smallest.ratio == 1.0
    assert smallest.paired == 1.0
    for row in result.interleaved:
        assert row.ratio == pytest.approx(row.recall_p50 / smallest.recall_p50)
    table = result.table()
    assert "sizes in turn" in table
    assert "7 by 6 users" in table
    assert f"| {store}" in table
    assert "| 900 " in table
    assert not list(tmp_path.glob("langmem-scale-*"))  # kept for the interleaved recalls, then removed


@pytest.mark.slow
def test_the_stores_are_kept_when_asked(data: Path, tmp_path: Path) -> None:
    said: list[str] = []
    result = run_scale_bench(
        [12],
        data=data,
        stores=("checkpointer",),
        queries=2,
        cache=tmp_path / "vectors.npz",
        workdir=tmp_path,
        keep=True,
        progress=said.append,
    )
    assert not result.interleaved
    (kept,) = tmp_path.glob("langmem-scale-*")
    assert f"  the stores are kept in {kept}" in said
    assert (kept / "checkpointer-12.sqlite").is_file()


@pytest.mark.slow
def test_the_cli_and_the_checkpointer_alias(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "bench",
        "scale",
        "--sizes",
        "5",
        "--stores",
        "checkpointer",
        "--queries",
        "2",
        "--data",
        str(data),
    ]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the run's vectors and stores go
    assert main(argv) == 0
    assert not list(tmp_path.glob("langmem-scale-*"))  # no --cache: the vectors made for it are gone too
    out = capsys.readouterr().out
    assert "memory at scale: 5 memories" in out
    assert "| checkpointer | 5 " in out
    assert "sizes in turn" not in out
    assert main([*argv[:3], "5,9", *argv[4:], "--interleave"]) == 0
    out = capsys.readouterr().out
    assert "memory at scale: 5, 9 memories" in out
    assert "then again with the sizes in turn" in out
    assert "checkpointer 9 interleaved: recall p50" in out
    assert "recall p50 / p95, sizes in turn" in out
    monkeypatch.setenv("LANGMEM_PLUGIN_DATA", str(data.parent.parent))
    assert main(["bench", "checkpointer", "--scale", "4", "--samples", "3"]) == 0
    assert "| checkpointer | 4 " in capsys.readouterr().out


def test_bad_arguments_say_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "scale", "--data", str(tmp_path / "none.json"), "--stores", "qdrant"]) == 2
    err = capsys.readouterr().err
    assert "needs LoCoMo's locomo10.json, not found at" in err
    assert "Fix: pass --data PATH" in err
    with pytest.raises(SystemExit) as info:
        main(["bench", "scale", "--stores", "qdrant,redis"])
    assert info.value.code == 2
    assert "unknown store 'redis'; choose from: qdrant, postgres, checkpointer" in capsys.readouterr().err
