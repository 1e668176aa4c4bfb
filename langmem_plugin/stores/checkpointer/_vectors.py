"""The vector side of the search indexes: unit vectors in one numpy matrix, exact (brute-force) cosine.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["VectorIndex", "rrf", "top_indices"]

_RRF_K = 60.0


class VectorIndex:
    """Unit vectors in one growing float32 matrix; an item (slot) may own several rows (one per text)."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self._matrix = np.zeros((64, dims), dtype=np.float32)
        self._owner = np.full(64, -1, dtype=np.int64)
        self._size = 0
        self._free: list[int] = []
        self._rows: dict[int, list[int]] = {}
        self._multi = 0  # slots with more than one row

    def __contains__(self, slot: int) -> bool:
        return slot in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def _reserve(self, extra: int) -> None:
        needed = self._size + extra
        if needed <= len(self._owner):
            return
        capacity = max(needed, 2 * len(self._owner))
        matrix = np.zeros((capacity, self.dims), dtype=np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        owner = np.full(capacity, -1, dtype=np.int64)
        owner[: self._size] = self._owner[: self._size]
        self._matrix, self._owner = matrix, owner

    def set(self, slot: int, vectors: np.ndarray) -> None:
        """Index ``vectors`` (rows) for ``slot``, replacing what it had."""
        self.set_many([slot], [vectors])

    def set_many(self, slots: Sequence[int], groups: Sequence[np.ndarray]) -> None:
        """Index each slot's vectors (one matrix copy for all of them)."""
        for slot in slots:
            self.remove(slot)
        groups = [np.asarray(g, dtype=np.float32).reshape(-1, self.dims) for g in groups]
        total = sum(len(g) for g in groups)
        if not total:
            return
        stacked = np.concatenate(groups)
        norms = np.linalg.norm(stacked, axis=1, keepdims=True)
        stacked /= np.where(norms == 0, 1.0, norms)
        reuse = min(len(self._free), total)
        rows = [self._free.pop() for _ in range(reuse)]
        self._reserve(total - reuse)
        rows += range(self._size, self._size + total - reuse)
        self._size += total - reuse
        row_array = np.asarray(rows, dtype=np.int64)
        self._matrix[row_array] = stacked
        start = 0
        for slot, group in zip(slots, groups, strict=True):
            if not len(group):
                continue
            mine = rows[start : start + len(group)]
            self._owner[mine] = slot
            self._rows[slot] = mine
            self._multi += len(mine) > 1
            start += len(group)

    def rows(self, slot: int) -> np.ndarray | None:
        """A copy of ``slot``'s vectors (unit length), or None when it has none."""
        rows = self._rows.get(slot)
        return None if rows is None else self._matrix[rows].copy()

    def remove(self, slot: int) -> None:
        rows = self._rows.pop(slot, None)
        if rows is None:
            return
        self._multi -= len(rows) > 1
        self._owner[rows] = -1
        self._matrix[rows] = 0.0
        self._free.extend(rows)

    def best(self, query: np.ndarray, slots: np.ndarray, n_slots: int) -> np.ndarray:
        """The best cosine of each slot's vectors with ``query`` (NaN for a slot without vectors)."""
        norm = float(np.linalg.norm(query))
        unit = (query / norm if norm else query).astype(np.float32)
        out = np.full(len(slots), np.nan)
        if not len(slots) or not self._rows:
            return out
        if len(slots) * 4 < self._size:  # a narrow search: score only the candidates' rows
            for i, slot in enumerate(slots.tolist()):
                rows = self._rows.get(slot)
                if rows is not None:
                    out[i] = float(np.max(self._matrix[rows] @ unit))
            return out
        owners = self._owner[: self._size]
        live = owners >= 0
        scores = (self._matrix[: self._size] @ unit)[live].astype(np.float64)  # a view: no matrix copy
        per_slot = np.full(n_slots, -np.inf)
        if self._multi:
            np.maximum.at(per_slot, owners[live], scores)
        else:
            per_slot[owners[live]] = scores
        best: np.ndarray = per_slot[slots]
        best[np.isneginf(best)] = np.nan
        return best


def top_indices(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values`` *and every tie of the k-th* (unordered); NaN never."""
    candidates = np.nonzero(~np.isnan(values))[0]
    if len(candidates) <= k:
        return candidates
    picked = values[candidates]
    kth = np.partition(picked, len(picked) - k)[len(picked) - k]
    chosen: np.ndarray = candidates[picked >= kth]
    return chosen


def rrf(semantic: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """Reciprocal-rank fusion (k=60) of two score arrays over the same candidates (NaN: not ranked)."""
    fused = np.full(len(semantic), np.nan)
    for scores in (semantic, lexical):
        ranked = np.nonzero(~np.isnan(scores))[0]
        ranked = ranked[np.argsort(-scores[ranked], kind="stable")]
        contribution = 1.0 / (_RRF_K + np.arange(1, len(ranked) + 1))
        fused[ranked] = np.where(np.isnan(fused[ranked]), 0.0, fused[ranked]) + contribution
    return fused
