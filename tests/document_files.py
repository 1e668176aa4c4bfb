"""Real .pdf and .docx files for the knowledge tests, written with pypdf and python-docx."""

from __future__ import annotations

from pathlib import Path

from langmem_plugin.bench.knowledge import write_pdf

__all__ = ["write_docx", "write_pdf"]


def write_docx(path: Path, blocks: list[tuple[str, str]], *, title: str | None = None) -> Path:
    """A .docx of ``(style, text)`` blocks: ``"h1"``/``"h2"`` headings, ``"p"`` paragraphs, ``"row"``
    a table row of ``|``-separated cells."""
    import docx

    document = docx.Document()
    rows = [b[1].split("|") for b in blocks if b[0] == "row"]
    for style, text in blocks:
        if style.startswith("h"):
            document.add_heading(text, level=int(style[1:]))
        elif style == "p":
            document.add_paragraph(text)
    if rows:
        table = document.add_table(rows=len(rows), cols=max(len(r) for r in rows))
        for r, cells in enumerate(rows):
            for c, cell in enumerate(cells):
                table.cell(r, c).text = cell
    if title is not None:
        document.core_properties.title = title
    document.save(str(path))
    return path
