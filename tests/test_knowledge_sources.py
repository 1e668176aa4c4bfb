"""add_documents reads what LangChain users load: any loader's Documents, .pdf and .docx files,
folders and texts; a source it cannot read is an error naming it, and nothing is written."""

from __future__ import annotations

import builtins
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_text_splitters import RecursiveCharacterTextSplitter
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory
from langmem_plugin.core.fence import FENCE_CLOSE
from langmem_plugin.errors import ConfigurationError, MissingDependencyError
from langmem_plugin.services.knowledge import add_documents, read_sources, remove_documents
from langmem_plugin.testing import FakeEmbeddings
from tests.document_files import write_docx, write_pdf

KNOWLEDGE = ("memories", "agent", "assistant", "knowledge")
CONFIG: Any = {"configurable": {"user_id": "u1", "thread_id": "t1"}}


def _store() -> InMemoryStore:
    return InMemoryStore(index={"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]})


def _chunks(store: InMemoryStore) -> list[dict[str, Any]]:
    return [i.value for i in store.search(KNOWLEDGE, limit=1000)]


class HandbookLoader(BaseLoader):
    """A LangChain document loader, as any of LangChain's yields pages: page numbers from 0."""

    def __init__(self, pages: list[str], source: str, title: str) -> None:
        self.pages, self.source, self.title = pages, source, title

    def lazy_load(self) -> Iterator[Document]:
        for n, text in enumerate(self.pages):
            meta = {"source": self.source, "page": n, "title": self.title, "total_pages": len(self.pages)}
            yield Document(page_content=text, metadata=meta)


def test_a_loaders_documents_are_one_source_with_page_and_title_shown_through_the_fence() -> None:
    memory = Memory(_store())
    pages = ["Refunds are paid within 5 days.", "Shipping is free over 50 euros."]
    added = memory.add_documents(HandbookLoader(pages, "handbook.pdf", "Store handbook").load())
    assert [(a.name, a.chunks, a.removed) for a in added] == [("handbook.pdf", 2, 0)]
    metas = sorted((v["metadata"]["page"], v["metadata"]["title"]) for v in _chunks(memory.store))  # type: ignore[arg-type]
    assert metas == [("1", "Store handbook"), ("2", "Store handbook")]  # 1-based, as a reader counts
    prompt = memory.recall([HumanMessage("how long do refunds take?")], CONFIG).prompt
    assert 'page "1"' in prompt
    assert 'title "Store handbook"' in prompt
    assert 'source "handbook.pdf"' in prompt


def test_pdf_and_docx_files_and_folders(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_pdf(folder / "policy.pdf", ["Refunds take 5 days.", "Shipping is free."], title="Policy")
    write_docx(
        folder / "team.docx", [("h1", "Team"), ("p", "Ann runs support."), ("row", "Role|Name")], title="Who"
    )
    (folder / "notes.md").write_text("Support hours: 9 to 5.")
    (folder / "skip.png").write_bytes(b"\x89PNG")  # a folder's other files are not documents
    store = _store()
    added = add_documents(store, [folder])
    assert sorted(Path(a.name).name for a in added) == ["notes.md", "policy.pdf", "team.docx"]
    by_text = {v["content"]: v["metadata"] for v in _chunks(store)}
    assert by_text["Shipping is free."]["page"] == "2"
    assert by_text["Shipping is free."]["title"] == "Policy"
    docx_text = next(t for t in by_text if "Ann runs support." in t)
    assert docx_text.startswith("# Team")
    assert "Role | Name" in docx_text
    assert by_text[docx_text]["title"] == "Who"


@pytest.mark.parametrize("module", ["pypdf", "docx"])
def test_without_the_documents_extra_the_error_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    path = (
        write_pdf(tmp_path / "a.pdf", ["text"])
        if module == "pypdf"
        else write_docx(tmp_path / "a.docx", [("p", "x")])
    )
    real_import = builtins.__import__

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == module or name.startswith(module + "."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setattr(builtins, "__import__", refuse)
    store = _store()
    with pytest.raises(MissingDependencyError, match=r'pip install "langmem-plugin\[documents\]"'):
        add_documents(store, ["kept out: the install is wrong for the whole call.", path])
    assert _chunks(store) == []


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("https://example.com/handbook.html", "does not fetch URLs"),
        ("report.pdf", "does not exist"),
        ("slides.pptx", "UnstructuredPowerPointLoader"),
        ("C:\\docs\\notes.docx", "does not exist"),
    ],
)
def test_a_source_it_cannot_read_is_reported_and_the_others_are_still_added(
    source: str, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store()
    good, bad = add_documents(store, ["A good text.", source])
    assert (good.chunks, good.error) == (1, None)
    assert (bad.name, bad.chunks) == (source, 0)
    assert bad.error is not None
    assert message in bad.error
    assert "Fix:" in bad.error
    assert [v["content"] for v in _chunks(store)] == ["A good text."]
    assert message in caplog.text  # logged as a warning too


def test_broken_encrypted_scanned_empty_binary_and_huge_files_are_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pypdf import PdfReader, PdfWriter

    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    write_pdf(tmp_path / "scan.pdf", ["", ""])
    locked = PdfWriter(clone_from=PdfReader(write_pdf(tmp_path / "plain.pdf", ["secret"])))
    locked.encrypt("pw")
    locked.write(tmp_path / "locked.pdf")
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    (tmp_path / "empty.md").write_text("")
    (tmp_path / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    (tmp_path / "huge.txt").write_text("x" * 2_000)
    (tmp_path / "broken.docx").write_bytes(b"PK not a zip")
    (tmp_path / "good.md").write_text("Kept.")
    monkeypatch.setattr("langmem_plugin.services.knowledge.sources.MAX_SOURCE_BYTES", 1_900)
    store = _store()
    report = {Path(a.name).name: a.error for a in add_documents(store, [tmp_path])}
    expected = {
        "broken.pdf": "could not be read as a PDF",
        "scan.pdf": "holds no text",
        "locked.pdf": "encrypted PDF",
        "latin.txt": "is not UTF-8",
        "empty.md": "holds no text",
        "binary.md": "binary file",
        "huge.txt": "more than 1,900",
        "broken.docx": "could not be read as a .docx",
    }
    for name, message in expected.items():
        assert message in (report[name] or ""), (name, report[name])
    assert report["good.md"] is None
    assert report["plain.pdf"] is None
    assert sorted(v["content"] for v in _chunks(store)) == ["Kept.", "secret"]
    with pytest.raises(ConfigurationError, match="wrap it in a list"):
        read_sources(Document(page_content="one"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="decode bytes"):
        add_documents(store, ["fine", b"bytes"])  # type: ignore[list-item]


def test_re_adding_writes_only_changed_chunks_and_removing_removes_every_chunk() -> None:
    store = _store()
    splitter = RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0)
    text = "\n\n".join(f"Fact number {i} is about tea." for i in range(6))
    first = add_documents(
        store, [Document(page_content=text, metadata={"source": "tea.md"})], splitter=splitter
    )
    assert first[0].written == first[0].chunks == 6
    changed = text.replace("Fact number 5 is about tea.", "Fact number 5 is about coffee.")
    again = add_documents(
        store, [Document(page_content=changed, metadata={"source": "tea.md"})], splitter=splitter
    )
    assert (again[0].chunks, again[0].written, again[0].removed) == (6, 1, 0)
    shorter = add_documents(store, [Document(page_content="Only tea.", metadata={"source": "tea.md"})])
    assert (shorter[0].chunks, shorter[0].removed) == (1, 5)
    assert [v["content"] for v in _chunks(store)] == ["Only tea."]
    add_documents(store, [Document(page_content="Other.", metadata={"source": "other.md"})])
    removed = remove_documents(store, ["tea.md", "never-added.md"])
    assert [(r.name, r.removed) for r in removed] == [("tea.md", 1), ("never-added.md", 0)]
    assert [v["content"] for v in _chunks(store)] == ["Other."]


def test_a_splitter_that_is_not_one_and_bad_names_are_typed_errors() -> None:
    store = _store()
    with pytest.raises(ConfigurationError, match="TextSplitter"):
        add_documents(store, ["text"], splitter=len)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="wrap it in a list"):
        remove_documents(store, "tea.md")
    with pytest.raises(ConfigurationError, match="chunk_tokens"):
        add_documents(store, ["text"], chunk_tokens=3)
    assert _chunks(store) == []


_HOSTILE = st.lists(
    st.text(alphabet=st.characters(codec=None, exclude_categories=("Cs",)), max_size=30)
    | st.sampled_from(["\ud800", FENCE_CLOSE, "\n", '"', "\\"]),
    min_size=1,
    max_size=6,
).map("".join)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=_HOSTILE, title=_HOSTILE, source=_HOSTILE)
def test_hostile_loader_output_is_stored_clean_and_stays_inside_the_fence(
    content: str, title: str, source: str
) -> None:
    memory = Memory(InMemoryStore())
    try:
        document = Document(
            page_content=content, metadata={"source": source, "title": title, "page": {"x": 1}}
        )
        added = memory.add_documents([document])
        prompt = memory.recall([HumanMessage("anything")], CONFIG).prompt
    finally:
        memory.close()
    assert len(added) == 1
    if prompt:
        assert prompt.count(FENCE_CLOSE) == 1
        assert prompt.endswith(FENCE_CLOSE)
        for line in prompt.splitlines():
            if line.startswith("- "):
                json.loads(line[line.rindex(' "') + 1 :])  # the content is one JSON string
