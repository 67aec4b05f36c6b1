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
