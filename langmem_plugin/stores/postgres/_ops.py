"""The statements of a batch's ops (get, search, list, put, delete, sweep), built without I/O.

:func:`plan_puts` turns the winning puts of a batch into rows: the item row (with its BM25 terms)
and the texts to embed; the store embeds them and :func:`write_statements` gives what to run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp

from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.errors import InvalidValueError
from langmem_plugin.stores._common import index_texts, parse_filter
from langmem_plugin.stores.postgres._sql import (
    ITEM_COLUMNS,
    LIVE,
    Filtered,
    dense_candidates,
    namespace_text,
    newest,
    prefix_condition,
    refreshing,
    split_filter,
    vector_literal,
)

__all__ = [
    "PutRow",
    "check_storable",
    "get_statement",
    "holds_nul",
    "item_of",
    "list_statement",
    "plan_puts",
    "search_statement",
    "search_without_query",
    "sweep_statement",
    "write_statements",
]

Statement = tuple[str, Any]


def item_of(row: Mapping[str, Any], score: float | None = None, *, scored: bool = False) -> Item:
    """An ``Item`` (or a ``SearchItem`` when ``scored``) from a row of ``ITEM_COLUMNS``."""
    namespace = tuple(row["prefix"].split("."))
    value = row["value"]
    if isinstance(value, str | bytes):
        value = json.loads(value)
    if scored:
        return SearchItem(namespace, row["key"], value, row["created_at"], row["updated_at"], score)
    return Item(
        value=value,
        key=row["key"],
        namespace=namespace,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def get_statement(ops: Sequence[GetOp], now: datetime) -> Statement:
    """Every get of a batch in one statement (refreshing the expiry of those that ask)."""
    params = {
        "now": now,
        "prefixes": [namespace_text(op.namespace) for op in ops],
        "keys": [op.key for op in ops],
        "refresh": [bool(op.refresh_ttl) for op in ops],
    }
    statement = f"""
        WITH want AS (
            SELECT * FROM unnest(%(prefixes)s::text[], %(keys)s::text[], %(refresh)s::bool[])
                AS w(prefix, key, refresh)
        ),
        refreshed AS (
            UPDATE store t SET expires_at = %(now)s + make_interval(secs => t.ttl_exact * 60)
            FROM want w
            WHERE t.prefix = w.prefix AND t.key = w.key AND w.refresh AND t.ttl_exact IS NOT NULL
              AND (t.expires_at IS NULL OR t.expires_at > %(now)s)
        )
        SELECT {ITEM_COLUMNS} FROM store s JOIN want w ON s.prefix = w.prefix AND s.key = w.key
        WHERE {LIVE}
    """
    return statement, params


def search_without_query(op: SearchOp, now: datetime, refresh: bool) -> tuple[Statement, Filtered]:
    """A search without a query: newest first. With a residual filter, every match comes back and
    the caller checks and pages (see :class:`~._sql.Filtered`)."""
    params: dict[str, Any] = {"now": now}
    filtered = split_filter(parse_filter(op.filter), params)
    page = ""
    if not filtered.residual:
        params |= {"limit": op.limit, "offset": op.offset}
        page = "LIMIT %(limit)s OFFSET %(offset)s"
    select = f"""
        SELECT {ITEM_COLUMNS}, NULL::float8 AS score FROM store s
        WHERE {prefix_condition("s.prefix", op.namespace_prefix, params)} AND {LIVE} AND {filtered.sql}
        ORDER BY {newest(op.namespace_prefix)} {page}
    """
    return (refreshing(select, refresh and not filtered.residual), params), filtered


def search_statement(
    op: SearchOp, vector: Sequence[float], vector_type: str, now: datetime, refresh: bool
) -> tuple[Statement, Filtered]:
    """A search with a query: the items with a vector, by cosine similarity (see ``dense_candidates``)."""
    params: dict[str, Any] = {}
    filtered = split_filter(parse_filter(op.filter), params)
    exact = not filtered.residual
    statement, extra = dense_candidates(
        op.namespace_prefix,
        filtered,
        vector,
        vector_type,
        op.limit if exact else None,
        op.offset,
        now,
        refresh=refresh and exact,
    )
    return (statement, params | extra), filtered


def list_statement(op: ListNamespacesOp, now: datetime) -> Statement:
    """The live namespaces, narrowed by the leading labels of a prefix condition without ``*``;
    the caller applies the conditions, depth and paging exactly (``apply_list_namespaces``)."""
    params: dict[str, Any] = {"now": now}
    narrow = "TRUE"
    for condition in op.match_conditions or ():
        if condition.match_type != "prefix":
            continue
        leading: list[str] = []
        for label in condition.path:
            if label == "*":
                break
            leading.append(label)
        if leading:
            narrow = prefix_condition("s.prefix", leading, params)
    return f"SELECT DISTINCT s.prefix FROM store s WHERE {LIVE} AND {narrow}", params


def sweep_statement(now: datetime) -> Statement:
    """Delete every expired item (its vectors go with it: ``ON DELETE CASCADE``)."""
    return "DELETE FROM store WHERE expires_at IS NOT NULL AND expires_at <= %(now)s", {"now": now}


@dataclass
class PutRow:
    """One item to upsert, and what to embed for it."""

    op: PutOp
    texts: list[tuple[str, str]] = field(default_factory=list)  # (field name, text)
    terms: list[int] | None = None
    weights: list[float] | None = None


def holds_nul(value: Any) -> bool:
    """Whether ``value`` (a JSON value) holds the NUL character in a string or a key."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in k or holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_nul(v) for v in value)
    return False


