"""How a QdrantStore opens: the engine its ``path``, ``url`` or ``client`` means, and a temporary store.

:func:`check_one_place` checks that exactly one place was given, first thing; :func:`engine_for`
builds its engine: the embedded one (:mod:`._edge`) on a directory, qdrant-client's
(:mod:`._remote`) on a server, a client, or ``":memory:"``. A temporary store
(:meth:`QdrantStore.temporary`) opens its new directory in a background thread
(:func:`open_in_background`) and removes it with the store (:func:`removal`), in that order
whatever the timing (:class:`Gate`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import shutil
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores.qdrant._config import BatchConfig, Tuning
from langmem_plugin.stores.qdrant._edge import EdgeEngine
from langmem_plugin.stores.qdrant._engine import Engine

if TYPE_CHECKING:  # qdrant-client takes about a second to import: imported for url=/client=/':memory:'
    from qdrant_client import QdrantClient

__all__ = ["MEMORY", "OPEN_LATER", "Gate", "check_one_place", "engine_for", "open_in_background", "removal"]

#: The ``path`` that means qdrant-client's in-process local mode (as in ``sqlite3.connect``).
MEMORY = ":memory:"

#: Set while :meth:`QdrantStore.temporary` constructs: the engine is opened in the background.
OPEN_LATER: contextvars.ContextVar[bool] = contextvars.ContextVar("langmem_open_later", default=False)


def check_one_place(
    path: str | os.PathLike[str] | None, url: str | None, client: QdrantClient | None
) -> None:
    """Raises ConfigurationError unless exactly one of ``path``, ``url`` and ``client`` is given."""
    given = [name for name, v in (("path", path), ("url", url), ("client", client)) if v]
    if len(given) != 1:
        raise ConfigurationError(
            f"QdrantStore needs exactly one of path=, url= or client=, got {given or 'none'}. "
            "Fix: QdrantStore('./memory') for the embedded engine, QdrantStore(':memory:') for a "
            "throwaway one, or url='http://localhost:6333'."
        )


def engine_for(
    path: str | os.PathLike[str] | None,
    *,
    url: str | None,
    api_key: str | None,
    client: QdrantClient | None,
    collection: str,
    config: BatchConfig,
    knobs: Tuning,
    embedder: str | None,
) -> Engine:
    """The engine of the one place given (:func:`check_one_place`; not opened: the store opens it)."""
    local = isinstance(path, str) and path == MEMORY
    if path and not local:
        return EdgeEngine(
            Path(path),
            dims=config.dims,
            durable=knobs.durable,
            filter_indexes=knobs.filter_indexes,
            fields=config.fields,
            lexical_fields=config.lexical_fields,
            optimize_every=knobs.optimize_every,
            cache_bytes=knobs.cache_bytes,
            embedder=embedder,
        )
    from qdrant_client import AsyncQdrantClient, QdrantClient

    from langmem_plugin.stores.qdrant._remote import ClientEngine, Retries

    owns = client is None
    aclient = knobs.aclient
    if url:  # no version check in the constructor (a thread doing I/O): setup() checks it
        client = QdrantClient(url=url, api_key=api_key, check_compatibility=False)
        aclient = AsyncQdrantClient(url=url, api_key=api_key, check_compatibility=False)
    elif local:
        client = QdrantClient(location=MEMORY)
    assert client is not None  # exactly one place was given
    return ClientEngine(
        client,
        aclient=aclient,
        collection=collection,
        dims=config.dims,
        owns=owns,
        filter_indexes=knobs.filter_indexes,
        retries=Retries(retries=knobs.retries),
        embedder=embedder,
    )


class Gate:
    """Orders a temporary store's background open and its removal: no open after the removal."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.removed = False


def removal(store: Any, engine: Engine, directory: Path, gate: Gate) -> weakref.finalize[Any, Any]:
    """Close ``engine`` and remove ``directory`` once: when called, when ``store`` is
    garbage-collected, or at the process's exit, whichever comes first."""
    return weakref.finalize(store, _close_and_remove, engine, directory, gate)


def open_in_background(engine: Engine, gate: Gate) -> None:
    """Open a temporary store's engine ahead of its first use, in a daemon thread (the first use's
    own open waits for it, or opens and raises any error itself)."""
    threading.Thread(target=_open_quietly, args=(engine, gate), name="langmem-open", daemon=True).start()


def _open_quietly(engine: Engine, gate: Gate) -> None:
    with gate.lock, contextlib.suppress(Exception):
        if not gate.removed:  # closed before this thread ran: nothing to create
            engine.open()


def _close_and_remove(engine: Engine, directory: Path, gate: Gate) -> None:
    with gate.lock:
        gate.removed = True
        try:
            engine.close()
        finally:
            shutil.rmtree(directory, ignore_errors=True)
