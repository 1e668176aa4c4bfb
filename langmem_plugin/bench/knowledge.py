"""Knowledge benchmark: which splitter lets recall show what a question needs from documents.

Not a test: ``python -m langmem_plugin.bench.knowledge [--data PATH] [--conversations 0-4]``.

``--folder 1000,10000`` instead adds folders of that many small notes with ``Memory``'s defaults
(embedded Qdrant, the offline embedder) and prints one row per size — the time, and the time per
file, which stays flat when adding is linear in the files — then re-adds each folder with every
note changed while the embedder fails once half-way, and counts the sources left with chunks of
two versions (none: each is its old version or its new one, whole), and the retry's time.

Every session of a LoCoMo conversation becomes one Markdown document (a heading with its date,
then one paragraph per turn, ``Speaker: text``), added with ``Memory.add_documents`` as the
agent's knowledge; then every question with evidence is asked through ``Memory.recall``, with the
default configuration and budgets. A question's evidence turn counts as *shown* when its whole
text is inside what recall injects (a turn cut in two by a chunk boundary is not shown whole).
The row of a splitter is the mean share of evidence turns shown, the knowledge tokens injected,
and the chunks made. Conversations differ from handbooks, but they are real text with labels of
what each question needs, which no other set here has.

The splitters (all at the default chunk size, :data:`DEFAULT_CHUNK_TOKENS` tokens of the default
tokenizer, or ``--tokens``):

- ``paragraph``: the packer this package used before (:class:`ParagraphSplitter`): paragraphs
  packed while they fit, a heading starts a chunk, a long paragraph split by sentences;
- ``section``: the default, LangChain's ``RecursiveCharacterTextSplitter`` on Markdown structure then
  sentences, lengths in tokens (:func:`~langmem_plugin.services.knowledge.section_splitter`);
- ``recursive``: LangChain's ``RecursiveCharacterTextSplitter`` with its default separators
  and lengths in tokens, as a LangChain user would first write it.
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_text_splitters import RecursiveCharacterTextSplitter, TextSplitter

from langmem_plugin.bench.datasets import locomo_path
from langmem_plugin.bench.locomo.data import Conversation, load_conversations
from langmem_plugin.bench.report import format_table
from langmem_plugin.core.fence import quote
from langmem_plugin.core.tokens import count_tokens, encoding_for_model
from langmem_plugin.services.knowledge import DEFAULT_CHUNK_TOKENS, MIN_CHUNK_TOKENS, section_splitter

__all__ = [
    "SPLITTERS",
    "FolderRun",
    "KnowledgeRow",
    "ParagraphSplitter",
    "PdfRun",
    "chunk_text",
    "main",
    "manual_pages",
    "run_folder_bench",
    "run_knowledge_bench",
    "run_pdf_bench",
    "session_documents",
    "write_pdf",
]

DEFAULT_DATA = locomo_path()  # data/locomo/locomo10.json in the checkout, or $LANGMEM_PLUGIN_DATA
CHUNK_TOKENS = DEFAULT_CHUNK_TOKENS


_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


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
    """Split ``text`` into chunks of at most ``max_tokens`` tokens (the packer used before).

    Paragraphs (blank-line separated) are packed together while they fit; a heading starts a new
    chunk; a paragraph too long is split by sentences, and a sentence too long by tokens.
    """
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


class ParagraphSplitter(TextSplitter):
    """:func:`chunk_text` as a LangChain ``TextSplitter``."""

    def __init__(self, max_tokens: int = 300, model: str | None = None, **kwargs: Any) -> None:
        super().__init__(chunk_size=max_tokens, chunk_overlap=0, **kwargs)
        self._max_tokens, self._model = max_tokens, model

    def split_text(self, text: str) -> list[str]:
        return chunk_text(text, max_tokens=self._max_tokens, model=self._model)


def _recursive(max_tokens: int) -> TextSplitter:
    return RecursiveCharacterTextSplitter(
        chunk_size=max_tokens, chunk_overlap=0, length_function=functools.partial(count_tokens, model=None)
    )


SPLITTERS: dict[str, Callable[[int], TextSplitter]] = {
    "paragraph": ParagraphSplitter,
    "section": section_splitter,
    "recursive": _recursive,
}


@dataclass(frozen=True)
class KnowledgeRow:
    """One splitter's outcome over the conversations run."""

    splitter: str
    shown: float
    questions: int
    tokens: float
    chunks: int
    seconds: float


