"""The report of ``bench stores``: each store's numbers, and the table of them with each peer's ratio."""

from __future__ import annotations

from dataclasses import dataclass, field

from langmem_plugin.bench.report import format_table
from langmem_plugin.bench.stores.data import TARGET

__all__ = ["StoreRow", "StoresBenchResult"]


@dataclass
class StoreRow:
    """One store's numbers (seconds; None: not measured or not supported)."""

    name: str
    put_per_s: float | None = None
    get_p50: float | None = None
    filtered: tuple[float, float] | None = None
    vector: tuple[float, float] | None = None
    recall: float | None = None
    hybrid: tuple[float, float] | None = None
    fused: tuple[float, float] | None = None
    index_s: float | None = None
    reopen_s: float | None = None
    disk_bytes: int | None = None
    note: str = ""


@dataclass
class StoresBenchResult:
    """Every number of one size."""

    size: int
    others: int = 990
    rows: list[StoreRow] = field(default_factory=list)

    def table(self) -> str:
        """The measurements, then each peer's ratio to the embedded QdrantStore."""

        def ms(x: float | None) -> str:
            return "—" if x is None else f"{x * 1000:.2f}"

        def pair(x: tuple[float, float] | None) -> str:
            return "—" if x is None else f"{x[0] * 1000:.2f} / {x[1] * 1000:.2f}"

        rows = [
            [
                r.name,
                f"{r.put_per_s:,.0f}" if r.put_per_s else "—",
                "—" if r.index_s is None else f"{r.index_s:.1f}",
                ms(r.get_p50),
                pair(r.filtered),
                pair(r.vector),
                "—" if r.recall is None else f"{r.recall:.3f}",
                pair(r.hybrid),
                pair(r.fused),
                "—" if r.reopen_s is None else f"{r.reopen_s:.2f}",
                "—" if r.disk_bytes is None else f"{r.disk_bytes / 2**20:.1f}",
                r.note,
            ]
            for r in self.rows
        ]
        headers = [
            "store",
            "puts/s",
            "index build s",
            "get p50 ms",
            "filtered p50/p95 ms",
            "vector p50/p95 ms",
            "recall@10",
            "hybrid p50/p95 ms",
            "recall search p50/p95 ms",
            "reopen s",
            "disk MiB",
            "note",
        ]
        out = [
            f"{self.size:,} items in {TARGET}, {self.others:,} more in 99 other namespaces",
            format_table(headers, rows),
        ]
        ours = next((r for r in self.rows if r.name == "qdrant-embedded" and r.put_per_s), None)
        if ours is not None:
            ratio_rows = []
            for r in self.rows:
                if r is ours or not r.put_per_s:
                    continue
                ratio_rows.append(
                    [
                        r.name,
                        _ratio(r.put_per_s and 1 / r.put_per_s, ours.put_per_s and 1 / ours.put_per_s),
                        _ratio(r.get_p50, ours.get_p50),
                        _ratio(r.filtered and r.filtered[0], ours.filtered and ours.filtered[0]),
                        _ratio(r.vector and r.vector[0], ours.vector and ours.vector[0]),
                    ]
                )
            out += [
                "",
                "how many times faster the embedded QdrantStore is (peer time / ours; p50)",
                format_table(["peer", "puts", "get", "filtered search", "vector search"], ratio_rows),
            ]
        return "\n".join(out)


def _ratio(theirs: float | None, ours: float | None) -> str:
    if not theirs or not ours:
        return "—"
    value = theirs / ours
    return f"{value:.1f}x" if value >= 1 else f"{value:.2g}x"
