"""What every store of ours shares: validation, filters, namespace listing, ordering, TTL.

Pure helpers — no I/O — so that each store only plans engine calls and does
them (STYLE.md: plan ops once, do I/O twice). The behaviour is the one written
in ``STORE-CONTRACT.md``; the engine-specific stores translate what they can
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

import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base import (
    InvalidNamespaceError as _LangGraphInvalidNamespaceError,
)
from langgraph.store.base import (
    _validate_namespace as _langgraph_validate_namespace,
)
from langgraph.store.base.embed import get_text_at_path

from langmem_plugin.core.record import text_problem
from langmem_plugin.errors import InvalidFilterError, InvalidNamespaceError, InvalidValueError

__all__ = [
    "MAX_VALUE_BYTES",
    "MAX_VALUE_DEPTH",
    "OPERATORS",
    "CheckedStore",
    "Clock",
    "Condition",
    "TTLSettings",
    "TTLSweeper",
    "apply_list_namespaces",
    "compile_filter",
    "expiry",
    "final_puts",
    "index_texts",
    "namespace_matches",
    "no_query_sort_key",
    "parse_filter",
    "search_sort_key",
    "utc_clock",
    "validate_key",
    "validate_namespace",
    "validate_op",
    "validate_put",
    "validate_value",
]

logger = logging.getLogger(__name__)

#: The largest value a store accepts: its JSON encoding in UTF-8, in bytes (1 MiB).
MAX_VALUE_BYTES = 1024 * 1024
#: The deepest a value may nest objects and lists (the value itself is depth 1).
MAX_VALUE_DEPTH = 64

#: The filter operators every store of ours supports.
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists")

Clock = Callable[[], datetime]


def utc_clock() -> datetime:
    """The current time, timezone-aware UTC (the default clock of every store)."""
    return datetime.now(UTC)


# --------------------------------------------------------------------------- validation


# The validation boundary: every write of every store of ours (put, batch, import, copy) passes
# validate_put; MemoryRecord checks its own fields with the same text rule (core.record.text_problem).


def validate_namespace(namespace: Sequence[str], *, for_write: bool = True) -> tuple[str, ...]:
    """Check ``namespace`` as LangGraph does on put; return it as a tuple.

    ``for_write=False`` checks only the labels (a search prefix may be empty).
    Labels must also be valid Unicode text (no lone surrogate).

    Raises:
        InvalidNamespaceError: not a tuple of non-empty strings without ``.``, or root ``"langgraph"``.
    """
    if not isinstance(namespace, tuple | list):
        raise InvalidNamespaceError(
            f"namespace must be a tuple of strings, got {type(namespace).__name__} {_short(namespace)}; "
            "e.g. ('memories', 'user-1')"
        )
    ns = tuple(namespace)
    try:
        if for_write:
            _langgraph_validate_namespace(ns)
        else:
            from langgraph.store.base import _validate_namespace_labels

            _validate_namespace_labels(ns)
    except _LangGraphInvalidNamespaceError as exc:
        raise InvalidNamespaceError(
            f"{exc} Fix: use a non-empty tuple of non-empty strings without '.', not rooted at 'langgraph'."
        ) from None
    for label in ns:
        problem = text_problem(label)
        if problem is not None:
            raise InvalidNamespaceError(
                f"namespace label {label!r} {problem}. Fix: remove or replace the character."
            )
    return ns


def validate_key(key: Any) -> str:
    """Check that an item key is a string of valid Unicode text; return it.

    ``BaseStore.put`` would turn ``None``, ``1`` or ``["k"]`` into ``'None'``, ``'1'``, ``"['k']"``:
    a store of ours refuses them instead (see :class:`CheckedStore`).

    Raises:
        InvalidValueError: not a ``str``, or a lone surrogate in it.
    """
    if not isinstance(key, str):
        raise InvalidValueError(
            f"an item key must be a string, got {type(key).__name__} {_short(key)}. Fix: pass str(key) "
            "yourself if that is the key you mean."
        )
    problem = text_problem(key)
    if problem is not None:
        raise InvalidValueError(f"the item key {key!r} {problem}. Fix: remove or replace the character.")
    return key


def _check_shape(value: dict[str, Any], max_depth: int) -> None:
    """Depth, key types and text of a value, without recursion (a value may be nested 10,000 deep)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "value")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            children: Iterable[tuple[Any, Any]] = node.items()
        elif isinstance(node, list | tuple):
            children = enumerate(node)
        else:
            if isinstance(node, str) and (problem := text_problem(node)) is not None:
                raise InvalidValueError(
                    f"a store value's text at {path} {problem}. Fix: remove or replace the character."
                )
            continue
        if depth > max_depth:
            raise InvalidValueError(
                f"a store value nests objects and lists deeper than {max_depth} levels (at {_short(path)}). "
                "Fix: flatten it."
            )
        for name, child in children:
            if isinstance(node, dict):
                if not isinstance(name, str):
                    raise InvalidValueError(
                        f"a store value's object keys must be strings, got {name!r} at {_short(path)}. "
                        "Fix: convert the keys to str."
                    )
                if (problem := text_problem(name)) is not None:
                    raise InvalidValueError(
                        f"a store value's key {name!r} at {_short(path)} {problem}. "
                        "Fix: remove or replace the character."
                    )
                where = f"{path}[{name!r}]"
            else:
                where = f"{path}[{name}]"
            if isinstance(child, dict | list | tuple | str):
                stack.append((child, depth + 1, where))


