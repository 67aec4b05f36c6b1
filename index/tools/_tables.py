"""Tables: rows of CSV/TSV, workbooks and Parquet files, and read-only SQL over one of them.

CSV rows are reached through the sparse line index of `_lines` (row N is line N, so any range
of a multi-GB file costs one seek); workbook sheets are read with python-calamine (Rust),
which measured about 7x faster than openpyxl's read-only mode on a 100k-row sheet. SQL runs in
DuckDB with the file registered as the view ``t``, file system access disabled except for that
one file, and only a single SELECT statement accepted.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import datetime
import hashlib
import io
import json
import os
import re
import threading
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from leanreplay.cards import csv_cells, hide_lone_crs, xlsx_extent

from .._errors import InvalidArgumentError, WrongFileTypeError
from .._limits import MAX_ANSWER_CHARS
from . import _scratch
from ._duck import (
    COPY_MIN_BYTES,
    build_copy,
    cache_key,
    check_select,
    clean_error,
    connect,
    copy_cursor,
    copy_path,
    fd_path,
    literal,
    sniffed_reader,
)
from ._kinds import CacheDirs, card_fact, text_view
from ._lines import CHUNK, LineIndex, _nth
from ._paths import OpenFile, fingerprint
from ._transcode import encoding_of

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_QUERY_ROWS",
    "MAX_TABLE_ROWS",
    "TableFile",
    "parse_rows",
    "query_table",
    "query_table_file",
    "read_csv_rows",
    "read_sheet_rows",
    "read_table",
    "table_file",
]

MAX_TABLE_ROWS = 200  # rows per table_read call
MAX_CELL_CHARS = 500  # a longer cell is cut with a marker
MAX_QUERY_ROWS = 200  # result rows per table_query call
MAX_QUERY_SECONDS = 60.0  # a query running longer is interrupted
MAX_CSV_SCAN_BYTES = 8 * 1024 * 1024  # bytes read for one table_read of a CSV
MAX_RECORD_SCAN_BYTES = 64 * 1024 * 1024  # bytes scanned for the end of one CSV record
ROW_BUDGET = MAX_ANSWER_CHARS // 2  # the header, and a row on its own, at most this much text
MAX_SHEET_CELLS = 20_000_000  # the range a workbook sheet's cells may span (held densely)
MAX_SHEET_BYTES = 512 * 1024 * 1024  # a sheet's inflated XML, and its shared strings
MAX_SHEET_CELL_BYTES = 4 * 1024 * 1024  # one cell's text (Excel's own limit is 32,767 chars)
_WINDOW = 64 * 1024  # the head read for a CSV's header
_ROWS_CHUNK = 64 * 1024  # bytes of a CSV's rows read at a time


@dataclass(frozen=True)
class TableFile:
    """A confined table file and what its card says about it."""

    file: OpenFile
    format: str  # csv, tsv, xlsx, ods, parquet
    delimiter: str = ","


def parse_rows(rows: str) -> tuple[int, int]:
    """``"N"`` or ``"A-B"`` (1-based, inclusive) as (first, last)."""
    first_text, _, last_text = rows.partition("-")
    try:
        first = int(first_text)
        last = int(last_text) if last_text.strip() else first
    except ValueError:
        raise InvalidArgumentError(f'rows must be "N" or "A-B", got {rows!r}') from None
    if first < 1 or last < first:
        raise InvalidArgumentError(f'rows must be "N" or "A-B" with 1 <= A <= B, got {rows!r}')
    return first, last


_CUT = " [... cell cut]"


def _cell(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)  # spreadsheets store every number as a double
    if isinstance(value, datetime.date | datetime.time | datetime.timedelta):
        return str(value) if isinstance(value, datetime.timedelta) else value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        return value[:MAX_CELL_CHARS] + _CUT
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)[:MAX_CELL_CHARS]


def _pick(header: Sequence[Any], columns: Sequence[str] | None) -> list[int] | None:
    if columns is None:
        return None
    names = [str(h) for h in header]
    picked = []
    for name in columns:
        if name not in names:
            shown = ", ".join(json.dumps(n[:MAX_CELL_CHARS]) for n in names[:50])
            raise InvalidArgumentError(
                f"no column {name!r}; the header row names: {shown}"
                + (f" (+{len(names) - 50} more)" if len(names) > 50 else "")
            )
        picked.append(names.index(name))
    return picked


def _fit(cells: list[Any], budget: int) -> list[Any]:
    """The first cells whose text fits in ``budget`` chars."""
    kept: list[Any] = []
    used = 0
    for cell in cells:
        used += len(str(cell))
        if used > budget:
            break
        kept.append(cell)
    return kept


class _Grid:
    """Collects numbered rows within the row and char bounds; a row too long for the answer
    on its own (a wide CSV line, a binary file read as CSV) is cut to the cells that fit."""

    def __init__(self, picked: list[int] | None, header: Sequence[Any] = ()) -> None:
        self.picked = picked
        if picked is not None:
            header = [header[i] if i < len(header) else None for i in picked]
        # The header is part of the answer too.
        self.budget = MAX_ANSWER_CHARS - min(sum(len(str(_cell(h))) for h in header), ROW_BUDGET)
        self.rows: list[list[Any]] = []
        self.chars = 0
        self.full = False
        self.cut: tuple[int, int, int] | None = None  # (row, cells shown, cells)

    def add(self, number: int, cells: Sequence[Any]) -> bool:
        if self.picked is not None:
            cells = [cells[i] if i < len(cells) else None for i in self.picked]
        shown = [_cell(c) for c in cells]
        size = sum(len(str(c)) for c in shown)
        if self.rows and (self.chars + size > self.budget or len(self.rows) >= MAX_TABLE_ROWS):
            self.full = True
            return False
        if size > ROW_BUDGET:
            kept = _fit(shown, ROW_BUDGET)
            self.cut = (number, len(kept), len(shown))
            self.rows.append([number, *kept])
            self.chars += sum(len(str(c)) for c in kept)
            self.full = True
            return False
        self.rows.append([number, *shown])
        self.chars += size
        return True


def _result(
    table: TableFile,
    shown_path: str,
    header: list[Any],
    grid: _Grid,
    span: tuple[int, int],
    total_rows: int | None,
    more: bool,
    columns: Sequence[str] | None,
    sheet: str | None = None,
    notes: list[str] | None = None,
    resume: int | None = None,
) -> dict[str, Any]:
    """The grid as a result; ``more`` says whether rows follow the last one shown, ``resume``
    (when rows do not follow it, as past a CSV record of several lines) where the next call
    starts."""
    head = [_cell(h) for h in header]
    if grid.picked is not None:
        head = [head[i] if i < len(head) else None for i in grid.picked]
    width = len(head)
    head = _fit(head, ROW_BUDGET)
    out: dict[str, Any] = {"path": shown_path, "format": table.format}
    if sheet is not None:
        out["sheet"] = sheet
    out |= {
        "columns": ["row", *head],
        "rows": grid.rows,
        "total_rows": total_rows,
        "notes": list(notes or []),
        "next": None,
    }
    if len(head) < width:
        out["notes"].append(
            f"the header row has {width:,} columns; the first {len(head):,} fit in the answer "
            "and are shown: pick columns with columns=[...]"
        )
    if grid.cut is not None:
        number, kept, cells = grid.cut
        out["notes"].append(
            f"row {number} has {cells:,} cells, more text than an answer holds: its first "
            f"{kept:,} are shown; pick columns with columns=[...]"
        )
    if grid.full:
        out["notes"].append(f"stopped at {MAX_TABLE_ROWS} rows or {MAX_ANSWER_CHARS:,} chars")
    if resume is None and grid.rows and (more or grid.full):
        resume = grid.rows[-1][0] + 1
    if resume is not None:
        args = [f"path={json.dumps(shown_path)}"]
        if sheet is not None:
            args.append(f"sheet={json.dumps(sheet)}")
        width = min(max(span[1] - span[0] + 1, 1), MAX_TABLE_ROWS)
        args.append(f'rows="{resume}-{resume + width - 1}"')
        if columns is not None:
            args.append(f"columns={json.dumps(list(columns))}")
        out["next"] = f"table_read({', '.join(args)})"
    return out


def _line_start(index: LineIndex, line: int) -> int | None:
    """Byte offset where line ``line`` starts, or None past the end."""
    if line == 1:
        return 0
    offset = index.newline_offset(line - 1)
    if offset is None or offset + 1 >= index.file.size:
        return None
    return offset + 1


def read_csv_rows(
    table: TableFile,
    index: LineIndex,
    first: int,
    last: int,
    columns: Sequence[str] | None,
) -> dict[str, Any]:
    """Rows ``first``..``last`` of a CSV/TSV file, numbered by line (row 1 is the header)."""
    fd, size = index.file.fd, index.file.size
    head = os.pread(fd, _WINDOW, 0)
    if b"\n" not in head and b"\r" in (head[:-1] if len(head) == size else head):
        raise WrongFileTypeError(
            f"{index.shown_path!r} ends its lines with a lone CR (old Mac line ends), and "
            "table_read numbers rows by the LF-ended lines that file_read shows: read its "
            "records with table_query (the table is t)"
        )
    header_line = head.split(b"\n", 1)[0].removesuffix(b"\r").decode("utf-8", "replace")
    header = csv_cells(header_line.removeprefix("\ufeff"), table.delimiter)
    grid = _Grid(_pick(header, columns), header)
    start = _line_start(index, first)
    if start is None:
        total = index.total_lines()
        raise InvalidArgumentError(
            f"row {first} is past the end: the file has {total:,} rows"
            if total is not None
            else f"row {first} is past the end of the file"
        )
    pos = start
    wanted = last - first + 1
    # Read whole lines until enough newlines are seen (or the byte budget is spent).
    chunks: list[bytes] = []
    newlines = 0
    read = 0
    while pos + read < size and newlines < wanted and read < MAX_CSV_SCAN_BYTES:
        chunk = os.pread(fd, _ROWS_CHUNK, pos + read)
        if not chunk:
            break
        needed = wanted - newlines
        found = chunk.count(b"\n")
        if found >= needed:
            cut = -1
            for _ in range(needed):
                cut = chunk.find(b"\n", cut + 1)
            chunk = chunk[: cut + 1]
            found = needed
        chunks.append(chunk)
        newlines += found
        read += len(chunk)
    data = b"".join(chunks)
    if newlines < wanted and pos + read < size and newlines:
        # The scan bound ended the read inside a line: that line is not a row (its cells
        # would be shown cut short); the next call starts with it.
        data = data[: data.rfind(b"\n") + 1]
    text = data.decode("utf-8", "replace")
    if start == 0:
        text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark is no part of row 1
    text, mark = hide_lone_crs(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=table.delimiter)
    data_end = pos + len(data)
    lines_read = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    notes: list[str] = []
    resume: int | None = None  # the line the next call starts at, if any
    line_before = 0
    while True:
        number = first + line_before
        try:
            cells = next(reader)
        except StopIteration:
            resume = number if data_end < size else None
            break
        except csv.Error as exc:
            scan = _RecordScan(index, table.delimiter, pos, data, line_before)
            if scan.end is None:
                notes.append(f"{scan.unended(number)}; the csv module refuses it ({exc})")
            else:
                notes.append(scan.refused(number, exc))
                resume = scan.last_line(number) + 1
            break
        if number > last:
            resume = number
            break
        line_before = reader.line_num
        if mark is not None:
            cells = [c.replace(mark, "\r") for c in cells]
        if line_before == lines_read and data_end < size:
            # The read ended in this record, as a quoted field's line break may: read it to
            # its end, or leave it to the next call when this call's budget cannot.
            scan = _RecordScan(index, table.delimiter, pos, data, number - first)
            if scan.end is None or scan.end > data_end:
                if scan.end is not None and scan.end - pos <= MAX_CSV_SCAN_BYTES:
                    whole = index.pread(scan.end - scan.start, scan.start)
                    if scan.start == 0:
                        whole = whole.removeprefix(codecs.BOM_UTF8)
                    try:
                        cells = csv_cells(whole.decode("utf-8", "replace"), table.delimiter)
                    except csv.Error as exc:
                        notes.append(scan.refused(number, exc))
                        resume = scan.last_line(number) + 1
                        break
                    line_before = scan.last_line(number) - first + 1
                elif grid.rows:  # the next call starts with it, with a budget of its own
                    notes.append(
                        f"read {MAX_CSV_SCAN_BYTES:,} bytes for this call; continue with next"
                    )
                    grid.full = True
                    resume = number
                    break
                else:  # one record larger than a call reads: the cells read are shown (cut)
                    notes.append(
                        scan.unended(number)
                        if scan.end is None
                        else f"row {number} ({scan.lines(number)}) is one record of "
                        f"{scan.end - scan.start:,} bytes, more than a call reads "
                        f"({MAX_CSV_SCAN_BYTES:,}): the cells read within them are shown; "
                        f"read it raw with {scan.file_read(number)}"
                    )
                    if cells:  # the last cell read runs on past the bytes read
                        cells[-1] = cells[-1][: MAX_CELL_CHARS - len(_CUT)] + _CUT
                    grid.add(number, cells)
                    resume = None if scan.end is None else scan.last_line(number) + 1
                    break
        if not grid.add(number, cells):
            resume = first + line_before if grid.rows[-1][0] == number else number
            break
    if read >= MAX_CSV_SCAN_BYTES and newlines < wanted and resume == first + line_before:
        notes.append(f"read {MAX_CSV_SCAN_BYTES:,} bytes for this call; continue with next")
        grid.full = True
    if any(len(r) and r[0] != first + i for i, r in enumerate(grid.rows)):
        notes.append("some rows hold quoted line breaks: row numbers are line numbers")
    total = index.total_lines()
    if resume is not None and total is not None and resume > total:
        resume = None
    return _result(
        table,
        index.shown_path,
        header,
        grid,
        (first, last),
        total,
        False,
        columns,
        notes=notes,
        resume=resume,
    )


class _RecordScan:
    """Where the CSV record that starts after ``lines`` lines of ``data`` (read at ``pos``)
    ends: at the first LF outside a quoted field, as the csv module reads them (a quote opens
    a field only at its start; ``""`` inside one is a quote). ``end`` is the offset past that
    LF (the file's size for a last record), None if it is not found within
    `MAX_RECORD_SCAN_BYTES`; ``newlines`` counts the LFs inside the record."""

    def __init__(self, index: LineIndex, delimiter: str, pos: int, data: bytes, lines: int):
        self.index = index
        self._stops = re.compile(b"[\n" + re.escape(delimiter.encode()) + b"]")
        self.quoted = self.after_quote = False
        self.field_start = True
        self.newlines = 0
        at = _nth(data, lines) + 1 if lines else 0
        self.start = pos + at
        if self.start == 0 and data.startswith(codecs.BOM_UTF8):
            at += len(codecs.BOM_UTF8)
        self.end: int | None = None
        found = self._feed(data[at:])
        if found >= 0:
            self.end = pos + at + found + 1
            return
        offset, size = pos + len(data), index.file.size
        while offset < size and offset - self.start < MAX_RECORD_SCAN_BYTES:
            chunk = index.pread(min(CHUNK, self.start + MAX_RECORD_SCAN_BYTES - offset), offset)
            found = self._feed(chunk)
            if found >= 0:
                self.end = offset + found + 1
                return
            offset += len(chunk)
        if offset >= size:
            self.end = size
            if self.quoted and index.pread(1, size - 1) == b"\n":
                self.newlines -= 1  # the file's last LF ends its last line, inside the quote

    def last_line(self, number: int) -> int:
        return number + self.newlines

    def lines(self, number: int) -> str:
        end = self.last_line(number)
        return f"line {number}" if end == number else f"lines {number}-{end}"

    def file_read(self, number: int) -> str:
        shown = json.dumps(self.index.shown_path)
        return f"file_read(path={shown}, start_line={number}, end_line={self.last_line(number)})"

    def refused(self, number: int, exc: csv.Error) -> str:
        return (
            f"row {number} ({self.lines(number)}) is not shown: the csv module refuses it "
            f"({exc}); read it raw with {self.file_read(number)}"
        )

    def unended(self, number: int) -> str:
        return (
            f"row {number} is a record whose end is not within {MAX_RECORD_SCAN_BYTES:,} bytes "
            f"(a quote that never closes?): table_read cannot read past it; file_read reads "
            f"on from line {number}"
        )

    def _feed(self, chunk: bytes) -> int:
        """The index of the LF that ends the record in ``chunk``, or -1."""
        i, n = 0, len(chunk)
        if self.after_quote and n:
            self.after_quote = False
            if chunk[0] == 0x22:  # a "" split between two chunks: still quoted
                i = 1
            else:
                self.quoted = False
        while i < n:
            if self.quoted:
                q = chunk.find(b'"', i)
                self.newlines += chunk.count(b"\n", i, n if q < 0 else q)
                if q < 0:
                    return -1
                if q + 1 == n:
                    self.after_quote = True
                    return -1
                if chunk[q + 1] == 0x22:
                    i = q + 2
                else:
                    self.quoted = False
                    i = q + 1
                continue
            if self.field_start and chunk[i] == 0x22:
                self.quoted, self.field_start = True, False
                i += 1
                continue
            self.field_start = False
            m = self._stops.search(chunk, i)
            if m is None:
                return -1
            if chunk[m.start()] == 0x0A:
                return m.start()
            self.field_start = True
            i = m.end()
        return -1


_EXTENTS: dict[tuple[str, str | None, int, int, int], str | None] = {}  # -> refusal, or None
_EXTENTS_KEPT = 64


def _check_extent(table: TableFile, sheet: str | None) -> None:
    """Refuse a sheet a reader cannot hold: calamine allocates the whole range its cells'
    references span (two cells at A1 and XFD1048576 asked for 512 GiB and aborted the
    process), and holds the sheet's XML text and every shared string. Checked on the XML
    before calamine reads it, once per file content."""
    key = (fingerprint(table.file), sheet, MAX_SHEET_CELLS, MAX_SHEET_BYTES, MAX_SHEET_CELL_BYTES)
    if key not in _EXTENTS:
        _EXTENTS[key] = _extent_refusal(table, sheet)
        while len(_EXTENTS) > _EXTENTS_KEPT:
            _EXTENTS.pop(next(iter(_EXTENTS)))
    refusal = _EXTENTS[key]
    if refusal is not None:
        raise WrongFileTypeError(refusal)


def _extent_refusal(table: TableFile, sheet: str | None) -> str | None:
    try:
        extent = xlsx_extent(table.file.fd, sheet, MAX_SHEET_BYTES)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, EOFError, zlib.error) as exc:
        return f"{table.file.path!r} cannot be read as a workbook: {exc}"
    if extent is None:
        return None  # no such sheet: calamine names the sheets there are
    shown = f"sheet {extent.name!r} of {table.file.path!r}"
    cells = extent.rows * extent.columns
    if cells > MAX_SHEET_CELLS:
        return (
            f"{shown} spans {extent.rows:,} rows x {extent.columns:,} columns ({cells:,} cells, "
            f"over the {MAX_SHEET_CELLS:,} a sheet may span): its cells' references reach that "
            "far; it is not read"
        )
    if extent.longest_text > MAX_SHEET_CELL_BYTES:
        return (
            f"{shown} holds a cell of over {MAX_SHEET_CELL_BYTES:,} bytes of text "
            f"({extent.longest_text:,}; a spreadsheet cell holds at most 32,767 chars): "
            "it is not read"
        )
    for what, count in (("XML", extent.sheet_bytes), ("shared strings", extent.strings_bytes)):
        if count > MAX_SHEET_BYTES:
            return (
                f"{shown}: its {what} inflate past {MAX_SHEET_BYTES:,} bytes, the most a sheet "
                "is read with; it is not read"
            )
    return None


def _calamine_sheet(table: TableFile, sheet: str | None) -> tuple[Any, str, list[str]]:
    import python_calamine

    if table.format == "xlsx":
        _check_extent(table, sheet)
    try:
        with fd_path(table.file) as source:
            workbook = python_calamine.CalamineWorkbook.from_path(source)
        names = list(workbook.sheet_names)
        if not names:
            raise WrongFileTypeError(f"{table.file.path!r} holds no sheets")
        name = names[0] if sheet is None else sheet
        if name not in names:
            raise InvalidArgumentError(
                f"no sheet {sheet!r}; the sheets are {', '.join(map(json.dumps, names))}"
            )
        return workbook.get_sheet_by_name(name), name, names
    except python_calamine.PasswordError:
        raise WrongFileTypeError(
            f"{table.file.path!r} is protected with a password; its sheets cannot be read"
        ) from None
    except python_calamine.CalamineError as exc:
        raise WrongFileTypeError(
            f"{table.file.path!r} cannot be read as a workbook: {exc}"
        ) from None


def read_sheet_rows(
    table: TableFile, sheet: str | None, first: int, last: int, columns: Sequence[str] | None
) -> dict[str, Any]:
    """Rows ``first``..``last`` of a workbook sheet, numbered as the spreadsheet shows them."""
    data, name, names = _calamine_sheet(table, sheet)
    # The used range's height counts from its top row; iter_rows yields the empty rows above
    # it too, so its first row is row 1 (a sheet whose cells start at B3 has 3 rows before
    # its second, not 5).
    top = int(data.start[0]) if data.start else 0
    total = top + int(data.height)
    rows = data.iter_rows()
    header: list[Any] = next(rows, [])
    grid = _Grid(_pick(header, columns), header)
    if first > max(total, 1):
        raise InvalidArgumentError(
            f"row {first} is past the end: sheet {name!r} has {total:,} rows"
        )
    if first == 1 and total > 0:  # an empty sheet has no row 1
        grid.add(1, header)
    for number, cells in enumerate(rows, start=2):
        if number < first:
            continue
        if number > last or not grid.add(number, cells):
            break
    more = bool(grid.rows) and grid.rows[-1][0] < total
    out = _result(
        table, table.file.path, header, grid, (first, last), total, more, columns, sheet=name
    )
    out["sheets"] = names
    return out


def read_parquet_rows(
    table: TableFile, first: int, last: int, columns: Sequence[str] | None, scratch: str
) -> dict[str, Any]:
    """Rows ``first``..``last`` of a Parquet file (row 1 is the first record)."""
    import duckdb

    with connect([table.file], scratch) as (con, paths):
        source = f"read_parquet({literal(paths[0])})"
        try:
            header: list[Any] = [
                d[0] for d in con.execute(f"select * from {source} limit 0").description
            ]
            grid = _Grid(_pick(header, columns), header)
            (total,) = con.execute(f"select count(*) from {source}").fetchone() or (0,)
            cursor = con.execute(
                f"select * from {source} limit {MAX_TABLE_ROWS} offset {first - 1}"
            )
            for number, cells in enumerate(cursor.fetchall(), start=first):
                if number > last or not grid.add(number, list(cells)):
                    break
        except duckdb.Error as exc:
            # DuckDB names the file by the descriptor it was given: never shown.
            raise WrongFileTypeError(
                f"{table.file.path!r} cannot be read as a Parquet file: "
                f"{clean_error(exc, {paths[0]: table.file.path})}"
            ) from None
    if first > max(int(total), 1):
        raise InvalidArgumentError(f"row {first} is past the end: the file has {total:,} rows")
    more = bool(grid.rows) and grid.rows[-1][0] < int(total)
    out = _result(table, table.file.path, header, grid, (first, last), int(total), more, columns)
    out["notes"].append("row 1 is the first record; the column names come from the schema")
    return out


def sheet_csv(table: TableFile, sheet: str | None, cache_dir: str) -> tuple[str, str]:
    """The sheet converted once to a CSV under ``cache_dir`` (keyed by the file's content
    fingerprint), so DuckDB can query it; returns (csv path, sheet name)."""
    data, name, _ = _calamine_sheet(table, sheet)
    key = hashlib.sha256(f"{fingerprint(table.file)}:{name}".encode()).hexdigest()[:32]
    target = os.path.join(cache_dir, key + ".csv")
    if os.path.exists(target):
        return target, name
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            for cells in data.iter_rows():
                writer.writerow([_csv_cell(c) for c in cells])
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return target, name


def _csv_cell(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return value


@contextlib.contextmanager
def _table_connection(
    source: OpenFile | str, copy: str | None, scratch: str
) -> Iterator[tuple[Any, list[str], str | None]]:
    """A cursor on the columnar copy when there is one and it opens; else a connection that
    reads the file in place (as before the copy was built). Yields it, the paths naming the
    file in SQL, and the copy used."""
    import duckdb

    with contextlib.ExitStack() as stack:
        if copy is not None:
            try:
                con, paths = stack.enter_context(copy_cursor(copy, scratch))
            except (duckdb.Error, OSError):
                # An unreadable copy, or one removed since it was found: the file itself
                # still answers.
                copy = None
            else:
                yield con, paths, copy
                return
        con, paths = stack.enter_context(connect([source], scratch))
        yield con, paths, None


def query_table(
    table: TableFile,
    sql: str,
    cache_dir: str,
    *,
    sheet: str | None = None,
    shown_path: str | None = None,
) -> dict[str, Any]:
    """Run one read-only SELECT over the table registered as ``t`` (named ``shown_path`` in
    the answer and its errors: a transcoded copy's own path is never shown).

    Text tables (CSV, TSV, converted sheets) of `COPY_MIN_BYTES` or more are queried on
    their columnar copy once it is built (in the background, after the first query); until
    then, and for smaller ones and Parquet, the file is read in place.
    """
    import duckdb

    source: OpenFile | str = table.file
    if table.format in ("xlsx", "ods"):
        source, sheet = sheet_csv(table, sheet, cache_dir)
    text = table.format != "parquet"
    scratch = os.path.join(cache_dir, "scratch")
    _scratch.sweep(cache_dir)  # unfinished copies of builders that were killed
    key = cache_key(source) if text else ""
    size = source.size if isinstance(source, OpenFile) else os.path.getsize(source)
    big = text and size >= COPY_MIN_BYTES
    copy = copy_path(key, cache_dir) if big else None
    with _table_connection(source, copy, scratch) as (con, paths, copy):
        # What an error may name: the file as the caller gave it, never our descriptors,
        # copies or scratch folders under the home.
        shown = shown_path or table.file.path
        hidden = {p: shown for p in [*paths, *([copy] if copy else [])]}
        hidden[cache_dir] = "(the leanreplay home's table cache)"
        reader = "read_parquet({})"
        try:
            if text and copy is None:
                delim = "," if isinstance(source, str) else table.delimiter
                reader = sniffed_reader(con, paths[0], delim, cache_dir, key)
            if copy is None:
                con.execute(f"CREATE VIEW t AS SELECT * FROM {reader.format(literal(paths[0]))}")
            columns = [d[0] for d in con.execute("SELECT * FROM t LIMIT 0").description]
        except duckdb.Error as exc:
            message = f"{shown!r} cannot be read as a {table.format} table: "
            message += clean_error(exc, hidden)
            hint = _stray_cr_hint(source) if text and isinstance(source, OpenFile) else ""
            if hint:
                message = f"{message.rstrip('.')}. {hint}"
            raise WrongFileTypeError(message) from None
        check_select(con, sql, columns)
        timer = threading.Timer(MAX_QUERY_SECONDS, con.interrupt)
        timer.start()
        try:
            cursor = con.execute(sql)
            names = [d[0] for d in cursor.description or []]
            fetched = cursor.fetchmany(MAX_QUERY_ROWS + 1)
        except duckdb.InterruptException:
            raise InvalidArgumentError(
                f"the query ran over {MAX_QUERY_SECONDS:.0f}s and was stopped; aggregate or "
                "filter more (GROUP BY, WHERE, LIMIT)"
            ) from None
        except duckdb.Error as exc:
            raise InvalidArgumentError(
                f"query failed: {clean_error(exc, hidden)}; the table is t with "
                f"columns {', '.join(json.dumps(c) for c in columns[:50])}"
            ) from None
        finally:
            timer.cancel()
            # A timer that fired as the query ended is still interrupting: let it finish
            # before the cursor closes (and a kept-open copy serves another query).
            timer.join()
    if big and copy is None:
        # After the answer is computed, so the copy never slows this query down.
        build_copy(source, reader, key, cache_dir, scratch)
    rows: list[list[Any]] = []
    chars = 0
    notes: list[str] = []
    width = len(names)
    names = _fit([_cell(n) for n in names], ROW_BUDGET)
    header_chars = sum(len(str(n)) for n in names)
    if len(names) < width:
        notes.append(
            f"the result has {width:,} columns; the first {len(names):,} fit in the answer "
            "and are shown: select fewer columns"
        )
    for record in fetched[:MAX_QUERY_ROWS]:
        row = [_cell(v) for v in record][: len(names)]
        size = sum(len(str(c)) for c in row)
        if rows and chars + size > MAX_ANSWER_CHARS - header_chars:
            notes.append(
                f"stopped at {MAX_ANSWER_CHARS:,} chars; aggregate or select fewer columns"
            )
            break
        if size > ROW_BUDGET:
            row = _fit(row, ROW_BUDGET)
            notes.append(
                f"a result row holds more text than an answer: its first {len(row):,} values "
                "are shown; select fewer columns"
            )
            rows.append(row)
            break
        rows.append(row)
        chars += size
    if len(fetched) > MAX_QUERY_ROWS:
        notes.append(
            f"only the first {MAX_QUERY_ROWS} result rows are shown; add LIMIT/OFFSET or aggregate"
        )
    out: dict[str, Any] = {"path": shown, "format": table.format}
    if sheet is not None:
        out["sheet"] = sheet
    out |= {
        "sql": sql,
        "columns": names,
        "rows": rows,
        "truncated": bool(notes),
        "notes": notes,
    }
    return out


_STRAY_CR = re.compile(rb"\r(?!\n)")
_STRAY_CR_SCAN_BYTES = 64 * 1024 * 1024  # how far a failed query looks for one


def _stray_cr_hint(f: OpenFile) -> str:
    """Why DuckDB failed, when it is a CR that no LF follows in a file whose lines end at LF
    (DuckDB ends a row at every CR outside quotes, and cannot be told not to): the line it is
    on, and the tool that reads the file. Empty when the first 64 MiB hold none, or no LF (an
    old Mac file, which DuckDB reads)."""
    line, pos, seen_lf = 1, 0, False
    stop = min(f.size, _STRAY_CR_SCAN_BYTES)
    while pos < stop:
        size = min(CHUNK, stop - pos)
        chunk = os.pread(f.fd, size + 1, pos)  # one byte more: what follows a last CR
        found = _STRAY_CR.search(chunk)
        if found is not None and found.start() < size and pos + found.end() < f.size:
            before = chunk.count(b"\n", 0, found.start())
            if not (seen_lf or before or b"\n" in chunk):
                return ""
            return (
                f"Line {line + before:,} holds a CR that no LF follows, and DuckDB ends a row "
                "at every CR outside quotes: table_read reads this file (its rows end at LF, "
                "the CR kept in its cell), or quote that cell."
            )
        count = chunk.count(b"\n", 0, size)
        seen_lf = seen_lf or count > 0
        line += count
        pos += size
    return ""


def table_file(f: OpenFile) -> TableFile:
    """``f`` as a table, in the format its card found; any other file is refused with the
    tools that read it."""
    fmt, facts = card_fact(f, "table", "a table (CSV, TSV, xlsx, xlsm, ods, Parquet)")
    return TableFile(f, fmt, str(facts.get("delimiter", ",")))


_FORMAT_NAMES = {"csv": "CSV", "tsv": "TSV", "parquet": "Parquet"}


def _no_sheets(table: TableFile) -> InvalidArgumentError:
    """The refusal of a sheet of a table without sheets (one wording for both tools)."""
    name = _FORMAT_NAMES.get(table.format, table.format)
    return InvalidArgumentError(
        f"{table.file.path!r} is a {name} file: it has no sheets; leave sheet out"
    )


def read_table(
    f: OpenFile,
    sheet: str | None,
    rows: str,
    columns: Sequence[str] | None,
    dirs: CacheDirs,
) -> dict[str, Any]:
    """`table_read`: rows ``"N"`` or ``"A-B"`` of whatever table ``f`` is (CSV and TSV
    through the line index, Parquet by row group, workbook sheets through calamine)."""
    first, last = parse_rows(rows)
    table = table_file(f)
    if table.format in ("csv", "tsv"):
        if sheet is not None:
            raise _no_sheets(table)
        with text_view(f, dirs.transcoded) as (text, shown):
            index = LineIndex(text, dirs.lines, shown_path=shown)
            return read_csv_rows(table, index, first, last, columns)
    if table.format == "parquet":
        if sheet is not None:
            raise _no_sheets(table)
        return read_parquet_rows(table, first, last, columns, os.path.join(dirs.tables, "scratch"))
    return read_sheet_rows(table, sheet, first, last, columns)


def query_table_file(f: OpenFile, sql: str, sheet: str | None, dirs: CacheDirs) -> dict[str, Any]:
    """`table_query`: one read-only SELECT over ``f`` (a sheet of a workbook; a UTF-16 text
    table through its UTF-8 copy)."""
    table = table_file(f)
    if table.format in ("xlsx", "ods"):
        return query_table(table, sql, dirs.tables, sheet=sheet)
    if sheet is not None:
        raise _no_sheets(table)
    if table.format in ("csv", "tsv") and encoding_of(f) is not None:
        with text_view(f, dirs.transcoded) as (text, shown):
            copy = TableFile(text, table.format, table.delimiter)
            return query_table(copy, sql, dirs.tables, shown_path=shown)
    return query_table(table, sql, dirs.tables)
