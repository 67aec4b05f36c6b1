"""Tiny, valid office files written by hand (zip + XML), for samples, tests and benches.

Each builder returns bytes; nothing here reads files back, so the readers under test stay
independent of the writer.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

Cell = str | int | float | None

_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def _zip(parts: Iterable[tuple[str, str | bytes]], *, stored_first: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts:
            kind = zipfile.ZIP_STORED if name == stored_first else zipfile.ZIP_DEFLATED
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = kind
            z.writestr(info, data)
    return buf.getvalue()


def column_letters(n: int) -> str:
    """1 -> A, 27 -> AA."""
    out = ""
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


def _types(overrides: Mapping[str, str]) -> str:
    return (
        _XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        + "".join(
            f'<Override PartName="/{part}" ContentType="{kind}"/>'
            for part, kind in overrides.items()
        )
        + "</Types>"
    )


def _rels(targets: Sequence[tuple[str, str]]) -> str:
    return (
        _XML
        + f'<Relationships xmlns="{_PKG}">'
        + "".join(
            f'<Relationship Id="rId{i}" Type="{_DOC_REL}/{kind}" Target="{target}"/>'
            for i, (kind, target) in enumerate(targets, start=1)
        )
        + "</Relationships>"
    )


def xlsx(sheets: Mapping[str, Sequence[Sequence[Cell]]], *, dimension: bool = True) -> bytes:
    """A workbook with shared strings; each sheet's rows start at A1."""
    strings: dict[str, int] = {}
    parts: list[tuple[str, str | bytes]] = []
    overrides = {
        "xl/workbook.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
        "xl/sharedStrings.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml",
    }
    sheet_xml = []
    for number, (_, rows) in enumerate(sheets.items(), start=1):
        overrides[f"xl/worksheets/sheet{number}.xml"] = (
            "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
        )
        width = max((len(r) for r in rows), default=1)
        body = []
        for r, row in enumerate(rows, start=1):
            cells = []
            for c, value in enumerate(row, start=1):
                ref = f"{column_letters(c)}{r}"
                if value is None:
                    continue
                if isinstance(value, str):
                    index = strings.setdefault(value, len(strings))
                    cells.append(f'<c r="{ref}" t="s"><v>{index}</v></c>')
                else:
                    cells.append(f'<c r="{ref}"><v>{value}</v></c>')
            body.append(f'<row r="{r}">{"".join(cells)}</row>')
        dim = (
            f'<dimension ref="A1:{column_letters(width)}{max(len(rows), 1)}"/>' if dimension else ""
        )
        sheet_xml.append(
            _XML + f'<worksheet xmlns="{_MAIN}">{dim}<sheetData>{"".join(body)}</sheetData>'
            "</worksheet>"
        )
    parts.append(("[Content_Types].xml", _types(overrides)))
    parts.append(("_rels/.rels", _rels([("officeDocument", "xl/workbook.xml")])))
    parts.append(
        (
            "xl/workbook.xml",
            _XML
            + f'<workbook xmlns="{_MAIN}" xmlns:r="{_DOC_REL}"><sheets>'
            + "".join(
                f'<sheet name={quoteattr(name)} sheetId="{i}" r:id="rId{i}"/>'
                for i, name in enumerate(sheets, start=1)
            )
            + "</sheets></workbook>",
        )
    )
    targets = [("worksheet", f"worksheets/sheet{i}.xml") for i in range(1, len(sheets) + 1)]
    parts.append(
        ("xl/_rels/workbook.xml.rels", _rels([*targets, ("sharedStrings", "sharedStrings.xml")]))
    )
    for i, xml in enumerate(sheet_xml, start=1):
        parts.append((f"xl/worksheets/sheet{i}.xml", xml))
    parts.append(
        (
            "xl/sharedStrings.xml",
            _XML
            + f'<sst xmlns="{_MAIN}" count="{len(strings)}" uniqueCount="{len(strings)}">'
            + "".join(f"<si><t>{escape(s)}</t></si>" for s in strings)
            + "</sst>",
        )
    )
    return _zip(parts)


_ODF = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
    'office:version="1.2"'
)