def session_documents(conversation: Conversation) -> list[Document]:
    """One Markdown document per session: a dated heading, then a paragraph per turn."""
    sessions: dict[int, list[str]] = {}
    dates: dict[int, str] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.session, []).append(turn.line)
        dates[turn.session] = turn.date
    return [
        Document(
            page_content=f"## Session {s} ({dates[s]})\n\n" + "\n\n".join(lines),
            metadata={"source": f"{conversation.sample_id}/session-{s}", "title": f"Session {s}"},
        )
        for s, lines in sorted(sessions.items())
    ]


def _one(conversation: Conversation, splitter: TextSplitter) -> tuple[list[float], list[int], int]:
    from langmem_plugin import Memory

    turns = {t.dia_id: t for t in conversation.turns}
    memory = Memory()  # what a user gets: the default store and configuration
    try:
        added = memory.add_documents(session_documents(conversation), splitter=splitter, progress=False)
        shown: list[float] = []
        tokens: list[int] = []
        config: RunnableConfig = {"configurable": {"user_id": "bench", "thread_id": conversation.sample_id}}
        for question in conversation.questions:
            wanted = [turns[d] for d in question.evidence if d in turns]
            if not wanted:
                continue
            recall = memory.recall([HumanMessage(question.text)], config)
            shown.append(sum(quote(t.line)[1:-1] in recall.prompt for t in wanted) / len(wanted))
            tokens.append(recall.tokens.get("knowledge", 0))
    finally:
        memory.close()
    return shown, tokens, sum(a.chunks for a in added)


def run_knowledge_bench(
    data: Path = DEFAULT_DATA,
    *,
    conversations: Sequence[int] | None = None,
    splitters: Sequence[str] = (),
    tokens: Sequence[int] = (),
) -> list[KnowledgeRow]:
    """One row per splitter and chunk size over the chosen conversations (all by default), in one
    run; ``data`` is LoCoMo's file or REALTALK's folder (the LoCoMo loader reads both)."""
    loaded = load_conversations(data).conversations
    chosen = [loaded[i] for i in conversations] if conversations is not None else loaded
    rows = []
    for size in tokens or (CHUNK_TOKENS,):
        for name in splitters or SPLITTERS:
            started = time.perf_counter()
            shown: list[float] = []
            spent: list[int] = []
            chunks = 0
            for conversation in chosen:
                s, t, c = _one(conversation, SPLITTERS[name](size))
                shown += s
                spent += t
                chunks += c
            rows.append(
                KnowledgeRow(
                    name if not tokens else f"{name} @ {size}",
                    100 * statistics.fmean(shown) if shown else 0.0,
                    len(shown),
                    statistics.fmean(spent) if spent else 0.0,
                    chunks,
                    time.perf_counter() - started,
                )
            )
    return rows


def write_pdf(path: Path, pages: list[str], *, title: str | None = None) -> Path:
    """A PDF with one page per text (Helvetica, one line per text line), text that pypdf extracts."""
    from pypdf import PdfWriter  # the documents extra
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(612, 792)
        escaped = [
            line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in text.split("\n")
        ]
        body = " ".join(f"({line}) '" for line in escaped)
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 11 Tf 72 740 Td 14 TL {body} ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    if title is not None:
        writer.add_metadata({"/Title": title})
    with path.open("wb") as out:
        writer.write(out)
    return path


_WORDS = ["inspect", "clean", "oil", "replace", "tighten", "check", "calibrate", "flush", "test", "seal"]


def manual_pages(pages: int) -> list[str]:
    """The pages of a made-up maintenance manual: each page is about its own pump model, ``P-<page>``."""
    out = []
    for n in range(1, pages + 1):
        lines = [f"Chapter {n}: the pump model P-{n}."]
        lines += [
            f"Step {k}: {_WORDS[(n + k) % len(_WORDS)]} the part {k} of P-{n} before the next shift."
            for k in range(1, 15)
        ]
        lines.append(f"Pump P-{n} must be inspected every {n % 29 + 2} days and its filter changed yearly.")
        out.append("\n".join(lines))
    return out


