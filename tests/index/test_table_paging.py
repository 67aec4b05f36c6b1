"""Paging through a CSV with table_read's next calls visits every record once, in order,
numbered by the line it starts on, whatever the line ends, byte order mark, encoding and
quoted line breaks; the card's line count, file_read's and table_read's totals agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanreplay.cards import card_for
from leanreplay.index import Workspace
from leanreplay.index.tools import _tables

# Cells with the characters that matter to a CSV reader: delimiters, quotes, line breaks.
_cell = st.text(alphabet=st.sampled_from('ab é,"\n\r'), max_size=6)
_records = st.lists(st.lists(_cell, min_size=2, max_size=2), min_size=1, max_size=12)


def line(record: list[str], end: str) -> str:
    """One record as a CSV line: a cell is quoted when it holds a delimiter, a quote or a LF,
    or ends with a CR (before the line end it would read as a CRLF); a lone CR elsewhere is
    left bare, as Python's csv writer leaves it."""

    def cell(c: str) -> str:
        if any(ch in c for ch in ',"\n') or c.endswith("\r"):
            return '"' + c.replace('"', '""') + '"'
        return c

    return ",".join(map(cell, record)) + end


def write_csv(path: Path, records: list[list[str]], end: str, bom: bool, encoding: str) -> None:
    text = "".join(line(r, end) for r in records)
    path.write_bytes((("\ufeff" if bom else "") + text).encode(encoding))


def starts(records: list[list[str]], end: str) -> list[int]:
    """The line each record starts on: one more than the LFs written before it."""
    out, number = [], 1
    for record in records:
        out.append(number)
        number += line(record, end).count("\n")
    return out


def page(ws: Workspace, name: str, rows: str) -> list[list[Any]]:
    seen: list[list[Any]] = []
    call: str | None = rows
    for _ in range(100):
        if call is None:
            return seen
        result = ws.table_read(name, rows=call)
        seen += result["rows"]
        nxt = result["next"]
        call = None if nxt is None else nxt.split('rows="')[1].split('"')[0]
    raise AssertionError(f"no end of the next calls after {seen}")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "root").mkdir()
    return Workspace(tmp_path / "home", [tmp_path / "root"])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    records=_records,
    end=st.sampled_from(["\n", "\r\n"]),
    bom=st.booleans(),
    encoding=st.sampled_from(["utf-8", "utf-16-le", "utf-16-be"]),
    width=st.integers(min_value=1, max_value=5),
    small_reads=st.booleans(),
)
def test_next_calls_visit_every_record_once_in_order(
    ws: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    records: list[list[str]],
    end: str,
    bom: bool,
    encoding: str,
    width: int,
    small_reads: bool,
) -> None:
    if encoding != "utf-8":
        bom = True  # a UTF-16 file is known by its byte order mark
    # Reads of a few bytes at a time within a small budget, and a record's end looked for a
    # few bytes at a time: records and their quotes cross all three.
    monkeypatch.setattr(_tables, "_ROWS_CHUNK", 7 if small_reads else 64 * 1024)
    monkeypatch.setattr(_tables, "MAX_CSV_SCAN_BYTES", 40 if small_reads else 8 * 1024 * 1024)
    monkeypatch.setattr(_tables, "CHUNK", 5 if small_reads else 4 * 1024 * 1024)
    path = tmp_path / "root" / "paged.csv"
    write_csv(path, records, end, bom, encoding)
    seen = page(ws, path.name, f"1-{width}")
    assert seen == [[n, *r] for n, r in zip(starts(records, end), records, strict=True)]
    total = ws.table_read(path.name, rows="1")["total_rows"]
    assert total == ws.file_read(path.name)["total_lines"] == card_for(path).facts["lines"]


@pytest.mark.parametrize("k", range(6))
def test_an_escaped_quote_split_between_two_reads_keeps_the_field_open(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    # The record's end is looked for 5 bytes at a time past the line asked for: the "" falls
    # on every position of a read, and across two.
    monkeypatch.setattr(_tables, "CHUNK", 5)
    path = tmp_path / "root" / "split.csv"
    path.write_text('a,b\n1,"x\n' + "y" * k + '""z\nw"\n5,6\n')
    result = ws.table_read(path.name, rows="2")
    assert result["rows"] == [[2, "1", "x\n" + "y" * k + '"z\nw']]
    assert result["next"] == f'table_read(path="{path}", rows="5-5")'


def test_a_quote_inside_a_bare_field_is_a_character_and_opens_nothing(
    ws: Workspace, tmp_path: Path
) -> None:
    path = tmp_path / "root" / "bare.csv"
    path.write_text('a,b\n1,x"y\n3,4\n5,"6"\n')
    result = ws.table_read(path.name, rows="2")
    assert (result["rows"], result["next"]) == (
        [[2, "1", 'x"y']],
        f'table_read(path="{path}", rows="3-3")',
    )
    assert page(ws, path.name, "1-1") == [
        [1, "a", "b"],
        [2, "1", 'x"y'],
        [3, "3", "4"],
        [4, "5", "6"],
    ]
