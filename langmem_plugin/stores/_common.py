"""What every store of ours shares: filters, namespace listing, ordering, TTL (validation: ``_validation``).

Pure helpers — no I/O — so that each store only prepares engine calls and does
them (STYLE.md: prepare ops once, do I/O twice). The behaviour is the one written
in ``docs/store-contract.md``; the engine-specific stores translate what they can
into their engine's native form and use :func:`compile_filter` for the rest.

Filters
-------
``{"key": value}`` or dot paths ``{"a.b": value}``:

- a plain value means equality; a list must equal exactly; a dict without
  ``$`` keys matches as a subset (recursively);
- a missing key equals ``None``; ``$ne`` matches a missing key (unless the
  operand is ``None``);
- ``$gt $gte $lt $lte`` compare numbers with numbers and strings with strings;
  a missing key or a value of the other type never matches (no error);
- ``$in`` / ``$nin`` take a list; ``$exists`` takes a bool;
- several keys, and several operators on one key, must all hold;
- any other ``$`` operator is an :class:`~langmem_plugin.errors.InvalidFilterError`.

>>> match = compile_filter({"kind": "fact", "priority": {"$gte": 5}, "meta.lang": {"$in": ["en", "fr"]}})
>>> match({"kind": "fact", "priority": 7, "meta": {"lang": "fr"}})
True
>>> match({"kind": "fact", "priority": "7", "meta": {"lang": "fr"}})
False
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from langgraph.store.base import (
    Item,
    ListNamespacesOp,
    MatchCondition,
    SearchItem,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langmem_plugin.errors import ConfigurationError, InvalidFilterError, InvalidValueError

__all__ = [
    "OPERATORS",
    "Clock",
    "Condition",
    "TTLSettings",
    "TTLSweeper",
    "apply_list_namespaces",
    "brief",
    "compile_filter",
    "expiry",
    "index_texts",
    "lexical_fields_of",
    "namespace_matches",
    "no_query_sort_key",
    "parse_filter",
    "search_sort_key",
    "utc_clock",
]

logger = logging.getLogger(__name__)


#: The filter operators every store of ours supports.
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists")

Clock = Callable[[], datetime]


def brief(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def utc_clock() -> datetime:
    """The current time, timezone-aware UTC (the default clock of every store)."""
    return datetime.now(UTC)


# --------------------------------------------------------------------------- filters

_MISSING = object()

FilterOp = Literal["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"]


@dataclass(frozen=True)
class Condition:
    """One validated filter condition: the value at ``path`` satisfies ``op`` with ``operand``."""

    path: tuple[str, ...]
    op: FilterOp
    operand: Any

    @property
    def key(self) -> str:
        """The dotted key as the user wrote it."""
        return ".".join(self.path)

    def matches(self, value: Mapping[str, Any]) -> bool:
        """Whether an item value satisfies this condition."""
        found = _lookup(value, self.path)
        return _OP_FUNCS[self.op](found, self.operand)


def _lookup(value: Any, path: tuple[str, ...]) -> Any:
    current = value
    for part in path:
        if not isinstance(current, Mapping) or part not in current:
            return _MISSING
        current = current[part]
    return current


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _equal(found: Any, operand: Any) -> bool:
    if found is _MISSING:
        return operand is None
    if isinstance(operand, dict):
        return _subset(found, operand)
    if isinstance(operand, list):
        return isinstance(found, list) and found == operand
    if _is_number(operand):
        return _is_number(found) and found == operand
    if isinstance(operand, bool):
        return isinstance(found, bool) and found is operand
    return bool(found == operand)


def _subset(found: Any, operand: Mapping[str, Any]) -> bool:
    if not isinstance(found, Mapping):
        return False
    for key, expected in operand.items():
        if key not in found:
            if expected is not None:
                return False
            continue
        if not _equal(found[key], expected):
            return False
    return True


def _compare(found: Any, operand: Any, test: Callable[[Any, Any], bool]) -> bool:
    if found is _MISSING:
        return False
    if _is_number(operand) and _is_number(found):
        return test(found, operand)
    if isinstance(operand, str) and isinstance(found, str):
        return test(found, operand)
    return False


_OP_FUNCS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": _equal,
    "$ne": lambda found, operand: not _equal(found, operand),
    "$gt": lambda found, operand: _compare(found, operand, lambda a, b: a > b),
    "$gte": lambda found, operand: _compare(found, operand, lambda a, b: a >= b),
    "$lt": lambda found, operand: _compare(found, operand, lambda a, b: a < b),
    "$lte": lambda found, operand: _compare(found, operand, lambda a, b: a <= b),
    "$in": lambda found, operand: any(_equal(found, o) for o in operand),
    "$nin": lambda found, operand: not any(_equal(found, o) for o in operand),
    "$exists": lambda found, operand: (found is not _MISSING) is operand,
}


def parse_filter(filter: Mapping[str, Any] | None) -> list[Condition]:
    """Validate ``filter`` and return its conditions (all must hold).

    Raises:
        InvalidFilterError: an unknown ``$`` operator, a dict mixing operators and
            plain keys, a non-list operand of ``$in``/``$nin``, a non-bool ``$exists``,
            or an operand of ``$gt``-like operators that is neither a number nor a string.
    """
    if filter is None:
        return []
    if not isinstance(filter, Mapping):
        raise InvalidFilterError(f"a filter must be a dict of key -> condition, got {brief(filter)}")
    conditions: list[Condition] = []
    for key, condition in filter.items():
        if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
            raise InvalidFilterError(f"filter key {key!r} is not a key or a dot path such as 'metadata.lang'")
        if key.startswith("$"):
            raise InvalidFilterError(
                f"filter key {key!r}: operators go inside a key's condition, e.g. {{'n': {{'$gt': 3}}}}"
            )
        path = tuple(key.split("."))
        operators = isinstance(condition, dict) and any(
            isinstance(k, str) and k.startswith("$") for k in condition
        )
        if not operators:
            conditions.append(Condition(path, "$eq", condition))
            continue
        assert isinstance(condition, dict)
        if not all(isinstance(k, str) and k.startswith("$") for k in condition):
            raise InvalidFilterError(
                f"filter on {key!r} mixes operators and plain keys: {brief(condition)}. "
                "Fix: use only operators, or only plain keys (a subset match)."
            )
        for op, operand in condition.items():
            if op not in OPERATORS:
                raise InvalidFilterError(
                    f"unknown filter operator {op!r} on {key!r}; the supported operators are "
                    f"{', '.join(OPERATORS)}."
                )
            if op in ("$in", "$nin") and not isinstance(operand, list | tuple):
                raise InvalidFilterError(f"{op} on {key!r} takes a list, got {brief(operand)}")
            if op == "$exists" and not isinstance(operand, bool):
                raise InvalidFilterError(f"$exists on {key!r} takes true or false, got {brief(operand)}")
            if op in ("$gt", "$gte", "$lt", "$lte") and not (_is_number(operand) or isinstance(operand, str)):
                raise InvalidFilterError(
                    f"{op} on {key!r} compares with a number or a string, got {brief(operand)}"
                )
            if op in ("$in", "$nin"):
                operand = list(operand)
            conditions.append(Condition(path, op, operand))
    return conditions


def compile_filter(filter: Mapping[str, Any] | None) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate over item values that is true when every condition of ``filter`` holds."""
    conditions = parse_filter(filter)
    if not conditions:
        return lambda value: True
    return lambda value: all(condition.matches(value) for condition in conditions)