def _odf(mime: str, body: str, meta: str = "") -> bytes:
    manifest = (
        _XML
        + '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
        f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mime}"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    content = (
        _XML
        + f"<office:document-content {_ODF}><office:body>{body}</office:body></office:document-content>"
    )
    meta_xml = (
        _XML
        + f"<office:document-meta {_ODF}><office:meta>{meta}</office:meta></office:document-meta>"
    )
    return _zip(
        [
            ("mimetype", mime),
            ("META-INF/manifest.xml", manifest),
            ("content.xml", content),
            ("meta.xml", meta_xml),
        ],
        stored_first="mimetype",
    )


def _ods_cell(value: Cell) -> str:
    if value is None:
        return "<table:table-cell/>"
    if isinstance(value, str):
        return f'<table:table-cell office:value-type="string"><text:p>{escape(value)}</text:p></table:table-cell>'
    return f'<table:table-cell office:value-type="float" office:value="{value}"><text:p>{value}</text:p></table:table-cell>'


def ods(sheets: Mapping[str, Sequence[Sequence[Cell]]]) -> bytes:
    tables = "".join(
        f"<table:table table:name={quoteattr(name)}>"
        + "".join(
            "<table:table-row>" + "".join(_ods_cell(v) for v in row) + "</table:table-row>"
            for row in rows
        )
        + "</table:table>"
        for name, rows in sheets.items()
    )
    return _odf(
        "application/vnd.oasis.opendocument.spreadsheet",
        f"<office:spreadsheet>{tables}</office:spreadsheet>",
    )


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
Block = tuple[str, object]  # ("h1".."h9" | "p", text) or ("table", rows)


def _core(title: str | None, author: str | None) -> str:
    return (
        _XML
        + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/">'
        + (f"<dc:title>{escape(title)}</dc:title>" if title else "")
        + (f"<dc:creator>{escape(author)}</dc:creator>" if author else "")
        + "</cp:coreProperties>"
    )


def docx(
    blocks: Sequence[Block], *, title: str | None = None, author: str | None = None, images: int = 0
) -> bytes:
    body = []
    for kind, value in blocks:
        if kind == "table":
            assert isinstance(value, list)
            rows = "".join(
                "<w:tr>"
                + "".join(
                    f"<w:tc><w:p><w:r><w:t>{escape(str(c))}</w:t></w:r></w:p></w:tc>" for c in row
                )
                + "</w:tr>"
                for row in value
            )
            body.append(f"<w:tbl>{rows}</w:tbl>")
        else:
            style = (
                f'<w:pPr><w:pStyle w:val="Heading{kind[1]}"/></w:pPr>'
                if kind.startswith("h")
                else ""
            )
            body.append(f"<w:p>{style}<w:r><w:t>{escape(str(value))}</w:t></w:r></w:p>")
    parts: list[tuple[str, str | bytes]] = [
        (
            "[Content_Types].xml",
            _types(
                {
                    "word/document.xml": "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
                }
            ),
        ),
        ("_rels/.rels", _rels([("officeDocument", "word/document.xml")])),
        (
            "word/document.xml",
            _XML + f'<w:document xmlns:w="{_W}"><w:body>{"".join(body)}</w:body></w:document>',
        ),
        ("docProps/core.xml", _core(title, author)),
    ]
    parts += [(f"word/media/image{i + 1}.png", b"\x89PNG\r\n\x1a\n") for i in range(images)]
    return _zip(parts)


_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"


