"""The validation boundary: every write of every store of ours passes here.

``put``, ``batch``, import and copy all go through :func:`validate_put` (namespace,
key, value, ttl); :class:`CheckedStore` runs the same checks in ``BaseStore``'s
convenience methods before LangGraph's own (which would stringify a key or raise
LangGraph's namespace error first). :class:`~langmem_plugin.core.record.MemoryRecord`
checks its own fields with the same text rule
(:func:`~langmem_plugin.core.record.text_problem`). A bad write is a typed error
from :mod:`langmem_plugin.errors` and writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.base import (
    InvalidNamespaceError as _LangGraphInvalidNamespaceError,
)
from langgraph.store.base import (
    _validate_namespace as _langgraph_validate_namespace,
)

from langmem_plugin.core.record import text_problem
from langmem_plugin.errors import InvalidNamespaceError, InvalidValueError
from langmem_plugin.stores._common import brief, parse_filter

__all__ = [
    "MAX_VALUE_BYTES",
    "MAX_VALUE_DEPTH",
    "CheckedStore",
    "final_puts",
    "validate_key",
    "validate_namespace",
    "validate_op",
    "validate_put",
    "validate_value",
]

#: The largest value a store accepts: its JSON encoding in UTF-8, in bytes (1 MiB).
MAX_VALUE_BYTES = 1024 * 1024
#: The deepest a value may nest objects and lists (the value itself is depth 1).
MAX_VALUE_DEPTH = 64


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
            f"namespace must be a tuple of strings, got {type(namespace).__name__} {brief(namespace)}; "
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
            f"an item key must be a string, got {type(key).__name__} {brief(key)}. Fix: pass str(key) "
            "yourself if that is the key you mean."
        )
    problem = text_problem(key)
    if problem is not None:
        raise InvalidValueError(f"the item key {key!r} {problem}. Fix: remove or replace the character.")
    return key


#: The integers every store keeps as integers: JSON numbers that fit 64 bits, signed or unsigned.
_INT_LOW, _INT_HIGH = -(2**63), 2**64 - 1


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
                f"a store value nests objects and lists deeper than {max_depth} levels (at {brief(path)}). "
                "Fix: flatten it."
            )
        for name, child in children:
            if isinstance(node, dict):
                if not isinstance(name, str):
                    raise InvalidValueError(
                        f"a store value's object keys must be strings, got {name!r} at {brief(path)}. "
                        "Fix: convert the keys to str."
                    )
                if (problem := text_problem(name)) is not None:
                    raise InvalidValueError(
                        f"a store value's key {name!r} at {brief(path)} {problem}. "
                        "Fix: remove or replace the character."
                    )
                where = f"{path}[{name!r}]"
            else:
                where = f"{path}[{name}]"
            if isinstance(child, dict | list | tuple | str):
                stack.append((child, depth + 1, where))
            elif isinstance(child, int) and not _INT_LOW <= child <= _INT_HIGH:
                raise InvalidValueError(
                    f"a store value's integer at {brief(where)} is {brief(str(child))}, outside 64 bits "
                    f"({_INT_LOW} to {_INT_HIGH}): Qdrant and msgpack would turn it into a float or "
                    "refuse it. Fix: store it as a string (str(n))."
                )


def validate_value(
    value: Any, *, max_bytes: int = MAX_VALUE_BYTES, max_depth: int = MAX_VALUE_DEPTH
) -> dict[str, Any]:
    """Check that ``value`` is a JSON object of JSON values within ``max_bytes`` and ``max_depth``.

    Returns a deep copy made through JSON (tuples become lists), so the store
    never shares mutable state with the caller.

    Raises:
        InvalidValueError: not a dict, keys not strings, nested deeper than ``max_depth``, text
            that is not valid Unicode (a lone surrogate), an integer outside 64 bits, not
            JSON-serialisable (NaN and infinities included), or larger than ``max_bytes``.
    """
    if not isinstance(value, dict):
        raise InvalidValueError(
            f"a store value must be a dict (a JSON object), got {type(value).__name__}: {brief(value)}. "
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
