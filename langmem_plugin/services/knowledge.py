"""Static knowledge: an agent's documents, chunked and stored in its knowledge compartment.

:func:`add_documents` takes ``.txt`` / ``.md`` files (paths or folders) and raw
texts, splits them into chunks of at most ``chunk_tokens`` tokens along
headings, paragraphs and sentences, and writes each chunk as a
``kind="document"`` :class:`~langmem_plugin.MemoryRecord` in
``("memories", "agent", "{agent}", "knowledge")`` (the layout's template). The
store embeds them as it writes. Keys derive from the document name and chunk
number, so adding a document again replaces its chunks (and removes chunks a
shorter new version no longer has). A progress bar (tqdm) shows when there
are many files.

Recall injects the whole knowledge when it fits its token budget, and searches
it otherwise.

>>> chunk_text("# Title\\n\\nFirst paragraph.\\n\\nSecond paragraph.", max_tokens=8)
['# Title\\n\\nFirst paragraph.', 'Second paragraph.']
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens, encoding_for_model
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.limits import bound_of, bounded_steps
from langmem_plugin.services.operations import INDEX_FIELDS, list_steps, to_stored
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute

__all__ = [
    "DOCUMENT_SUFFIXES",
    "AddedDocument",
    "Document",
    "aadd_documents",
    "add_documents",
    "add_documents_steps",
    "chunk_text",
    "load_documents",
]

DOCUMENT_SUFFIXES = (".txt", ".md", ".markdown")
_PROGRESS_MIN_FILES = 5
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_CATEGORY_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Document:
    """A document to add: its name (a file name, or what you call a text) and its text."""

    name: str
    text: str


@dataclass(frozen=True)
class AddedDocument:
    """What :func:`add_documents` wrote for one document."""

    name: str
    chunks: int
    removed: int


def _split_long(text: str, max_tokens: int, model: str | None) -> list[str]:
    if count_tokens(text, model=model) <= max_tokens:
        return [text]
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE.split(text):
        candidate = f"{current} {sentence}".strip()
        if current and count_tokens(candidate, model=model) > max_tokens:
            pieces.append(current)
            candidate = sentence
        if count_tokens(candidate, model=model) > max_tokens:  # one sentence too long: cut by tokens
            encoding = encoding_for_model(model)
            tokens = encoding.encode(candidate, disallowed_special=())
            for start in range(0, len(tokens), max_tokens):
                pieces.append(encoding.decode(tokens[start : start + max_tokens]))
            candidate = ""
        current = candidate
    if current:
        pieces.append(current)
    return pieces


def chunk_text(text: str, *, max_tokens: int = 300, model: str | None = None) -> list[str]:
    """Split ``text`` into chunks of at most ``max_tokens`` tokens.

    Paragraphs (blank-line separated) are packed together while they fit; a
    heading starts a new chunk; a paragraph too long is split by sentences,
    and a sentence too long by tokens.
    """
    if max_tokens < 8:
        raise ConfigurationError(f"max_tokens must be at least 8, got {max_tokens}")
    chunks: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in _PARAGRAPH.split(text)):
        if not paragraph:
            continue
        for piece in _split_long(paragraph, max_tokens, model):
            candidate = f"{current}\n\n{piece}" if current else piece
            starts_section = piece.startswith("#") and bool(current) and not current.lstrip().startswith("#")
            if current and (starts_section or count_tokens(candidate, model=model) > max_tokens):
                chunks.append(current)
                candidate = piece
            current = candidate
    if current:
        chunks.append(current)
    return chunks


def load_documents(sources: Iterable[str | Path | Document]) -> list[Document]:
    """Documents from paths (files or folders of ``.txt``/``.md``), raw texts and :class:`Document`.

    A ``Path`` is always a file or folder. A ``str`` is a path when it is one
    line ending in ``.txt``/``.md`` (and then it must exist); any other ``str``
    is the text of a document named after its content (``text-<sha256 prefix>``), so
    adding the same text twice keeps one copy and different texts never replace each other.

    Raises:
        ConfigurationError: a path that does not exist, or a file that is not ``.txt``/``.md``;
            ``sources`` that is not a list (a single ``str`` included: wrap it in a list), or a
            source that is not a ``str``, a path or a :class:`Document`.
    """
    if isinstance(sources, str | bytes | os.PathLike | Document) or not isinstance(sources, Iterable):
        raise ConfigurationError(
            f"add_documents takes a list of sources, got {type(sources).__name__} {repr(sources)[:80]}. "
            "Fix: wrap it in a list, e.g. add_documents(['handbook.md'])."
        )
    documents: list[Document] = []
    for source in sources:
        if not isinstance(source, str | os.PathLike | Document):
            raise ConfigurationError(
                f"a document source must be a str (a text, or a .txt/.md path), a Path or a Document, "
                f"got {type(source).__name__} {repr(source)[:80]}. Fix: decode bytes and pass text."
            )
        if isinstance(source, Document):
            documents.append(source)
            continue
        if isinstance(source, str) and not (
            "\n" not in source and source.lower().endswith(DOCUMENT_SUFFIXES)
        ):
            documents.append(Document("text-" + hashlib.sha256(source.encode()).hexdigest()[:10], source))
            continue
        path = Path(source)
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
            )
        elif path.is_file():
            if path.suffix.lower() not in DOCUMENT_SUFFIXES:
                raise ConfigurationError(
                    f"{str(path)!r} is not a .txt or .md file; add_documents reads {list(DOCUMENT_SUFFIXES)}"
                )
            files = [path]
        else:
            raise ConfigurationError(f"the document path {str(path)!r} does not exist")
        documents.extend(Document(str(f), f.read_text(encoding="utf-8")) for f in files)
    return documents


def _category(name: str) -> str:
    stem = Path(name).stem if name else "document"
    return "knowledge/" + (_CATEGORY_SAFE.sub("-", stem).strip("-") or "document")


def _key(name: str, chunk: int) -> str:
    return "doc-" + hashlib.sha256(name.encode()).hexdigest()[:12] + f"-{chunk}"


def add_documents_steps(
    scope: Scope,
    layout: MemoryLayout,
    document: Document,
    *,
    chunk_tokens: int = 300,
    model: str | None = None,
) -> StoreSteps[AddedDocument]:
    """Write one document's chunks into the knowledge compartment (replacing an older version)."""
    namespace = layout.namespace(Compartment.KNOWLEDGE, scope)
    # identical chunks carry nothing new (and some stores fail a batch that embeds one text twice)
    chunks = list(dict.fromkeys(chunk_text(document.text, max_tokens=chunk_tokens, model=model)))
    ops: list[PutOp] = []
    for number, chunk in enumerate(chunks):
        layout.check_content(Compartment.KNOWLEDGE, chunk)
        record = MemoryRecord(
            content=chunk,
            category=_category(document.name),
            kind=MemoryKind.DOCUMENT,
            source="add_documents",
            metadata={"source": document.name, "chunk": str(number), "chunks": str(len(chunks))},
        )
        ops.append(PutOp(namespace, _key(document.name, number), record.to_value(), index=INDEX_FIELDS))
    existing = yield from list_steps(
        namespace, max_items=layout.limits_for(Compartment.KNOWLEDGE).max_items or 100_000
    )
    stale = [
        PutOp(namespace, m.id, None)
        for item in existing
        if (m := to_stored(item, Compartment.KNOWLEDGE))
        and m.record.metadata.get("source") == document.name
        and int(m.record.metadata.get("chunk", "0")) >= len(chunks)
    ]
    new_keys = {op.key for op in ops} - {i.key for i in existing}
    layout.check_room(Compartment.KNOWLEDGE, len(existing) - len(stale), len(new_keys))
    # counted again where the data lives, in the write itself (services.limits)
    yield from bounded_steps([*ops, *stale], [bound_of(layout, Compartment.KNOWLEDGE, namespace)])
    return AddedDocument(document.name, len(chunks), len(stale))


