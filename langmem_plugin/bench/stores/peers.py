"""The stores ``bench stores`` measures: how to open, reopen, close and size each one.

:data:`PEERS` names them (:data:`OPTIMIZED` the embedded store loaded without automatic builds);
:func:`open_peer` opens one as a :class:`Peer`; :func:`check_peers` fails before any measuring when
a peer is unknown or its package is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore

from langmem_plugin.bench.stores.data import DIMS, TARGET, StoresData, index_config
from langmem_plugin.errors import ConfigurationError, MissingDependencyError
from langmem_plugin.services.recall import HybridRetriever

__all__ = ["EMBEDDED", "OPTIMIZED", "PEERS", "SLOW", "Peer", "check_peers", "disk_usage", "open_peer"]

PEERS = ("qdrant-embedded", "qdrant-memory", "inmemory", "langgraph-store-qdrant", "sqlite")
#: Not measured by default: the embedded store loaded without automatic builds, then one ``optimize()``.
OPTIMIZED = "qdrant-embedded-optimized"
#: The embedded stores: their index builds and the engine's ceiling are measured too.
EMBEDDED = ("qdrant-embedded", OPTIMIZED)
#: The peers that scan in Python, skipped above ``slow_peer_max`` items.
SLOW = {"qdrant-memory", "langgraph-store-qdrant"}


@dataclass
class Peer:
    """How to open (and reopen) one store."""

    store: BaseStore
    reopen: Callable[[], BaseStore] | None = None
    close: Callable[[], None] = lambda: None
    disk: Callable[[], int] | None = None
    vector: Callable[[str], list[Any]] | None = None
    hybrid: Callable[[str], list[Any]] | None = None
    fused: Callable[[str], list[Any]] | None = None


def disk_usage(paths: Iterable[Path]) -> int:
    """Bytes on disk (allocated blocks: Qdrant preallocates sparse files, whose apparent size is larger)."""
    return sum(p.stat().st_blocks * 512 for p in paths if p.is_file())


def open_peer(name: str, data: StoresData, workdir: Path) -> Peer:
    """Open the store ``name`` (files, if any, under ``workdir``), with the searches it supports."""
    index = index_config(data)
    if name in ("qdrant-embedded", "qdrant-memory", OPTIMIZED):
        from langmem_plugin.stores.qdrant import QdrantOptions, QdrantStore

        path = workdir / "qdrant"
        options: QdrantOptions = {"optimize_every": None} if name == OPTIMIZED else {}
        qs = QdrantStore(":memory:" if name == "qdrant-memory" else path, index=index, options=options)  # type: ignore[arg-type]
        dense = qs.with_search(mode="dense")
        peer = Peer(
            qs,
            close=qs.close,
            vector=lambda q: dense.search(TARGET, query=q, limit=10),
            hybrid=lambda q: qs.search(TARGET, query=q, limit=10),
            fused=lambda q: HybridRetriever(qs).search(TARGET, q, limit=10),
        )
        if name != "qdrant-memory":
            peer.reopen = lambda: QdrantStore(path, index=index, options=options)  # type: ignore[arg-type]
            peer.disk = lambda: disk_usage(path.rglob("*"))
        return peer
    if name == "inmemory":
        from langgraph.store.memory import InMemoryStore

        mem = InMemoryStore(index=index)  # type: ignore[arg-type]
        return Peer(
            mem,
            vector=lambda q: mem.search(TARGET, query=q, limit=10),
            fused=lambda q: HybridRetriever(mem).search(TARGET, q, limit=10),
        )
    if name == "langgraph-store-qdrant":
        from langgraph.store.qdrant import QdrantStore as AnchorStore
        from qdrant_client import QdrantClient

        client = QdrantClient(location=":memory:")
        anchor = AnchorStore(client, index={"dims": DIMS, "embed": data.embeddings, "fields": ["text"]})
        anchor.setup()
        return Peer(
            anchor, close=client.close, vector=lambda q: list(anchor.search(TARGET, query=q, limit=10))
        )
    if name == "sqlite":
        import pysqlite3
        from langgraph.store.sqlite import SqliteStore

        path = workdir / "store.sqlite"

        def connect() -> Any:
            conn = pysqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            store = SqliteStore(conn, index=index)  # type: ignore[arg-type]
            store.setup()
            holder["conn"] = conn
            return store

        holder: dict[str, Any] = {}
        sqlite = connect()
        return Peer(
            sqlite,
            reopen=connect,
            close=lambda: holder["conn"].close(),
            disk=lambda: disk_usage(workdir.glob("store.sqlite*")),
            vector=lambda q: sqlite.search(TARGET, query=q, limit=10),
        )
    raise ConfigurationError(f"unknown peer {name!r}; choose from {', '.join((*PEERS, OPTIMIZED))}")


#: The modules each peer needs beyond the package's own dependencies (the ``bench`` extra has them).
_NEEDS: dict[str, tuple[str, ...]] = {
    "langgraph-store-qdrant": ("langgraph.store.qdrant", "qdrant_client"),
    "sqlite": ("pysqlite3", "langgraph.store.sqlite"),
}


def check_peers(peers: Iterable[str]) -> None:
    """Fail before any measuring when a peer is unknown or its package is missing.

    Raises:
        ConfigurationError: an unknown peer (the message lists the known ones).
        MissingDependencyError: a peer's package is not installed (the message has the ``pip`` line).
    """
    import importlib

    known = (*PEERS, OPTIMIZED)
    for name in peers:
        if name not in known:
            raise ConfigurationError(f"unknown peer {name!r}; choose from {', '.join(known)}")
        for module in _NEEDS.get(name, ()):
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise MissingDependencyError(
                    f"the stores benchmark's peer {name!r} needs {exc.name or module}. Fix: pip install "
                    f"'langmem-plugin[bench]', or leave it out of --peers."
                ) from exc
