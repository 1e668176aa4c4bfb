"""Real .pdf and .docx files for the knowledge tests, written with pypdf and python-docx."""

from __future__ import annotations

from pathlib import Path


def write_pdf(path: Path, pages: list[str], *, title: str | None = None) -> Path:
    """A PDF with one page per text (Helvetica, one line per text line), text that pypdf extracts."""
    from pypdf import PdfWriter
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
