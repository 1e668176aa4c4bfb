"""The advisory locks of a PostgresMemoryStore: its holds (``hold``/``ahold``), one session lock
per key, and the transaction locks of its namespaces (:func:`lock_namespaces`).

Every process on the database shares the store, so the services' read-modify-writes and the
writers of one knowledge source are held apart on the server: ``pg_try_advisory_lock`` on a
64-bit key made of the store's table (its oid: two stores whose ``store`` tables differ, by
schema or ``search_path``, never block each other; advisory locks are per database anyway) and
the key's token (:func:`~langmem_plugin.stores._hold.token_of`), given back by
``pg_advisory_unlock``. The lock is the session's: it outlives the transactions of the batches
run meanwhile, and a process that dies (its session ends) leaves none behind.

Which session holds them:

- over a ``ConnectionPool``, a **dedicated connection** made with the pool's connection string and
  arguments (not its ``configure`` callback), opened with the first hold and closed with the
  store (``from_conn_string``'s end, :meth:`AdvisoryLocks.close`, or when the store is
  collected) — a pool's connections change between calls, and a lock must be given back by the
  session that took it;
- over one ``psycopg.Connection``, that connection (its statements already take turns).

A wait is polled (:mod:`langmem_plugin.stores._hold`): a waiter never occupies a connection, and
a cancelled coroutine never leaves a lock taken behind it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool

from langmem_plugin.stores.postgres import _schema
from langmem_plugin.stores.postgres._sql import namespace_text

__all__ = ["AdvisoryLocks", "lock_namespaces"]

logger = logging.getLogger(__name__)

# The advisory key of a token: the store's table and the token, hashed to 64 bits by Postgres.
_KEY = "hashtextextended('langmem_plugin hold ' || 'store'::regclass::oid || ' ' || {token}, 0)"
_TRY = f"SELECT pg_try_advisory_lock({_KEY.format(token='%(t)s::text')})"
_UNLOCK = f"SELECT pg_advisory_unlock({_KEY.format(token='t::text')}) FROM unnest(%(t)s::bigint[]) AS t"


class AdvisoryLocks:
    """The cross-process locks of a PostgresMemoryStore (``stores._hold.CrossLocks``).

    Args:
        conn: the store's connection or pool.
        io_lock: the store's lock of its one connection (its statements take turns under it).
    """

    def __init__(self, conn: psycopg.Connection[Any] | ConnectionPool[Any], io_lock: threading.Lock) -> None:
        self._conn = conn
        self._io_lock = io_lock
        self._own: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()

    def try_lock(self, token: int) -> bool:
        with self._session() as conn, _schema.translated("hold the store's writers apart"):
            row = conn.cursor(row_factory=tuple_row).execute(_TRY, {"t": token}).fetchone()
        return bool(row and row[0])

    def unlock(self, tokens: list[int]) -> None:
        """Give ``tokens`` back. A session that is gone has given them back already: logged, not raised."""
        try:
            with self._session() as conn, _schema.translated("release the store's hold"):
                conn.cursor(row_factory=tuple_row).execute(_UNLOCK, {"t": tokens})
        except Exception as exc:  # the session ended (its locks with it), or the server went away
            logger.warning("the Postgres store's hold was not given back by its session: %s", exc)
            self._drop_own()

    def close(self) -> None:
        """Close the dedicated connection (its locks go with it); the next hold opens another."""
        self._drop_own()

    @contextmanager
    def _session(self) -> Iterator[psycopg.Connection[Any]]:
        pool = self._conn
        if not isinstance(pool, ConnectionPool):
            with self._io_lock:
                yield pool
            return
        with self._lock:
            if self._own is None or self._own.closed:
                conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
                kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
                with _schema.translated("connect for the store's holds"):
                    self._own = psycopg.Connection.connect(
                        conninfo or "", **{**(kwargs or {}), "autocommit": True, "connect_timeout": 10}
                    )
            yield self._own

    def _drop_own(self) -> None:
        with self._lock:
            own, self._own = self._own, None
        if own is not None:
            own.close()


def lock_namespaces(
    cur: psycopg.Cursor[Any], namespaces: Iterable[tuple[str, ...]], exclusive: set[tuple[str, ...]]
) -> None:
    """Transaction-scoped advisory locks on each namespace's hash, taken in hash order (so two
    writers never wait on each other in a circle): exclusive for the namespaces a bounded write
    counts, shared for the others written (so no write lands between a count and its write)."""
    wanted = sorted({namespace_text(ns) for ns in namespaces} | {namespace_text(ns) for ns in exclusive})
    if not wanted:
        return
    excl = [text in {namespace_text(ns) for ns in exclusive} for text in wanted]
    cur.execute(
        """
        SELECT CASE WHEN x THEN pg_advisory_xact_lock(hashtextextended(p, 0))::text
                    ELSE pg_advisory_xact_lock_shared(hashtextextended(p, 0))::text END
        FROM unnest(%(p)s::text[], %(x)s::bool[]) AS w(p, x)
        ORDER BY hashtextextended(w.p, 0), w.x DESC
        """,
        {"p": wanted, "x": excl},
    )