def validate_value(
    value: Any, *, max_bytes: int = MAX_VALUE_BYTES, max_depth: int = MAX_VALUE_DEPTH
) -> dict[str, Any]:
    """Check that ``value`` is a JSON object of JSON values within ``max_bytes`` and ``max_depth``.

    Returns a deep copy made through JSON (tuples become lists), so the store
    never shares mutable state with the caller.

    Raises:
        InvalidValueError: not a dict, keys not strings, nested deeper than ``max_depth``, text
            that is not valid Unicode (a lone surrogate), not JSON-serialisable (NaN and infinities
            included), or larger than ``max_bytes``.
    """
    if not isinstance(value, dict):
        raise InvalidValueError(
            f"a store value must be a dict (a JSON object), got {type(value).__name__}: {_short(value)}. "
            "Fix: wrap it, e.g. {'value': ...}."
        )
    _check_shape(value, max_depth)
    try:
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidValueError(
            f"a store value must hold only JSON values (dict with str keys, list, str, finite number, "
            f"bool, None): {exc}. Fix: convert it first (e.g. datetime.isoformat())."
        ) from None
    try:
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a str subclass whose text _check_shape did not see
        raise InvalidValueError(
            f"a store value holds text that is not valid Unicode: {exc}. Fix: remove the character."
        ) from None
    if size > max_bytes:
        raise InvalidValueError(
            f"a store value is {size:,} bytes of JSON, more than the limit of {max_bytes:,}. "
            "Fix: store large content in parts or outside the store."
        )
    copied: dict[str, Any] = json.loads(encoded)
    return copied


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_put(op: PutOp) -> PutOp:
    """The boundary of every write: ``op`` with its namespace, key, value and ttl checked.

    Returns ``op`` with a validated deep copy of its value (see :func:`validate_value`), so
    nothing the caller holds is shared with the store. A store calls this for every
    ``PutOp`` of a batch before it writes anything, so a bad op writes nothing.

    Raises:
        InvalidNamespaceError: a bad namespace (see :func:`validate_namespace`).
        InvalidValueError: a key that is not a string, a bad value, or a ttl that is not a
            positive number of minutes.
    """
    if not isinstance(op, PutOp):
        raise InvalidValueError(f"expected a PutOp, got {type(op).__name__}")
    validate_namespace(op.namespace)
    validate_key(op.key)
    ttl = op.ttl
    if ttl is not None and not (isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl > 0):
        raise InvalidValueError(f"ttl must be a positive number of minutes or None, got {ttl!r}")
    if op.value is None:
        return op
    return op._replace(value=validate_value(op.value))


def validate_op(op: Op) -> None:
    """Validate any op before a batch runs (``batch`` may be called without ``put``).

    A ``PutOp`` is checked as :func:`validate_put` does (namespace, key, value, ttl); a ``GetOp``'s
    key must be a string; search prefixes, filters and namespace conditions are checked.
    """
    if isinstance(op, PutOp):
        validate_put(op)
    elif isinstance(op, GetOp):
        validate_namespace(op.namespace, for_write=False)
        validate_key(op.key)
    elif isinstance(op, SearchOp):
        validate_namespace(op.namespace_prefix, for_write=False)
        parse_filter(op.filter)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            labels = [label for label in condition.path if label != "*"]
            validate_namespace(labels, for_write=False)


@contextmanager
def _our_namespace_error() -> Iterator[None]:
    try:
        yield
    except _LangGraphInvalidNamespaceError as exc:
        if isinstance(exc, InvalidNamespaceError):
            raise
        raise InvalidNamespaceError(
            f"{exc} Fix: use a tuple of non-empty strings without '.', not rooted at 'langgraph'."
        ) from None


