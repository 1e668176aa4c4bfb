"""The stores benchmark runs end to end at a tiny size (its numbers are not checked: not a speed test)."""

from __future__ import annotations

import re

import pytest

from langmem_plugin.bench.stores import run_stores_bench
from langmem_plugin.cli import build_parser


def test_stores_bench_runs_and_prints_ratios() -> None:
    result = run_stores_bench(size=60, queries=5, peers=("qdrant-embedded", "inmemory"), budget_s=0.5)
    ours, peer = result.rows
    assert (ours.name, peer.name) == ("qdrant-embedded", "inmemory")
    for measured in (ours.put_per_s, ours.vector, ours.hybrid, ours.filtered, ours.reopen_s, ours.disk_bytes):
        assert measured
    assert peer.vector is not None
    assert peer.hybrid is None  # InMemoryStore has no hybrid search
    # the embedded rows also time Qdrant Edge alone on the points the load wrote
    assert re.search(r"engine ceiling: [\d,]+ points/s", ours.note)
    assert "after reopen (empty cache) vector p50" in ours.note
    table = result.table()
    assert "qdrant-embedded" in table
    assert "how many times faster" in table


def test_stores_bench_skips_slow_peers_above_their_size() -> None:
    result = run_stores_bench(size=30, queries=3, peers=("qdrant-memory",), slow_peer_max=10)
    assert "skipped" in result.rows[0].note


def test_cli_parses_sizes_and_peers() -> None:
    args = build_parser().parse_args(["bench", "stores", "--sizes", "10_000,100000", "--peers", "inmemory"])
    assert args.sizes == [10_000, 100_000]
    assert args.peers == ("inmemory",)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "stores", "--sizes", "ten"])
