"""The SQL of the Postgres store, built without I/O: each function returns ``(statement, params)``.

The tables are LangGraph's (``store``, ``store_vectors``, see ``_schema``) with the
columns this store adds: ``lexical_terms``/``lexical_weights`` (an item's BM25 terms and
their saturated, length-normalised weights, from :class:`~langmem_plugin.core.lexical.BM25Encoder`)
and ``ttl_exact`` (the TTL in minutes as given; LangGraph's ``ttl_minutes`` is an integer).
Every time is a parameter (the store's clock), never ``NOW()``, so the contract's
clock-driven tests hold and every process agrees on what is live.

A namespace is stored as its labels joined by ``.`` (LangGraph's encoding: a label never holds
one); a prefix matches whole labels: ``prefix = 'a.b' OR prefix LIKE 'a.b.%'`` with ``%``, ``_``
and ``\\`` escaped. Order: LangGraph's ``text_pattern_ops`` index on ``store.prefix`` serves it.
The dense query names the namespace on both tables, so each side is read through its prefix
index (not the whole ``store`` table). Reads are never prepared (``prepare=False``): a generic
plan cannot turn a ``LIKE`` parameter into an index range.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langmem_plugin.stores._common import Condition

__all__ = [
    "ITEM_COLUMNS",
    "Filtered",
    "dense_candidates",
    "lexical_with_stats",
    "namespace_text",
    "newest",
    "one_statement",
    "prefix_condition",
    "refreshing",
    "split_filter",
    "vector_literal",
]

#: What a read selects of an item (``s`` is ``store``).
ITEM_COLUMNS = "s.prefix, s.key, s.value, s.created_at, s.updated_at"

#: An item that is live at ``%(now)s``.
LIVE = "(s.expires_at IS NULL OR s.expires_at > %(now)s)"

#: The order of a search without a query (the contract): newest first, then namespace, then key.
NEWEST = 's.updated_at DESC, string_to_array(s.prefix, \'.\') COLLATE "C", s.key COLLATE "C"'


def namespace_text(namespace: Sequence[str]) -> str:
    """A namespace as stored in ``store.prefix`` (LangGraph's encoding)."""
    return ".".join(namespace)


def vector_literal(vector: Sequence[float]) -> str:
    """A vector in pgvector's text form (``[0.1,0.2]``): one string parameter, cast by the
    statement, instead of a list psycopg would adapt float by float."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def prefix_condition(column: str, prefix: Sequence[str], params: dict[str, Any], name: str = "ns") -> str:
    """``column`` holds a namespace under ``prefix`` (whole labels); adds the parameters to ``params``."""
    if not prefix:
        return "TRUE"
    text = namespace_text(prefix)
    params[name] = text
    params[f"{name}_like"] = _escape_like(text) + ".%"
    return f"({column} = %({name})s OR {column} LIKE %({name}_like)s)"


@dataclass(frozen=True)
class Filtered:
    """A filter split between SQL and Python.

    Attributes:
        sql: the conditions Postgres checks (jsonb containment): ``"TRUE"`` when none.
        residual: the conditions checked on each row in Python (exactly as every store of ours does).
            When empty, ``sql`` is the whole filter and Postgres may apply limit and offset.
    """

    sql: str
    residual: tuple[Condition, ...]


def _has_none(operand: Any) -> bool:
    if operand is None:
        return True
    if isinstance(operand, dict):
        return any(_has_none(v) for v in operand.values())
    if isinstance(operand, list):
        return any(_has_none(v) for v in operand)
    return False


def _nest(path: tuple[str, ...], operand: Any) -> dict[str, Any]:
    nested: Any = operand
    for part in reversed(path):
        nested = {part: nested}
    assert isinstance(nested, dict)
    return nested


def split_filter(conditions: Sequence[Condition], params: dict[str, Any]) -> Filtered:
    """Each ``$eq`` becomes jsonb containment (``s.value @> {"a": {"b": operand}}``).

    Containment is exact for a scalar operand (a string, number or bool: jsonb's ``3 = 3.0`` and
    ``1 != true`` agree with the contract) and only necessary for a list or dict operand (``["x"]``
    is contained in ``["x", "y"]``), which is then checked again in Python; an operand holding
    ``None`` (a missing key equals None) or the NUL character (no stored value holds it), and every
    other operator, are checked in Python only.
    """
    sql: list[str] = []
    residual: list[Condition] = []
    for i, condition in enumerate(conditions):
        operand = condition.operand
        if condition.op != "$eq" or _has_none(operand) or "\\u0000" in json.dumps(operand):
            residual.append(condition)
            continue
        name = f"f{i}"
        params[name] = json.dumps(_nest(condition.path, operand))
        sql.append(f"s.value @> %({name})s::jsonb")
        if isinstance(operand, dict | list):
            residual.append(condition)
    return Filtered(" AND ".join(sql) or "TRUE", tuple(residual))


def refreshing(select: str, ttl_refresh: bool) -> str:
    """``select`` (returning ``s.prefix, s.key``...) that also pushes the expiry of what it returns.

    The update runs in the same statement (a data-modifying CTE); the rows returned are as before it.
    """
    if not ttl_refresh:
        return select
    return f"""
        WITH found AS ({select}),
        refreshed AS (
            UPDATE store t SET expires_at = %(now)s + make_interval(secs => t.ttl_exact * 60)
            FROM found WHERE t.prefix = found.prefix AND t.key = found.key AND t.ttl_exact IS NOT NULL
        )
        SELECT * FROM found
    """


def newest(prefix: Sequence[str], name: str = "ns") -> str:
    """:data:`NEWEST` for a search under ``prefix`` (whose :func:`prefix_condition` named ``name``).

    The same order, cheaper: an item of the searched namespace itself sorts before every item of a
    namespace under it (its labels are a prefix of theirs), so only the others' labels are split —
    a search of one namespace compares no arrays at all.
    """
    if not prefix:
        return NEWEST
    labels = f"CASE WHEN s.prefix = %({name})s THEN NULL ELSE string_to_array(s.prefix, '.') END"
    return f's.updated_at DESC, ({labels}) COLLATE "C" NULLS FIRST, s.key COLLATE "C"'


def lexical_with_stats(
    prefix: Sequence[str],
    filtered: Filtered,
    terms: Sequence[int],
    limit: int,
    now: datetime,
    *,
    common: bool = False,
) -> tuple[str, dict[str, Any]]:
    """The BM25 top-``limit`` under ``prefix``, after one row of statistics.

    The first row has no item (``prefix`` NULL): ``total``, the live, lexically indexed items
    searched, and ``freqs``, how many of them hold each of ``terms`` (in order). The rows after it
    are the items that hold a term, scored ``Σ idf(term) × weight(term, item)`` over the query's
    terms, ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` from those counts — the score ``BM25Index``
    (``CheckpointerStore``) gives the same items. Each term is its own parameter and the score one
    expression per item (a lookup in the item's arrays per term, the idf computed once).

    Two shapes, the same rows: by default the items that hold a term are read once (Postgres may
    intersect the GIN index on ``lexical_terms`` with the prefix's), kept, and both counted and
    ranked, while the total is a count of the namespace; with ``common`` (the terms were in half
    the searched items or more last time) the namespace is read twice instead — once counting every
    term in every item, once ranking — which is cheaper than keeping that many items.
    """
    params: dict[str, Any] = {"now": now, "terms": list(terms), "limit": limit}
    where = f"{prefix_condition('s.prefix', prefix, params)} AND {LIVE} AND {filtered.sql}"
    slots = range(1, len(terms) + 1)
    params |= {f"t{i}": int(term) for i, term in zip(slots, terms, strict=True)}
    position = "array_position(s.lexical_terms, %(t{i})s::bigint)"
    counts = ", ".join(f"count({position.format(i=i)})" for i in slots)
    idfs = "".join(
        f", ln(1 + (st.total - st.freqs[{i}] + 0.5)::float8 / (st.freqs[{i}] + 0.5)::float8) AS i{i}"
        for i in slots
    )
    weighted = [f"coalesce(idf.i{i} * s.lexical_weights[{position.format(i=i)}], 0)" for i in slots]
    score = f"({' + '.join(weighted) or '0'})::float8"
    holds = "s.lexical_terms && %(terms)s::bigint[]" if terms else "FALSE"
    if common:
        ranked = f"""
        stats AS (
            SELECT count(*) AS total, ARRAY[{counts}]::bigint[] AS freqs
            FROM store s WHERE {where} AND s.lexical_terms IS NOT NULL
        ),
        idf AS MATERIALIZED (SELECT st.total, st.freqs{idfs} FROM stats st),
        hits AS (
            SELECT {ITEM_COLUMNS}, {score} AS score FROM store s, idf
            WHERE {where} AND {holds}
            ORDER BY score DESC, {newest(prefix)}
            LIMIT %(limit)s
        )"""
    else:
        ranked = f"""
        held AS MATERIALIZED (
            SELECT s.prefix, s.key, s.updated_at, s.lexical_terms, s.lexical_weights
            FROM store s WHERE {where} AND {holds}
        ),
        stats AS (
            SELECT (SELECT count(*) FROM store s WHERE {where} AND s.lexical_terms IS NOT NULL) AS total,
                   ARRAY[{counts}]::bigint[] AS freqs
            FROM held s
        ),
        idf AS MATERIALIZED (SELECT st.total, st.freqs{idfs} FROM stats st),
        best AS (
            SELECT s.prefix, s.key, {score} AS score FROM held s, idf
            ORDER BY score DESC, {newest(prefix)}
            LIMIT %(limit)s
        ),
        hits AS (
            SELECT {ITEM_COLUMNS}, b.score FROM best b JOIN store s ON s.prefix = b.prefix AND s.key = b.key
        )"""
    statement = f"""
        WITH {ranked}
        SELECT NULL::text AS prefix, NULL::text AS key, NULL::jsonb AS value,
               NULL::timestamptz AS created_at, NULL::timestamptz AS updated_at, NULL::float8 AS score,
               idf.total, idf.freqs
        FROM idf
        UNION ALL
        SELECT h.prefix, h.key, h.value, h.created_at, h.updated_at, h.score, NULL::bigint, NULL::bigint[]
        FROM hits h
    """
    return statement, params


def one_statement(
    parts: Sequence[tuple[str, dict[str, Any], bool]], now: datetime
) -> tuple[str, dict[str, Any]]:
    """Several selects (``statement, params, refresh``) as one statement: one round trip.

    Each part's rows come back with ``slot`` (its index in ``parts``); every part returns
    ``prefix, key, value, created_at, updated_at, score`` and may add ``total, freqs`` (else NULL).
    The expiries of the items of the parts marked ``refresh`` are pushed in the same statement.
    Each part's parameters are renamed ``p<slot>_<name>`` so the parts cannot collide.
    """
    selects: list[str] = []
    params: dict[str, Any] = {"now": now}
    for slot, (statement, own, refresh) in enumerate(parts):
        renamed = _PARAM.sub(lambda m, slot=slot: f"%(p{slot}_{m.group(1)})s", statement)  # type: ignore[misc]
        params |= {f"p{slot}_{name}": value for name, value in own.items()}
        columns = "x.*" if "st.freqs" in statement else "x.*, NULL::bigint AS total, NULL::bigint[] AS freqs"
        selects.append(
            f"SELECT {slot} AS slot, {str(refresh).upper()} AS refresh, {columns} FROM ({renamed}) x"
        )
    union = "\nUNION ALL\n".join(selects)
    statement = f"""
        WITH found AS ({union}),
        refreshed AS (
            UPDATE store t SET expires_at = %(now)s + make_interval(secs => t.ttl_exact * 60)
            FROM found
            WHERE found.refresh AND t.prefix = found.prefix AND t.key = found.key AND t.ttl_exact IS NOT NULL
        )
        SELECT * FROM found
    """
    return statement, params


_PARAM = re.compile(r"%\((\w+)\)s")


def _vectors_under(prefix: Sequence[str], params: dict[str, Any]) -> str:
    """The rows of ``store_vectors`` under ``prefix``: the namespace itself, then the namespaces
    under it, as two index scans (one ``OR`` of both is a bitmap scan of the table, slower)."""
    if not prefix:
        return "SELECT v.prefix, v.key, v.embedding FROM store_vectors v"
    prefix_condition("v.prefix", prefix, params, "vns")  # the parameters
    return """
        SELECT v.prefix, v.key, v.embedding FROM store_vectors v WHERE v.prefix = %(vns)s
        UNION ALL
        SELECT v.prefix, v.key, v.embedding FROM store_vectors v WHERE v.prefix LIKE %(vns_like)s
    """


def dense_candidates(
    prefix: Sequence[str],
    filtered: Filtered,
    vector: Sequence[float],
    vector_type: str,
    limit: int | None,
    offset: int,
    now: datetime,
    *,
    refresh: bool,
    cap: int | None = None,
    vectors_per_item: int = 1,
) -> tuple[str, dict[str, Any]]:
    """Items under ``prefix`` by cosine similarity of their best field to ``vector``, exactly.

    Every vector of the namespace is compared (no approximate index), so a page is stable and a
    filter never starves the list. ``limit=None``: every scored item (the caller filters and pages).

    ``cap``: rank the vectors first and join only the best ``cap`` items to ``store`` (instead of
    every item of the namespace): for a list whose filter Postgres checks entirely, where only an
    expired item can drop out. The best ``cap × vectors_per_item`` vectors are read (an item with
    several fields has several); the caller reruns without a cap when a capped list comes back short.
    """
    params: dict[str, Any] = {"now": now, "vec": vector_literal(vector), "offset": offset}
    page = ""
    if limit is not None:
        params["limit"] = limit
        page = "LIMIT %(limit)s OFFSET %(offset)s"
    # each distance computed once: the sort key is the output column (an expression written twice
    # in one target list and ORDER BY is computed twice per vector)
    vectors = f"""
        SELECT v.prefix, v.key, v.embedding <=> %(vec)s::{vector_type} AS distance
        FROM ({_vectors_under(prefix, params)}) v
    """
    ranked = ""
    if cap is not None:  # the best vectors first (a top-N sort, no aggregate over the namespace)
        params |= {"cap": cap, "cap_vectors": cap * max(1, vectors_per_item)}
        vectors += " ORDER BY distance LIMIT %(cap_vectors)s"
        ranked = "ORDER BY score DESC LIMIT %(cap)s"
    select = f"""
        SELECT {ITEM_COLUMNS}, d.score
        FROM (
            SELECT b.prefix, b.key, 1 - min(b.distance) AS score FROM ({vectors}) b
            GROUP BY b.prefix, b.key
            {ranked}
        ) d
        JOIN store s ON s.prefix = d.prefix AND s.key = d.key
        WHERE {prefix_condition("s.prefix", prefix, params)} AND {LIVE} AND {filtered.sql}
        ORDER BY d.score DESC, {newest(prefix)}
        {page}
    """
    return refreshing(select, refresh), params
