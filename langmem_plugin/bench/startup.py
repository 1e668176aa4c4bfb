"""``langmem-plugin bench startup``: what a newcomer waits for before anything runs.

Each row is timed in fresh Python processes (``sys.executable``), ``runs`` times, and reported as
the median and the slowest wall-clock time, beside a bare interpreter (``python -c pass``) so the
cost of the interpreter itself is visible:

- ``import langmem_plugin``: the package alone, whose names load on first use;
- ``langmem-plugin --help``: the command's help (``python -m langmem_plugin --help``);
- ``from langmem_plugin import Memory``: the first name a user touches, which imports LangGraph,
  LangChain and the stores.

Nothing is downloaded; each process is started, waited for and timed as a whole.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from langmem_plugin.bench.report import format_table

__all__ = ["ROWS", "StartupResult", "run_startup_bench"]

#: What each row runs in a fresh interpreter (the arguments after ``python``).
ROWS: dict[str, tuple[str, ...]] = {
    "python -c pass (the interpreter alone)": ("-c", "pass"),
    "import langmem_plugin": ("-c", "import langmem_plugin"),
    "langmem-plugin --help": ("-m", "langmem_plugin", "--help"),
    "from langmem_plugin import Memory": ("-c", "from langmem_plugin import Memory"),
}


@dataclass(frozen=True)
class StartupResult:
    """Seconds per row, one sample per fresh process."""

    runs: int
    samples: dict[str, list[float]]

    def median(self, row: str) -> float:
        return statistics.median(self.samples[row])

    def table(self) -> str:
        rows = [
            [row, f"{self.median(row):.2f} s", f"{max(times):.2f} s"] for row, times in self.samples.items()
        ]
        return format_table(["fresh process", f"median of {self.runs}", "slowest"], rows)


def _time_process(arguments: Sequence[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, timeout=300, check=False
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"python {' '.join(arguments)} failed:\n{done.stderr[-2000:]}")
    return seconds


def run_startup_bench(runs: int = 7) -> StartupResult:
    """Time every row of :data:`ROWS` in ``runs`` fresh processes, the rows interleaved.

    The first, untimed round warms the file cache, so every timed run finds the same disk.
    """
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    for arguments in ROWS.values():
        _time_process(arguments)
    samples: dict[str, list[float]] = {row: [] for row in ROWS}
    for _ in range(runs):
        for row, arguments in ROWS.items():
            samples[row].append(_time_process(arguments))
    return StartupResult(runs, samples)
