"""What ``add_documents`` reads: files, folders, texts and LangChain ``Document`` values, as sources.

A *source* is one document as the knowledge compartment keeps it: a name (its path, the
``"source"`` a LangChain loader wrote, or ``text-<sha256 prefix>`` for a bare text) and the
LangChain documents it is made of (one per page for a PDF, one for a text file). Adding a source
again replaces every chunk of that name.

Everything is read before anything is written. A source that cannot be read is never knowledge:
it comes back with an ``error`` naming it and the fix (a URL, a path that does not exist, a file
type this package does not read, a corrupt or encrypted or scanned PDF, an empty file, a binary
file, a file over :data:`MAX_SOURCE_BYTES`, a link in a folder that leads out of it), and the other
sources are still added. A call that is wrong as a whole raises: ``sources`` that is not a list, a
source of a type that is no document, a ``.pdf``/``.docx`` without the ``documents`` extra
(``pip install "langmem-plugin[documents]"``), and a ``.docx`` or ``.pdf`` that is small on disk
but inflates past :data:`MAX_SOURCE_BYTES` (``MemoryLimitError``: a file built to exhaust memory).
How files are read safely (links, pipes, archives) is :mod:`.files`.

A ``str`` is a path when it names an existing file exactly as written (line breaks and spaces
included), or when, stripped, it ends with a document suffix or holds a path separator and
exists; any other ``str`` is a text.

>>> [s.name for s in read_sources(["Support hours: 9 to 5."])]
['text-2910de70bc']
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from langmem_plugin.core.record import clean_text
from langmem_plugin.errors import ConfigurationError, MemoryLimitError, MissingDependencyError, shown
from langmem_plugin.services.knowledge.files import (
    FolderFile,
    check_archive,
    folder_files,
    read_regular_file,
)
from langmem_plugin.services.knowledge.files import (
    Unreadable as _Unreadable,
)

__all__ = ["MAX_SOURCE_BYTES", "READ_SUFFIXES", "Source", "read_sources", "shown_metadata"]

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
READ_SUFFIXES = (*TEXT_SUFFIXES, ".pdf", ".docx")
# files people pass that a LangChain loader reads and this package does not
_LOADER_FOR = {
    ".doc": "UnstructuredWordDocumentLoader",
    ".rtf": "UnstructuredRTFLoader",
    ".odt": "UnstructuredODTLoader",
    ".html": "BSHTMLLoader",
    ".htm": "BSHTMLLoader",
    ".pptx": "UnstructuredPowerPointLoader",
    ".ppt": "UnstructuredPowerPointLoader",
    ".xlsx": "UnstructuredExcelLoader",
    ".xls": "UnstructuredExcelLoader",
    ".csv": "CSVLoader",
    ".json": "JSONLoader",
    ".epub": "UnstructuredEPubLoader",
}
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_EXTRA = 'pip install "langmem-plugin[documents]"'
# the metadata a chunk keeps from its loader, shown through the fence beside the chunk
SHOWN_METADATA = ("source", "page", "title")
_MAX_FIELD = 300
#: The largest file (bytes) or text (characters) one source may be.
MAX_SOURCE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Source:
    """One document to add: its name and the LangChain documents (pages) it is made of, or the
    reason it cannot be read (``error``; no parts then)."""

    name: str
    parts: tuple[Document, ...]
    error: str | None = None


def _text_name(text: str) -> str:
    return "text-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _field(value: Any) -> str | None:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = clean_text(str(value)).strip()
    return text[:_MAX_FIELD] or None


def shown_metadata(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The loader metadata a chunk keeps: ``source``, ``page`` (1-based) and ``title``, as text.

    A LangChain PDF loader numbers ``page`` from 0 and writes ``page_label`` from 1: the label wins,
    an integer page is shown plus one. Values that are not text or numbers are dropped.
    """
    out: dict[str, str] = {}
    if (source := _field(metadata.get("source"))) is not None:
        out["source"] = source
    page = metadata.get("page_label")
    if page is None and isinstance(metadata.get("page"), int) and not isinstance(metadata.get("page"), bool):
        page = metadata["page"] + 1
    elif page is None:
        page = metadata.get("page")
    if (shown_page := _field(page)) is not None:
        out["page"] = shown_page
    if (title := _field(metadata.get("title"))) is not None:
        out["title"] = title
    return out


def _sized(text: str, what: str) -> str:
    if len(text) > MAX_SOURCE_BYTES:
        raise _Unreadable(
            f"{what} is {len(text):,} characters, more than {MAX_SOURCE_BYTES:,}. "
            "Fix: split it into several documents."
        )
    return text