# --------------------------------------------------------------------------- namespaces


def _labels_match(labels: Sequence[str], pattern: Sequence[str]) -> bool:
    return len(labels) >= len(pattern) and all(
        p == "*" or p == label for p, label in zip(pattern, labels, strict=False)
    )


def namespace_matches(
    namespace: Sequence[str], *, prefix: Sequence[str] | None = None, suffix: Sequence[str] | None = None
) -> bool:
    """Whether ``namespace`` starts with ``prefix`` and ends with ``suffix``, by whole labels (``*`` = any).

    >>> namespace_matches(("u", "x"), prefix=("u",)), namespace_matches(("users",), prefix=("u",))
    (True, False)
    """
    if prefix is not None and not _labels_match(namespace, prefix):
        return False
    return not (
        suffix is not None
        and (len(suffix) > len(namespace) or not _labels_match(namespace[::-1], suffix[::-1]))
    )


def apply_list_namespaces(namespaces: Iterable[Sequence[str]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """Answer a ``ListNamespacesOp`` from the namespaces that hold at least one live item."""
    conditions: tuple[MatchCondition, ...] = tuple(op.match_conditions or ())
    selected: set[tuple[str, ...]] = set()
    for namespace in namespaces:
        ns = tuple(namespace)
        if all(
            namespace_matches(ns, prefix=c.path)
            if c.match_type == "prefix"
            else namespace_matches(ns, suffix=c.path)
            for c in conditions
        ):
            selected.add(ns[: op.max_depth] if op.max_depth is not None else ns)
    ordered = sorted(selected)
    return ordered[op.offset : op.offset + op.limit]


# --------------------------------------------------------------------------- ordering


def no_query_sort_key(item: Item) -> tuple[float, tuple[str, ...], str]:
    """Search without a query: newest ``updated_at`` first, then namespace, then key."""
    return (-item.updated_at.timestamp(), tuple(item.namespace), item.key)


def search_sort_key(item: SearchItem) -> tuple[int, float, float, tuple[str, ...], str]:
    """Search with a query: highest score first (unscored last), then as :func:`no_query_sort_key`."""
    score = item.score
    scored = score is not None and not math.isnan(score)
    return (0 if scored else 1, -(score or 0.0) if scored else 0.0, *no_query_sort_key(item))


# --------------------------------------------------------------------------- indexing


def lexical_fields_of(value: Any) -> tuple[str, ...] | None:
    """The ``lexical_fields`` of a store's index config, validated (None: not set)."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value:
        raise ConfigurationError(
            f"index lexical_fields must be a non-empty list of field paths, got {value!r}. "
            'Fix: index={..., "lexical_fields": ["content"]} (a list, even for one field).'
        )
    bad = [f for f in value if not isinstance(f, str) or not f.strip()]
    if bad:
        raise ConfigurationError(
            f"index lexical_fields holds {bad!r}, not field paths. Fix: strings such as 'metadata.context'."
        )
    return tuple(value)


def index_texts(value: Mapping[str, Any], fields: Sequence[str] | None) -> list[str]:
    """The texts to embed/index for ``value``: each field path's text (``"a.b"``, ``"arr[*]"``, ``"$"``).

    ``fields=None`` means the whole value (``"$"``), as in LangGraph's stores. Empty texts are dropped.
    """
    texts: list[str] = []
    for field in fields or ["$"]:
        plain = value.get(field) if _PLAIN_KEY.fullmatch(field) else None
        for text in [plain] if isinstance(plain, str) else get_text_at_path(value, _path_tokens(field)):
            if text and text.strip():
                texts.append(text)
    return texts


# A field that is one key holding a string needs none of LangGraph's path parsing (a put's hot path).
_PLAIN_KEY = re.compile(r"[^.\[\]$*]+")


@functools.lru_cache(maxsize=256)
def _path_tokens(field: str) -> str | list[str]:
    """``field`` parsed once by LangGraph's ``tokenize_path`` (a store reads the same few fields of
    every value it indexes: parsing each time was a fifth of opening a CheckpointerStore); ``"$"``
    and ``""`` as they are (``get_text_at_path`` reads them as the whole value)."""
    return field if not field or field == "$" else tokenize_path(field)


# --------------------------------------------------------------------------- TTL


@dataclass(frozen=True)
class TTLSettings:
    """A store's TTL behaviour, from LangGraph's ``TTLConfig``.

    Attributes:
        default_ttl: minutes an item lives after its last write (or read, when refreshed); None: forever.
        refresh_on_read: whether get/search push the expiry of what they return, by default.
        sweep_interval_minutes: how often the sweeper deletes expired items; None: no sweeper.
    """

    default_ttl: float | None = None
    refresh_on_read: bool = True
    sweep_interval_minutes: float | None = None

    @classmethod
    def from_config(cls, config: TTLConfig | Mapping[str, Any] | None) -> TTLSettings:
        """Read a ``TTLConfig`` (``None`` means no TTL)."""
        if not config:
            return cls()
        default_ttl = config.get("default_ttl")
        interval = config.get("sweep_interval_minutes")
        for name, minutes in (("default_ttl", default_ttl), ("sweep_interval_minutes", interval)):
            if minutes is not None and (not _is_number(minutes) or minutes <= 0):
                raise InvalidValueError(
                    f"TTLConfig {name} must be a positive number of minutes, got {minutes!r}"
                )
        return cls(
            default_ttl=float(default_ttl) if default_ttl is not None else None,
            refresh_on_read=bool(config.get("refresh_on_read", True)),
            sweep_interval_minutes=float(interval) if interval is not None else None,
        )

    def refresh(self, refresh_ttl: bool | None) -> bool:
        """Whether a read refreshes expiries: the op's own choice, else the configured default."""
        return self.refresh_on_read if refresh_ttl is None else refresh_ttl


def expiry(now: datetime, minutes: float | None) -> datetime | None:
    """When an item written at ``now`` with a TTL of ``minutes`` expires (None: never)."""
    if minutes is None:
        return None
    return now + timedelta(minutes=minutes)


class TTLSweeper:
    """A daemon thread that calls ``sweep()`` every ``interval_minutes`` until stopped.

    A failed sweep is logged with its traceback and tried again next interval.
    """

    def __init__(
        self, sweep: Callable[[], int], interval_minutes: float, *, name: str = "langmem-ttl-sweeper"
    ):
        if interval_minutes <= 0:
            raise InvalidValueError(
                f"sweep interval must be a positive number of minutes, got {interval_minutes!r}"
            )
        self._sweep = sweep
        self.interval_seconds = interval_minutes * 60.0
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start sweeping (no-op when already running)."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop sweeping and wait for the thread to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            try:
                removed = self._sweep()
                if removed:
                    logger.debug("TTL sweep removed %d expired items", removed)
            except Exception:  # keep sweeping; the next interval tries again
                logger.exception("TTL sweep failed; retrying in %.0f s", self.interval_seconds)