def _progress(documents: Sequence[Document], progress: bool | None) -> Iterable[Document]:
    show = progress if progress is not None else len(documents) >= _PROGRESS_MIN_FILES
    if not show:
        return documents
    from tqdm.auto import tqdm

    bar: Iterable[Document] = tqdm(documents, desc="adding documents", unit="doc")
    return bar


def _scope(agent: str | None, scope: Scope | None) -> Scope:
    scope = scope or Scope()
    if agent is not None:
        scope = Scope(scope.user_id, scope.thread_id, agent, scope.run_id, scope.extra)
    return scope


def add_documents(
    store: BaseStore,
    sources: Iterable[str | Path | Document],
    *,
    agent: str | None = None,
    layout: MemoryLayout | None = None,
    scope: Scope | None = None,
    chunk_tokens: int = 300,
    model: str | None = None,
    progress: bool | None = None,
) -> list[AddedDocument]:
    """Chunk, embed (by the store) and store documents as ``agent``'s knowledge.

    Args:
        store: any BaseStore (it embeds the chunks when it has an index).
        sources: ``.txt``/``.md`` paths or folders, raw texts, or :class:`Document` values.
        agent: whose knowledge (default: the layout's ``default_agent``).
        layout: namespace templates and limits.
        scope: other scope values the knowledge template may need.
        chunk_tokens: the most tokens per chunk.
        model: the model whose tokenizer counts chunk tokens.
        progress: show a progress bar (default: when there are 5 documents or more).
    """
    layout = layout or MemoryLayout()
    scope = _scope(agent, scope)
    documents = load_documents(sources)
    return [
        execute(store, add_documents_steps(scope, layout, d, chunk_tokens=chunk_tokens, model=model))
        for d in _progress(documents, progress)
    ]


async def aadd_documents(
    store: BaseStore,
    sources: Iterable[str | Path | Document],
    *,
    agent: str | None = None,
    layout: MemoryLayout | None = None,
    scope: Scope | None = None,
    chunk_tokens: int = 300,
    model: str | None = None,
    progress: bool | None = None,
) -> list[AddedDocument]:
    """Async :func:`add_documents`."""
    layout = layout or MemoryLayout()
    scope = _scope(agent, scope)
    documents = load_documents(sources)
    return [
        await aexecute(store, add_documents_steps(scope, layout, d, chunk_tokens=chunk_tokens, model=model))
        for d in _progress(documents, progress)
    ]