def _source_name(value: Any) -> str | None:
    """A loader's ``source`` as the name of its source: the text as it is (only blank ends
    stripped), so that ``remove_documents`` finds it by exactly what ``add_documents`` reported."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value).strip() or None


def _from_langchain(document: Document) -> Source:
    name = _source_name((document.metadata or {}).get("source"))
    if not isinstance(document.page_content, str):
        raise _Unreadable(
            f"a Document's page_content must be text, got {type(document.page_content).__name__}. "
            "Fix: load it with a LangChain loader, or pass the text."
        )
    _sized(document.page_content, f"the Document {name or ''}".rstrip())
    return Source(name or _text_name(document.page_content), (document,))


def _names_file(text: str) -> bool:
    """Whether ``text``, exactly as written, names an existing file."""
    if "\x00" in text or len(text) > 4096:
        return False
    try:
        return os.path.isfile(text)
    except (OSError, ValueError):
        return False


def _is_path(text: str) -> bool:
    if "\n" in text or len(text) > 4096:
        return False
    suffix = Path(text.strip()).suffix.lower()
    return suffix in READ_SUFFIXES or suffix in _LOADER_FOR or (os.sep in text and Path(text).exists())


def _one_source(source: Any) -> list[Source]:
    if isinstance(source, Document):
        return [_from_langchain(source)]
    if isinstance(source, str):
        if _URL.match(source.strip()):
            raise _Unreadable(
                f"add_documents does not fetch URLs ({shown(source)}). Fix: load the page with a "
                "LangChain loader, e.g. WebBaseLoader(url).load(), and pass the documents it returns."
            )
        if _names_file(source):
            return _read_path(Path(source))  # as written: a name may hold a line break or end in a space
        if not _is_path(source):
            _sized(source, f"the text {shown(source[:40])}")
            return [Source(_text_name(source), (Document(page_content=source),))]
        source = source.strip()
    if isinstance(source, str | os.PathLike):
        return _read_path(Path(source))
    raise ConfigurationError(
        f"a document source must be a str (a text or a path), a Path or a LangChain Document, got "
        f"{type(source).__name__} {shown(source)}. Fix: decode bytes and pass text, or load the file "
        "with a LangChain loader."
    )


def _read_path(path: Path) -> list[Source]:
    if path.is_dir():
        return [
            _reported(_read_folder_file, f, str(f.path))
            for f in folder_files(path, READ_SUFFIXES, MAX_SOURCE_BYTES)
        ]
    suffix = path.suffix.lower()
    if suffix not in READ_SUFFIXES:
        loader = _LOADER_FOR.get(suffix)
        hint = f"load it with LangChain's {loader}" if loader else "load it with a LangChain document loader"
        raise _Unreadable(
            f"{str(path)!r} is a {suffix or 'suffix-less'} file; add_documents reads {list(READ_SUFFIXES)}. "
            f"Fix: {hint} and pass the documents it returns."
        )
    if not path.exists():
        raise _Unreadable(f"the document path {str(path)!r} does not exist. Fix: check the path.")
    return [_read_file(path, read_regular_file(path, MAX_SOURCE_BYTES))]


def _read_folder_file(found: FolderFile) -> Source:
    if found.data is None:
        raise _Unreadable(found.error or f"{str(found.path)!r} was not read.")
    return _read_file(found.path, found.data)


def _reported(read: Callable[[Any], Source], source: Any, name: str) -> Source:
    """``read(source)``, or the source with the reason it cannot be read."""
    try:
        return read(source)
    except _Unreadable as exc:
        return Source(name, (), str(exc))


def _read_file(path: Path, data: bytes) -> Source:
    """The source of the file ``path`` whose bytes are ``data`` (read by :mod:`.files`)."""
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unreadable(
                f"{str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start}). "
                "Fix: convert it to UTF-8, or load it with a LangChain TextLoader(path, encoding=...)."
            ) from None
        if "\x00" in text:
            raise _Unreadable(f"{str(path)!r} holds NUL bytes: a binary file, not text. Fix: leave it out.")
        parts: tuple[Document, ...] = (Document(page_content=text, metadata={"source": str(path)}),)
    elif suffix == ".pdf":
        parts = _read_pdf(path, data)
    else:
        parts = (_read_docx(path, data),)
    if not any(p.page_content.strip() for p in parts):
        raise _Unreadable(
            f"{str(path)!r} holds no text to add (a scanned PDF, or an empty file). "
            "Fix: extract its text first (OCR for scans), or leave it out."
        )
    return Source(str(path), parts)


def _pdf_limits(cap: int) -> contextlib.AbstractContextManager[object]:
    """pypdf's decoding limits set to ``cap`` for this read (pypdf 6.6+; older ones keep theirs)."""
    import pypdf

    apply = getattr(pypdf, "apply_configuration", None)
    configuration = getattr(pypdf, "Configuration", None)
    if apply is None or configuration is None:
        return contextlib.nullcontext()
    names = {f.name for f in dataclasses.fields(configuration)}
    limits = {name: cap for name in _PDF_LIMITS if name in names}
    managed: contextlib.AbstractContextManager[object] = apply(**limits)
    return managed