@dataclass(frozen=True)
class PdfRun:
    """One PDF added and asked about: pages, seconds to add (reading, splitting, embedding, writing),
    chunks, and the pages recall showed for a question about the middle page."""

    pages: int
    seconds: float
    chunks: int
    asked_page: int
    shown_pages: list[str]

    @property
    def found(self) -> bool:
        return str(self.asked_page) in self.shown_pages


def run_pdf_bench(pages: int = 300, folder: Path | None = None) -> PdfRun:
    """Write a ``pages``-page PDF, add it with ``Memory()`` and ask about its middle page."""
    from langmem_plugin import Memory

    with tempfile.TemporaryDirectory() as tmp:
        path = write_pdf(Path(folder or tmp) / "manual.pdf", manual_pages(pages), title="Pump manual")
        memory = Memory()
        try:
            started = time.perf_counter()
            (added,) = memory.add_documents([path])
            seconds = time.perf_counter() - started
            middle = pages // 2
            config: RunnableConfig = {"configurable": {"user_id": "bench", "thread_id": "pdf"}}
            recall = memory.recall([HumanMessage(f"How often must pump P-{middle} be inspected?")], config)
        finally:
            memory.close()
    return PdfRun(pages, seconds, added.chunks, middle, re.findall(r'page "([^"]+)"', recall.prompt))


@dataclass(frozen=True)
class FolderRun:
    """A folder of ``files`` notes added, then re-added with one failing embedding call."""

    files: int
    seconds: float  # the first add
    chunks: int
    failed_after: float  # the re-add, until the embedder's failure stopped it
    mixed: int  # sources left with chunks of two versions (0: each is whole)
    kept_old: int  # sources still wholly their old version after the failure
    retry_seconds: float  # the re-add again, to the end
    all_new: bool  # after the retry, every source is its new version


class _FailingOnce(Embeddings):
    """An embedder that delegates to ``inner`` and raises on its ``fail_on``-th batch (once armed)."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.calls = 0
        self.fail_on: int | None = None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.fail_on is not None and self.calls == self.fail_on:
            raise RuntimeError("bench: the embedder fails once")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def _write_notes(folder: Path, files: int, edition: str) -> None:
    for n in range(files):
        (folder / f"note-{n:05d}.md").write_text(
            f"# Note {n}\n\nThe code word of note {n} is w{n}, {edition} edition. "
            f"Ask the desk about item {n * 7 % 1000} before noon.\n"
        )


def _versions(store: Any, namespace: tuple[str, ...]) -> dict[str, set[str]]:
    """The editions each source's shown chunks come from."""
    from langmem_plugin.core.record import MemoryRecord
    from langmem_plugin.errors import InvalidRecordError

    found: dict[str, set[str]] = {}
    offset = 0
    while page := store.search(namespace, limit=1000, offset=offset):
        offset += len(page)
        for item in page:
            try:
                record = MemoryRecord.from_value(item.value)
            except InvalidRecordError:
                continue  # a hidden (staged) chunk: no reader sees it
            edition = "new" if "new edition" in record.content else "old"
            found.setdefault(record.metadata.get("source", ""), set()).add(edition)
    return found


def run_folder_bench(files: int, folder: Path | None = None) -> FolderRun:
    """Add a folder of ``files`` notes, then re-add it changed with one failing embedding call."""
    from langmem_plugin import Memory, memory_index
    from langmem_plugin.core.embeddings import resolve_embeddings
    from langmem_plugin.stores import QdrantStore

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(folder or tmp)
        notes = root / "notes"
        notes.mkdir()
        _write_notes(notes, files, "old")
        embedder = _FailingOnce(resolve_embeddings(None))
        namespace = ("memories", "agent", "assistant", "knowledge")
        with QdrantStore(root / "store", index=memory_index(embedder)) as store:
            memory = Memory(store)
            started = time.perf_counter()
            added = memory.add_documents([notes], progress=False)
            seconds = time.perf_counter() - started
            _write_notes(notes, files, "new")
            embedder.calls, embedder.fail_on = 0, max(1, embedder_calls_half(files))
            started = time.perf_counter()
            raised = False
            try:
                memory.add_documents([notes], progress=False)
            except RuntimeError:
                raised = True
            if not raised:
                raise AssertionError("bench: the embedder was to fail once during the re-add, and did not")
            failed_after = time.perf_counter() - started
            embedder.fail_on = None
            editions = _versions(store, namespace)
            mixed = sum(len(e) > 1 for e in editions.values())
            kept_old = sum(e == {"old"} for e in editions.values())
            started = time.perf_counter()
            memory.add_documents([notes], progress=False)
            retry = time.perf_counter() - started
            after = _versions(store, namespace)
            all_new = len(after) == files and all(e == {"new"} for e in after.values())
    return FolderRun(
        files, seconds, sum(a.chunks for a in added), failed_after, mixed, kept_old, retry, all_new
    )