def pptx(
    slides: Sequence[tuple[str, Sequence[str]]],
    *,
    title: str | None = None,
    author: str | None = None,
) -> bytes:
    """Slides as (title, body lines)."""
    overrides = {
        "ppt/presentation.xml": "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
    }
    parts: list[tuple[str, str | bytes]] = []
    ids = []
    for i, (heading, lines) in enumerate(slides, start=1):
        overrides[f"ppt/slides/slide{i}.xml"] = (
            "application/vnd.openxmlformats-officedocument.presentationml.slide+xml"
        )
        paras = "".join(f"<a:p><a:r><a:t>{escape(line)}</a:t></a:r></a:p>" for line in lines)
        parts.append(
            (
                f"ppt/slides/slide{i}.xml",
                _XML + f'<p:sld xmlns:p="{_P}" xmlns:a="{_A}"><p:cSld><p:spTree>'
                '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title"/><p:cNvSpPr/><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr>'
                f"<p:txBody><a:p><a:r><a:t>{escape(heading)}</a:t></a:r></a:p></p:txBody></p:sp>"
                '<p:sp><p:nvSpPr><p:cNvPr id="3" name="Body"/><p:cNvSpPr/><p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr>'
                f"<p:txBody>{paras}</p:txBody></p:sp>"
                "</p:spTree></p:cSld></p:sld>",
            )
        )
        ids.append(f'<p:sldId id="{255 + i}" r:id="rId{i}"/>')
    head: list[tuple[str, str | bytes]] = [
        ("[Content_Types].xml", _types(overrides)),
        ("_rels/.rels", _rels([("officeDocument", "ppt/presentation.xml")])),
        (
            "ppt/presentation.xml",
            _XML
            + f'<p:presentation xmlns:p="{_P}" xmlns:r="{_DOC_REL}"><p:sldIdLst>{"".join(ids)}</p:sldIdLst></p:presentation>',
        ),
        (
            "ppt/_rels/presentation.xml.rels",
            _rels([("slide", f"slides/slide{i}.xml") for i in range(1, len(slides) + 1)]),
        ),
        ("docProps/core.xml", _core(title, author)),
    ]
    return _zip(head + parts)


def _odf_meta(title: str | None, author: str | None) -> str:
    return (f"<dc:title>{escape(title)}</dc:title>" if title else "") + (
        f"<meta:initial-creator>{escape(author)}</meta:initial-creator>" if author else ""
    )


def odt(blocks: Sequence[Block], *, title: str | None = None, author: str | None = None) -> bytes:
    body = []
    for kind, value in blocks:
        if kind == "table":
            assert isinstance(value, list)
            body.append(
                "<table:table>"
                + "".join(
                    "<table:table-row>"
                    + "".join(
                        f"<table:table-cell><text:p>{escape(str(c))}</text:p></table:table-cell>"
                        for c in row
                    )
                    + "</table:table-row>"
                    for row in value
                )
                + "</table:table>"
            )
        elif kind.startswith("h"):
            body.append(f'<text:h text:outline-level="{kind[1]}">{escape(str(value))}</text:h>')
        else:
            body.append(f"<text:p>{escape(str(value))}</text:p>")
    return _odf(
        "application/vnd.oasis.opendocument.text",
        f"<office:text>{''.join(body)}</office:text>",
        _odf_meta(title, author),
    )


def odp(
    slides: Sequence[tuple[str, Sequence[str]]],
    *,
    title: str | None = None,
    author: str | None = None,
) -> bytes:
    pages = "".join(
        f'<draw:page draw:name="page{i}">'
        f'<draw:frame presentation:class="title"><draw:text-box><text:p>{escape(heading)}</text:p></draw:text-box></draw:frame>'
        '<draw:frame presentation:class="outline"><draw:text-box>'
        + "".join(f"<text:p>{escape(line)}</text:p>" for line in lines)
        + "</draw:text-box></draw:frame></draw:page>"
        for i, (heading, lines) in enumerate(slides, start=1)
    )
    return _odf(
        "application/vnd.oasis.opendocument.presentation",
        f"<office:presentation>{pages}</office:presentation>",
        _odf_meta(title, author),
    )


def epub(chapters: Sequence[tuple[str, str]], *, title: str, author: str) -> bytes:
    """Chapters as (heading, paragraph)."""
    items = "".join(
        f'<item id="c{i}" href="text/ch{i}.xhtml" media-type="application/xhtml+xml"/>'
        for i in range(1, len(chapters) + 1)
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(1, len(chapters) + 1))
    parts: list[tuple[str, str | bytes]] = [
        ("mimetype", "application/epub+zip"),
        (
            "META-INF/container.xml",
            _XML
            + '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        ),
        (
            "OEBPS/content.opf",
            _XML
            + '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">book</dc:identifier><dc:title>{escape(title)}</dc:title><dc:creator>{escape(author)}</dc:creator></metadata>'
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        ),
    ]
    for i, (heading, text) in enumerate(chapters, start=1):
        parts.append(
            (
                f"OEBPS/text/ch{i}.xhtml",
                _XML
                + f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{escape(heading)}</title></head>'
                f"<body><h1>{escape(heading)}</h1><p>{escape(text)}</p></body></html>",
            )
        )
    return _zip(parts, stored_first="mimetype")
