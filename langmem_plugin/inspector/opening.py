"""Open the store a person names on the command line: a directory, a SQLite file or a URL.

:func:`open_store` reads what ``spec`` is and opens that store with :func:`~langmem_plugin.memory_index`
(what ``Memory`` writes with), as a context manager that closes it again:

- a directory holding ``store.json`` (``Memory(path=...)``, ``QdrantStore(path)``): the embedded
  ``QdrantStore``. Its engine admits one opener: while an agent holds it, opening fails with a
  :class:`~langmem_plugin.errors.StoreLockedError` that says to stop the agent or read a snapshot;
  ``snapshot=True`` copies the directory (without its lock) and opens the copy, removed on exit;
- ``http://`` or ``https://``: a Qdrant server (``QDRANT_API_KEY`` is read for its key), whose
  ``langmem`` collection must exist;
- an SQLite file a ``CheckpointerStore`` wrote (``CheckpointerStore.from_sqlite``, or one over a
  ``SqliteSaver``): the ``CheckpointerStore`` over it (SQLite lets an agent go on writing);
- ``postgresql://`` or ``postgres://``: a ``PostgresMemoryStore``, its schema checked, not migrated;
- ``langgraph+http://`` or ``langgraph+https://``: the store of a LangGraph server (``langgraph dev``,
  LangGraph Platform: where ``Memory()`` keeps memory under them), through its Store API
  (:class:`~langmem_plugin.stores.LangGraphServerStore`; ``LANGGRAPH_API_KEY`` is read for its key).

Nothing is ever created: a path that does not exist, a directory or a database with no store in
it, is a :class:`~langmem_plugin.errors.ConfigurationError` that names the value and what is
accepted. ``snapshot`` changes only how a directory is opened: SQLite and servers are read live.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal

from langgraph.store.base import BaseStore

from langmem_plugin.core.embeddings import EmbeddingsSpec
from langmem_plugin.errors import (
    ConfigurationError,
    MissingDependencyError,
    StoreError,
    StoreLockedError,
    redacted_url,
)
from langmem_plugin.surfaces import memory_index

__all__ = ["ACCEPTED", "open_store"]

#: What a STORE may be, for messages and ``--help``.
ACCEPTED = (
    "a memory directory (with a store.json, as Memory(path=...) writes), an SQLite file a "
    "CheckpointerStore wrote, an http(s):// URL of a Qdrant server, a postgresql:// URL, or a "
    "langgraph+http(s):// URL of a LangGraph server (langgraph dev)"
)
_SQLITE_HEADER = b"SQLite format 3\x00"
_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
# CheckpointerStore's registry thread of a store called NAME: "langmem_plugin.store:NAME:registry".
_REGISTRIES = (
    "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id LIKE 'langmem_plugin.store:%:registry'"
)
_REGISTRY = re.compile(r"langmem_plugin\.store:(.+):registry")
_COLLECTION = "langmem"

Kind = Literal["directory", "qdrant-server", "sqlite", "postgres", "langgraph-server"]


def open_store(
    spec: str, *, snapshot: bool = False, embeddings: EmbeddingsSpec | None = None
) -> AbstractContextManager[BaseStore]:
    """The store ``spec`` names, opened on entering the ``with`` block and closed on leaving it.

    What ``spec`` is, is decided now (a bad one raises here); the store opens on entry.

    Args:
        spec: a directory, a file or a URL (see the module docstring).
        snapshot: a directory: open a copy of it (removed on exit), which an agent holding the
            directory does not prevent; changes to the copy are lost.
        embeddings: what the store's vectors were made with (``Memory``'s ``embeddings``; default
            the offline MiniLM); only searches use it.

    Raises:
        ConfigurationError: ``spec`` names no store (missing, a folder or file holding none,
            an unknown URL scheme); the message says what is accepted.
        StoreLockedError: on entry, a directory another store holds (the message says: stop the
            agent, or pass ``--snapshot``).
        StoreError: on entry, a server that cannot be reached, a database without the schema.
        MissingDependencyError: a Postgres URL without the ``postgres`` extra.
    """
    kind, target = classify(spec)
    return _opened(kind, target, snapshot=snapshot, embeddings=embeddings)


def classify(spec: str) -> tuple[Kind, str]:
    """What kind of store ``spec`` names, and where (a resolved path, or the URL).

    Raises:
        ConfigurationError: it names none.
    """
    if not isinstance(spec, str) or not spec.strip() or "\x00" in spec:
        raise ConfigurationError(f"a store must be named by a path or a URL, got {spec!r}: pass {ACCEPTED}")
    lowered = spec.lower()
    if lowered.startswith(("http://", "https://")):
        return "qdrant-server", spec
    if lowered.startswith(("postgresql://", "postgres://")):
        return "postgres", spec
    if lowered.startswith(("langgraph+http://", "langgraph+https://")):
        return "langgraph-server", spec[len("langgraph+") :]
    if re.match(r"^[a-z][a-z0-9+.-]*://", lowered):
        raise ConfigurationError(
            f"no store is served at {redacted_url(spec)!r} (unknown scheme): pass {ACCEPTED}"
        )
    try:
        path = Path(spec).expanduser()
        is_dir, is_file = path.is_dir(), path.is_file()
    except (OSError, RuntimeError) as exc:  # ~nosuchuser, a name too long
        raise ConfigurationError(f"cannot read the store path {spec!r} ({exc}): pass {ACCEPTED}") from None
    if is_dir:
        if (path / "store.json").is_file():
            return "directory", str(path)
        raise ConfigurationError(f"{spec!r} is a directory with no memory store (no store.json){_hint(path)}")
    if is_file:
        if _is_sqlite(path):
            return "sqlite", str(path)
        what = "SQLite file" if path.suffix.lower() in _SQLITE_SUFFIXES else "store"
        raise ConfigurationError(f"{spec!r} is a file but not an {what} (no SQLite header): pass {ACCEPTED}")
    raise ConfigurationError(
        f"no store at {spec!r}: nothing there (a store is opened, never created). Pass {ACCEPTED}"
    )


def _hint(directory: Path) -> str:
    """Where the store in ``directory`` is, if a memory directory is just inside (the demo's ``--dir``)."""
    try:
        inner = sorted(p.name for p in directory.iterdir() if (p / "store.json").is_file())
    except OSError:
        inner = []
    if inner:
        return f"; it holds one in {str(directory / inner[0])!r}: pass that"
    return f": pass {ACCEPTED}"


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False


def _opened(
    kind: Kind, target: str, *, snapshot: bool, embeddings: EmbeddingsSpec | None
) -> AbstractContextManager[BaseStore]:
    if kind == "directory":
        return _snapshot(Path(target), embeddings) if snapshot else _directory(Path(target), embeddings)
    if kind == "sqlite":
        return _sqlite(Path(target), embeddings)
    if kind == "qdrant-server":
        return _qdrant_server(target, embeddings)
    if kind == "langgraph-server":
        return _langgraph_server(target)
    return _postgres(target, embeddings)


@contextmanager
def _langgraph_server(url: str) -> Iterator[BaseStore]:
    from langmem_plugin.stores import LangGraphServerStore, lexical_view

    with LangGraphServerStore(url) as store:
        store.list_namespaces(limit=1)  # unreachable: a StoreError now, not on the first page
        yield lexical_view(store)


@contextmanager
def _directory(path: Path, embeddings: EmbeddingsSpec | None) -> Iterator[BaseStore]:
    from langmem_plugin.stores import QdrantStore

    try:
        store = QdrantStore(path, index=memory_index(embeddings))
    except StoreLockedError:
        raise StoreLockedError(
            f"the store at {path} is held by {_holder(path)}: Qdrant's embedded engine lets one "
            "opener use a directory at a time. Fix: stop the agent (or close the store) that holds it, "
            "or pass --snapshot to read a copy of it as it is now"
        ) from None
    with store:
        yield store


def _holder(path: Path) -> str:
    """Who holds the directory's lock, from what the lock file says (``pid N``)."""
    try:
        said = (path / ".lock").read_text(encoding="utf-8").split()
    except OSError:
        said = []
    if len(said) == 2 and said[0] == "pid" and said[1].isdigit():
        return "this process" if int(said[1]) == os.getpid() else f"another process (pid {said[1]})"
    return "another process"


@contextmanager
def _snapshot(path: Path, embeddings: EmbeddingsSpec | None) -> Iterator[BaseStore]:
    from langmem_plugin.stores import QdrantStore

    with tempfile.TemporaryDirectory(prefix="langmem-snapshot-") as folder:
        copy = Path(folder) / "store"
        try:  # the lock is the holder's, and a half-written store.json is replaced, never read
            shutil.copytree(path, copy, ignore=shutil.ignore_patterns(".lock", "*.tmp"))
        except (OSError, shutil.Error) as exc:  # a file the agent removed while it was copied
            raise StoreError(f"could not copy the store at {path} ({exc}): try again") from None
        with QdrantStore(copy, index=memory_index(embeddings)) as store:
            yield store


@contextmanager
def _sqlite(path: Path, embeddings: EmbeddingsSpec | None) -> Iterator[BaseStore]:
    from langmem_plugin.stores import CheckpointerStore

    name = _checkpointer_store_name(path)
    with CheckpointerStore.from_sqlite(path, index=memory_index(embeddings), name=name) as store:
        yield store


def _checkpointer_store_name(path: Path) -> str:
    """The name of the CheckpointerStore in the SQLite file (``"store"`` when it holds several).

    Read through a read-only connection: a file that holds none is refused, and not changed.
    """
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            threads = [row[0] for row in conn.execute(_REGISTRIES)] if "checkpoints" in tables else []
    except sqlite3.Error as exc:
        raise StoreError(f"could not read the SQLite file {str(path)!r}: {exc}") from None
    names = sorted(m.group(1) for t in threads if (m := _REGISTRY.fullmatch(t)))
    if not names:
        what = "LangGraph checkpoints but no memory store" if "checkpoints" in tables else "no checkpoints"
        raise ConfigurationError(
            f"the SQLite file {str(path)!r} holds {what} (no CheckpointerStore wrote to it)"
            + _hint(path.parent)
        )
    return "store" if "store" in names else names[0]


@contextmanager
def _qdrant_server(url: str, embeddings: EmbeddingsSpec | None) -> Iterator[BaseStore]:
    from qdrant_client import QdrantClient

    from langmem_plugin.stores import QdrantStore

    api_key = os.environ.get("QDRANT_API_KEY") or None
    client = QdrantClient(url=url, api_key=api_key, timeout=10, check_compatibility=False)
    try:
        exists = client.collection_exists(_COLLECTION)
    except Exception as exc:  # the client's transport errors: refused, timed out, bad key
        raise StoreError(f"could not reach the Qdrant server at {redacted_url(url)}: {exc}") from None
    finally:
        client.close()
    if not exists:
        raise ConfigurationError(
            f"the Qdrant server at {redacted_url(url)} has no {_COLLECTION!r} collection: no memory store "
            "there (a store is opened, never created)"
        )
    with QdrantStore(
        url=url, api_key=api_key, collection=_COLLECTION, index=memory_index(embeddings)
    ) as store:
        yield store


@contextmanager
def _postgres(url: str, embeddings: EmbeddingsSpec | None) -> Iterator[BaseStore]:
    try:
        from langmem_plugin.stores import PostgresMemoryIndexConfig, PostgresMemoryStore
    except ImportError as exc:
        raise MissingDependencyError(
            f"a Postgres store needs the postgres extra ({exc}). Fix: pip install -e '.[postgres]'"
        ) from None
    made = memory_index(embeddings)
    index = PostgresMemoryIndexConfig(
        dims=made["dims"], embed=made["embed"], fields=made["fields"], lexical_fields=made["lexical_fields"]
    )
    with PostgresMemoryStore.from_conn_string(url, index=index, setup=False) as store:
        yield store
