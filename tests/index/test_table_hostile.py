"""Hostile tables (round 3 of the red team): a sparse sheet whose cells span a huge range, a
shared-strings bomb, rows wider than an answer, an xlsx named .csv, junk Parquet."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace, WrongFileTypeError
from leanreplay.index._limits import MAX_ANSWER_CHARS
from leanreplay.index.tools import _tables
from tests.conftest import REPO
from tests.filetools import root
from tests.officegen import xlsx


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "root").mkdir()
    return Workspace(tmp_path / "home", [tmp_path / "root"])


def _with_sheet(data: bytes, edit: Any) -> bytes:
    """The workbook ``data`` with its first sheet's XML passed through ``edit``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                body = edit(body.decode()).encode()
            dst.writestr(info.filename, body, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _answer_chars(result: dict[str, Any]) -> int:
    return sum(len(str(c)) for c in result["columns"]) + sum(
        len(str(c)) for row in result["rows"] for c in row
    )


def test_a_sparse_sheet_spanning_a_huge_range_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    # Two cells, A1 and XFD1048576: calamine holds the range between them densely and
    # asked for 512 GiB, which aborted the whole process. Run in a child: before the check,
    # the abort would take the test runner with it.
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "sparse.xlsx").write_bytes(
        _with_sheet(
            xlsx({"S": [["a", "b"], [1, 2]]}),
            lambda xml: xml.replace(
                "</sheetData>",
                '<row r="1048576"><c r="XFD1048576"><v>1</v></c></row></sheetData>',
            ),
        )
    )
    code = (
        "import sys\nfrom leanreplay.index import Workspace, WrongFileTypeError\n"
        f"ws = Workspace({str(tmp_path / 'home')!r}, [{str(folder)!r}])\n"
        "for call in (lambda: ws.table_read('sparse.xlsx'),\n"
        "             lambda: ws.table_query('sparse.xlsx', 'SELECT count(*) FROM t')):\n"
        "    try:\n        call()\n    except WrongFileTypeError as exc:\n        print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert "sheet 'S' of" in line
        assert "spans 1,048,576 rows x 16,384 columns" in line
        assert f"over the {_tables.MAX_SHEET_CELLS:,} a sheet may span" in line


def test_a_shared_strings_bomb_is_refused(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tables, "MAX_SHEET_BYTES", 64 * 1024)
    rows = [["name"], *([f"{i:06d}" + "x" * 200] for i in range(1000))]
    (root(ws) / "strings.xlsx").write_bytes(xlsx({"S": rows}))
    with pytest.raises(WrongFileTypeError, match="shared strings inflate past 65,536 bytes"):
        ws.table_read("strings.xlsx")
    with pytest.raises(WrongFileTypeError, match="shared strings inflate past"):
        ws.table_query("strings.xlsx", "SELECT count(*) FROM t")
    monkeypatch.setattr(_tables, "MAX_SHEET_BYTES", 1024 * 1024)
    assert ws.table_read("strings.xlsx", rows="2")["rows"][0][1].startswith("000000x")


def test_a_wide_csv_row_is_cut_at_the_answer_bound(ws: Workspace) -> None:
    wide = ",".join(f"c{i:05d}" + "v" * 100 for i in range(2000))
    (root(ws) / "wide.csv").write_text(wide + "\n" + wide + "\n")
    result = ws.table_read("wide.csv")
    assert _answer_chars(result) <= MAX_ANSWER_CHARS
    assert any("the header row has" in n and "pick columns" in n for n in result["notes"])
    assert any("row 1 has 2,000 cells" in n for n in result["notes"])
    assert result["next"] is not None
    queried = ws.table_query("wide.csv", "SELECT * FROM t")
    assert _answer_chars(queried) <= MAX_ANSWER_CHARS
    assert any("the result has 2,000 columns" in n for n in queried["notes"])


def test_an_xlsx_named_csv_answers_within_the_bound(ws: Workspace) -> None:
    # Read as the workbook it is, whatever its name; its wide rows are cut like a CSV's.
    rows = [["x" * 400 + str(c) for c in range(300)] for _ in range(3)]
    (root(ws) / "book.csv").write_bytes(xlsx({"S": rows}))
    result = ws.table_read("book.csv")
    assert result["format"] == "xlsx"
    assert _answer_chars(result) <= MAX_ANSWER_CHARS
    assert any("row 1 has 300 cells" in n for n in result["notes"])
    queried = ws.table_query("book.csv", "SELECT * FROM t")
    assert _answer_chars(queried) <= MAX_ANSWER_CHARS


@pytest.mark.parametrize("body", [b"PAR1" + b"\x00" * 100 + b"PAR1", b"PAR1junk" * 40])
def test_junk_parquet_answers_the_librarys_error(ws: Workspace, body: bytes) -> None:
    (root(ws) / "junk.parquet").write_bytes(body)
    for call in (
        lambda: ws.table_read("junk.parquet"),
        lambda: ws.table_query("junk.parquet", "SELECT count(*) FROM t"),
    ):
        with pytest.raises(WrongFileTypeError) as caught:
            call()
        text = str(caught.value)
        assert "junk.parquet" in text
        assert "/proc/" not in text, text
        assert "/dev/fd" not in text, text


def test_one_giant_cell_is_read_and_cut(ws: Workspace) -> None:
    # 3 MiB of one inline string: whole chunks of the sheet's XML hold no cell reference.
    giant = "x" * (3 * 1024 * 1024)
    (root(ws) / "giant.xlsx").write_bytes(
        _with_sheet(
            xlsx({"S": [["a"], [1]]}),
            lambda xml: xml.replace(
                "</sheetData>",
                f'<row r="3"><c r="A3" t="inlineStr"><is><t>{giant}</t></is></c></row></sheetData>',
            ),
        )
    )
    result = ws.table_read("giant.xlsx", rows="3")
    assert result["rows"] == [[3, "x" * _tables.MAX_CELL_CHARS + " [... cell cut]"]]
    # DuckDB reads lines of at most 2 MB: the query is refused in the library's words.
    with pytest.raises(WrongFileTypeError, match="cannot be read as a xlsx table"):
        ws.table_query("giant.xlsx", "SELECT * FROM t")


def test_a_cell_past_the_bound_is_refused_before_it_is_read(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 300 MB cell took calamine past 2 GiB: a cell is checked on the XML's runs of text.
    monkeypatch.setattr(_tables, "MAX_SHEET_CELL_BYTES", 2 * 1024 * 1024)
    giant = "y" * (3 * 1024 * 1024)
    inline = _with_sheet(
        xlsx({"S": [["a"]]}),
        lambda xml: xml.replace(
            "</sheetData>",
            f'<row r="2"><c r="A2" t="inlineStr"><is><t>{giant}</t></is></c></row></sheetData>',
        ),
    )
    for name, data in (("inline.xlsx", inline), ("shared.xlsx", xlsx({"S": [["a"], [giant]]}))):
        (root(ws) / name).write_bytes(data)
        with pytest.raises(WrongFileTypeError, match="holds a cell of over 2,097,152 bytes"):
            ws.table_read(name)
