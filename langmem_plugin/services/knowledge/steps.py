"""Writing and removing an agent's documents in its knowledge compartment.

Each chunk is a ``kind="document"`` :class:`~langmem_plugin.MemoryRecord` in
``("memories", "agent", "{agent}", "knowledge")`` (the layout's template), keyed by its source
and its text (:mod:`.versions`), with the source's ``source``/``page``/``title`` in its metadata.
Adding a source again writes only the chunks that changed and removes the ones the new version no
longer has; removing a source removes all its chunks. How a change is written so that the old
version or the new one is whole, whatever fails, and so that two writers of one source take turns,
is :mod:`.versions`. A call reads the compartment once, whatever the number of sources, and
writes them in groups. The item limit is counted again where the data lives, in the write itself
(:mod:`langmem_plugin.services.limits`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter
from langgraph.store.base import BaseStore, Item, PutOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord, clean_text
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError, InvalidRecordError, MemoryLimitError, shown
from langmem_plugin.services.knowledge.sources import Source, read_sources, shown_metadata
from langmem_plugin.services.knowledge.splitting import DEFAULT_CHUNK_TOKENS, default_splitter
from langmem_plugin.services.knowledge.versions import (
    STAGED,
    Change,
    aheld,
    apply_steps,
    chunk_key,
    held,
    items_of,
    listing_steps,
    resume_knowledge_steps,
    source_id,
)
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.limits import bound_of, bounded_steps, write_steps
from langmem_plugin.services.operations import INDEX_FIELDS, read_record
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
_GROUP_SOURCES = 256  # sources written together (one intent batch, one bounded write, ...)
_GROUP_CHUNKS = 2048


@dataclass(frozen=True)
class AddedDocument:
    """What one source came to: ``chunks`` it has now, ``written`` of them new or changed,
    ``removed``: how many chunks fewer than the older version it has (or, from
    :func:`remove_documents`, all of them); ``error`` says why a source that could not be read
    or written was not added (nothing written for it)."""

    name: str
    chunks: int
    removed: int
    written: int = 0
    error: str | None = None


def _category(name: str) -> str:
    stem = Path(name).stem if name else "document"
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "-" for c in stem)
    return "knowledge/" + (safe.strip("-")[:60].strip("-") or "document")


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


def _change(
    namespace: tuple[str, ...],
    layout: MemoryLayout,
    source: Source,
    splitter: TextSplitter,
    stored: list[Item],
) -> tuple[Change | None, AddedDocument]:
    """What adding ``source`` changes, given its ``stored`` chunks (``None``: nothing)."""
    sid, chunks = source_id(source.name), _chunks(source, splitter)
    category, adding = _category(source.name), not stored
    old = {item.key: item for item in stored}
    change = Change(namespace, sid, source.name, "adding" if adding else "replacing")
    for number, (text, meta) in enumerate(chunks):
        layout.check_content(Compartment.KNOWLEDGE, text)
        metadata = {**meta, "chunk": str(number), "chunks": str(len(chunks))}
        key = chunk_key(sid, text)
        change.keys.append(key)
        item = old.get(key)
        before = read_record(item) if item is not None and STAGED not in item.value else None
        if before is not None and (before.content, before.metadata, before.category) == (
            text,
            metadata,
            category,
        ):
            continue  # unchanged: not written, not embedded again
        record = MemoryRecord(
            content=text,
            category=category,
            kind=MemoryKind.DOCUMENT,
            source="add_documents",
            metadata=metadata,
            **({"created_at": before.created_at} if before is not None else {}),
        )
        put = PutOp(namespace, key, record.to_value(), index=INDEX_FIELDS)
        if before is None and not adding:  # a new text: written hidden, revealed after the commit
            change.stage.append(put._replace(value={**record.to_value(), STAGED: True}))
            change.final.append(put)
        elif before is None:
            change.stage.append(put)
        else:  # the same text, other metadata: rewritten after the commit (its vectors kept)
            change.final.append(put)
    wanted = set(change.keys)
    change.stale = [key for key in old if key not in wanted]
    visible = sum(STAGED not in item.value for item in stored)
    written = sum(op.key not in old or STAGED in old[op.key].value for op in change.stage) + sum(
        op.key in old and STAGED not in old[op.key].value for op in change.final
    )
    added = AddedDocument(source.name, len(chunks), max(0, visible - len(chunks)), written)
    if not (change.stage or change.final or change.stale):
        return None, added
    return change, added


def _add_steps(
    namespace: tuple[str, ...], layout: MemoryLayout, sources: Iterable[Source], splitter: TextSplitter
) -> StoreSteps[list[AddedDocument]]:
    """Add ``sources``: the compartment read once, then the changes written in groups."""
    by_owner, count = yield from listing_steps(namespace, layout.limits_for(Compartment.KNOWLEDGE).max_items)
    report: list[AddedDocument] = []
    group: list[tuple[int, Change]] = []
    for source in sources:
        if source.error is not None:
            report.append(AddedDocument(source.name, 0, 0, error=source.error))
            continue
        try:
            change, added = _change(
                namespace, layout, source, splitter, items_of(by_owner, source_id(source.name))
            )
            if change is not None:
                layout.check_room(Compartment.KNOWLEDGE, count, len(change.stage))
        except (InvalidRecordError, MemoryLimitError) as exc:  # raised before this source's write
            report.append(AddedDocument(source.name, 0, 0, error=str(exc)))
            continue
        report.append(added)
        if change is None:
            continue
        count += len(change.stage) - len(change.stale)
        group.append((len(report) - 1, change))
        if len(group) >= _GROUP_SOURCES or sum(len(c.stage) for _, c in group) >= _GROUP_CHUNKS:
            yield from _write_group(namespace, layout, group, report)
            group = []
    yield from _write_group(namespace, layout, group, report)
    return report


def _write_group(
    namespace: tuple[str, ...],
    layout: MemoryLayout,
    group: Sequence[tuple[int, Change]],
    report: list[AddedDocument],
) -> StoreSteps[None]:
    bound = bound_of(layout, Compartment.KNOWLEDGE, namespace)
    try:
        yield from apply_steps([c for _, c in group], lambda ops: bounded_steps(ops, [bound]))
    except (InvalidRecordError, MemoryLimitError) as exc:  # refused where the data lives: undone
        for index, _ in group:
            report[index] = AddedDocument(report[index].name, 0, 0, error=str(exc))
    return None


def add_documents_steps(
    scope: Scope, layout: MemoryLayout, source: Source, splitter: TextSplitter
) -> StoreSteps[AddedDocument]:
    """Write one source's chunks into the knowledge compartment, replacing an older version.

    Steps only: :func:`add_documents` also holds the sources around them (:func:`~.versions.held`).
    """
    namespace = layout.namespace(Compartment.KNOWLEDGE, scope)
    (added,) = yield from _add_steps(namespace, layout, [source], splitter)
    return added


def _remove_steps(namespace: tuple[str, ...], names: Sequence[str]) -> StoreSteps[list[AddedDocument]]:
    by_owner, _ = yield from listing_steps(namespace, None)
    report: list[AddedDocument] = []
    changes: dict[str, Change] = {}
    for name in names:
        sid = source_id(name)
        items = [] if sid in changes else items_of(by_owner, sid)
        report.append(AddedDocument(name, 0, sum(STAGED not in item.value for item in items)))
        if items:
            changes[sid] = Change(namespace, sid, name, "removing", stale=[item.key for item in items])
    yield from apply_steps(list(changes.values()), write_steps)
    return report


def remove_documents_steps(scope: Scope, layout: MemoryLayout, name: str) -> StoreSteps[AddedDocument]:
    """Remove every chunk of the source ``name`` (its path, loader ``source`` or ``text-...`` name)."""
    (removed,) = yield from _remove_steps(layout.namespace(Compartment.KNOWLEDGE, scope), [name])
    return removed


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


def _ids(sources: Iterable[Source]) -> list[str]:
    return [source_id(s.name) for s in sources if s.error is None]


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
        MemoryLimitError: a ``.docx`` or ``.pdf`` inflates past 64 MiB (refused before it is
            inflated; nothing is written).
        Exception: the embedder or the store failed while writing a group of sources: that
            group's changes are undone (each source is its old version, whole), the groups before
            it stay added, and the error propagates unchanged.

    A change left half-done by a killed process is finished first
    (:func:`~langmem_plugin.services.knowledge.versions.resume_knowledge_steps`), and the
    sources are held (in process, and across processes on a store that can) while the compartment
    is read and written.
    """
    layout, scope = layout or MemoryLayout(), _scope(agent, scope)
    chosen = _splitter(splitter, chunk_tokens, model)
    read = read_sources(sources)
    namespace = layout.namespace(Compartment.KNOWLEDGE, scope)
    execute(store, resume_knowledge_steps())
    with held(store, namespace, _ids(read)):
        return _logged(execute(store, _add_steps(namespace, layout, _progress(read, progress), chosen)))


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
    read = read_sources(sources)
    namespace = layout.namespace(Compartment.KNOWLEDGE, scope)
    await aexecute(store, resume_knowledge_steps())
    async with aheld(store, namespace, _ids(read)):
        return _logged(
            await aexecute(store, _add_steps(namespace, layout, _progress(read, progress), chosen))
        )


def remove_documents(
    store: BaseStore,
    names: Iterable[str | Path],
    *,
    agent: str | None = None,
    layout: MemoryLayout | None = None,
    scope: Scope | None = None,
) -> list[AddedDocument]:
    """Remove the sources ``names`` (exactly as :func:`add_documents` reported them) from ``agent``'s
    knowledge; a change left half-done by a killed process is finished first."""
    layout, scope = layout or MemoryLayout(), _scope(agent, scope)
    chosen, namespace = _names(names), layout.namespace(Compartment.KNOWLEDGE, scope)
    execute(store, resume_knowledge_steps())
    with held(store, namespace, [source_id(name) for name in chosen]):
        return execute(store, _remove_steps(namespace, chosen))


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
    chosen, namespace = _names(names), layout.namespace(Compartment.KNOWLEDGE, scope)
    await aexecute(store, resume_knowledge_steps())
    async with aheld(store, namespace, [source_id(name) for name in chosen]):
        return await aexecute(store, _remove_steps(namespace, chosen))
