"""``langmem-plugin bench scale --interleave``: recall at every size, the sizes timed in turn.

The cells of ``bench scale`` each run alone, minutes apart: on a shared machine the load moves
between them, and a ratio of two cells' p50 measures the load as much as the store. With
``--interleave``, once a store has been imported at every size (the cells as usual, each in its
own process, the stores kept), one process opens that store at every size, each ``Memory`` at its
own place, and times ``Memory.recall`` round-robin: the i-th question at every size, the order
of the sizes turned by one each round, so that whatever the load does falls on every size alike.

Every size is asked the same recalls: the same users, the same questions, drawn (``seed``) from
the users every size holds in full (the smallest size's, but its last, which may be cut short).
A user's memories are the same at every size, so what differs is only the other users'
memories: the ratio says whether recall grows with them. (Each size drawing from its own users,
as the cells do, gives a ratio that is mostly which questions were drawn: one recall's time
depends on its question far more than on the store's size.) The first few are asked first,
untimed (the cells' warm-up). What comes back per store: p50 and p95 at each size, the ratio of
each p50 to the smallest size's, and the median over the questions of each one's time over its
time at the smallest size. No RSS here: the process holds every size's store at once.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from langmem_plugin.bench.report import format_table, percentile
from langmem_plugin.bench.scale import (
    WARM,
    _asked,
    _conversations,
    _Copies,
    _open_memory,
    _recall_timer,
    run_child,
)

__all__ = ["InterleavedRow", "interleaved_table", "measure_interleaved", "run_interleaved"]


@dataclass
class InterleavedRow:
    """One store's recall at one size, timed in turn with its other sizes (seconds)."""

    store: str
    size: int
    users: int = 0
    recall_p50: float = 0.0
    recall_p95: float = 0.0
    recalls: int = 0
    asked_users: int = 0  # the recalls are by users 0 .. asked_users - 1, at every size
    ratio: float = 0.0  # this p50 over the smallest size's, from the same rounds
    paired: float = 0.0  # the median over the questions of one's time here over its time at the smallest


def interleaved_table(rows: Sequence[InterleavedRow]) -> str:
    """The interleaved recalls as a table (no RSS column: one process held every size's store)."""
    lines: list[list[object]] = [
        [
            row.store,
            f"{row.size:,}",
            f"{row.users:,}",
            f"{row.recall_p50 * 1000:.1f} / {row.recall_p95 * 1000:.1f} ms",
            f"{row.ratio:.2f}x",
            f"{row.paired:.2f}x",
            f"{row.recalls} by {row.asked_users} users",
        ]
        for row in rows
    ]
    headers = [
        "store",
        "memories",
        "users",
        "recall p50 / p95, sizes in turn",
        "p50 vs smallest",
        "a question vs smallest (median)",
        "the same recalls",
    ]
    return format_table(headers, lines)


def measure_interleaved(
    store: str, cells: Sequence[tuple[int, str, int]], table: Path, data: Path, queries: int, seed: int
) -> list[InterleavedRow]:
    """``store`` opened at each of ``cells`` (size, place, users) at once, recall timed round-robin."""
    conversations = _conversations(data)
    embeddings = _Copies(table)
    with contextlib.ExitStack() as stack:
        memories = [stack.enter_context(_open_memory(store, place, embeddings))[0] for _, place, _ in cells]
        timers = [_recall_timer(memory, embeddings, conversations) for memory in memories]
        fewest = min(users for _, _, users in cells)
        shared = max(1, fewest - 1)  # the smallest size's last user may hold only part of a conversation
        asked = _asked(conversations, shared, queries, seed)
        for k in range(min(WARM, queries)):
            for timer in timers:
                timer(*asked[k])
        times: list[list[float]] = [[] for _ in cells]
        for i in range(queries):
            for turn in range(len(cells)):
                j = (i + turn) % len(cells)  # each round starts one size further on
                times[j].append(timers[j](*asked[i]))
    rows = [
        InterleavedRow(
            store,
            size,
            users,
            percentile(measured, 50),
            percentile(measured, 95),
            len(measured),
            shared,
        )
        for (size, _, users), measured in zip(cells, times, strict=True)
    ]
    base = min(range(len(rows)), key=lambda j: rows[j].size)
    for row, measured in zip(rows, times, strict=True):
        row.ratio = row.recall_p50 / rows[base].recall_p50 if rows[base].recall_p50 else float("nan")
        row.paired = percentile([t / b for t, b in zip(measured, times[base], strict=True) if b > 0], 50)
    return rows


def run_interleaved(
    store: str, cells: Sequence[tuple[int, str, int]], table: Path, data: Path, queries: int, seed: int
) -> list[InterleavedRow]:
    """:func:`measure_interleaved` in a fresh process (none of the cells' state carried in)."""
    argument = {
        "store": store,
        "cells": [list(cell) for cell in cells],
        "table": str(table),
        "data": str(data),
        "queries": queries,
        "seed": seed,
    }
    rows = run_child("langmem_plugin.bench.scale_interleave", argument, f"bench scale --interleave: {store}")
    return [InterleavedRow(**row) for row in rows]


def _main(argument: str) -> None:
    """The child process: the rows printed as one JSON line."""
    given = json.loads(argument)
    rows = measure_interleaved(
        given["store"],
        [(int(size), str(place), int(users)) for size, place, users in given["cells"]],
        Path(given["table"]),
        Path(given["data"]),
        given["queries"],
        given["seed"],
    )
    print(json.dumps([asdict(row) for row in rows]))


if __name__ == "__main__":  # pragma: no cover — the interleaved recalls' process
    _main(sys.argv[1])
