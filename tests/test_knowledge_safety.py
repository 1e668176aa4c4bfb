"""Issue 35, knowledge ingestion: a folder never leads out of itself, an archive or PDF that inflates
past the cap is refused before it inflates, a folder costs one read of the compartment, a source is
removed by the very name it was added as, a str naming a file is a file, writers of one source take
turns, and a re-add that fails (an exception, or a kill at any write) leaves one whole version."""

from __future__ import annotations

import asyncio
import os
import threading
import tracemalloc
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langgraph.store.base import BaseStore, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory
from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.errors import InvalidRecordError, MemoryLimitError
from langmem_plugin.services.knowledge import (
    STEPS_NAMESPACE,
    aadd_documents,
    add_documents,
    read_sources,
    remove_documents,
)
from langmem_plugin.stores import QdrantStore
from langmem_plugin.testing import FakeEmbeddings
from tests.document_files import write_docx

KNOWLEDGE = ("memories", "agent", "assistant", "knowledge")
SPLIT = RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0)


class FailingEmbeddings(FakeEmbeddings):
    """Fake embeddings whose ``fail_on``-th call of ``embed_documents`` (1-based) raises."""

    def __init__(self, dims: int = 64) -> None:
        super().__init__(dims)
        self.calls = 0
        self.fail_on: int | None = None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.fail_on is not None and self.calls == self.fail_on:
            raise RuntimeError("embedder down")
        return super().embed_documents(texts)


def _index(embed: FakeEmbeddings | None = None) -> Any:
    return {"embed": embed or FakeEmbeddings(64), "dims": 64, "fields": ["content"]}


class WatchedInMemory(InMemoryStore):
    """InMemoryStore that calls ``after`` after each batch (a reader looking mid-write)."""

    after: Any = None

    def batch(self, ops: Any) -> Any:
        out = super().batch(ops)
        if self.after is not None:
            self.after(list(ops))
        return out


class WatchedQdrant(QdrantStore):
    """Embedded QdrantStore that calls ``after`` after each batch."""

    after: Any = None

    def batch(self, ops: Any) -> Any:
        out = super().batch(ops)
        if self.after is not None:
            self.after(list(ops))
        return out


