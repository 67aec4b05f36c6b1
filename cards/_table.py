"""Table facts (CSV/TSV, xlsx/xlsm, ods, parquet) from a bounded part of the file.

CSV and TSV: the delimiter and header from the first 64 KiB. Workbooks: sheet names from the
workbook part, each sheet's dimensions from its ``<dimension>`` element and its header row,
streamed with a bounded decompression budget (entity-expanding XML is refused by defusedxml).
Parquet: rows and columns from the footer. None of it grows with the file.
"""

from __future__ import annotations

import csv
import os
import re
import struct
import zipfile
from collections.abc import Iterator
from typing import Any, NamedTuple

from ._zipdir import ZipEntry, inflate_member, walk_zip
from ._zipxml import (
    ODF_TABLE,
    ODF_TEXT,
    OOXML_PKG,
    OOXML_REL,
    UNREADABLE,
    Budget,
    events,
    open_zip,
    unreadable,
)

__all__ = [
    "MAX_HEADER_COLUMNS",
    "TABLE_TOOLS",
    "SheetExtent",
    "csv_cells",
    "csv_facts",
    "parquet_facts",
    "hide_lone_crs",
    "sniff_delimiter",
    "table_format",
    "workbook_facts",
    "xlsx_extent",
]

CSV_HEAD_BYTES = 64 * 1024  # the header and delimiter are read from this much
MAX_HEADER_COLUMNS = 50  # header names shown on a card; `columns` still counts them all
MAX_HEADER_CHARS = 80  # one header name
MAX_SHEETS = 50  # sheets described on a card
MAX_XML_BYTES = 4 * 1024 * 1024  # decompressed bytes read from one workbook part
MAX_PARQUET_FOOTER = 16 * 1024 * 1024

TABLE_TOOLS = ("table_read", "table_query")
_DELIMITERS = ",\t;|"
_XLSX_MIMES = (
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.ms-excel.sheet.macroEnabled.12",
)
_ODS_MIME = "application/vnd.oasis.opendocument.spreadsheet"
_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_CELL_REF = re.compile(r"^\$?([A-Z]{1,3})\$?(\d+)$")


def table_format(name: str, mime: str, head: bytes) -> str | None:
    """``csv``, ``tsv``, ``xlsx``, ``ods`` or ``parquet`` when the file is a table, else None."""
    lower = name.lower()
    if head.startswith(b"PAR1"):
        return "parquet"
    if mime in _XLSX_MIMES or (head.startswith(b"PK") and lower.endswith((".xlsx", ".xlsm"))):
        return "xlsx"
    if mime == _ODS_MIME:
        return "ods"
    if mime == "text/tab-separated-values" or (mime.startswith("text/") and lower.endswith(".tsv")):
        return "tsv"
    if mime in ("text/csv", "application/csv") or (
        mime.startswith("text/") and lower.endswith(".csv")
    ):
        return "csv"
    return None


def sniff_delimiter(sample: str, fmt: str) -> str:
    """The delimiter of a CSV/TSV head: the one that splits the first lines most evenly."""
    if fmt == "tsv":
        return "\t"
    lines = [line for line in sample.splitlines()[:20] if line.strip()]
    if len(lines) > 1 and not sample.endswith("\n"):
        lines = lines[:-1]  # the cut last line would skew the counts
    best, best_score = ",", -1
    for delim in _DELIMITERS:
        counts = [len(next(csv.reader([line], delimiter=delim), [])) for line in lines]
        if not counts or max(counts) < 2:
            continue
        score = sum(1 for c in counts if c == counts[0]) * 100 + counts[0]
        if score > best_score:
            best, best_score = delim, score
    return best


def _header(cells: list[str]) -> list[str]:
    return [c[:MAX_HEADER_CHARS] for c in cells[:MAX_HEADER_COLUMNS]]


# A CR that ends no line: one not before a LF, and not the text's last char (where file_read
# drops it as it drops the CR of a CRLF).
_LONE_CR = re.compile(r"\r(?!\n|\Z)")
_OLD_MAC_NOTE = (
    "lines end with a lone CR (old Mac line ends): file_read and table_read number lines by "
    "LF, so they see one line; table_query reads its records"
)