def check_storable(op: PutOp) -> None:
    """Refuse what Postgres cannot store: the NUL character in a key or anywhere in a value
    (``text`` and ``jsonb`` have no representation for it). Raises before anything is written."""
    if "\x00" in op.key:
        raise InvalidValueError(
            f"key {op.key!r} holds the NUL character, which Postgres cannot store. "
            "Fix: remove it from the key."
        )
    if op.value is not None and holds_nul(op.value):
        raise InvalidValueError(
            f"the value of {op.key!r} holds the NUL character (\\u0000), which Postgres's jsonb cannot "
            "store. Fix: remove it (or replace it, e.g. with U+FFFD) before writing."
        )


def plan_puts(
    winners: Sequence[PutOp],
    fields: Sequence[str] | None,
    lexical_fields: Sequence[str] | None,
    encoder: BM25Encoder,
    *,
    indexed: bool,
) -> tuple[list[PutRow], list[PutOp]]:
    """The rows to upsert (with their texts and BM25 terms) and the deletes, from a batch's winners.

    ``indexed``: the store has an index config (else nothing is embedded nor lexically indexed).
    An item put with ``index=False`` gets neither; ``index=[...]`` chooses what is embedded.
    """
    rows: list[PutRow] = []
    deletes: list[PutOp] = []
    for op in winners:
        check_storable(op)
        if op.value is None:
            deletes.append(op)
            continue
        row = PutRow(op)
        if indexed and op.index is not False:
            own = list(op.index) if op.index else fields
            for path in own or ["$"]:
                texts = index_texts(op.value, [path])
                for i, text in enumerate(texts):
                    row.texts.append((f"{path}.{i}" if len(texts) > 1 else path, text))
            lexical = "\n".join(index_texts(op.value, lexical_fields or own))
            sparse = encoder.encode_document(lexical)
            row.terms, row.weights = list(sparse.indices), list(sparse.values)
        rows.append(row)
    return rows, deletes


def write_statements(
    rows: Sequence[PutRow],
    deletes: Sequence[PutOp],
    vectors: Sequence[Sequence[float]],
    vector_type: str,
    now: datetime,
    *,
    has_vectors: bool,
) -> list[tuple[str, list[dict[str, Any]]]]:
    """``(statement, params of each row)`` to run with ``executemany``, in order.

    ``vectors`` holds one vector per text of ``rows``, in order. A put replaces the item's vectors
    (a field that is gone loses its vector); ``created_at`` is kept on update.
    """
    out: list[tuple[str, list[dict[str, Any]]]] = []
    if deletes:
        out.append(
            (
                "DELETE FROM store WHERE prefix = %(prefix)s AND key = %(key)s",
                [{"prefix": namespace_text(op.namespace), "key": op.key} for op in deletes],
            )
        )
    if not rows:
        return out
    upserts = []
    for row in rows:
        ttl = float(row.op.ttl) if row.op.ttl is not None else None
        upserts.append(
            {
                "prefix": namespace_text(row.op.namespace),
                "key": row.op.key,
                "value": json.dumps(row.op.value, ensure_ascii=False),
                "now": now,
                "ttl": ttl,
                "ttl_int": math.ceil(ttl) if ttl is not None else None,
                "terms": row.terms,
                "weights": row.weights,
            }
        )
    out.append(
        (
            """
            INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes,
                               ttl_exact, lexical_terms, lexical_weights)
            VALUES (%(prefix)s, %(key)s, %(value)s::jsonb, %(now)s, %(now)s,
                    %(now)s + make_interval(secs => %(ttl)s::float8 * 60), %(ttl_int)s, %(ttl)s,
                    %(terms)s::bigint[], %(weights)s::real[])
            ON CONFLICT (prefix, key) DO UPDATE SET
                value = EXCLUDED.value, updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at,
                ttl_minutes = EXCLUDED.ttl_minutes, ttl_exact = EXCLUDED.ttl_exact,
                lexical_terms = EXCLUDED.lexical_terms, lexical_weights = EXCLUDED.lexical_weights
            """,
            upserts,
        )
    )
    if has_vectors:
        out.append(
            (
                "DELETE FROM store_vectors WHERE prefix = %(prefix)s AND key = %(key)s",
                [{"prefix": u["prefix"], "key": u["key"]} for u in upserts],
            )
        )
        inserts = []
        at = 0
        for row, upsert in zip(rows, upserts, strict=True):
            for name, _ in row.texts:
                inserts.append(
                    {
                        "prefix": upsert["prefix"],
                        "key": upsert["key"],
                        "field": name,
                        "vec": vector_literal(vectors[at]),
                        "now": now,
                    }
                )
                at += 1
        if inserts:
            out.append(
                (
                    f"""
                    INSERT INTO store_vectors (prefix, key, field_name, embedding, created_at, updated_at)
                    VALUES (%(prefix)s, %(key)s, %(field)s, %(vec)s::{vector_type}, %(now)s, %(now)s)
                    """,
                    inserts,
                )
            )
    return out
