"""PostgresMemoryStore: LangGraph's ``PostgresStore`` with BM25 beside pgvector, candidate lists,
the store contract and item limits held in a transaction.

Everything that is not I/O is in ``_sql``, ``_ops`` and ``_candidates``; this module runs their
statements on LangGraph's connection (a ``psycopg.Connection`` or a ``ConnectionPool``) and
translates Postgres's exceptions at one choke point (``_schema.translated``).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

from langchain_core.runnables.config import run_in_executor
from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, Result, SearchItem, SearchOp, TTLConfig

from langmem_plugin.core.bounded import BoundedWrite, ItemLimits
from langmem_plugin.core.candidates import CandidateQuery, Candidates
from langmem_plugin.core.embeddings import embedder_id
from langmem_plugin.core.lexical import BM25Encoder
from langmem_plugin.errors import ConfigurationError, MissingDependencyError, redacted_url
from langmem_plugin.stores._common import (
    Clock,
    TTLSettings,
    apply_list_namespaces,
    lexical_fields_of,
    search_sort_key,
    utc_clock,
)
from langmem_plugin.stores._embedder import check_embedder
from langmem_plugin.stores._hold import Held, Holds
from langmem_plugin.stores._validation import (
    CheckedStore,
    final_puts,
    validate_namespace,
    validate_op,
    validate_put,
)
from langmem_plugin.stores.postgres import _schema
from langmem_plugin.stores.postgres._bounded import make_room
from langmem_plugin.stores.postgres._candidates import (
    CandidatePlan,
    Verdicts,
    candidates_of,
    plan_queries,
    shaped,
)
from langmem_plugin.stores.postgres._hold import AdvisoryLocks, lock_namespaces
from langmem_plugin.stores.postgres._ops import (
    get_statement,
    item_of,
    list_statement,
    plan_puts,
    search_statement,
    search_without_query,
    sweep_statement,
    write_statements,
)
from langmem_plugin.stores.postgres._sql import namespace_text, one_statement

try:
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from langgraph.store.postgres.base import PoolConfig, PostgresIndexConfig
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise MissingDependencyError(
        "PostgresMemoryStore needs psycopg and langgraph-checkpoint-postgres. "
        "Fix: pip install 'langmem-plugin[postgres]'"
    ) from exc

__all__ = ["PostgresMemoryIndexConfig", "PostgresMemoryStore"]

Conn = psycopg.Connection[Any] | ConnectionPool[Any]


class PostgresMemoryIndexConfig(PostgresIndexConfig, total=False):
    """LangGraph's ``PostgresIndexConfig`` plus what BM25 reads."""

    lexical_fields: list[str]
    """The fields whose text BM25 indexes, same syntax as ``fields``; default: ``fields`` (or an
    item's own ``index=[...]``). Items put with ``index=False`` are in neither index."""


