"""The store ``Memory()`` makes when given none, and the ``index`` config that suits what it writes.

With no store, memory lives in Qdrant's embedded engine with :func:`memory_index` — the
path ``bench locomo`` measures (dense + BM25 candidates fused by recall) — in a temporary
directory removed when the memory (or the store) is closed, garbage-collected, or the
process exits; ``Memory(path="./memory")`` keeps it in a directory instead. No server,
nothing downloaded. LangGraph's ``InMemoryStore`` stays one argument away
(``Memory(InMemoryStore())``), with dense-only recall.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig

from langmem_plugin.core.embeddings import EmbeddingsSpec, embedding_dims, known_dims, resolve_embeddings
from langmem_plugin.errors import ConfigurationError, shown
from langmem_plugin.services.operations import INDEX_FIELDS

if TYPE_CHECKING:
    from langmem_plugin.stores.qdrant import QdrantStore

__all__ = ["LEXICAL_FIELDS", "MemoryIndexConfig", "default_store", "memory_index"]

#: What BM25 should read of what remember writes: the session's date (as the history gave it),
#: the turn before (the question an answer shares no word with) and the text itself.
LEXICAL_FIELDS: tuple[str, ...] = ("metadata.session", "metadata.context", "content")

#: The payload indexes of the default store: a thread's memories (the inspector's thread page,
#: ``memories list --thread``) are filtered on ``metadata.thread_id`` among all of a user's, and the
#: history entries of a thread on ``thread_id``; without an index the engine reads every one of them
#: (docs/scale.md has the numbers).
DEFAULT_FILTER_INDEXES: dict[str, Literal["keyword"]] = {
    "metadata.thread_id": "keyword",
    "thread_id": "keyword",
}


class MemoryIndexConfig(IndexConfig, total=False):
    """An ``index`` config that ``QdrantStore`` and ``CheckpointerStore`` both take."""

    lexical_fields: list[str]
    mode: Literal["semantic", "lexical", "hybrid"]


def memory_index(
    embeddings: EmbeddingsSpec | None = None,
    *,
    dims: int | None = None,
    mode: Literal["semantic", "lexical", "hybrid"] = "hybrid",
) -> MemoryIndexConfig:
    """The ``index`` config for ``QdrantStore`` and ``CheckpointerStore`` that suits what Memory writes.

    Dense vectors of each memory's ``content``, and a BM25 index over :data:`LEXICAL_FIELDS`
    (the stores' candidate lists give recall both). ``embeddings`` is resolved as ``Memory``
    resolves it (default: the offline MiniLM). ``dims`` is the dimension of its vectors: leave it
    out for an embedder that declares it (MiniLM, OpenAI's text-embedding models); for another
    (an Ollama or vLLM server behind ``OpenAIEmbeddings(base_url=...)``) this function embeds one
    probe to learn it, unless ``dims`` is given. ``mode`` is read by a CheckpointerStore only
    (QdrantStore always keeps both indexes): ``"hybrid"`` keeps the BM25 index its default
    ``"semantic"`` mode does without.

    >>> from langmem_plugin.testing import FakeEmbeddings
    >>> index = memory_index(FakeEmbeddings(32))
    >>> index["dims"], index["fields"], index["lexical_fields"], index["mode"]
    (32, ['content'], ['metadata.session', 'metadata.context', 'content'], 'hybrid')

    Raises:
        ConfigurationError: ``dims`` is not a positive int.
        EmbeddingsError: the probe that learns the dims failed (a server down, a key refused):
            the message names the embedder, why it was called and the fix.
    """
    embedder = resolve_embeddings(embeddings)
    given = dims_given(dims)
    return _index(embedder, given if given is not None else embedding_dims(embedder), mode)


def _index(
    embedder: Embeddings, dims: int | None, mode: Literal["semantic", "lexical", "hybrid"]
) -> MemoryIndexConfig:
    """:func:`memory_index`'s config; without ``"dims"`` when ``dims`` is None (QdrantStore learns them)."""
    index = MemoryIndexConfig(embed=embedder, fields=list(INDEX_FIELDS), mode=mode)
    if dims is not None:
        index["dims"] = dims
    if mode != "semantic":
        index["lexical_fields"] = list(LEXICAL_FIELDS)
    return index


def dims_given(dims: object) -> int | None:
    """``dims`` as given to ``Memory``, :func:`memory_index` or :func:`default_store`, checked.

    Raises:
        ConfigurationError: not ``None`` nor a positive int.
    """
    if dims is None or (isinstance(dims, int) and not isinstance(dims, bool) and dims > 0):
        return dims
    raise ConfigurationError(
        f"dims must be the dimension of the embedder's vectors, a positive int, got {shown(dims)}. "
        "Fix: e.g. dims=768 (nomic-embed-text), dims=1024 (mxbai-embed-large), or leave it out to "
        "learn it from the embedder at the store's first use."
    )


def default_store(
    embeddings: EmbeddingsSpec | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    dims: int | None = None,
) -> QdrantStore:
    """The store of ``Memory()``: embedded Qdrant with :func:`memory_index` (hybrid recall).

    Without ``path``, in a new temporary directory removed when the store is closed
    (``Memory.close()`` closes it), garbage-collected, or the process exits. With ``path``,
    in that directory (created when missing), durable there; one opener at a time.

    Nothing calls the embedder here: ``dims`` (the dimension of its vectors), when not given
    and not declared by the embedder (see :func:`~langmem_plugin.core.embeddings.known_dims`),
    is learned by one call at the store's first write or search; a store at ``path`` is then
    opened, locked and checked at that first use, so the errors below come from it instead.

    >>> from langmem_plugin.testing import FakeEmbeddings
    >>> store = default_store(FakeEmbeddings(32))
    >>> store.search_mode, store.path.name.startswith("langmem-memory-")
    ('hybrid', True)
    >>> store.close()

    Raises:
        ConfigurationError: ``path`` is not a directory this store can use (not a ``str`` or
            path, a file, a folder holding other files, or one it cannot create or write);
            the message names the path and the fix. ``dims`` is not a positive int.
        StoreLockedError: another store (in this process or another) holds ``path``.
        StoreConfigMismatchError: ``path`` was written with another embedder's dims.
        EmbedderMismatchError: ``path`` was written with another embedder (same dims or not:
            ``core.embeddings.embedder_id`` names it); raised here, so ``Memory(path=...)`` raises.
    """
    from langmem_plugin.stores.qdrant import QdrantOptions, QdrantStore  # slow to import: on use

    embedder = resolve_embeddings(embeddings)
    given = dims_given(dims)
    index = _index(embedder, given if given is not None else known_dims(embedder), "hybrid")
    options: QdrantOptions = {"filter_indexes": DEFAULT_FILTER_INDEXES}
    if path is None:
        return QdrantStore.temporary(index=index, options=options)
    return QdrantStore(usable_directory(path), index=index, options=options)


def usable_directory(path: object) -> Path:
    """``path`` as a directory a memory can live in, created when missing.

    Raises:
        ConfigurationError: not a ``str``/``os.PathLike``, empty or ``":memory:"``, a file,
            a non-empty folder that is not a memory store, or one that cannot be created or written.
    """
    fix = "Fix: Memory(path='./memory') (a directory of its own), or Memory() for a temporary one."
    if not isinstance(path, str | os.PathLike) or not str(os.fspath(path)).strip():
        raise ConfigurationError(
            f"Memory's path must be a directory name (a str or a Path), got {shown(path)}. {fix}"
        )
    if os.fspath(path) == ":memory:":
        raise ConfigurationError(
            "Memory(path=':memory:') is not a directory. Fix: Memory() keeps memory in a temporary "
            "directory removed when the memory is closed; Memory(InMemoryStore()) keeps it in this process."
        )
    directory = Path(os.fspath(path))
    try:
        directory = directory.expanduser()
        _check_directory(directory, fix)
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, too long, ~nosuchuser, ...
        if isinstance(exc, ConfigurationError):
            raise
        raise ConfigurationError(f"Memory's path {str(directory)!r} cannot be used: {exc}. {fix}") from exc
    return directory


def _check_directory(directory: Path, fix: str) -> None:
    if directory.exists() and not directory.is_dir():
        raise ConfigurationError(f"Memory's path {str(directory)!r} is a file, not a directory. {fix}")
    # a store being created (or one whose creation was cut short) holds only these: QdrantStore
    # itself turns a racing creator away (StoreLockedError) and finishes or redoes a cut creation
    creating = {".lock", ".creating", "store.json.tmp", "shard"}
    if (
        directory.is_dir()
        and not (directory / "store.json").exists()
        and any(p.name not in creating for p in directory.iterdir())
    ):
        raise ConfigurationError(
            f"Memory's path {str(directory)!r} holds other files and no memory store (no store.json): "
            f"the store would write its files among them. {fix}"
        )
    directory.mkdir(parents=True, exist_ok=True)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigurationError(f"Memory's path {str(directory)!r} is not writable by this process. {fix}")
