"""Writing and removing an agent's documents in its knowledge compartment.

Each chunk is a ``kind="document"`` :class:`~langmem_plugin.MemoryRecord` in
``("memories", "agent", "{agent}", "knowledge")`` (the layout's template), keyed by its source's
name and its number, with the source's ``source``/``page``/``title`` in its metadata. Adding a
source again writes only the chunks that changed and removes the ones a shorter version no longer
has; removing a source removes all its chunks. The item limit is counted again where the data
lives, in the write itself (:mod:`langmem_plugin.services.limits`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter
from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord, clean_text
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, InvalidRecordError, MemoryLimitError, shown
from langmem_plugin.services.knowledge.sources import Source, read_sources, shown_metadata
from langmem_plugin.services.knowledge.splitting import DEFAULT_CHUNK_TOKENS, default_splitter
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.limits import bound_of, bounded_steps, list_steps
from langmem_plugin.services.operations import INDEX_FIELDS, to_stored
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute

__all__ = [
    "AddedDocument",
    "DocumentSource",
    "aadd_documents",
    "add_documents",
    "add_documents_steps",
    "aremove_documents",
    "remove_documents",
    "remove_documents_steps",
]

DocumentSource = str | Path | Document
_PROGRESS_MIN_FILES = 5
_log = logging.getLogger("langmem_plugin.knowledge")
_MAX_SCAN = 100_000


@dataclass(frozen=True)
class AddedDocument:
    """What one source came to: ``chunks`` it has now, ``written`` of them new or changed,
    ``removed`` chunks of an older version (or, from :func:`remove_documents`, all of them);
    ``error`` says why a source that could not be read was not added (nothing written for it)."""

    name: str
    chunks: int
    removed: int
    written: int = 0
    error: str | None = None


def _category(name: str) -> str:
    stem = Path(name).stem if name else "document"
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "-" for c in stem)
    return "knowledge/" + (safe.strip("-")[:60].strip("-") or "document")


def _key(name: str, chunk: int) -> str:
    return "doc-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12] + f"-{chunk}"


def _chunks(source: Source, splitter: TextSplitter) -> list[tuple[str, dict[str, str]]]:
    """The source's chunks in order, each with the metadata of the page it came from; no repeats."""
    seen: set[str] = set()
    out: list[tuple[str, dict[str, str]]] = []
    for part in source.parts:
        meta = shown_metadata({**(part.metadata or {}), "source": source.name})
        for text in splitter.split_text(clean_text(part.page_content)):
            text = text.strip()
            if text and text not in seen:  # an identical chunk carries nothing new
                seen.add(text)
                out.append((text, meta))
    return out


def _of_source(items: Iterable[Any], name: str) -> list[Any]:
    return [
        m
        for item in items
        if (m := to_stored(item, Compartment.KNOWLEDGE)) and m.record.metadata.get("source") == name
    ]


def add_documents_steps(
    scope: Scope, layout: MemoryLayout, source: Source, splitter: TextSplitter
) -> StoreSteps[AddedDocument]:
    """Write one source's chunks into the knowledge compartment, replacing an older version."""
    if source.error is not None:
        return AddedDocument(source.name, 0, 0, error=source.error)
    namespace = layout.namespace(Compartment.KNOWLEDGE, scope)
    chunks = _chunks(source, splitter)
    existing = yield from list_steps(
        namespace, max_items=layout.limits_for(Compartment.KNOWLEDGE).max_items or _MAX_SCAN
    )
    stored = {m.id: m.record for m in _of_source(existing, source.name)}
    ops: list[PutOp] = []
    for number, (text, meta) in enumerate(chunks):
        layout.check_content(Compartment.KNOWLEDGE, text)
        metadata = {**meta, "chunk": str(number), "chunks": str(len(chunks))}
        key = _key(source.name, number)
        old = stored.get(key)
        if old is not None and old.content == text and old.metadata == metadata:
            continue  # unchanged: not embedded again
        record = MemoryRecord(
            content=text,
            category=_category(source.name),
            kind=MemoryKind.DOCUMENT,
            source="add_documents",
            metadata=metadata,
        )
        ops.append(PutOp(namespace, key, record.to_value(), index=INDEX_FIELDS))
    keep = {_key(source.name, n) for n in range(len(chunks))}
    stale = [PutOp(namespace, key, None) for key in stored if key not in keep]
    new_keys = {op.key for op in ops} - {item.key for item in existing}
    layout.check_room(Compartment.KNOWLEDGE, len(existing) - len(stale), len(new_keys))
    yield from bounded_steps([*ops, *stale], [bound_of(layout, Compartment.KNOWLEDGE, namespace)])
    return AddedDocument(source.name, len(chunks), len(stale), len(ops))


def remove_documents_steps(scope: Scope, layout: MemoryLayout, name: str) -> StoreSteps[AddedDocument]:
    """Remove every chunk of the source ``name`` (its path, loader ``source`` or ``text-...`` name)."""
    namespace = layout.namespace(Compartment.KNOWLEDGE, scope)
    existing = yield from list_steps(namespace, max_items=_MAX_SCAN)
    stale = [PutOp(namespace, m.id, None) for m in _of_source(existing, name)]
    if stale:
        yield stale
    return AddedDocument(name, 0, len(stale))


def _progress(sources: Sequence[Source], progress: bool | None) -> Iterable[Source]:
    show = progress if progress is not None else len(sources) >= _PROGRESS_MIN_FILES
    if not show:
        return sources
    from tqdm.auto import tqdm

    bar: Iterable[Source] = tqdm(sources, desc="adding documents", unit="doc")
    return bar


