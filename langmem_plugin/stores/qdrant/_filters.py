"""Engine-neutral filters, and the store contract's filters translated into them.

A :class:`Filter` is a conjunction of :class:`Match`, :class:`MatchAny` and
:class:`Range` conditions on payload fields; each engine turns it into its own
filter type. :func:`native` translates what it can of a store-contract filter
(``{"kind": "fact", "n": {"$gte": 3}}``) into engine conditions, a superset of
the matches: the steps re-check every hit with the exact filter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from langmem_plugin.stores._common import Condition
from langmem_plugin.stores.qdrant._layout import SAFE_PART, ns_token

__all__ = ["Cond", "Filter", "Match", "MatchAny", "Range", "live", "native"]


@dataclass(frozen=True, slots=True)
class Match:
    """The payload field equals ``value`` (or, for an array, contains it)."""

    key: str
    value: str | int | bool


@dataclass(frozen=True, slots=True)
class MatchAny:
    """The payload field equals (or contains) one of ``values``."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Range:
    """The numeric payload field is within the given bounds."""

    key: str
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None


Cond = Match | MatchAny | Range


@dataclass(frozen=True, slots=True)
class Filter:
    """All of ``must`` hold."""

    must: tuple[Cond, ...] = ()

    def and_(self, *more: Cond) -> Filter:
        return Filter((*self.must, *more))


def live(now_us: int, prefix: Sequence[str] = ()) -> Filter:
    """Items under ``prefix`` that have not expired (the expiry condition comes last)."""
    conditions: list[Cond] = [Range("expires_us", gt=float(now_us))]
    if prefix:
        conditions.insert(0, Match("ns_prefix", ns_token(prefix)))
    return Filter(tuple(conditions))


def _leaves(path: tuple[str, ...], subset: dict[object, object]) -> Iterator[tuple[tuple[str, ...], object]]:
    """The (path, value) of each text or number a subset match (``{"metadata": {"lang": "en"}}``)
    requires, nested dicts walked: a matching value holds each of them at its path."""
    for name, value in subset.items():
        if not isinstance(name, str) or name.startswith("$"):
            continue
        if isinstance(value, dict):
            yield from _leaves((*path, name), value)
        else:
            yield (*path, name), value


def native(conditions: Iterable[Condition]) -> tuple[Cond, ...]:
    """Engine conditions implied by the filter (a superset of its matches: results are re-checked)."""
    out: list[Cond] = []
    for c in conditions:
        if c.op == "$eq" and isinstance(c.operand, dict):  # a subset match: each leaf must be there
            equal = [Condition(path, "$eq", value) for path, value in _leaves(c.path, c.operand)]
            out += native(leaf for leaf in equal if not isinstance(leaf.operand, dict | list))
            continue
        if not all(SAFE_PART.match(part) for part in c.path):
            continue
        key = "value." + ".".join(c.path)
        operand = c.operand
        number = isinstance(operand, int | float) and not isinstance(operand, bool)
        if c.op == "$eq":
            if isinstance(operand, str):  # not bools: Qdrant Edge reads a Python bool as an integer
                out.append(Match(key, operand))
            elif number:
                out.append(Range(key, gte=float(operand), lte=float(operand)))
        elif c.op == "$in" and operand and all(isinstance(o, str) for o in operand):
            out.append(MatchAny(key, tuple(operand)))
        elif c.op in ("$gt", "$gte", "$lt", "$lte") and number:
            out.append(Range(key, **{c.op[1:]: float(operand)}))
    return tuple(out)