def embedder_calls_half(files: int) -> int:
    """The embedding call half-way through a folder add of ``files`` one-chunk notes (a call per
    group of 256 sources)."""
    return (files // 256 + 1) // 2 + 1


def _indices(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: print one row per splitter."""
    parser = argparse.ArgumentParser(prog="python -m langmem_plugin.bench.knowledge", description=__doc__)
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="locomo10.json, or the REALTALK folder"
    )
    parser.add_argument("--conversations", default=None, help="indices such as 0-4 or 0,3 (default: all)")
    parser.add_argument("--splitters", default="", help=f"comma-separated, of {', '.join(SPLITTERS)}")
    parser.add_argument(
        "--tokens", default="", help=f"chunk sizes to compare, e.g. 150,200,300 (default {CHUNK_TOKENS})"
    )
    parser.add_argument(
        "--pdf", type=int, default=0, metavar="PAGES", help="instead: add a PDF of PAGES pages"
    )
    parser.add_argument(
        "--folder",
        default="",
        metavar="FILES",
        help="instead: add folders of FILES small notes, e.g. 1000,10000",
    )
    args = parser.parse_args(argv)
    if args.folder:
        return _folder_rows([int(n) for n in args.folder.split(",") if n])
    if args.pdf:
        if args.pdf < 2:
            parser.error("--pdf takes 2 pages or more")
        run = run_pdf_bench(args.pdf)
        verdict = "found" if run.found else "NOT found"
        print(
            f"{run.pages}-page PDF: added in {run.seconds:.1f} s ({run.chunks} chunks); asked about page "
            f"{run.asked_page}: recall showed pages {run.shown_pages}: {verdict}"
        )
        return 0
    names = [s for s in args.splitters.split(",") if s]
    if unknown := [s for s in names if s not in SPLITTERS]:
        parser.error(f"unknown splitter(s) {unknown}; choose from {list(SPLITTERS)}")
    chosen = _indices(args.conversations) if args.conversations else None
    try:
        sizes = [int(t) for t in args.tokens.split(",") if t]
    except ValueError:
        parser.error(f"--tokens takes whole numbers such as 150,200,300, got {args.tokens!r}")
    if any(size < MIN_CHUNK_TOKENS for size in sizes):
        parser.error(f"--tokens: each size is at least {MIN_CHUNK_TOKENS}")
    rows = run_knowledge_bench(args.data, conversations=chosen, splitters=names, tokens=sizes)
    header = ["splitter", "evidence shown %", "questions", "knowledge tokens", "chunks", "seconds"]
    body = [
        [r.splitter, f"{r.shown:.1f}", r.questions, f"{r.tokens:.0f}", r.chunks, f"{r.seconds:.0f}"]
        for r in rows
    ]
    print(format_table(header, body))
    return 0


def _folder_rows(sizes: list[int]) -> int:
    header = [
        "files",
        "added in s",
        "ms per file",
        "chunks",
        "re-add, embedder fails once: stopped after s",
        "sources mixed",
        "kept old",
        "retry s",
        "all new",
    ]
    body = []
    for files in sizes:
        run = run_folder_bench(files)
        body.append(
            [
                files,
                f"{run.seconds:.1f}",
                f"{1000 * run.seconds / files:.2f}",
                run.chunks,
                f"{run.failed_after:.1f}",
                run.mixed,
                run.kept_old,
                f"{run.retry_seconds:.1f}",
                "yes" if run.all_new else "NO",
            ]
        )
        print(format_table(header, body[-1:]), flush=True)
    print(format_table(header, body))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