class PostgresMemoryStore(CheckedStore, PostgresStore):
    """A ``BaseStore`` on Postgres: LangGraph's schema, pgvector for dense search, BM25 in SQL.

    Every process on the database shares it: a write is committed when ``put``/``batch`` returns,
    and every read (and every candidate list) is a query, so another process sees it at once;
    :meth:`hold` holds writers apart across processes (advisory locks).

    Args:
        conn: a ``psycopg.Connection`` (autocommit) or a ``psycopg_pool.ConnectionPool``; prefer
            :meth:`from_conn_string`, which makes one and checks the database.
        index: ``dims``, ``embed``, ``fields`` as LangGraph's, plus ``lexical_fields``. Search
            is exact (no approximate index is built unless ``ann_index_config`` asks for one).
            Without ``index`` nothing is embedded nor lexically indexed.
        ttl: LangGraph's ``TTLConfig`` (minutes); expired items are never returned, swept or not.
        clock: the time (aware UTC) every write and expiry uses; for tests.

    The constructor does no I/O; :meth:`setup` migrates, :meth:`check` verifies.

    The embedder is part of the store (``stores._embedder``): the database names it when
    :meth:`setup` finds no vector yet, or with the first vectors a known embedder writes;
    :meth:`check` refuses another (:class:`~langmem_plugin.errors.EmbedderMismatchError`).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        conn: Conn,
        *,
        index: PostgresMemoryIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        if index is not None:
            index = cast(PostgresMemoryIndexConfig, {"ann_index_config": {"kind": "flat"}, **index})
            distance = index.get("distance_type", "cosine")
            if distance != "cosine":
                raise ConfigurationError(
                    f"PostgresMemoryStore scores by cosine similarity; distance_type={distance!r} is not "
                    "supported. Fix: leave distance_type out."
                )
        super().__init__(conn, index=index, ttl=ttl)
        self._lexical_fields = lexical_fields_of(index.get("lexical_fields")) if index else None
        self._fields = list(index.get("fields") or ["$"]) if index else None
        self._vector_type = (
            str(index.get("ann_index_config", {}).get("vector_type", "vector")) if index else "vector"
        )
        self._encoder = BM25Encoder()
        # how many vectors an item has, at most, by the configured fields (LangGraph's estimate)
        estimate: Any = cast(dict[str, Any], self.index_config or {}).get("__estimated_num_vectors", 1)
        self._vectors_per_item = int(estimate)
        self._clock: Clock = clock or utc_clock
        self._ttl = TTLSettings.from_config(ttl)
        self._io_lock = threading.Lock()
        self._verdicts = Verdicts()
        self._checked = False
        self._embedder = embedder_id(self.embeddings) if index else None
        # set by check(): the database has the embedder table and it names no embedder yet
        self._embedder_unrecorded = False
        self._locks = AdvisoryLocks(conn, self._io_lock)
        self._holds = Holds(object(), self._locks)
        weakref.finalize(self, self._locks.close)

    # ------------------------------------------------------------------ opening

    @classmethod
    @contextmanager
    def from_conn_string(  # type: ignore[override]
        cls,
        conn_string: str,
        *,
        index: PostgresMemoryIndexConfig | None = None,
        ttl: TTLConfig | None = None,
        pool_config: PoolConfig | None = None,
        setup: bool = False,
        clock: Clock | None = None,
    ) -> Iterator[PostgresMemoryStore]:
        """Connect, check the database (:meth:`check`) or migrate it (``setup=True``), yield the store.

        With ``ttl={"sweep_interval_minutes": ...}`` the sweeper runs until the block ends.

        Raises, when opened:
            ConfigurationError: a connection string psycopg cannot parse.
            StoreError: the server is down or refuses the connection; pgvector is not installed
                there (with an index); the schema is missing or older than this version
                (``setup=True`` fixes it).
            StoreConfigMismatchError: the database's vectors have other dims than ``index``.
            EmbedderMismatchError: the database's vectors were made by another embedder.
        """
        target = redacted_url(conn_string)
        kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        with _schema.translated("connect", target):
            if pool_config is not None:
                config: dict[str, Any] = dict(pool_config)
                pool: ConnectionPool[Any] = ConnectionPool(
                    conn_string,
                    min_size=config.pop("min_size", 1),
                    max_size=config.pop("max_size", None),
                    kwargs={**kwargs, **(config.pop("kwargs", None) or {})},
                    open=False,
                )
                pool.open(wait=True, timeout=10.0)
                made: Conn = pool
            else:
                made = psycopg.Connection.connect(conn_string, connect_timeout=10, **kwargs)
        try:
            store = cls(made, index=index, ttl=ttl, clock=clock)
        except BaseException:
            made.close()
            raise
        try:
            if setup:
                store.setup()
            store.check(target)
            if ttl and ttl.get("sweep_interval_minutes"):
                store.start_ttl_sweeper()
            yield store
        finally:
            store.stop_ttl_sweeper(timeout=1.0)
            store._locks.close()
            made.close()

    def setup(self) -> None:
        """Create or migrate the schema: LangGraph's migrations, then this store's (``_schema``).
        Safe to run from several processes at once (an advisory lock serialises them)."""
        if self.index_config:
            with self._connection() as conn, _schema.translated("install the pgvector extension"):
                self._require_vector(conn)
        with _schema.translated("migrate the store's schema"):
            super().setup()
        with self._connection() as conn, _schema.translated("migrate the store's schema"), conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('langmem_store_migrations', 0))")
            conn.execute(_schema.VERSION_TABLE)
            lists = [("lexical", _schema.MIGRATIONS)]
            if self.index_config:
                lists.append(("vector", _schema.VECTOR_MIGRATIONS))
            for kind, migrations in lists:
                row = conn.execute(
                    "SELECT max(v) AS v FROM langmem_store_migrations WHERE kind = %s", (kind,)
                ).fetchone()
                done = -1 if row is None or _col(row, "v") is None else int(_col(row, "v"))
                for v, sql in enumerate(migrations[done + 1 :], start=done + 1):
                    conn.execute(sql)
                    conn.execute("INSERT INTO langmem_store_migrations (kind, v) VALUES (%s, %s)", (kind, v))
            if self.index_config and self._embedder is not None:
                conn.execute(_schema.EMBEDDER_STATEMENTS["at_setup"], self._embedder_row())
        self._checked = False

    def check(self, target: str = "") -> None:
        """Verify the database serves this store: pgvector (with an index), the schema at this
        version, the vector dims and the embedder. Raises what :meth:`from_conn_string` lists; no
        I/O on success later."""
        queries = _schema.check_statements()
        with self._connection() as conn, _schema.translated("check the database", target):
            if self.index_config:
                self._require_vector(conn, create=False)
            tables = conn.execute(queries["tables"]).fetchone()
            if not tables or not _col(tables, "store") or not _col(tables, "ours"):
                raise _schema.schema_error(
                    "is missing (a new database, or one set up by LangGraph's PostgresStore)"
                )
            versions = {_col(r, "kind"): _col(r, "v") for r in conn.execute(queries["versions"]).fetchall()}
            if versions.get("lexical", -1) < len(_schema.MIGRATIONS) - 1:
                raise _schema.schema_error("is older than this version")
            if self.index_config:
                if not _col(tables, "vectors") or versions.get("vector", -1) < _schema.VECTOR_REQUIRED:
                    raise _schema.schema_error("has no vector tables yet, or older ones")
                row = conn.execute(queries["dims"]).fetchone()
                dims = int(self.index_config["dims"])
                found = str(_col(row, "type")) if row else ""
                if found != f"{self._vector_type}({dims})":
                    raise _schema.dims_mismatch(found, dims, self._vector_type)
                table = bool(_col(tables, "embedder"))  # absent until setup() runs on an older database
                named = self._check_embedder(conn.cursor(row_factory=dict_row), target) if table else None
                self._embedder_unrecorded = table and named is None and self._embedder is not None
        self._checked = True

    def _embedder_row(self) -> dict[str, Any]:
        return {"embedder": self._embedder, "dims": int(cast(Any, self.index_config)["dims"])}

    def _check_embedder(self, cur: psycopg.Cursor[Any], target: str = "") -> str | None:
        """The embedder the database names (None: none), checked against this store's."""
        row = cur.execute(_schema.EMBEDDER_STATEMENTS["read"]).fetchone()
        where = f"the Postgres store at {target}" if target else "this Postgres store's database"
        return check_embedder(where, row["embedder"] if row else None, self._embedder)

    def _record_embedder(self, cur: psycopg.Cursor[Any]) -> None:
        """Name this store's embedder in the write's transaction (another one named meanwhile refuses)."""
        cur.execute(_schema.EMBEDDER_STATEMENTS["record"], self._embedder_row())
        self._check_embedder(cur)

    def _require_vector(self, conn: psycopg.Connection[Any], *, create: bool = True) -> None:
        queries = _schema.check_statements()
        if conn.execute(queries["vector_installed"]).fetchone():
            return
        if conn.execute(queries["vector_available"]).fetchone() is None:
            version = conn.execute(queries["server_version"]).fetchone()
            raise _schema.pgvector_missing(int(_col(version, "v")) if version else None)
        if create:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    # ------------------------------------------------------------------ I/O

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if isinstance(self.conn, ConnectionPool):
            with self.conn.connection() as conn:
                yield conn
        else:
            with self._io_lock:
                yield cast(psycopg.Connection[Any], self.conn)

    def _ensure_checked(self) -> None:
        if not self._checked:
            self.check()

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        assert self.embeddings is not None
        return [list(map(float, v)) for v in self.embeddings.embed_documents(texts)]

    # ------------------------------------------------------------------ batches

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: reads see the state before the batch's writes; the writes commit together."""
        ops = list(ops)
        for op in ops:
            validate_op(op)
        self._ensure_checked()
        results: list[Result] = [None] * len(ops)
        puts = [(i, validate_put(op)) for i, op in enumerate(ops) if isinstance(op, PutOp)]
        winners = [op for _, op in final_puts(puts).values()]
        rows, deletes = plan_puts(
            winners, self._fields, self._lexical_fields, self._encoder, indexed=self.index_config is not None
        )
        vectors = self._embed([text for row in rows for _, text in row.texts])
        record = bool(vectors) and self._embedder_unrecorded
        searches = [(i, op) for i, op in enumerate(ops) if isinstance(op, SearchOp)]
        queries = [op.query for _, op in searches if op.query and self.index_config]
        query_vectors: dict[str, list[float]] = {}
        if queries:
            unique = list(dict.fromkeys(queries))
            query_vectors = dict(zip(unique, self._embed(unique), strict=True))
        now = self._clock()
        writes = write_statements(
            rows, deletes, vectors, self._vector_type, now, has_vectors=self.index_config is not None
        )
        with self._connection() as conn, _schema.translated("run a batch"):
            # a read-only batch runs without BEGIN/COMMIT (two round trips fewer): each of its
            # statements is atomic; writes commit together, or not at all
            transaction = conn.transaction() if writes else contextlib.nullcontext()
            with transaction:
                self._batch_io(conn, ops, results, query_vectors, now, writes, winners, record=record)
        if record:
            self._embedder_unrecorded = False
        return results

    def _batch_io(
        self,
        conn: psycopg.Connection[Any],
        ops: list[Op],
        results: list[Result],
        query_vectors: dict[str, list[float]],
        now: datetime,
        writes: list[tuple[str, list[dict[str, Any]]]],
        winners: list[PutOp],
        *,
        record: bool,
    ) -> None:
        cur = conn.cursor(row_factory=dict_row)
        self._reads(cur, ops, results, query_vectors, now)
        if record:
            self._record_embedder(cur)
        if writes:
            lock_namespaces(cur, [op.namespace for op in winners if op.value is not None], set())
            for statement, params in writes:
                cur.executemany(statement, params)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (psycopg's blocking connection; contextvars copied)."""
        return await run_in_executor(None, self.batch, list(ops))

    def _reads(
        self,
        cur: psycopg.Cursor[Any],
        ops: list[Op],
        results: list[Result],
        query_vectors: dict[str, list[float]],
        now: datetime,
    ) -> None:
        # a key holding NUL cannot be stored (``check_storable``): such a get finds nothing
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp) and "\x00" not in op.key]
        if gets:
            statement, params = get_statement([op for _, op in gets], now)
            cur.execute(statement, params, prepare=False)
            found = {(r["prefix"], r["key"]): item_of(r) for r in cur.fetchall()}
            for i, op in gets:
                results[i] = found.get((namespace_text(op.namespace), op.key))
        for i, any_op in enumerate(ops):
            if isinstance(any_op, SearchOp):
                results[i] = self._search(cur, any_op, query_vectors, now)
            elif isinstance(any_op, ListNamespacesOp):
                statement, params = list_statement(any_op, now)
                cur.execute(statement, params, prepare=False)
                namespaces = [tuple(r["prefix"].split(".")) for r in cur.fetchall()]
                results[i] = apply_list_namespaces(namespaces, any_op)

    def _search(
        self, cur: psycopg.Cursor[Any], op: SearchOp, query_vectors: dict[str, list[float]], now: datetime
    ) -> list[SearchItem]:
        refresh = self._ttl.refresh(op.refresh_ttl)
        vector = query_vectors.get(op.query) if op.query else None
        if vector is not None:
            (statement, params), filtered = search_statement(op, vector, self._vector_type, now, refresh)
        else:
            (statement, params), filtered = search_without_query(op, now, refresh)
        cur.execute(statement, params, prepare=False)
        items = [item_of(r, r["score"], scored=True) for r in cur.fetchall()]
        # the SQL order, again: a refreshing statement returns its rows in no guaranteed order
        out = sorted((i for i in items if isinstance(i, SearchItem)), key=search_sort_key)
        if not filtered.residual:
            return out
        out = [i for i in out if all(c.matches(i.value) for c in filtered.residual)]
        page = out[op.offset : op.offset + op.limit]
        if refresh and page:
            self._refresh(cur, page, now)
        return page

    def _refresh(self, cur: psycopg.Cursor[Any], items: Sequence[SearchItem], now: datetime) -> None:
        cur.execute(
            """
            UPDATE store t SET expires_at = %(now)s + make_interval(secs => t.ttl_exact * 60)
            FROM unnest(%(prefixes)s::text[], %(keys)s::text[]) AS w(prefix, key)
            WHERE t.prefix = w.prefix AND t.key = w.key AND t.ttl_exact IS NOT NULL
            """,
            {
                "now": now,
                "prefixes": [namespace_text(i.namespace) for i in items],
                "keys": [i.key for i in items],
            },
        )

    # ------------------------------------------------------------------ holds

    def hold(self, keys: Collection[str], *, wait: bool = True) -> Held | None:
        """Hold ``keys`` against every other holder on this database's store table, in any process
        (the services' read-modify-writes and document changes), until the returned ``Held`` is
        released; ``wait=False``: all now or None. Session advisory locks (``_hold``)."""
        return self._holds.hold(keys, wait=wait)

    async def ahold(self, keys: Collection[str], *, wait: bool = True) -> Held | None:
        """Async :meth:`hold` (polled: never blocks the event loop; release with ``Held.release()``)."""
        return await self._holds.ahold(keys, wait=wait)

    # ------------------------------------------------------------------ TTL

    def sweep_ttl(self) -> int:
        """Delete the expired items now; returns how many."""
        self._ensure_checked()
        statement, params = sweep_statement(self._clock())
        with self._connection() as conn, _schema.translated("sweep expired items"):
            return conn.execute(statement, params, prepare=False).rowcount

    # ------------------------------------------------------------------ candidates

    def search_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """The dense and the BM25 top-N of each query, raw and unfused: one statement for all the
        queries, a second only for a dense list to read again (see ``_candidates``). Without an
        index: no lexical index (say so), newest first."""
        plans = plan_queries(list(queries), self._encoder)
        if not plans:
            return []
        self._ensure_checked()
        if self.index_config is None:
            return [self._unindexed(q) for q in queries]
        now = self._clock()
        refresh = self._ttl.refresh(None)
        guesses = [plan.guess_text(self._verdicts, self._encoder) for plan in plans]
        vectors = self._vectors_of(guesses)
        parts = []
        for plan in plans:
            parts.append(plan.lexical_part(now))
            parts.append(self._dense_part(plan, vectors[plan.guess], now, capped=plan.capped))
        lists = self._run_parts(parts, now, refresh)
        dense_texts: list[str | None] = []
        again: list[int] = []
        for n, plan in enumerate(plans):
            stats = next(r for r in lists[2 * n] if r["prefix"] is None)
            plan.take_stats(stats, self._verdicts)
            text = plan.dense_text(self._encoder)
            dense_texts.append(text if text is not None else plan.guess)
            if (text is not None and text != plan.guess) or plan.short(len(lists[2 * n + 1])):
                again.append(n)
        if again:  # a wrong guess, or a capped list cut short: those dense lists read again, whole
            vectors |= self._vectors_of([dense_texts[n] or plans[n].guess for n in again])
            redo = [
                self._dense_part(plans[n], vectors[dense_texts[n] or plans[n].guess], now, capped=False)
                for n in again
            ]
            for n, rows in zip(again, self._run_parts(redo, now, refresh), strict=True):
                lists[2 * n + 1] = rows
        return [
            candidates_of(plan, shaped(plan, lists[2 * n + 1]), shaped(plan, lists[2 * n]), dense_texts[n])
            for n, plan in enumerate(plans)
        ]

    def _vectors_of(self, texts: Sequence[str]) -> dict[str, list[float]]:
        unique = list(dict.fromkeys(texts))
        return dict(zip(unique, self._embed(unique), strict=True))

    def _dense_part(
        self, plan: CandidatePlan, vector: list[float], now: datetime, *, capped: bool
    ) -> tuple[str, dict[str, Any], bool]:
        return plan.dense_part(
            vector, self._vector_type, now, capped=capped, vectors_per_item=self._vectors_per_item
        )

    def _run_parts(
        self, parts: list[tuple[str, dict[str, Any], bool]], now: datetime, refresh: bool
    ) -> list[list[dict[str, Any]]]:
        """``parts`` as one statement (one round trip); each part's rows, in order."""
        statement, params = one_statement([(sql, own, refresh and ok) for sql, own, ok in parts], now)
        with self._connection() as conn, _schema.translated("search candidates"):
            rows = conn.cursor(row_factory=dict_row).execute(statement, params, prepare=False).fetchall()
        lists: list[list[dict[str, Any]]] = [[] for _ in parts]
        for row in rows:
            lists[row["slot"]].append(row)
        return lists

    async def asearch_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """:meth:`search_candidates` in a worker thread."""
        return await run_in_executor(None, self.search_candidates, list(queries))

    def _unindexed(self, q: CandidateQuery) -> Candidates:
        listed = self.search(q.namespace_prefix, filter=q.filter, limit=q.limit)
        return Candidates([], [], q.query, lexical_index=False, unscored=listed)

    # ------------------------------------------------------------------ item limits

    @property
    def item_limits(self) -> ItemLimits:
        """``"shared"``: :meth:`write_bounded` counts and writes in one transaction, under an
        advisory lock every writer of the namespace through this store takes."""
        return "shared"

    def write_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """Count each bound's namespace and write ``write.ops`` (and the evictions) in one
        transaction; returns the evictions. A bound's refusal writes nothing."""
        puts = [(i, validate_put(op)) for i, op in enumerate(write.ops)]
        for bound in write.bounds:
            validate_namespace(bound.namespace)
        self._ensure_checked()
        winners = [op for _, op in final_puts(puts).values()]
        rows, deletes = plan_puts(
            winners, self._fields, self._lexical_fields, self._encoder, indexed=self.index_config is not None
        )
        vectors = self._embed([text for row in rows for _, text in row.texts])
        record = bool(vectors) and self._embedder_unrecorded
        now = self._clock()
        with self._connection() as conn, _schema.translated("write within an item limit"), conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            if record:
                self._record_embedder(cur)
            bounded = {tuple(b.namespace) for b in write.bounds}
            lock_namespaces(cur, [op.namespace for op in winners], bounded)
            evictions: list[PutOp] = []
            for bound in write.bounds:
                evictions.extend(make_room(cur, write, bound, now))
            for statement, params in write_statements(
                rows,
                [*deletes, *evictions],
                vectors,
                self._vector_type,
                now,
                has_vectors=self.index_config is not None,
            ):
                cur.executemany(statement, params)
        if record:
            self._embedder_unrecorded = False
        return evictions

    async def awrite_bounded(self, write: BoundedWrite) -> list[PutOp]:
        """:meth:`write_bounded` in a worker thread."""
        return await run_in_executor(None, self.write_bounded, write)


def _col(row: Any, name: str) -> Any:
    """A column of a row made by a dict_row cursor or a tuple cursor of the user's connection."""
    if isinstance(row, dict):
        return row[name]
    raise ConfigurationError(
        "PostgresMemoryStore needs a connection with row_factory=dict_row (as from_conn_string makes). "
        "Fix: psycopg.connect(url, autocommit=True, row_factory=dict_row)"
    )