@pytest.fixture(params=["inmemory", "qdrant"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    opened: list[BaseStore] = []

    def make(embed: FakeEmbeddings | None = None) -> BaseStore:
        store: BaseStore
        if request.param == "inmemory":
            store = WatchedInMemory(index=_index(embed))
        else:
            store = WatchedQdrant(tmp_path / f"q{len(opened)}", index=_index(embed))
        opened.append(store)
        return store

    yield make
    for store in opened:
        if isinstance(store, QdrantStore):
            store.close()


def version(tag: str, facts: int) -> str:
    return "\n\n".join(f"Fact {i} of the handbook, {tag} edition." for i in range(facts))


def doc(text: str, source: str = "handbook.md") -> Document:
    return Document(page_content=text, metadata={"source": source})


def shown_chunks(store: BaseStore, namespace: tuple[str, ...] = KNOWLEDGE) -> list[str]:
    """The chunks a reader sees: the memory records of the namespace (what recall reads)."""
    out = []
    for item in store.search(namespace, limit=10_000):
        try:
            out.append(MemoryRecord.from_value(item.value).content)
        except InvalidRecordError:
            continue
    return sorted(out)


def editions(store: BaseStore) -> set[str]:
    return {text.split(", ")[1] for text in shown_chunks(store)}


# ---- 1. a folder never leads out of itself ------------------------------------------------------


def test_a_folder_add_never_follows_a_link_out_of_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The root password is hunter2.")
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "guide.md").write_text("The guide: returns within 30 days.")
    (folder / "sub" / "inner.md").write_text("Inner notes: ship on Mondays.")
    (folder / "leak.md").symlink_to(outside / "secret.md")  # a file link out of the folder
    (folder / "passwd.txt").symlink_to("/etc/passwd")
    (folder / "linked").symlink_to(outside, target_is_directory=True)  # a folder link out
    (folder / "nowhere.md").symlink_to(tmp_path / "missing.md")
    (folder / "alias.md").symlink_to(folder / "sub" / "inner.md")  # inside: read where it lies
    (folder / "sub" / "up").symlink_to(folder, target_is_directory=True)  # a loop, inside
    store = InMemoryStore(index=_index())
    report = {Path(a.name).name: a for a in add_documents(store, [folder])}
    stored = " ".join(shown_chunks(store))
    assert "hunter2" not in stored
    assert "root:" not in stored
    for name in ("leak.md", "passwd.txt", "linked", "nowhere.md"):
        assert "symbolic link" in (report[name].error or ""), report[name]
        assert report[name].chunks == 0
    assert "outside the folder" in (report["leak.md"].error or "")
    assert "leads nowhere" in (report["nowhere.md"].error or "")
    assert "alias.md" not in report
    assert "up" not in report
    assert (report["guide.md"].error, report["inner.md"].error) == (None, None)
    assert shown_chunks(store) == ["Inner notes: ship on Mondays.", "The guide: returns within 30 days."]


def test_a_file_swapped_for_a_link_after_the_walk_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret.md").write_text("The root password is hunter2.")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "swapped.md").symlink_to(tmp_path / "secret.md")
    real_lstat = os.lstat

    def lying_lstat(name: Any, *, dir_fd: int | None = None) -> os.stat_result:
        if str(name) == "swapped.md":  # seen as the regular file it was when the walk listed it
            return os.stat(name, dir_fd=dir_fd)
        return real_lstat(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "lstat", lying_lstat)
    (source,) = read_sources([folder])
    assert source.error is not None
    assert "link" in source.error
    assert source.parts == ()


def test_pipes_and_devices_are_refused_without_blocking(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    os.mkfifo(folder / "pipe.md")  # opening it for reading would block without O_NONBLOCK
    (folder / "ok.md").write_text("Fine.")
    by_name = {Path(s.name).name: s for s in read_sources([folder, str(folder / "pipe.md")])}
    assert "not a regular file" in (by_name["pipe.md"].error or "")
    assert by_name["ok.md"].error is None
    (dev,) = read_sources([Path("/dev/zero.txt")])  # no such file
    assert dev.error is not None


# ---- 2. archives and PDFs that inflate past the cap ---------------------------------------------


def _docx_bomb(path: Path, inflated: int) -> Path:
    """A real .docx whose ``word/media/pad.bin`` part inflates to ``inflated`` bytes of zeros."""
    write_docx(path, [("p", "A small document.")])
    block = bytes(1024 * 1024)
    with (
        zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/media/pad.bin", "w", force_zip64=True) as part,
    ):
        for _ in range(inflated // len(block)):
            part.write(block)
    return path


def test_a_docx_that_inflates_past_the_cap_is_refused_before_it_inflates(tmp_path: Path) -> None:
    bomb = _docx_bomb(tmp_path / "bomb.docx", 200 * 1024 * 1024)  # 200 MiB of zeros
    assert bomb.stat().st_size < 1024 * 1024
    store = InMemoryStore(index=_index())
    tracemalloc.start()
    try:
        with pytest.raises(
            MemoryLimitError,
            match=r"bomb\.docx.*inflates to a declared 210,[0-9,]+ bytes, more than the 67,108,864",
        ):
            add_documents(store, [tmp_path / "bomb.docx", "Support hours are 9 to 5."])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024  # refused from the central directory: never inflated
    assert shown_chunks(store) == []  # nothing of the call was written


def _lie_about_sizes(path: Path, part: str, size: int) -> None:
    """Rewrite ``part``'s uncompressed size in the local header and the central directory."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(part)
    name = part.encode()
    local = info.header_offset
    data[local + 22 : local + 26] = size.to_bytes(4, "little")
    central = bytes(data).find(b"PK\x01\x02")
    while central != -1:
        length = int.from_bytes(data[central + 28 : central + 30], "little")
        if bytes(data[central + 46 : central + 46 + length]) == name:
            data[central + 24 : central + 28] = size.to_bytes(4, "little")
        central = bytes(data).find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(data))


def test_a_docx_whose_headers_understate_its_parts_is_stopped_while_inflating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "liar.docx"
    write_docx(path, [("p", "A small document.")])
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/pad.bin", bytes(8 * 1024 * 1024))
    _lie_about_sizes(path, "word/media/pad.bin", 1000)
    with zipfile.ZipFile(path) as archive:
        assert sum(i.file_size for i in archive.infolist()) < 1024 * 1024  # the directory lies
    monkeypatch.setattr("langmem_plugin.services.knowledge.sources.MAX_SOURCE_BYTES", 1024 * 1024)
    store = InMemoryStore(index=_index())
    tracemalloc.start()
    try:
        report = add_documents(store, [path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report[0].error is not None
    assert "could not be read as a .docx" in report[0].error
    assert peak < 8 * 1024 * 1024  # inflated as a stream that stops: never the 8 MiB part
    assert shown_chunks(store) == []


def test_the_stream_cap_holds_whatever_the_directory_says(tmp_path: Path) -> None:
    from langmem_plugin.services.knowledge.files import check_archive

    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.bin", bytes(600_000))
        archive.writestr("b.bin", bytes(600_000))
    data = path.read_bytes()
    check_archive(data, "two.zip", 1_300_000)
    with pytest.raises(MemoryLimitError, match="declared 1,200,000"):
        check_archive(data, "two.zip", 1_000_000)
    with pytest.MonkeyPatch.context() as patch:  # a directory that declares nothing: the stream stops
        patch.setattr("langmem_plugin.services.knowledge.files.sum", lambda sizes: 0, raising=False)
        with pytest.raises(MemoryLimitError, match="at least"):
            check_archive(data, "two.zip", 1_000_000)


def _pdf_bomb(path: Path, inflated: int) -> Path:
    content = b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET\n" + b" " * inflated
    stream = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_a_pdf_whose_streams_inflate_past_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _pdf_bomb(tmp_path / "small.pdf", 1000)
    (ok,) = read_sources([small])
    assert ok.error is None
    assert "Hello" in ok.parts[0].page_content
    bomb = _pdf_bomb(tmp_path / "bomb.pdf", 4 * 1024 * 1024)
    monkeypatch.setattr("langmem_plugin.services.knowledge.sources.MAX_SOURCE_BYTES", 1024 * 1024)
    with pytest.raises(MemoryLimitError, match=r"bomb\.pdf.*inflates"):
        read_sources([bomb])


# ---- 3. a folder costs one read of the compartment ----------------------------------------------


def test_adding_a_folder_reads_the_compartment_once_whatever_its_size(tmp_path: Path) -> None:
    searches: list[SearchOp] = []

    class Counting(InMemoryStore):
        def batch(self, ops: Any) -> Any:
            ops = list(ops)
            searches.extend(op for op in ops if isinstance(op, SearchOp) and op.namespace_prefix == KNOWLEDGE)
            return super().batch(ops)

    for files in (20, 600):
        folder = tmp_path / f"f{files}"
        folder.mkdir()
        for n in range(files):
            (folder / f"note-{n}.md").write_text(f"Note {n}: the code word is w{n}.")
        store = Counting(index=_index())
        add_documents(store, [folder], progress=False)
        add_documents(store, [folder], progress=False)  # again: the listing now holds every file
        pages = [op for op in searches if op.limit > 1]  # the listing; limit=1: the item limit's count
        assert len(pages) == 1 + (1 + files // 500), (files, len(pages))  # a page per 500, not per file
        assert len(searches) - len(pages) <= 2 * (1 + files // 256)  # a count per group of files
        assert len(shown_chunks(store)) == files
        searches.clear()


# ---- 4. removed by the very name it was added as ------------------------------------------------

_NAMES = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=["Cs"]), min_size=1, max_size=40),
    st.text(st.sampled_from("/\n\t\x00\x1b\u202e é中😀 .~"), min_size=1, max_size=40),
    st.text(st.characters(codec=None), min_size=300, max_size=3000),
    st.sampled_from(["\ud800", "a" * 5000, "/etc/passwd", "x/../y", " padded ", "C:\\docs\\a.md"]),
)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(_NAMES, min_size=1, max_size=4, unique=True))
def test_remove_documents_removes_by_the_very_name_add_documents_reported(names: list[str]) -> None:
    store = InMemoryStore(index=_index())
    documents = [doc(f"Text number {n} of the collection.", name) for n, name in enumerate(names)]
    report = add_documents(store, documents)
    assert all(a.error is None and a.chunks == 1 for a in report), report
    assert len(shown_chunks(store)) == len({a.name for a in report})
    removed = remove_documents(store, [a.name for a in report])
    assert [r.removed for r in removed] == [1] * len(report)
    assert shown_chunks(store) == []
    assert store.search(STEPS_NAMESPACE) == []


def test_file_names_of_any_bytes_are_removed_by_their_reported_name(tmp_path: Path) -> None:
    store = InMemoryStore(index=_index())
    names = ["long-" + "x" * 240 + ".md", "é中😀.md", "line\nbreak.md", "tab\tand\x1bescape.md", "a b .md"]
    for n, name in enumerate(names):
        (tmp_path / name).write_text(f"File number {n}.")
    report = add_documents(store, [tmp_path])
    assert sorted(Path(a.name).name for a in report) == sorted(names)
    assert all(a.error is None for a in report)
    removed = remove_documents(store, [a.name for a in report])
    assert [r.removed for r in removed] == [1] * len(names)
    assert shown_chunks(store) == []


# ---- 5. a str naming a file is a file ------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["notes\nfinal.md", "notes\n.md", "space in name.md", "\nlead.txt", "C:\\x.md"]
)
def test_a_str_naming_an_existing_file_is_read_as_the_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("The file's own text.")
    store = InMemoryStore(index=_index())
    (added,) = add_documents(store, [str(path)])
    assert added.name == str(path)
    assert shown_chunks(store) == ["The file's own text."]
    assert remove_documents(store, [added.name])[0].removed == 1


def test_a_str_with_a_line_break_that_names_no_file_is_a_text(tmp_path: Path) -> None:
    store = InMemoryStore(index=_index())
    text = f"{tmp_path}/missing\nfile.md"
    (added,) = add_documents(store, [text])
    assert added.name.startswith("text-")


# ---- 6. writers of one source take turns ---------------------------------------------------------


def test_two_threads_adding_two_versions_of_one_source_leave_one(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "q", index=_index()) as store:
        _race_five_times(Memory(store))


def _race(memory: Memory, texts: list[str]) -> None:
    """Add each of ``texts`` as one source, from one thread each, all started at once."""
    barrier = threading.Barrier(len(texts))
    errors: list[BaseException] = []

    def add(text: str) -> None:
        try:
            barrier.wait()
            memory.add_documents([doc(text)], splitter=SPLIT)
        except BaseException as exc:  # pragma: no cover - shown by the assert
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def _race_five_times(memory: Memory) -> None:
    for trial in range(5):
        _race(memory, [version(f"A{trial}", 9), version(f"B{trial}", 6)])
        assert len(editions(memory.store)) == 1, (trial, editions(memory.store))
        (edition,) = editions(memory.store)
        assert len(shown_chunks(memory.store)) == (9 if edition.startswith("A") else 6)


async def test_two_tasks_adding_two_versions_of_one_source_leave_one() -> None:
    store = InMemoryStore(index=_index())
    for trial in range(5):
        await asyncio.gather(
            aadd_documents(store, [doc(version(f"A{trial}", 9))], splitter=SPLIT),
            asyncio.to_thread(add_documents, store, [doc(version(f"B{trial}", 6))], splitter=SPLIT),
        )
        assert len(editions(store)) == 1, (trial, editions(store))


# ---- 7. one whole version, whatever fails --------------------------------------------------------


def test_readers_never_see_two_versions_during_a_re_add(make_store: Any) -> None:
    store = make_store()
    add_documents(store, [doc(version("old", 8))], splitter=SPLIT)
    seen: list[set[str]] = []

    def look(ops: list[Any]) -> None:
        store.after = None  # the look itself reads through batch
        seen.append(editions(store))
        store.after = look

    store.after = look
    add_documents(store, [doc(version("new", 5))], splitter=SPLIT)
    store.after = None
    assert len(seen) >= 5
    assert all(len(found) <= 1 for found in seen), seen
    assert editions(store) == {"new edition."}


def test_recall_shows_one_version_mid_re_add(tmp_path: Path) -> None:
    config: Any = {"configurable": {"user_id": "u", "thread_id": "t"}}
    prompts: list[str] = []
    store = WatchedQdrant(tmp_path / "q", index=_index())
    with store:
        memory = Memory(store)
        memory.add_documents([doc(version("old", 6))], splitter=SPLIT)

        def recall(ops: list[Any]) -> None:
            if any(isinstance(op, PutOp) for op in ops):
                store.after = None
                prompts.append(memory.recall([HumanMessage("Fact 3 of the handbook?")], config).prompt)
                store.after = recall

        store.after = recall
        memory.add_documents([doc(version("new", 4))], splitter=SPLIT)
        store.after = None
    assert len(prompts) >= 4
    assert any("old edition" in p for p in prompts)
    assert "new edition" in prompts[-1]
    assert not any("old edition" in p and "new edition" in p for p in prompts)


@pytest.mark.parametrize("fail_on", [1, 2, 3, 4])
def test_a_re_add_whose_embedder_fails_on_the_nth_call_leaves_each_source_whole(
    make_store: Any, fail_on: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("langmem_plugin.services.knowledge.steps._GROUP_SOURCES", 1)  # a batch per source
    embed = FailingEmbeddings()
    store = make_store(embed)
    names = [f"doc-{n}.md" for n in range(4)]
    add_documents(store, [doc(version(f"old{n}", 6), name) for n, name in enumerate(names)], splitter=SPLIT)
    embed.calls, embed.fail_on = 0, fail_on
    with pytest.raises(RuntimeError, match="embedder down"):
        add_documents(
            store, [doc(version(f"new{n}", 4), name) for n, name in enumerate(names)], splitter=SPLIT
        )
    embed.fail_on = None
    got = editions(store)
    for n in range(4):
        mine = {e for e in got if e.startswith((f"old{n} ", f"new{n} "))}
        assert len(mine) == 1, (n, got)  # never a mix, never neither
        count = sum(1 for text in shown_chunks(store) if f"{n} edition" in text)
        assert count == (6 if mine == {f"old{n} edition."} else 4)
    assert store.search(STEPS_NAMESPACE) == []
    add_documents(store, [doc(version(f"new{n}", 4), name) for n, name in enumerate(names)], splitter=SPLIT)
    assert editions(store) == {f"new{n} edition." for n in range(4)}
    assert all("knowledge_staged" not in i.value for i in store.search(KNOWLEDGE, limit=100))


def test_a_re_add_that_keeps_shared_chunks_does_not_embed_them_again(make_store: Any) -> None:
    embed = FailingEmbeddings()
    store = make_store(embed)
    old = version("same", 6)
    add_documents(store, [doc(old)], splitter=SPLIT)
    embedded: list[str] = []
    real = embed.embed_documents

    def record(texts: list[str]) -> list[list[float]]:
        embedded.extend(texts)
        return real(texts)

    embed.embed_documents = record  # type: ignore[method-assign]
    (again,) = add_documents(store, [doc(old + "\n\nOne more fact, same edition.")], splitter=SPLIT)
    assert (again.chunks, again.written, again.removed) == (7, 7, 0)  # the count changed in each
    assert embedded == ["One more fact, same edition."]
