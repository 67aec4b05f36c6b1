"""Table cards: CSV/TSV header and delimiter, workbook sheets, Parquet footers, checked against
independent readers (csv, python-calamine, DuckDB) and against hostile workbooks."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import duckdb
import pytest
import python_calamine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanreplay.cards import card_for
from leanreplay.cards._table import MAX_HEADER_COLUMNS, MAX_XML_BYTES
from tests import officegen
from tests.conftest import SAMPLES
from tests.filetools import replace_member


@pytest.mark.parametrize("name", ["sales.xlsx", "sales.ods"], ids=str)
def test_sheet_names_and_headers_agree_with_calamine(name: str) -> None:
    workbook = python_calamine.CalamineWorkbook.from_path(str(SAMPLES / name))
    sheets = card_for(SAMPLES / name).facts["sheets"]
    assert [s["name"] for s in sheets] == workbook.sheet_names
    for sheet in sheets:
        data = workbook.get_sheet_by_name(sheet["name"])
        rows = data.to_python()
        assert sheet["header"] == [str(c) for c in rows[0]]
        if "rows" in sheet:
            assert (sheet["rows"], sheet["columns"]) == (data.height, data.width)


def test_parquet_facts_agree_with_duckdb() -> None:
    path = str(SAMPLES / "sales.parquet")
    con = duckdb.connect()
    (rows,) = con.execute("select count(*) from read_parquet(?)", [path]).fetchone() or (0,)
    names = [d[0] for d in con.execute("select * from read_parquet(?) limit 0", [path]).description]
    facts = card_for(path).facts
    assert (facts["rows"], facts["header"], facts["columns"]) == (rows, names, len(names))


_cell = st.text(
    alphabet=st.characters(whitelist_categories=("L", "N"), whitelist_characters=" _-\"'"),
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() == s)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.lists(_cell, min_size=2, max_size=8),
    delimiter=st.sampled_from([",", ";", "|", "\t"]),
    rows=st.integers(min_value=1, max_value=5),
    terminator=st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_csv_header_and_delimiter_round_trip(
    tmp_path: Path, header: list[str], delimiter: str, rows: int, terminator: str
) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator=terminator)
    writer.writerow(header)
    for i in range(rows):
        writer.writerow([f"v{i}{j}" for j in range(len(header))])
    path = tmp_path / "data.csv"
    path.write_bytes(buf.getvalue().encode())  # the line endings as written
    facts = card_for(path).facts
    assert facts["table"] == "csv"
    assert facts["delimiter"] == delimiter
    assert facts["header"] == header
    assert facts["columns"] == len(header)


def test_wide_header_is_cut_but_counted(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(300)) + "\n" + ",".join("1" * 300) + "\n")
    facts = card_for(path).facts
    assert facts["columns"] == 300
    assert len(facts["header"]) == MAX_HEADER_COLUMNS


def test_xlsx_without_dimension_has_no_rows_fact(tmp_path: Path) -> None:
    path = tmp_path / "nodim.xlsx"
    path.write_bytes(officegen.xlsx({"S": [["a", "b"], [1, 2]]}, dimension=False))
    (sheet,) = card_for(path).facts["sheets"]
    assert sheet == {"name": "S", "header": ["a", "b"]}


def test_entity_bomb_in_a_workbook_is_refused(tmp_path: Path) -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + b"".join(
            f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i else "&lol;" * 10}">'.encode()
            for i in range(10)
        )
        + b']><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        b'<sheets><sheet name="&lol9;"/></sheets></workbook>'
    )
    path = tmp_path / "bomb.xlsx"
    path.write_bytes(replace_member(officegen.xlsx({"S": [["a"]]}), "xl/workbook.xml", bomb))
    card = card_for(path)
    assert "sheets" not in card.facts
    assert any("refused" in w for w in card.warnings)


def test_zip_bomb_sheet_reads_a_bounded_amount(tmp_path: Path) -> None:
    # 64 MiB of spaces inside the sheet compresses to about 64 KiB.
    pad = b" " * (64 * 1024 * 1024)
    sheet = (
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        + pad
        + b"<sheetData/></worksheet>"
    )
    path = tmp_path / "zipbomb.xlsx"
    path.write_bytes(
        replace_member(officegen.xlsx({"S": [["a"]]}), "xl/worksheets/sheet1.xml", sheet)
    )
    assert len(pad) > MAX_XML_BYTES
    card = card_for(path)  # returns; the budget ends the stream long before the pad does
    assert card.kind == "document"
    assert any("reading budget" in w for w in card.warnings)


def test_truncated_parquet_gets_a_warning(tmp_path: Path) -> None:
    data = (SAMPLES / "sales.parquet").read_bytes()
    path = tmp_path / "cut.parquet"
    path.write_bytes(data[: len(data) // 2])
    card = card_for(path)
    assert card.facts == {"table": "parquet"}
    assert any("footer" in w for w in card.warnings)


@pytest.mark.parametrize("cut", [9, 40, 120, 300])
def test_corrupt_parquet_footer_gets_a_warning(tmp_path: Path, cut: int) -> None:
    data = bytearray((SAMPLES / "sales.parquet").read_bytes())
    footer_len = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer_len
    data[start + cut % footer_len : start + cut % footer_len + 8] = b"\xff" * 8
    path = tmp_path / "bad.parquet"
    path.write_bytes(bytes(data))
    card = card_for(path)  # never raises: a broken footer is a warning or partial facts
    assert card.facts["table"] == "parquet"


def _varint(n: int) -> bytes:
    out = b""
    while n > 0x7F:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


@pytest.mark.parametrize("nested", [False, True])
def test_a_parquet_list_claiming_more_elements_than_bytes_left_is_refused(
    tmp_path: Path, nested: bool
) -> None:
    # A list of booleans: each element is a byte of its own (read as 0 bytes, a claimed
    # length was bounded by the whole footer, and nested lists multiplied it: 38 s, 3 GB).
    if nested:  # a list of 300 lists, each claiming 300 booleans: 90,000 elements, 1.5 KB
        inner = b"\xf1" + _varint(300)
        footer = b"\x19\xf9" + _varint(300) + inner * 300
    else:
        footer = b"\x19\xf1" + _varint(197) + b"\x01" * 150
    footer += b"\x00" * (200 - len(footer)) if len(footer) < 200 else b""
    path = tmp_path / "lists.parquet"
    path.write_bytes(b"PAR1" + footer + len(footer).to_bytes(4, "little") + b"PAR1")
    card = card_for(path)
    assert card.facts == {"table": "parquet"}
    assert any("list longer than the rest of the footer" in w for w in card.warnings)
