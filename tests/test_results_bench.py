"""The context benchmark runs end to end on a short trace (its numbers are printed, not asserted here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langmem_plugin.bench.context import build_trace, run_context_bench

# ../shared beside the repository, as CI lays it out
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"


@pytest.mark.skipif(not DATA.exists(), reason="LoCoMo data not available")
def test_the_context_bench_runs_and_every_result_reads_back() -> None:
    trace = build_trace(DATA, 4)
    assert [t for t, _, _ in trace] == ["fetch_page", "query_rows", "fetch_page", "query_rows"]
    assert all(5 * 1024 <= len(r) <= 52 * 1024 for _, _, r in trace)
    result = run_context_bench(DATA, 4)
    by_name = {s.name: s for s in result.setups}
    none, ours = by_name["none"], by_name["ours: default"]
    assert len(none.tokens) == len(ours.tokens) == 5
    assert ours.tokens[-1] < none.tokens[-1]
    assert ours.retrievable == 1.0
    assert by_name["ours: full once (former default)"].retrievable == 1.0
    assert "prefix kept" in result.report()
    heldout = build_trace(DATA, 6, "heldout")
    assert [t for t, _, _ in heldout] == ["fetch_page", "search_notes", "query_rows"] * 2
    assert {r for _, _, r in heldout}.isdisjoint(r for _, _, r in build_trace(DATA, 6))
    assert all(2000 < len(r) <= 61 * 1024 for _, _, r in heldout)  # every one is stored
    small = run_context_bench(DATA, 3, "heldout", ours={})
    assert small.trace == "heldout"
    assert "'heldout'" in small.report()
