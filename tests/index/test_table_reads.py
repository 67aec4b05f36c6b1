"""table_read on every table format with the same records: which rows come back, numbered how,
with which total and which next call, on a middle range, the last rows, one row, picked
columns and a row past the end; the answer bound counting the header; and the workbook
checks made before calamine reads a sheet."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from leanreplay.cards import card_for, xlsx_extent
from leanreplay.index import InvalidArgumentError, Workspace, WrongFileTypeError
from leanreplay.index._limits import MAX_ANSWER_CHARS
from leanreplay.index.tools import _tables
from tests.filetools import replace_member
from tests.officegen import ods, xlsx

HEADER = ["id", "city", "amount"]
RECORDS: list[list[Any]] = [[i, f"city {i}", i * 0.5] for i in range(1, 13)]  # 12 records
FORMATS = ["csv", "tsv", "xlsx", "ods", "parquet"]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "root").mkdir()
    return Workspace(tmp_path / "home", [tmp_path / "root"])


def write_table(
    folder: Path, fmt: str, header: list[str], records: list[list[Any]], name: str = "data"
) -> Path:
    """``records`` under ``header`` as a file of format ``fmt`` (a workbook's first sheet is
    "Data", followed by a sheet "Other"; Parquet columns typed from the first record)."""
    path = folder / f"{name}.{fmt}"
    if fmt in ("csv", "tsv"):
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
        writer.writerows([header, *records])
        path.write_text(buf.getvalue())
    elif fmt in ("xlsx", "ods"):
        build = xlsx if fmt == "xlsx" else ods
        path.write_bytes(build({"Data": [header, *records], "Other": [["x"], [1]]}))
    else:
        types = {int: "BIGINT", float: "DOUBLE", str: "VARCHAR"}
        con = duckdb.connect()
        columns = ", ".join(
            f'"{h}" {types[type(v)]}' for h, v in zip(header, records[0], strict=True)
        )
        con.execute(f"CREATE TABLE s ({columns})")
        con.executemany(f"INSERT INTO s VALUES ({', '.join('?' * len(header))})", records)
        con.execute(f"COPY s TO '{path}' (FORMAT parquet)")
        con.close()
    return path


def shown(fmt: str, value: Any) -> Any:
    """A cell as table_read shows it: text tables give the text written, workbooks and
    Parquet the number (a whole one as an int)."""
    if fmt in ("csv", "tsv"):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def expected_row(fmt: str, number: int) -> list[Any]:
    """Row ``number`` as table_read numbers it: a record's line in a text table or a
    workbook (row 1 is the header), the record itself in Parquet."""
    if fmt == "parquet":
        return [number, *(shown(fmt, v) for v in RECORDS[number - 1])]
    cells = HEADER if number == 1 else RECORDS[number - 2]
    return [number, *(shown(fmt, v) for v in cells)]


def total_of(fmt: str) -> int:
    return len(RECORDS) + (0 if fmt == "parquet" else 1)


def next_call(path: Path, fmt: str, rows: str, columns: str = "") -> str:
    sheet = ', sheet="Data"' if fmt in ("xlsx", "ods") else ""
    return f'table_read(path="{path}"{sheet}, rows="{rows}"{columns})'


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_middle_range_comes_back_with_its_total_and_the_next_call(
    ws: Workspace, tmp_path: Path, fmt: str
) -> None:
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    result = ws.table_read(path.name, rows="3-5")
    assert result["path"] == str(path)
    assert result["format"] == fmt
    assert result["columns"] == ["row", *HEADER]
    assert result["rows"] == [expected_row(fmt, n) for n in (3, 4, 5)]
    assert result["total_rows"] == total_of(fmt)
    assert result["next"] == next_call(path, fmt, "6-8")
    parquet = ["row 1 is the first record; the column names come from the schema"]
    assert result["notes"] == (parquet if fmt == "parquet" else [])


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_last_rows_come_back_without_a_next_call(
    ws: Workspace, tmp_path: Path, fmt: str
) -> None:
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    total = total_of(fmt)
    result = ws.table_read(path.name, rows=f"{total - 2}-{total + 5}")
    assert result["rows"] == [expected_row(fmt, n) for n in range(total - 2, total + 1)]
    assert result["next"] is None
    alone = ws.table_read(path.name, rows=str(total))  # the last row on its own
    assert alone["rows"] == [expected_row(fmt, total)]
    assert alone["next"] is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_row_1_alone_is_the_first_row(ws: Workspace, tmp_path: Path, fmt: str) -> None:
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    result = ws.table_read(path.name, rows="1")
    assert result["rows"] == [expected_row(fmt, 1)]
    assert result["next"] == next_call(path, fmt, "2-2")


@pytest.mark.parametrize("fmt", FORMATS)
def test_picked_columns_come_in_the_order_asked_and_stay_in_the_next_call(
    ws: Workspace, tmp_path: Path, fmt: str
) -> None:
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    result = ws.table_read(path.name, rows="2-3", columns=["amount", "id"])
    assert result["columns"] == ["row", "amount", "id"]
    assert result["rows"] == [[n, row[3], row[1]] for n in (2, 3) for row in [expected_row(fmt, n)]]
    assert result["next"] == next_call(path, fmt, "4-5", ', columns=["amount", "id"]')
    with pytest.raises(InvalidArgumentError, match=r'no column .*"id", "city", "amount"'):
        ws.table_read(path.name, columns=["price"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_row_past_the_end_says_how_many_rows_there_are(
    ws: Workspace, tmp_path: Path, fmt: str
) -> None:
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    total = total_of(fmt)
    holder = "sheet 'Data'" if fmt in ("xlsx", "ods") else "the file"
    with pytest.raises(
        InvalidArgumentError, match=f"^row {total + 1} is past the end: {holder} has {total} rows$"
    ):
        ws.table_read(path.name, rows=f"{total + 1}-{total + 9}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_table_of_one_row_has_no_row_2(ws: Workspace, tmp_path: Path, fmt: str) -> None:
    # A text table or sheet holding only its header; a Parquet file of one record.
    records = RECORDS[:1] if fmt == "parquet" else []
    if fmt == "parquet":
        path = write_table(tmp_path / "root", fmt, HEADER, records)
    elif fmt in ("xlsx", "ods"):
        path = tmp_path / "root" / f"data.{fmt}"
        path.write_bytes((xlsx if fmt == "xlsx" else ods)({"Data": [HEADER]}))
    else:
        path = write_table(tmp_path / "root", fmt, HEADER, records)
    assert ws.table_read(path.name)["rows"] == [expected_row(fmt, 1)]
    with pytest.raises(InvalidArgumentError, match="^row 2 is past the end: .* has 1 rows$"):
        ws.table_read(path.name, rows="2")


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_sheet_rows_are_numbered_as_the_spreadsheet_shows_them(
    ws: Workspace, tmp_path: Path, fmt: str
) -> None:
    # The cells start at B3: rows 1 and 2 are empty, and so is column A.
    path = tmp_path / "root" / f"offset.{fmt}"
    path.write_bytes(
        (xlsx if fmt == "xlsx" else ods)({"S": [[], [], [None, "a", "b"], [None, 1, 2]]})
    )
    result = ws.table_read(path.name)
    assert result["rows"] == [[1, "", ""], [2, "", ""], [3, "a", "b"], [4, 1, 2]]
    assert result["total_rows"] == 4
    assert ws.table_read(path.name, rows="4")["rows"] == [[4, 1, 2]]
    with pytest.raises(InvalidArgumentError, match="sheet 'S' has 4 rows"):
        ws.table_read(path.name, rows="5")


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_an_empty_sheet_reads_as_no_rows(ws: Workspace, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "root" / f"empty.{fmt}"
    path.write_bytes((xlsx if fmt == "xlsx" else ods)({"Empty": [], "Full": [["a"], [1]]}))
    result = ws.table_read(path.name)
    assert (result["sheet"], result["columns"], result["rows"]) == ("Empty", ["row"], [])
    assert (result["total_rows"], result["next"]) == (0, None)
    with pytest.raises(InvalidArgumentError, match="sheet 'Empty' has 0 rows"):
        ws.table_read(path.name, rows="2")


def answer_text(cells: list[Any]) -> int:
    return sum(len(str(c)) for c in cells)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_header_counts_toward_the_answer_bound(ws: Workspace, tmp_path: Path, fmt: str) -> None:
    """Rows are taken while the header's text and theirs fit in MAX_ANSWER_CHARS (the row
    numbers are not counted)."""
    # 1,200 chars of header and rows of 388: exactly 100 rows fill the answer.
    header = [f"{c}" * 400 for c in "abc"]
    records = [[f"{i:03d}" + "v" * 127, "w" * 129, "x" * 129] for i in range(300)]
    assert (MAX_ANSWER_CHARS - answer_text(header)) % answer_text(records[0]) == 0
    path = write_table(tmp_path / "root", fmt, header, records)
    first = 1 if fmt == "parquet" else 2
    result = ws.table_read(path.name, rows=f"{first}-{first + 250}")
    shown_rows = [r[1:] for r in result["rows"]]
    assert shown_rows == records[: len(shown_rows)]
    used = answer_text(header) + sum(answer_text(r) for r in shown_rows)
    assert used == MAX_ANSWER_CHARS  # the row that fills the answer exactly is taken
    # Picked columns: the picked names are the header that counts.
    picked = ws.table_read(path.name, rows=f"{first}-{first + 250}", columns=header[2::-2])
    shown_rows = [r[1:] for r in picked["rows"]]
    assert shown_rows == [[r[2], r[0]] for r in records[: len(shown_rows)]]
    used = answer_text(header[2::-2]) + sum(answer_text(r) for r in shown_rows)
    assert used <= MAX_ANSWER_CHARS < used + answer_text(shown_rows[0])
    assert f"stopped at 200 rows or {MAX_ANSWER_CHARS:,} chars" in result["notes"]
    end = result["rows"][-1][0]
    assert result["next"] == next_call(path, fmt, f"{end + 1}-{end + 200}")


def test_junk_parquet_is_refused_with_duckdbs_reason_naming_the_file(
    ws: Workspace, tmp_path: Path
) -> None:
    path = tmp_path / "root" / "junk.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 100 + b"PAR1")
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_read(path.name)
    head, _, reason = str(caught.value).partition(" cannot be read as a Parquet file: ")
    assert head == repr(str(path))
    assert str(path) in reason  # DuckDB's own words, the descriptor replaced by the path


def small_limits(monkeypatch: pytest.MonkeyPatch, cells: int) -> None:
    monkeypatch.setattr(_tables, "MAX_SHEET_CELLS", cells)


def test_the_sheet_asked_for_is_the_one_checked(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Small" spans 2 x 3 = 6 cells, "Big" 4 x 5 = 20: with a bound of 6, only Big is refused.
    small_limits(monkeypatch, 6)
    big = [[f"{r}{c}" for c in range(5)] for r in range(4)]
    (tmp_path / "root" / "book.xlsx").write_bytes(
        xlsx({"Small": [["a", "b", "c"], [1, 2, 3]], "Big": big})
    )
    assert ws.table_read("book.xlsx")["rows"] == [[1, "a", "b", "c"], [2, 1, 2, 3]]
    path = tmp_path / "root" / "book.xlsx"
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_read("book.xlsx", sheet="Big")
    assert str(caught.value) == (
        f"sheet 'Big' of {str(path)!r} spans 4 rows x 5 columns (20 cells, over the 6 a sheet "
        "may span): its cells' references reach that far; it is not read"
    )
    with pytest.raises(WrongFileTypeError, match="^sheet 'Big' of .* spans 4 rows x 5"):
        ws.table_query("book.xlsx", "SELECT count(*) FROM t", sheet="Big")
    small_limits(monkeypatch, 19)
    with pytest.raises(WrongFileTypeError, match="20 cells, over the 19"):
        ws.table_read("book.xlsx", sheet="Big")
    small_limits(monkeypatch, 20)  # exactly at the bound: read
    assert ws.table_read("book.xlsx", sheet="Big", rows="4")["rows"] == [[4, *big[3]]]


def test_a_cell_of_exactly_the_bound_is_read(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "root" / "cell.xlsx"
    path.write_bytes(xlsx({"S": [["a"], ["y" * (2 * 1024 * 1024)]]}))
    with path.open("rb") as f:
        extent = xlsx_extent(f.fileno(), None, _tables.MAX_SHEET_BYTES)
    assert extent is not None
    longest = extent.longest_text  # the cell's run of text, as the check measures it
    monkeypatch.setattr(_tables, "MAX_SHEET_CELL_BYTES", longest)
    assert ws.table_read("cell.xlsx", rows="2")["rows"] == [
        [2, "y" * _tables.MAX_CELL_CHARS + " [... cell cut]"]
    ]
    monkeypatch.setattr(_tables, "MAX_SHEET_CELL_BYTES", longest - 1)
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_read("cell.xlsx")
    assert str(caught.value) == (
        f"sheet 'S' of {str(path)!r} holds a cell of over {longest - 1:,} bytes of text "
        f"({longest:,}; a spreadsheet cell holds at most 32,767 chars): it is not read"
    )


def test_the_checked_sheets_are_remembered_within_a_bound(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "root" / "book.xlsx").write_bytes(xlsx({"S": [["a"], [1]]}))
    _tables._EXTENTS.clear()
    for i in range(_tables._EXTENTS_KEPT + 6):
        with pytest.raises(InvalidArgumentError, match=f"no sheet 'Missing {i}'"):
            ws.table_read("book.xlsx", sheet=f"Missing {i}")
    assert len(_tables._EXTENTS) == _tables._EXTENTS_KEPT
    assert ws.table_read("book.xlsx", sheet="S")["rows"] == [[1, "a"], [2, 1]]


@pytest.mark.parametrize(
    ("data", "names"),
    [
        (b"X,Y,MAX\r\n1,2,3\r\n", ["X", "Y", "MAX"]),  # names may start and end with any letter
        (b"\xef\xbb\xbfid,name\n1,2\n", ["id", "name"]),  # the byte order mark is no name's
        (b" id,name \n1,2\n", [" id", "name "]),  # spaces are the names'
    ],
    ids=["letters", "bom", "spaces"],
)
def test_csv_column_names_are_the_header_cells(
    ws: Workspace, tmp_path: Path, data: bytes, names: list[str]
) -> None:
    (tmp_path / "root" / "h.csv").write_bytes(data)
    result = ws.table_read("h.csv", rows="2")
    assert result["columns"] == ["row", *names]
    assert result["rows"] == [[2, "1", "2", "3"][: len(names) + 1]]
    assert ws.table_read("h.csv", rows="2", columns=names[-1:])["rows"] == [
        [2, "123"[len(names) - 1]]
    ]


def test_a_header_longer_than_the_read_window_is_cut_not_refused(
    ws: Workspace, tmp_path: Path
) -> None:
    # 80 KB of two-byte characters: the 64 KiB window the header is read from ends inside
    # one of them (and before the second name).
    first = "a" + "é" * 40_000
    (tmp_path / "root" / "long.csv").write_text(f"{first},b\n1,2\n3,4\n", encoding="utf-8")
    result = ws.table_read("long.csv", rows="2-3")
    assert result["columns"] == ["row", first[: _tables.MAX_CELL_CHARS] + " [... cell cut]"]
    assert result["rows"] == [[2, "1", "2"], [3, "3", "4"]]


def test_the_last_line_without_a_newline_is_a_row(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "root" / "end.csv").write_text("a,b\n1,2\n3")
    assert ws.table_read("end.csv", rows="3")["rows"] == [[3, "3"]]
    assert ws.table_read("end.csv", rows="2-9")["rows"] == [[2, "1", "2"], [3, "3"]]
    with pytest.raises(InvalidArgumentError, match="^row 4 is past the end: the file has 3 rows$"):
        ws.table_read("end.csv", rows="4")


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_a_workbook_without_sheets_says_so(ws: Workspace, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "root" / f"none.{fmt}"
    path.write_bytes((xlsx if fmt == "xlsx" else ods)({}))
    with pytest.raises(WrongFileTypeError, match=f"^{re.escape(repr(str(path)))} holds no sheets$"):
        ws.table_read(path.name)


SCAN = 2 * 64 * 1024  # a scan bound of two read windows


def fixed_lines(folder: Path, width: int, count: int) -> Path:
    """A CSV of ``count`` rows after its header, every line (the header too) ``width`` bytes
    with its newline: the id, padding (over MAX_CELL_CHARS) and a tail "zz"."""
    lines = ["id,pad,tail,".ljust(width - 1, "h")]
    lines += [f"{i},".ljust(width - 4, "p") + ",zz" for i in range(1, count + 1)]
    path = folder / "fixed.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_rows_a_scan_bound_holds_exactly_are_read_whole(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lines of 1 KiB: the rows 2-129 are 128 KiB, the bound, read in two windows that each
    # end at a line's end.
    monkeypatch.setattr(_tables, "MAX_CSV_SCAN_BYTES", SCAN)
    path = fixed_lines(tmp_path / "root", 1024, 400)
    result = ws.table_read(path.name, rows="2-129", columns=["id"])
    assert result["rows"] == [[n, str(n - 1)] for n in range(2, 130)]
    assert result["notes"] == []
    assert result["next"] == f'table_read(path="{path}", rows="130-257", columns=["id"])'


def test_a_read_past_the_scan_bound_stops_at_the_last_whole_line_with_a_note(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tables, "MAX_CSV_SCAN_BYTES", SCAN)
    notes = [
        f"read {SCAN:,} bytes for this call; continue with next",
        f"stopped at {_tables.MAX_TABLE_ROWS} rows or {MAX_ANSWER_CHARS:,} chars",
    ]
    for width in (1024, 1000):  # the bound at a line's end, and inside a line
        path = fixed_lines(tmp_path / "root", width, 400)
        whole = SCAN // width  # the lines from row 2 on that end within the bound
        result = ws.table_read(path.name, rows="2-300", columns=["id", "pad"])
        assert [r[0] for r in result["rows"]] == list(range(2, 2 + len(result["rows"])))
        # Up to the last line that ends within the bound: a line the bound cuts is no row
        # (its cells would be cut short).
        narrow = ws.table_read(path.name, rows="2-300", columns=["id", "tail"])
        assert narrow["rows"] == [[n, str(n - 1), "zz"] for n in range(2, 2 + whole)], width
        assert narrow["notes"] == notes
        assert narrow["next"] == (
            f'table_read(path="{path}", rows="{2 + whole}-{1 + whole + 200}", '
            'columns=["id", "tail"])'
        )


def test_bytes_that_are_not_utf_8_are_replaced(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "root" / "bytes.csv").write_bytes(b"a,b\n1,\xff\xfe x\n2,y\n")
    assert ws.table_read("bytes.csv")["rows"] == [
        [1, "a", "b"],
        [2, "1", "\ufffd\ufffd x"],
        [3, "2", "y"],
    ]


def test_a_record_the_csv_module_refuses_is_named_and_the_next_call_starts_past_it(
    ws: Workspace, tmp_path: Path
) -> None:
    # A field past the csv module's field size limit (128 KiB): on line 3 alone, then in a
    # quoted field of lines 3-4.
    path = tmp_path / "root" / "field.csv"
    for refused, lines in (
        ("3," + "x" * 200_000, "line 3"),
        ('3,"' + "x" * 200_000 + '\nx"', "lines 3-4"),
    ):
        path.write_text(f"a,b\n1,2\n{refused}\n5,6\n7,8\n")
        end = 3 if lines == "line 3" else 4
        note = (
            f"row 3 ({lines}) is not shown: the csv module refuses it (field larger than field "
            f"limit (131072)); read it raw with file_read(path={json.dumps(str(path))}, "
            f"start_line=3, end_line={end})"
        )
        result = ws.table_read(path.name, rows="1-4")
        assert (result["rows"], result["notes"]) == ([[1, "a", "b"], [2, "1", "2"]], [note])
        assert result["next"] == f'table_read(path="{path}", rows="{end + 1}-{end + 4}")'
        alone = ws.table_read(path.name, rows="3-4")
        assert (alone["rows"], alone["notes"]) == ([], [note])
        assert alone["next"] == f'table_read(path="{path}", rows="{end + 1}-{end + 2}")'
        after = ws.table_read(path.name, rows=f"{end + 1}-{end + 4}")
        assert after["rows"] == [[end + 1, "5", "6"], [end + 2, "7", "8"]]
        assert after["next"] is None
        assert ws.file_read(path.name, start_line=3, end_line=end)["end_line"] == end
    # Refused only once read past the lines asked for: its field is under the limit on line 3.
    path.write_text('a,b\n1,2\n3,"' + "x" * 100_000 + "\n" + "x" * 100_000 + '"\n5,6\n')
    result = ws.table_read(path.name, rows="1-3")
    assert result["rows"] == [[1, "a", "b"], [2, "1", "2"]]
    assert result["notes"][0].startswith("row 3 (lines 3-4) is not shown: the csv module")
    assert result["next"] == f'table_read(path="{path}", rows="5-7")'


def test_a_record_longer_than_a_call_reads_is_shown_cut_and_next_starts_past_it(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tables, "MAX_CSV_SCAN_BYTES", 64)
    monkeypatch.setattr(_tables, "_ROWS_CHUNK", 16)
    path = tmp_path / "root" / "long.csv"
    record = '1,"' + "x" * 100 + '\ny"'
    path.write_text(f"a,b\n{record}\n3,4\n")
    note = (
        f"row 2 (lines 2-3) is one record of {len(record) + 1} bytes, more than a call reads "
        "(64): the cells read within them are shown; read it raw with "
        f"file_read(path={json.dumps(str(path))}, start_line=2, end_line=3)"
    )
    result = ws.table_read(path.name, rows="2")
    assert result["rows"] == [[2, "1", "x" * (64 - 3) + " [... cell cut]"]]
    assert result["notes"] == [note]
    assert result["next"] == f'table_read(path="{path}", rows="4-4")'
    # After whole rows, the call stops before it: the next call starts with it.
    result = ws.table_read(path.name, rows="1-3")
    assert result["rows"] == [[1, "a", "b"]]
    assert result["next"] == f'table_read(path="{path}", rows="2-4")'


def test_a_quote_that_never_closes_ends_the_paging_with_a_note(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tables, "MAX_CSV_SCAN_BYTES", 64)
    monkeypatch.setattr(_tables, "MAX_RECORD_SCAN_BYTES", 1000)
    monkeypatch.setattr(_tables, "_ROWS_CHUNK", 16)
    path = tmp_path / "root" / "open.csv"
    path.write_text('a,b\n1,"' + "x\n" * 2000)
    result = ws.table_read(path.name, rows="2-3")
    assert result["notes"] == [
        "row 2 is a record whose end is not within 1,000 bytes (a quote that never closes?): "
        "table_read cannot read past it; file_read reads on from line 2"
    ]
    assert (result["rows"][0][:2], result["next"]) == ([2, "1"], None)


@pytest.mark.parametrize("end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_last_record_with_quoted_line_breaks_is_read_whole_and_next_starts_past_it(
    ws: Workspace, tmp_path: Path, end: str
) -> None:
    path = tmp_path / "root" / "multi.csv"
    lines = ["a,b", "1,2", '3,"x', "y", 'z"', "6,7"]
    path.write_bytes((end.join(lines) + end).encode())
    record = [3, "3", f"x{end}y{end}z"]
    result = ws.table_read(path.name, rows="1-3")
    assert result["rows"] == [[1, "a", "b"], [2, "1", "2"], record]
    assert result["next"] == f'table_read(path="{path}", rows="6-8")'
    assert ws.table_read(path.name, rows="3")["rows"] == [record]
    assert ws.table_read(path.name, rows="6-8")["rows"] == [[6, "6", "7"]]
    # As the file's last record, without a line end after it.
    path.write_bytes(end.join(lines[:5]).encode())
    result = ws.table_read(path.name, rows="2-3")
    assert (result["rows"], result["total_rows"]) == ([[2, "1", "2"], record], 5)
    assert result["next"] is None


def test_rows_shorter_than_the_header_show_none_in_the_missing_columns(
    ws: Workspace, tmp_path: Path
) -> None:
    (tmp_path / "root" / "ragged.csv").write_text("a,b,c\n1\n2,3\n4,5,6\n")
    result = ws.table_read("ragged.csv", rows="2-4", columns=["c", "a"])
    assert result["rows"] == [[2, None, "1"], [3, None, "2"], [4, "6", "4"]]


def test_a_row_of_exactly_the_row_budget_is_shown_whole(ws: Workspace, tmp_path: Path) -> None:
    cells = ["x" * _tables.MAX_CELL_CHARS] * (_tables.ROW_BUDGET // _tables.MAX_CELL_CHARS)
    header = [f"c{i:02d}" for i in range(len(cells))]
    write_table(tmp_path / "root", "csv", header, [cells, ["1"] * len(cells)])
    result = ws.table_read("data.csv", rows="2-3")
    assert result["rows"] == [[2, *cells], [3, *["1"] * len(cells)]]
    assert result["notes"] == []
    assert result["next"] is None


def test_a_row_wider_than_an_answer_is_cut_and_is_the_last_one_shown(
    ws: Workspace, tmp_path: Path
) -> None:
    width = 2 * _tables.ROW_BUDGET // _tables.MAX_CELL_CHARS  # cells for two answers' rows
    header = [f"c{i:02d}" for i in range(width)]
    wide = ["y" * _tables.MAX_CELL_CHARS] * width
    path = write_table(tmp_path / "root", "csv", header, [wide, ["2"] * width])
    result = ws.table_read(path.name, rows="2-3")
    kept = _tables.ROW_BUDGET // _tables.MAX_CELL_CHARS
    assert result["rows"] == [[2, *wide[:kept]]]  # row 3 would fit beside it: not taken
    assert result["notes"] == [
        f"row 2 has {width} cells, more text than an answer holds: its first {kept} are "
        "shown; pick columns with columns=[...]",
        f"stopped at {_tables.MAX_TABLE_ROWS} rows or {MAX_ANSWER_CHARS:,} chars",
    ]
    assert result["next"] == f'table_read(path="{path}", rows="3-4")'


def test_a_header_wider_than_an_answer_shows_the_names_that_fit(
    ws: Workspace, tmp_path: Path
) -> None:
    header = [f"{i:03d}" + "n" * 497 for i in range(60)]  # 60 names of 500 chars
    write_table(tmp_path / "root", "csv", header, [[str(i) for i in range(60)]])
    result = ws.table_read("data.csv", rows="2")
    fit = _tables.ROW_BUDGET // 500
    assert result["columns"] == ["row", *header[:fit]]
    assert result["notes"] == [
        f"the header row has 60 columns; the first {fit} fit in the answer and are shown: "
        "pick columns with columns=[...]"
    ]


def test_quoted_line_breaks_keep_their_bytes_and_say_rows_are_lines(
    ws: Workspace, tmp_path: Path
) -> None:
    (tmp_path / "root" / "multi.csv").write_bytes(b'a,b\r\n1,"two\r\nlines"\r\n3,x\r\n')
    result = ws.table_read("multi.csv")
    assert result["rows"] == [[1, "a", "b"], [2, "1", "two\r\nlines"], [4, "3", "x"]]
    assert result["notes"] == ["some rows hold quoted line breaks: row numbers are line numbers"]
    assert ws.table_read("multi.csv", rows="4")["notes"] == []


def test_a_sheet_whose_xml_inflates_past_the_bound_is_refused(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "root" / "numbers.xlsx"
    path.write_bytes(xlsx({"S": [["n"], *([i] for i in range(2000))]}))
    with path.open("rb") as f:
        extent = xlsx_extent(f.fileno(), None, _tables.MAX_SHEET_BYTES)
    assert extent is not None
    assert extent.strings_bytes < extent.sheet_bytes
    monkeypatch.setattr(_tables, "MAX_SHEET_BYTES", extent.sheet_bytes)  # exactly: read
    assert ws.table_read("numbers.xlsx", rows="2001")["rows"] == [[2001, 1999]]
    monkeypatch.setattr(_tables, "MAX_SHEET_BYTES", extent.sheet_bytes - 1)
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_read("numbers.xlsx")
    assert str(caught.value) == (
        f"sheet 'S' of {str(path)!r}: its XML inflate past {extent.sheet_bytes - 1:,} bytes, "
        "the most a sheet is read with; it is not read"
    )


def test_a_workbook_calamine_cannot_read_is_refused_with_its_reason(
    ws: Workspace, tmp_path: Path
) -> None:
    # A cell naming a shared string the workbook does not have.
    path = tmp_path / "root" / "broken.xlsx"
    sheet = b'<worksheet><sheetData><row r="1"><c r="A1" t="s"><v>7</v></c></row></sheetData>'
    path.write_bytes(
        replace_member(xlsx({"S": [["a"]]}), "xl/worksheets/sheet1.xml", sheet + b"</worksheet>")
    )
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_read("broken.xlsx")
    head, _, reason = str(caught.value).partition(": ")
    assert head == f"{str(path)!r} cannot be read as a workbook"
    assert "shared strings" in reason


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("all", 'rows must be "N" or "A-B", got \'all\''),
        ("2-x", 'rows must be "N" or "A-B", got \'2-x\''),
        ("0", 'rows must be "N" or "A-B" with 1 <= A <= B, got \'0\''),
        ("0-4", 'rows must be "N" or "A-B" with 1 <= A <= B, got \'0-4\''),
        ("5-3", 'rows must be "N" or "A-B" with 1 <= A <= B, got \'5-3\''),
    ],
    ids=str,
)
def test_a_bad_row_range_is_refused_with_the_syntax(
    ws: Workspace, tmp_path: Path, rows: str, message: str
) -> None:
    write_table(tmp_path / "root", "csv", HEADER, RECORDS)
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_read("data.csv", rows=rows)
    assert str(caught.value) == message


@pytest.mark.parametrize(("count", "suffix"), [(3, ""), (50, ""), (51, " (+1 more)")], ids=str)
def test_a_missing_column_names_the_header_and_how_many_more(
    ws: Workspace, tmp_path: Path, count: int, suffix: str
) -> None:
    header = [f"c{i}" for i in range(count)]
    write_table(tmp_path / "root", "csv", header, [["1"] * count])
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_read("data.csv", columns=["nope"])
    shown = ", ".join(f'"{h}"' for h in header[:50])
    assert str(caught.value) == f"no column 'nope'; the header row names: {shown}{suffix}"


@pytest.mark.parametrize(("fmt", "name"), [("csv", "CSV"), ("tsv", "TSV"), ("parquet", "Parquet")])
def test_a_sheet_of_a_table_without_sheets_is_refused_in_one_wording(
    ws: Workspace, tmp_path: Path, fmt: str, name: str
) -> None:
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    expected = f"{str(path)!r} is a {name} file: it has no sheets; leave sheet out"
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_read(path.name, sheet="Data")
    assert str(caught.value) == expected
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_query(path.name, "SELECT 1 FROM t", sheet="Data")
    assert str(caught.value) == expected


@pytest.mark.parametrize("end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_lone_cr_inside_a_line_is_a_character_of_its_row(
    ws: Workspace, tmp_path: Path, end: str
) -> None:
    path = tmp_path / "root" / "cr.csv"
    lines = ["a\rb,c", "1,2\r3", '4,"x\ry"', "5,6"]
    path.write_bytes((end.join(lines) + end).encode())
    result = ws.table_read(path.name)
    assert result["columns"] == ["row", "a\rb", "c"]
    assert result["rows"] == [[1, "a\rb", "c"], [2, "1", "2\r3"], [3, "4", "x\ry"], [4, "5", "6"]]
    assert result["total_rows"] == 4 == ws.file_read(path.name)["total_lines"]
    assert result["next"] is None
    assert ws.table_read(path.name, rows="3")["rows"] == [[3, "4", "x\ry"]]
    card = card_for(path)
    assert (card.facts["lines"], card.facts["header"], card.warnings) == (4, ["a\rb", "c"], ())


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 4 << 20])
@pytest.mark.parametrize("end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_table_query_names_the_line_of_a_cr_no_lf_follows(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str, chunk: int
) -> None:
    # DuckDB ends a row at every CR outside quotes (new_line cannot stop it): its refusal
    # names the line, found whatever the scan's chunks (a CRLF split across two is no
    # stray CR), and the tool that reads the file.
    monkeypatch.setattr(_tables, "CHUNK", chunk)
    path = tmp_path / "root" / "stray.csv"
    path.write_bytes(end.join(["a,b", "1,2", "3,x\ry", "5,6", ""]).encode())
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_query(path.name, "SELECT * FROM t")
    assert str(caught.value).startswith(f"{str(path)!r} cannot be read as a csv table: ")
    assert str(caught.value).endswith(
        ". Line 3 holds a CR that no LF follows, and DuckDB ends a row at every CR outside "
        "quotes: table_read reads this file (its rows end at LF, the CR kept in its cell), or "
        "quote that cell."
    )
    assert ws.table_read(path.name, rows="3")["rows"] == [[3, "3", "x\ry"]]
    # Quoted, DuckDB reads it.
    path.write_bytes(end.join(["a,b", "1,2", '3,"x\ry"', "5,6", ""]).encode())
    assert ws.table_query(path.name, "SELECT b FROM t WHERE a = 3")["rows"] == [["x\ry"]]


def test_an_old_mac_file_is_refused_by_table_read_and_read_by_table_query(
    ws: Workspace, tmp_path: Path
) -> None:
    path = tmp_path / "root" / "mac.csv"
    path.write_bytes(b"a,b\r1,2\r3,4\r")
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_read(path.name)
    assert str(caught.value) == (
        f"{str(path)!r} ends its lines with a lone CR (old Mac line ends), and table_read "
        "numbers rows by the LF-ended lines that file_read shows: read its records with "
        "table_query (the table is t)"
    )
    assert ws.table_query(path.name, "SELECT * FROM t")["rows"] == [[1, 2], [3, 4]]
    card = card_for(path)
    assert card.facts["lines"] == 1 == ws.file_read(path.name)["total_lines"]
    assert card.facts["header"] == ["a", "b"]
    assert card.warnings == (
        "lines end with a lone CR (old Mac line ends): file_read and table_read number lines "
        "by LF, so they see one line; table_query reads its records",
    )
    # One line ended by a CR at the very end is no old Mac file: file_read drops that CR.
    path.write_bytes(b"a,b\r")
    assert ws.table_read(path.name)["rows"] == [[1, "a", "b"]]
    assert card_for(path).warnings == ()


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16-be"])
def test_a_byte_order_mark_is_in_no_cell_and_no_column_name(
    ws: Workspace, tmp_path: Path, encoding: str
) -> None:
    path = tmp_path / "root" / "bom.csv"
    path.write_bytes("\ufeffid,name\n1,x\n".encode(encoding))
    result = ws.table_read(path.name)
    assert (result["columns"], result["rows"]) == (
        ["row", "id", "name"],
        [[1, "id", "name"], [2, "1", "x"]],
    )
    assert ws.table_read(path.name, columns=["id"])["rows"] == [[1, "id"], [2, "1"]]
    assert ws.table_query(path.name, "SELECT id FROM t")["columns"] == ["id"]
    assert card_for(path).facts["header"] == ["id", "name"]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_utf_16_tsv_has_its_card_rows_and_query(
    ws: Workspace, tmp_path: Path, encoding: str
) -> None:
    path = tmp_path / "root" / "wide.tsv"
    lines = ["id\tnäme", "1\t\U0001d11e clef", '2\t"tab\there"', '3\t"two\r\nlines"', "4\tlast"]
    path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode(encoding))
    card = card_for(path)
    assert card.facts["table"] == "tsv"
    assert card.facts["encoding"] == encoding.replace("-16-", "-16")
    assert (card.facts["delimiter"], card.facts["header"], card.facts["lines"]) == (
        "\t",
        ["id", "näme"],
        6,
    )
    assert "table_read" in card.tools
    result = ws.table_read(path.name, rows="1-3")
    assert result["columns"] == ["row", "id", "näme"]
    assert result["rows"] == [[1, "id", "näme"], [2, "1", "\U0001d11e clef"], [3, "2", "tab\there"]]
    assert (result["total_rows"], result["next"]) == (6, f'table_read(path="{path}", rows="4-6")')
    assert ws.table_read(path.name, rows="4-6")["rows"] == [
        [4, "3", "two\r\nlines"],
        [6, "4", "last"],
    ]
    queried = ws.table_query(path.name, 'SELECT "näme" FROM t WHERE id = 2')
    assert (queried["path"], queried["rows"]) == (str(path), [["tab\there"]])


def test_a_utf_16_table_is_read_and_named_by_its_own_path(ws: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "root" / "wide.csv"
    lines = ["id,name"] + [f"{i},näme {i}" for i in range(1, 6)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-16")
    result = ws.table_read(path.name, rows="2-3")
    assert result["path"] == str(path)
    assert result["rows"] == [[2, "1", "näme 1"], [3, "2", "näme 2"]]
    assert result["next"] == f'table_read(path="{path}", rows="4-5")'
    queried = ws.table_query(path.name, "SELECT name FROM t WHERE id = 4")
    assert (queried["path"], queried["rows"]) == (str(path), [["näme 4"]])
    # Errors name the file as given too, never the copy under the home.
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_query(path.name, "SELECT nope FROM t")
    assert ws.home not in str(caught.value)


@pytest.mark.parametrize("fmt", ["xlsx", "parquet"])
def test_reads_and_queries_write_only_under_the_homes_table_cache(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    ws.table_read(path.name, rows="2")
    queried = ws.table_query(path.name, "SELECT count(*) FROM t")
    assert queried["rows"] == [[len(RECORDS)]]
    assert list(cwd.iterdir()) == []
    tables = Path(ws.home) / "tables"
    assert list((tables / "scratch").iterdir()) == []  # each query's temp folder is removed
    # A workbook is queried through one CSV copy of its sheet, kept under the cache.
    assert len(list(tables.glob("*.csv"))) == (1 if fmt == "xlsx" else 0)


@pytest.mark.parametrize("fmt", ["xlsx", "ods"])
def test_a_sheets_whole_numbers_are_integers_in_sql_up_to_2_to_the_53(
    ws: Workspace, tmp_path: Path, fmt: str
) -> None:
    # A spreadsheet stores every number as a double: whole ones count exactly up to 2**53.
    edge, past = 2.0**53, 2.0**60
    rows = [["small", "edge", "past", "frac"], [1, edge, past, 0.5], [120, -edge, -past, 1.5]]
    (tmp_path / "root" / f"n.{fmt}").write_bytes((xlsx if fmt == "xlsx" else ods)({"S": rows}))
    sql = "SELECT typeof(small), typeof(edge), typeof(past), typeof(frac), * FROM t"
    result = ws.table_query(f"n.{fmt}", sql)
    assert result["rows"] == [
        ["BIGINT", "DOUBLE", "DOUBLE", "DOUBLE", 1, edge, past, 0.5],
        ["BIGINT", "DOUBLE", "DOUBLE", "DOUBLE", 120, -edge, -past, 1.5],
    ]
    assert [type(v) for v in result["rows"][0][4:]] == [int, float, float, float]


def test_typed_cells_are_shown_as_json_values(ws: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "root" / "typed.parquet"
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT DATE '2024-01-05' AS d, TIMESTAMP '2024-01-05 10:30:00' AS ts, "
        "TIME '10:30:00' AS t, INTERVAL 90 MINUTE AS iv, 12.50::DECIMAL(6,2) AS dec, "
        "'\\x00\\xff'::BLOB AS b, true AS flag, NULL::INTEGER AS n, 'x' AS s) "
        f"TO '{path}' (FORMAT parquet)"
    )
    con.close()
    cells = ["2024-01-05", "2024-01-05T10:30:00", "10:30:00", "1:30:00", "12.50", "00ff", True]
    cells += [None, "x"]
    assert ws.table_read(path.name)["rows"] == [[1, *cells]]
    assert ws.table_query(path.name, "SELECT * FROM t")["rows"] == [cells]
    json.dumps(ws.table_read(path.name))


def test_a_query_that_fails_says_why_and_names_the_columns(ws: Workspace, tmp_path: Path) -> None:
    header = [f"c{i}" for i in range(60)]
    write_table(tmp_path / "root", "csv", header, [[str(i) for i in range(60)]])
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_query("data.csv", "SELECT price FROM t")
    head, _, columns = str(caught.value).partition("; the table is t with columns ")
    assert head.startswith("query failed: ")
    assert "price" in head  # DuckDB's own reason
    assert columns == ", ".join(f'"{h}"' for h in header[:50])


def test_a_table_duckdb_cannot_read_is_refused_with_its_reason(
    ws: Workspace, tmp_path: Path
) -> None:
    path = tmp_path / "root" / "junk.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 100 + b"PAR1")
    with pytest.raises(WrongFileTypeError) as caught:
        ws.table_query(path.name, "SELECT count(*) FROM t")
    head, _, reason = str(caught.value).partition(" cannot be read as a parquet table: ")
    assert head == repr(str(path))
    assert str(path) in reason


def test_a_query_running_past_the_time_bound_is_stopped(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tables, "MAX_QUERY_SECONDS", 1.0)
    write_table(tmp_path / "root", "csv", ["n"], [[i] for i in range(3000)])
    sql = "SELECT sum(a.n * b.n * c.n) FROM t AS a, t AS b, t AS c"  # 2.7e10 rows
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_query("data.csv", sql)
    assert str(caught.value) == (
        "the query ran over 1s and was stopped; aggregate or filter more (GROUP BY, WHERE, LIMIT)"
    )


def test_a_query_answer_fills_the_bound_exactly_and_says_so(ws: Workspace, tmp_path: Path) -> None:
    # A 250-char column name and values of 250 chars: 159 rows fill the answer exactly.
    write_table(tmp_path / "root", "csv", ["v"], [[f"{i:03d}" + "v" * 247] for i in range(300)])
    name = "h" * 250
    result = ws.table_query("data.csv", f'SELECT v AS "{name}" FROM t ORDER BY v')
    assert result["columns"] == [name]
    assert len(result["rows"]) == (MAX_ANSWER_CHARS - 250) // 250
    assert result["notes"] == [
        f"stopped at {MAX_ANSWER_CHARS:,} chars; aggregate or select fewer columns",
        f"only the first {_tables.MAX_QUERY_ROWS} result rows are shown; add LIMIT/OFFSET or "
        "aggregate",
    ]


def test_a_result_wider_than_an_answer_shows_the_columns_that_fit(
    ws: Workspace, tmp_path: Path
) -> None:
    header = [f"{i:03d}" + "n" * 497 for i in range(60)]
    write_table(tmp_path / "root", "csv", header, [[str(i) for i in range(60)]])
    result = ws.table_query("data.csv", "SELECT * FROM t")
    fit = _tables.ROW_BUDGET // 500
    assert result["columns"] == header[:fit]
    assert result["notes"] == [
        f"the result has 60 columns; the first {fit} fit in the answer and are shown: select "
        "fewer columns"
    ]


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_a_query_answer_is_the_whole_record(ws: Workspace, tmp_path: Path, fmt: str) -> None:
    path = write_table(tmp_path / "root", fmt, HEADER, RECORDS)
    sql = "SELECT id, city FROM t WHERE id <= 2 ORDER BY id"
    expected: dict[str, Any] = {"path": str(path), "format": fmt}
    if fmt == "xlsx":
        expected["sheet"] = "Data"
    expected |= {
        "sql": sql,
        "columns": ["id", "city"],
        "rows": [[1, "city 1"], [2, "city 2"]],
        "truncated": False,
        "notes": [],
    }
    assert ws.table_query(path.name, sql) == expected
    assert ws.table_query(path.name, "SELECT * FROM t LIMIT 200")["notes"] == []


def test_a_result_row_wider_than_an_answer_is_cut_and_ends_the_answer(
    ws: Workspace, tmp_path: Path
) -> None:
    width = 2 * _tables.ROW_BUDGET // _tables.MAX_CELL_CHARS
    header = [f"c{i:02d}" for i in range(width)]
    exact = ["x" * (_tables.ROW_BUDGET // width)] * width  # exactly ROW_BUDGET chars
    wide = ["y" * _tables.MAX_CELL_CHARS] * width
    write_table(tmp_path / "root", "csv", ["k", *header], [["1", *exact], ["2", *wide]])
    shown = ws.table_query("data.csv", f"SELECT {', '.join(header)} FROM t WHERE k = 1")
    assert (shown["rows"], shown["notes"]) == ([exact], [])
    result = ws.table_query("data.csv", f"SELECT {', '.join(header)} FROM t ORDER BY k DESC")
    fit = _tables.ROW_BUDGET // _tables.MAX_CELL_CHARS
    assert result["rows"] == [wide[:fit]]  # and the row after it is not taken
    assert result["notes"] == [
        f"a result row holds more text than an answer: its first {fit} values are shown; "
        "select fewer columns"
    ]
    assert result["truncated"] is True