def csv_facts(fd: int, size: int, fmt: str, codec: str) -> tuple[dict[str, Any], list[str]]:
    """``delimiter``, ``columns`` and ``header`` (the first row) of a CSV or TSV file.

    The first row is the first line as table_read reads it: up to the first LF (a CR before
    it ends it too; a lone CR is part of a cell). A head without LF but with CRs is an old Mac
    file: its first row ends at the first CR, as table_query reads it, and a note says so."""
    head = os.pread(fd, min(size, CSV_HEAD_BYTES), 0)
    text = head.decode(codec, "replace").removeprefix("\ufeff")
    delimiter = sniff_delimiter(text, fmt)
    notes: list[str] = []
    whole = size <= len(head)
    body = text[:-1] if whole and text.endswith("\r") else text  # a last CR ends the line
    end = text.find("\n")
    if end < 0 and "\r" in body:
        notes.append(_OLD_MAC_NOTE)
        end = text.find("\r")
    first = text[:end] if end >= 0 else text if whole else ""
    first = first.removesuffix("\r")
    cells = csv_cells(first, delimiter) if first else []
    return {"delimiter": delimiter, "columns": len(cells), "header": _header(cells)}, notes


def hide_lone_crs(text: str) -> tuple[str, str | None]:
    """``text`` with each lone CR replaced by a mark that is nowhere in it, and the mark (None
    when there is no lone CR). Rows are lines that end at LF, as file_read numbers them; the
    csv module would end a line at a lone CR too (or refuse one in an unquoted field), so it
    reads the mark, and each cell gets its CRs back."""
    if "\r" not in text or _LONE_CR.search(text) is None:
        return text, None
    mark = "\ue000"
    if mark in text:
        present = set(text)
        mark = next(chr(c) for c in range(0xE000, 0x110000) if chr(c) not in present)
    return _LONE_CR.sub(mark, text), mark


def csv_cells(line: str, delimiter: str) -> list[str]:
    """The cells of one record (a line, or the lines of its quoted line breaks), its lone
    CRs kept."""
    text, mark = hide_lone_crs(line)
    cells = next(csv.reader([text], delimiter=delimiter), [])
    return cells if mark is None else [c.replace(mark, "\r") for c in cells]