class CheckedStore(BaseStore):
    """``BaseStore`` whose convenience methods check with our rules before LangGraph's.

    ``BaseStore.put``/``get``/``delete`` turn any key into ``str(key)`` and check the
    namespace with LangGraph's own ``InvalidNamespaceError`` before ``batch`` sees the op;
    ``store.put({"a": 1}, ...)`` fails there with ``KeyError: 0``. A store of ours derives
    from this class (and still implements only ``batch``/``abatch``), so every way in —
    ``put``, ``batch([PutOp(...)])``, their ``a``-twins — raises the same typed errors:
    :class:`~langmem_plugin.errors.InvalidNamespaceError` (also LangGraph's) and
    :class:`~langmem_plugin.errors.InvalidValueError`.
    """

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        validate_namespace(namespace, for_write=False)
        validate_key(key)
        return super().get(namespace, key, refresh_ttl=refresh_ttl)

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        validate_namespace(namespace, for_write=False)
        validate_key(key)
        return await super().aget(namespace, key, refresh_ttl=refresh_ttl)

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        validate_namespace(namespace)
        validate_key(key)
        super().put(namespace, key, value, index, ttl=ttl)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        validate_namespace(namespace)
        validate_key(key)
        await super().aput(namespace, key, value, index, ttl=ttl)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        validate_namespace(namespace, for_write=False)
        validate_key(key)
        super().delete(namespace, key)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        validate_namespace(namespace, for_write=False)
        validate_key(key)
        await super().adelete(namespace, key)

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        validate_namespace(namespace_prefix, for_write=False)
        return super().search(
            namespace_prefix, query=query, filter=filter, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        validate_namespace(namespace_prefix, for_write=False)
        return await super().asearch(
            namespace_prefix, query=query, filter=filter, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        with _our_namespace_error():
            return super().list_namespaces(
                prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
            )

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        with _our_namespace_error():
            return await super().alist_namespaces(
                prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
            )


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
        raise InvalidFilterError(f"a filter must be a dict of key -> condition, got {_short(filter)}")
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
                f"filter on {key!r} mixes operators and plain keys: {_short(condition)}. "
                "Fix: use only operators, or only plain keys (a subset match)."
            )
        for op, operand in condition.items():
            if op not in OPERATORS:
                raise InvalidFilterError(
                    f"unknown filter operator {op!r} on {key!r}; the supported operators are "
                    f"{', '.join(OPERATORS)}."
                )
            if op in ("$in", "$nin") and not isinstance(operand, list | tuple):
                raise InvalidFilterError(f"{op} on {key!r} takes a list, got {_short(operand)}")
            if op == "$exists" and not isinstance(operand, bool):
                raise InvalidFilterError(f"$exists on {key!r} takes true or false, got {_short(operand)}")
            if op in ("$gt", "$gte", "$lt", "$lte") and not (_is_number(operand) or isinstance(operand, str)):
                raise InvalidFilterError(
                    f"{op} on {key!r} compares with a number or a string, got {_short(operand)}"
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


def final_puts(ops: Iterable[tuple[int, PutOp]]) -> dict[tuple[tuple[str, ...], str], tuple[int, PutOp]]:
    """The put that wins for each (namespace, key) of a batch: the later one.

    Every key is checked (:func:`validate_key`) on the way: a store calls this before it
    writes anything, so a batch with a key that is not a string writes nothing.

    Raises:
        InvalidValueError: a key that is not a string, or not valid Unicode text.
    """
    winners: dict[tuple[tuple[str, ...], str], tuple[int, PutOp]] = {}
    for index, op in ops:
        winners[(tuple(op.namespace), validate_key(op.key))] = (index, op)
    return winners


# --------------------------------------------------------------------------- indexing


def index_texts(value: Mapping[str, Any], fields: Sequence[str] | None) -> list[str]:
    """The texts to embed/index for ``value``: each field path's text (``"a.b"``, ``"arr[*]"``, ``"$"``).

    ``fields=None`` means the whole value (``"$"``), as in LangGraph's stores. Empty texts are dropped.
    """
    texts: list[str] = []
    for field in fields or ["$"]:
        plain = value.get(field) if _PLAIN_KEY.fullmatch(field) else None
        for text in [plain] if isinstance(plain, str) else get_text_at_path(value, field):
            if text and text.strip():
                texts.append(text)
    return texts


# A field that is one key holding a string needs none of LangGraph's path parsing (a put's hot path).
_PLAIN_KEY = re.compile(r"[^.\[\]$*]+")


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