_PDF_LIMITS = (
    "maximum_declared_stream_length",
    "array_based_stream_maximum_output_length",
    "zlib_maximum_output_length",
    "lzw_maximum_output_length",
    "run_length_maximum_output_length",
    "brotli_maximum_output_length",
    "jbig2_maximum_output_length",
    "stream_decoding_work_maximum_length",
)


def _pdf_bomb(path: Path, size: str, cap: int) -> MemoryLimitError:
    return MemoryLimitError(
        f"{str(path)!r} inflates to {size}, more than the {cap:,} bytes a document may be: a PDF "
        "whose streams or text decode past the limit is refused (nothing was added). "
        "Fix: check where the file came from; split a real one, or load the pages you need with a "
        "LangChain PDF loader and pass them as Documents."
    )


def _read_pdf(path: Path, data: bytes) -> tuple[Document, ...]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import LimitReachedError
    except ImportError:
        raise MissingDependencyError(f"reading {str(path)!r} needs pypdf. Fix: {_EXTRA}") from None
    cap = MAX_SOURCE_BYTES
    pages: list[str] = []
    try:
        with _pdf_limits(cap):
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise _Unreadable(
                    f"{str(path)!r} is an encrypted PDF. "
                    "Fix: decrypt it, or load it with PyPDFLoader(path, password=...)."
                )
            title = reader.metadata.title if reader.metadata else None
            size = 0
            for page in reader.pages:
                pages.append(page.extract_text() or "")
                size += len(pages[-1])
                if size > cap:
                    raise _pdf_bomb(path, f"at least {size:,} characters of text", cap)
    except (_Unreadable, MemoryLimitError):
        raise
    except LimitReachedError as exc:
        raise _pdf_bomb(path, f"a stream past pypdf's limit ({str(exc)[:120]})", cap) from None
    except Exception as exc:  # pypdf raises its own errors and many builtins on a malformed file
        raise _Unreadable(
            f"{str(path)!r} could not be read as a PDF ({type(exc).__name__}: {str(exc)[:120]}). "
            "Fix: check the file, or load it with another LangChain PDF loader."
        ) from None
    return tuple(
        Document(page_content=text, metadata={"source": str(path), "page": i, "title": title})
        for i, text in enumerate(pages)
    )


def _read_docx(path: Path, data: bytes) -> Document:
    try:
        import docx
    except ImportError:
        raise MissingDependencyError(f"reading {str(path)!r} needs python-docx. Fix: {_EXTRA}") from None
    check_archive(data, str(path), MAX_SOURCE_BYTES)
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises zipfile, lxml and its own errors for a bad file
        raise _Unreadable(
            f"{str(path)!r} could not be read as a .docx file ({type(exc).__name__}). "
            "Fix: save it again as .docx, or load it with a LangChain Word loader."
        ) from None
    blocks: list[str] = []
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        style = paragraph.style.name if paragraph.style is not None else ""
        level = style.removeprefix("Heading ").strip() if style and style.startswith("Heading ") else ""
        if text:
            blocks.append(f"{'#' * int(level)} {text}" if level.isdecimal() and int(level) <= 6 else text)
    for table in document.tables:
        blocks.extend(" | ".join(cell.text.strip() for cell in row.cells) for row in table.rows)
    title = document.core_properties.title or None
    return Document(page_content="\n\n".join(blocks), metadata={"source": str(path), "title": title})


def read_sources(sources: Iterable[Any]) -> list[Source]:
    """Every source of ``sources``, read whole before anything is written.

    LangChain documents of one ``metadata["source"]`` (a loader's pages) make one source. A source
    that cannot be read comes back with its ``error`` (and no parts).

    Raises:
        ConfigurationError: ``sources`` is not a list (a single ``str`` or ``Document`` included: wrap
            it in a list), or a source is of a type that is no document (bytes, a number, ``None``).
        MissingDependencyError: a ``.pdf`` or ``.docx`` source without the ``documents`` extra.
    """
    if isinstance(sources, str | bytes | os.PathLike | Document) or not isinstance(sources, Iterable):
        raise ConfigurationError(
            f"add_documents takes a list of sources, got {type(sources).__name__} {shown(sources)}. "
            "Fix: wrap it in a list, e.g. add_documents(['handbook.md'])."
        )
    grouped: dict[str, list[Document]] = {}
    failed: list[Source] = []
    for source in sources:
        for found in _all(source):
            if found.error is not None:
                failed.append(found)
            else:
                grouped.setdefault(found.name, []).extend(found.parts)
    return [*(Source(name, tuple(parts)) for name, parts in grouped.items()), *failed]


def _name_of(source: Any) -> str:
    if isinstance(source, Document):
        return _source_name((source.metadata or {}).get("source")) or "a Document"
    if isinstance(source, str) and _names_file(source):
        return source
    if isinstance(source, str) and "\n" not in source and len(source) <= 200:
        return source.strip()
    return str(source) if isinstance(source, os.PathLike) else shown(source)


def _all(source: Any) -> list[Source]:
    try:
        return _one_source(source)
    except _Unreadable as exc:
        return [Source(_name_of(source), (), str(exc))]