def _column_number(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def _dimensions(ref: str) -> tuple[int, int] | None:
    first, _, last = ref.partition(":")
    a, b = _CELL_REF.match(first), _CELL_REF.match(last or first)
    if a is None or b is None:
        return None
    rows = int(b.group(2)) - int(a.group(2)) + 1
    columns = _column_number(b.group(1)) - _column_number(a.group(1)) + 1
    return (rows, columns) if rows > 0 and columns > 0 else None


def _xlsx_sheets(z: zipfile.ZipFile) -> list[tuple[str, str]]:
    """(name, member) of each sheet, in workbook order."""
    targets: dict[str, str] = {}
    for event, el in events(z, "xl/_rels/workbook.xml.rels", Budget(MAX_XML_BYTES)):
        if event == "end" and el.tag == OOXML_PKG + "Relationship":
            target = el.get("Target", "")
            target = target.lstrip("/") if target.startswith("/") else "xl/" + target
            targets[el.get("Id", "")] = os.path.normpath(target)
    sheets = []
    for event, el in events(z, "xl/workbook.xml", Budget(MAX_XML_BYTES)):
        if event == "end" and el.tag == _MAIN + "sheet":
            sheets.append((el.get("name", ""), targets.get(el.get(OOXML_REL + "id", ""), "")))
    return sheets


def _xlsx_first_row(z: zipfile.ZipFile, member: str) -> tuple[str | None, list[tuple[str, str]]]:
    """The sheet's dimension ref and its first row as (type, raw value) cells."""
    ref: str | None = None
    cells: list[tuple[str, str]] = []
    in_row = False
    for event, el in events(z, member, Budget(MAX_XML_BYTES)):
        if event == "start" and el.tag == _MAIN + "row":
            in_row = True
        elif event == "end" and el.tag == _MAIN + "dimension":
            ref = el.get("ref")
        elif event == "end" and in_row and el.tag == _MAIN + "c":
            kind = el.get("t", "n")
            if kind == "inlineStr":
                value = "".join(el.itertext())
            else:
                v = el.find(_MAIN + "v")
                value = v.text or "" if v is not None else ""
            col = _CELL_REF.match(el.get("r", ""))
            if col is not None:  # empty cells are absent from the XML: keep the positions
                while len(cells) < _column_number(col.group(1)) - 1:
                    cells.append(("n", ""))
            cells.append((kind, value))
            if len(cells) >= MAX_HEADER_COLUMNS:
                break
        elif event == "end" and el.tag in (_MAIN + "row", _MAIN + "sheetData"):
            break
    return ref, cells


def _shared_strings(z: zipfile.ZipFile, wanted: set[int]) -> dict[int, str]:
    if not wanted or "xl/sharedStrings.xml" not in z.NameToInfo:
        return {}
    out: dict[int, str] = {}
    index = 0
    top = max(wanted)
    for event, el in events(z, "xl/sharedStrings.xml", Budget(MAX_XML_BYTES)):
        if event == "end" and el.tag == _MAIN + "si":
            if index in wanted:
                out[index] = "".join(t.text or "" for t in el.iter(_MAIN + "t") if t is not None)
            el.clear()
            index += 1
            if index > top:
                break
    return out


def _xlsx_facts(z: zipfile.ZipFile) -> tuple[list[dict[str, Any]], int]:
    sheets = _xlsx_sheets(z)
    described = []
    for name, member in sheets[:MAX_SHEETS]:
        sheet: dict[str, Any] = {"name": name}
        if member not in z.NameToInfo:
            described.append(sheet)
            continue
        ref, cells = _xlsx_first_row(z, member)
        dims = _dimensions(ref) if ref else None
        if dims is not None:
            sheet["rows"], sheet["columns"] = dims
        wanted = {int(v) for k, v in cells if k == "s" and v.isdigit()}
        strings = _shared_strings(z, wanted)
        sheet["header"] = _header(
            [strings.get(int(v), "") if k == "s" and v.isdigit() else v for k, v in cells]
        )
        described.append(sheet)
    return described, len(sheets)


def _ods_facts(z: zipfile.ZipFile) -> tuple[list[dict[str, Any]], int]:
    sheets: list[dict[str, Any]] = []
    row: list[str] | None = None
    current: dict[str, Any] | None = None
    for event, el in events(z, "content.xml", Budget(MAX_XML_BYTES)):
        if event == "start" and el.tag == ODF_TABLE + "table":
            current = {"name": el.get(ODF_TABLE + "name", "")}
            sheets.append(current)
        elif event == "start" and el.tag == ODF_TABLE + "table-row" and current is not None:
            if "header" not in current:
                row = []
        elif event == "end" and el.tag == ODF_TABLE + "table-cell" and row is not None:
            text = "\n".join("".join(p.itertext()) for p in el.iter(ODF_TEXT + "p"))
            repeat = min(int(el.get(ODF_TABLE + "number-columns-repeated", "1") or 1), 1024)
            row.extend([text] * repeat)
        elif event == "end" and el.tag == ODF_TABLE + "table-row" and row is not None:
            while row and not row[-1]:
                row.pop()  # trailing repeated empty cells pad a row to the sheet's width
            if current is not None:
                current["header"] = _header(row)
            row = None
        elif event == "end" and el.tag == ODF_TABLE + "table":
            el.clear()
            current = None
            if len(sheets) >= MAX_SHEETS:
                break
    return sheets, len(sheets)


class SheetExtent(NamedTuple):
    """What reading one workbook sheet costs a reader that holds it densely (calamine):
    the rows and columns its cells' references reach (from A1), the inflated bytes of the
    sheet's XML and of the shared strings (each counted up to the limit given, then
    ``limit + 1``), and the longest run of text between two tags in either (one cell)."""

    name: str
    rows: int
    columns: int
    sheet_bytes: int
    strings_bytes: int
    longest_text: int  # bytes of the longest text between tags (exact past 1 MiB)


_ROW_REF = re.compile(rb"<(?:\w+:)?row\b[^>]*?\sr=\"(\d{1,9})\"")
_CELL_ROW = re.compile(rb"\sr=\"\$?[A-Z]{1,3}\$?(\d{1,9})\"")
_CELL_COLUMNS = [re.compile(rb"\sr=\"\$?([A-Z]{%d})\$?\d" % n) for n in (3, 2, 1)]
_CARRY = 4096  # bytes of an unfinished tag kept for the next chunk


def _member(fd: int, size: int, name: str) -> ZipEntry | None:
    return next((e for e in walk_zip(fd, size) if e.name == name), None)


class _Gaps:
    """The longest run of bytes without a ``<`` across chunks (inside one chunk only runs
    that reach its ends are counted: the long runs, a giant cell's text, are exact)."""

    def __init__(self) -> None:
        self.run = 0
        self.longest = 0

    def add(self, chunk: bytes) -> None:
        first = chunk.find(b"<")
        if first < 0:
            self.run += len(chunk)
        else:
            self.longest = max(self.longest, self.run + first)
            self.run = len(chunk) - chunk.rfind(b"<") - 1
        self.longest = max(self.longest, self.run)


def _inflated(fd: int, size: int, entry: ZipEntry | None, limit: int) -> Iterator[bytes]:
    """The member's bytes, ending once more than ``limit`` were inflated."""
    if entry is None:
        return
    total = 0
    for chunk, _ in inflate_member(fd, size, entry):
        total += len(chunk)
        yield chunk
        if total > limit:
            return


def xlsx_extent(fd: int, sheet: str | None, max_bytes: int) -> SheetExtent | None:
    """The extent of the sheet named ``sheet`` (the first one if None) of an xlsx workbook,
    from one pass over its XML; None if there is no such sheet. Raises what reading a damaged
    zip raises (`UNREADABLE`)."""
    size = os.fstat(fd).st_size
    with open_zip(fd) as z:
        sheets = _xlsx_sheets(z)
    found = next((s for s in sheets if sheet is None or s[0] == sheet), None)
    if found is None:
        return None
    rows = columns = sheet_bytes = 0
    column = b""
    carry = b""
    gaps = _Gaps()
    for chunk in _inflated(fd, size, _member(fd, size, found[1]), max_bytes):
        sheet_bytes += len(chunk)
        gaps.add(chunk)
        data = carry + chunk
        cut = data.rfind(b"<")
        if cut < 0 or len(data) - cut > _CARRY:
            cut = len(data)
        data, carry = data[:cut], data[cut:]
        rows = max([rows, *map(int, _ROW_REF.findall(data)), *map(int, _CELL_ROW.findall(data))])
        for pattern in _CELL_COLUMNS:
            letters = pattern.findall(data)
            if letters:
                widest = max(letters)
                if (len(widest), widest) > (len(column), column):
                    column = widest
                break
    if column:
        columns = _column_number(column.decode())
    strings = 0
    gaps.run = 0
    for chunk in _inflated(fd, size, _member(fd, size, "xl/sharedStrings.xml"), max_bytes):
        strings += len(chunk)
        gaps.add(chunk)
    return SheetExtent(found[0], rows, columns, sheet_bytes, strings, gaps.longest)


def workbook_facts(fd: int, fmt: str) -> tuple[dict[str, Any], list[str]]:
    """``sheets`` (name, rows and columns where the file records them, header row) of an
    xlsx/xlsm or ods workbook; problems become notes."""
    notes: list[str] = []
    try:
        with open_zip(fd) as z:
            sheets, total = _xlsx_facts(z) if fmt == "xlsx" else _ods_facts(z)
    except Budget.Spent:
        return {}, [
            f"a workbook part is over the card's {MAX_XML_BYTES:,}-byte reading budget; "
            "sheets left out: table_read lists them"
        ]
    except UNREADABLE as exc:
        return {}, [unreadable("workbook", exc)]
    facts: dict[str, Any] = {"sheets": sheets}
    if total > len(sheets):
        notes.append(f"{total} sheets; the first {len(sheets)} are described")
    return facts, notes


def parquet_facts(fd: int, size: int) -> tuple[dict[str, Any], list[str]]:
    """``rows``, ``columns``, ``header`` and ``row_groups`` from a Parquet file's footer."""
    if size < 12 or os.pread(fd, 4, size - 4) != b"PAR1":
        return {}, ["parquet footer missing; the file may be truncated"]
    (length,) = struct.unpack("<I", os.pread(fd, 4, size - 8))
    if length > MAX_PARQUET_FOOTER or length + 12 > size:
        return {}, [f"parquet footer of {length:,} bytes is over the limit or the file"]
    footer = os.pread(fd, length, size - 8 - length)
    try:
        meta = _thrift_struct(_Reader(footer))
        schema = meta.get(_META_SCHEMA) or []
        names = [
            str(el.get(_ELEMENT_NAME, b""), "utf-8", "replace")
            for el in schema[1:]
            if not el.get(_ELEMENT_CHILDREN)  # a group (nested column) is no column itself
        ]
        facts = {
            "rows": int(meta.get(_META_ROWS, 0)),
            "columns": len(names),
            "header": _header(names),
            "row_groups": len(meta.get(_META_ROW_GROUPS) or []),
        }
    except (IndexError, ValueError, struct.error, RecursionError) as exc:
        return {}, [f"parquet footer unreadable: {exc}"]
    return facts, []


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        n = self.varint()
        if self.pos + n > len(self.data):
            raise ValueError("string past the footer")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


# Thrift compact protocol type codes (the encoding of Parquet's footer), as its spec numbers them.
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
_MAX_THRIFT_DEPTH = 32  # nested structs and lists; a real footer nests a handful deep
# Parquet's FileMetaData fields and SchemaElement fields, by their Thrift field ids.
_META_SCHEMA, _META_ROWS, _META_ROW_GROUPS = 2, 3, 4
_ELEMENT_NAME, _ELEMENT_CHILDREN = 4, 5


def _thrift_value(r: _Reader, kind: int, depth: int) -> Any:
    """One value of Thrift's compact protocol (the encoding of Parquet's footer)."""
    if depth > _MAX_THRIFT_DEPTH:
        raise ValueError("footer nested too deeply")
    if kind in (_TRUE, _FALSE):
        return kind == _TRUE
    if kind == _BYTE:
        return r.byte()
    if kind in (_I16, _I32, _I64):
        return r.zigzag()
    if kind == _DOUBLE:
        r.pos += 8
        return None
    if kind == _BINARY:
        return r.binary()
    if kind in (_LIST, _SET):
        head = r.byte()
        count, inner = head >> 4, head & 0x0F
        if count == 15:  # the count does not fit the header's four bits: a varint follows
            count = r.varint()
        # Every element takes at least one byte (a boolean in a list is a byte of its own,
        # unlike a boolean field, whose value is in its header): a claimed length is bounded
        # by the bytes left, so a footer cannot make its reader loop past its own size.
        if count > len(r.data) - r.pos:
            raise ValueError("list longer than the rest of the footer")
        if inner in (_TRUE, _FALSE):
            return [r.byte() == _TRUE for _ in range(count)]
        return [_thrift_value(r, inner, depth + 1) for _ in range(count)]
    if kind == _MAP:
        count = r.varint()
        if count == 0:
            return {}
        types = r.byte()
        if 2 * count > len(r.data) - r.pos:
            raise ValueError("map longer than the rest of the footer")
        return [
            (_thrift_value(r, types >> 4, depth + 1), _thrift_value(r, types & 0x0F, depth + 1))
            for _ in range(count)
        ]
    if kind == _STRUCT:
        return _thrift_struct(r, depth + 1)
    raise ValueError(f"unknown thrift type {kind}")


def _thrift_struct(r: _Reader, depth: int = 0) -> dict[int, Any]:
    out: dict[int, Any] = {}
    field = 0
    while True:
        head = r.byte()
        if head == 0:
            return out
        delta, kind = head >> 4, head & 0x0F
        field = field + delta if delta else r.zigzag()
        out[field] = _thrift_value(r, kind, depth)
