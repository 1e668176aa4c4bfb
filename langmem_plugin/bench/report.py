"""What every benchmark and the doctor share: timing, percentiles and plain-text tables."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Timer", "format_table", "percentile", "ratio", "time_calls"]


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``, by linear interpolation."""
    if not samples:
        raise ValueError("percentile of no samples")
    if len(samples) == 1:
        return float(samples[0])
    return float(statistics.quantiles(samples, n=100, method="inclusive")[max(0, min(98, round(q) - 1))])


def ratio(ours: float, theirs: float) -> str:
    """``theirs / ours`` as ``"12.3x"`` (how many times faster we are when both are times)."""
    if ours <= 0:
        return "n/a"
    return f"{theirs / ours:.1f}x"


class Timer:
    """A context manager that records elapsed seconds in ``.seconds``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def time_calls(func: Callable[[Any], object], args: Sequence[Any]) -> list[float]:
    """Call ``func(arg)`` for each arg; the seconds each call took."""
    samples: list[float] = []
    for arg in args:
        start = time.perf_counter()
        func(arg)
        samples.append(time.perf_counter() - start)
    return samples


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (readable as plain text too), columns padded to their widest cell."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) + " |"

    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), separator, *(line(row) for row in cells[1:])])