def _scope(agent: str | None, scope: Scope | None) -> Scope:
    scope = scope or Scope()
    if agent is not None:
        scope = Scope(scope.user_id, scope.thread_id, agent, scope.run_id, scope.extra)
    return scope


def _splitter(splitter: TextSplitter | None, chunk_tokens: int, model: str | None) -> TextSplitter:
    if splitter is None:
        return default_splitter(chunk_tokens, model)
    if not isinstance(splitter, TextSplitter):
        raise ConfigurationError(
            f"splitter must be a LangChain TextSplitter, got {type(splitter).__name__} {shown(splitter)}. "
            "Fix: pass e.g. RecursiveCharacterTextSplitter(chunk_size=1000), or leave it out."
        )
    return splitter


def _logged(report: list[AddedDocument]) -> list[AddedDocument]:
    for added in report:
        if added.error is not None:
            _log.warning("add_documents: %s was not added: %s", added.name, added.error)
    return report


def _names(names: Iterable[str | Path]) -> list[str]:
    if isinstance(names, str | Path) or not isinstance(names, Iterable):
        raise ConfigurationError(
            f"remove_documents takes a list of names, got {type(names).__name__} {shown(names)}. "
            "Fix: wrap it in a list, e.g. remove_documents(['handbook.md'])."
        )
    out = []
    for name in names:
        if not isinstance(name, str | Path) or not str(name):
            raise ConfigurationError(
                f"a document name must be the path or source it was added as, got {shown(name)}. "
                "Fix: pass the name add_documents reported."
            )
        out.append(str(name))
    return out


def add_documents(
    store: BaseStore,
    sources: Iterable[DocumentSource],
    *,
    agent: str | None = None,
    layout: MemoryLayout | None = None,
    scope: Scope | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    model: str | None = None,
    splitter: TextSplitter | None = None,
    progress: bool | None = None,
) -> list[AddedDocument]:
    """Chunk, embed (by the store) and store documents as ``agent``'s knowledge.

    Args:
        store: any BaseStore (it embeds the chunks when it has an index).
        sources: ``.txt``/``.md``/``.pdf``/``.docx`` paths or folders, texts, or LangChain
            ``Document`` values from any loader (one source per ``metadata["source"]``).
        agent: whose knowledge (default: the layout's ``default_agent``).
        layout: namespace templates and limits.
        scope: other scope values the knowledge template may need.
        chunk_tokens: the most tokens per chunk of the default splitter.
        model: the model whose tokenizer counts chunk tokens.
        splitter: any LangChain ``TextSplitter`` instead of the default.
        progress: show a progress bar (default: when there are 5 sources or more).

    Returns:
        One :class:`AddedDocument` per source, in order; a source that could not be read or
        written has its ``error`` (and is logged as a warning), and the others are still added.

    Raises:
        ConfigurationError: ``sources`` is not a list, a source is of a type that is no document,
            or ``splitter`` is not a ``TextSplitter`` (nothing is written then).
        MissingDependencyError: a ``.pdf``/``.docx`` source without the ``documents`` extra.
    """
    layout, scope = layout or MemoryLayout(), _scope(agent, scope)
    chosen = _splitter(splitter, chunk_tokens, model)
    report = []
    for source in _progress(read_sources(sources), progress):
        try:
            report.append(execute(store, add_documents_steps(scope, layout, source, chosen)))
        except (InvalidRecordError, MemoryLimitError) as exc:  # raised before this source's write
            report.append(AddedDocument(source.name, 0, 0, error=str(exc)))
    return _logged(report)


async def aadd_documents(
    store: BaseStore,
    sources: Iterable[DocumentSource],
    *,
    agent: str | None = None,
    layout: MemoryLayout | None = None,
    scope: Scope | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    model: str | None = None,
    splitter: TextSplitter | None = None,
    progress: bool | None = None,
) -> list[AddedDocument]:
    """Async :func:`add_documents`."""
    layout, scope = layout or MemoryLayout(), _scope(agent, scope)
    chosen = _splitter(splitter, chunk_tokens, model)
    report = []
    for source in _progress(read_sources(sources), progress):
        try:
            report.append(await aexecute(store, add_documents_steps(scope, layout, source, chosen)))
        except (InvalidRecordError, MemoryLimitError) as exc:  # raised before this source's write
            report.append(AddedDocument(source.name, 0, 0, error=str(exc)))
    return _logged(report)


def remove_documents(
    store: BaseStore,
    names: Iterable[str | Path],
    *,
    agent: str | None = None,
    layout: MemoryLayout | None = None,
    scope: Scope | None = None,
) -> list[AddedDocument]:
    """Remove the sources ``names`` (as :func:`add_documents` reported them) from ``agent``'s knowledge."""
    layout, scope = layout or MemoryLayout(), _scope(agent, scope)
    return [execute(store, remove_documents_steps(scope, layout, name)) for name in _names(names)]


async def aremove_documents(
    store: BaseStore,
    names: Iterable[str | Path],
    *,
    agent: str | None = None,
    layout: MemoryLayout | None = None,
    scope: Scope | None = None,
) -> list[AddedDocument]:
    """Async :func:`remove_documents`."""
    layout, scope = layout or MemoryLayout(), _scope(agent, scope)
    return [await aexecute(store, remove_documents_steps(scope, layout, name)) for name in _names(names)]
