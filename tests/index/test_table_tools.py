"""table_read and table_query: row numbering, bounds, next calls, sheets, read-only SQL that
cannot reach any other file."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanreplay.index import (
    InvalidArgumentError,
    OutsideRootsError,
    Workspace,
    WrongFileTypeError,
)
from leanreplay.index._tools import call_tool
from leanreplay.index.tools import _duck, _tables
from leanreplay.index.tools._lines import BLOCK
from leanreplay.index.tools._tables import MAX_QUERY_ROWS, MAX_TABLE_ROWS
from tests.conftest import SAMPLES
from tests.filetools import root, sample_workspace
from tests.make_samples import NOTES, SALES


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return sample_workspace(
        tmp_path, ("table.csv", "cities.tsv", "sales.xlsx", "sales.ods", "sales.parquet")
    )


def big_csv(ws: Workspace, rows: int) -> tuple[str, list[list[str]]]:
    """A CSV spanning many line-index blocks, with quoted delimiters; returns name and rows."""
    data = [["id", "name", "note"]] + [
        [str(i), f"name {i}", f"a, b {i % 7}" if i % 3 == 0 else "plain"] for i in range(rows)
    ]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(data)
    (root(ws) / "big.csv").write_text(buf.getvalue())
    return "big.csv", data


def test_csv_rows_are_numbered_by_line_with_the_header_as_row_1(ws: Workspace) -> None:
    result = ws.table_read("table.csv")
    assert result["columns"] == ["row", "id", "name", "amount"]
    assert result["rows"] == [
        [1, "id", "name", "amount"],
        [2, "1", "alpha", "10.5"],
        [3, "2", "bravo", "20"],
        [4, "3", "charlie", "7"],
    ]
    assert result["total_rows"] == 4
    assert result["next"] is None


def test_csv_columns_by_header_name(ws: Workspace) -> None:
    result = ws.table_read("cities.tsv", rows="2-3", columns=["population", "city"])
    assert result["columns"] == ["row", "population", "city"]
    assert result["rows"] == [[2, "9039000", "Tehran"], [3, "522250", "Lyon"]]


def test_unknown_column_lists_the_header(ws: Workspace) -> None:
    with pytest.raises(InvalidArgumentError, match=r'no column .*"id", "name", "amount"'):
        ws.table_read("table.csv", columns=["price"])


def test_middle_rows_of_a_large_csv_match_the_csv_module(ws: Workspace) -> None:
    name, data = big_csv(ws, 120_000)
    assert (root(ws) / name).stat().st_size > 8 * BLOCK
    result = ws.table_read(name, rows="70001-70050")
    assert result["rows"] == [[70000 + i + 1, *data[70000 + i]] for i in range(50)]
    again = ws.table_read(name, rows="70001-70050")  # through the persisted line index
    assert again["rows"] == result["rows"]
    assert result["next"] == f'table_read(path="{root(ws) / name}", rows="70051-70100")'


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(start=st.integers(min_value=1, max_value=400), width=st.integers(min_value=1, max_value=90))
def test_following_next_calls_visits_every_row_once(ws: Workspace, start: int, width: int) -> None:
    name, data = big_csv(ws, 400)
    seen: list[int] = []
    call: dict[str, Any] | None = {"path": name, "rows": f"{start}-{start + width - 1}"}
    while call is not None and len(seen) < 1000:
        result = ws.table_read(**call)
        seen += [r[0] for r in result["rows"]]
        nxt = result["next"]
        call = None
        if nxt is not None:
            rows = nxt.split('rows="')[1].split('"')[0]
            call = {"path": name, "rows": rows}
    assert seen == list(range(start, len(data) + 1))


def test_a_range_wider_than_a_read_window_of_wide_rows_is_exact(ws: Workspace) -> None:
    """Rows of 1 KB: rows 300-450 span several 64 KiB windows of the file; every row comes
    back once, numbered by line, as the csv module reads it (followed through next)."""
    data = [["id", "a", "b", "c", "d", "quoted"]] + [
        [str(i), *(f"{i:04d}{c}" * 50 for c in "wxyz"), f"a, {i}" if i % 5 == 0 else "b"]
        for i in range(600)
    ]  # 4 cells of 250 chars: under MAX_CELL_CHARS, a row of about 1 KB
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(data)
    (root(ws) / "wide.csv").write_text(buf.getvalue())
    assert 150 * 1000 > 2 * 64 * 1024
    got: list[list[Any]] = []
    call: dict[str, Any] | None = {"path": "wide.csv", "rows": "300-450"}
    while call is not None:
        result = ws.table_read(**call)
        got += result["rows"]
        nxt = result["next"]
        call = None
        if nxt is not None and got[-1][0] < 450:
            call = {"path": "wide.csv", "rows": f"{got[-1][0] + 1}-450"}
    assert got == [[n, *data[n - 1]] for n in range(300, 451)]
    # Two narrow columns: the answer is small, the rows read span 150 KB of the file at once.
    narrow = ws.table_read("wide.csv", rows="300-450", columns=["id", "quoted"])
    assert narrow["rows"] == [[n, data[n - 1][0], data[n - 1][5]] for n in range(300, 451)]
    assert narrow["next"] == f'table_read(path="{root(ws) / "wide.csv"}", rows="451-601", ' + (
        'columns=["id", "quoted"])'
    )


@pytest.mark.parametrize("name", ["sales.xlsx", "sales.ods"], ids=str)
def test_a_query_on_a_named_sheet_reads_that_sheet(ws: Workspace, name: str) -> None:
    notes = ws.table_query(name, "SELECT * FROM t", sheet="Notes")
    assert [list(r) for r in notes["rows"]] == [list(r) for r in NOTES[1:]]
    first = ws.table_query(name, "SELECT * FROM t")
    assert [list(r) for r in first["rows"]] == [list(r) for r in SALES[1:]]


def test_row_past_the_end_says_how_many_rows(ws: Workspace) -> None:
    with pytest.raises(InvalidArgumentError, match="past the end"):
        ws.table_read("table.csv", rows="9-10")
    with pytest.raises(InvalidArgumentError, match="has 6 rows"):
        ws.table_read("sales.xlsx", rows="7")


def test_quoted_line_breaks_keep_line_numbers(ws: Workspace) -> None:
    (root(ws) / "multi.csv").write_text('a,b\n1,"two\nlines"\n3,x\n')
    result = ws.table_read("multi.csv")
    assert result["rows"] == [[1, "a", "b"], [2, "1", "two\nlines"], [4, "3", "x"]]


@pytest.mark.parametrize("name", ["sales.xlsx", "sales.ods"], ids=str)
def test_workbook_sheets_read_as_the_spreadsheet_numbers_them(ws: Workspace, name: str) -> None:
    result = ws.table_read(name)
    assert result["sheet"] == "Sales"
    assert result["sheets"] == ["Sales", "Notes"]
    assert result["rows"] == [[i, *row] for i, row in enumerate(SALES, start=1)]
    notes = ws.table_read(name, sheet="Notes", rows="2-3")
    assert notes["rows"] == [[2, *NOTES[1]], [3, *NOTES[2]]]
    with pytest.raises(InvalidArgumentError, match=r'no sheet .*"Sales", "Notes"'):
        ws.table_read(name, sheet="Missing")


def test_parquet_rows_start_at_the_first_record(ws: Workspace) -> None:
    result = ws.table_read("sales.parquet", rows="2-3", columns=["amount", "region"])
    assert result["rows"] == [[2, 80.5, "south"], [3, 140, "north"]]
    assert result["total_rows"] == 5


def test_long_reads_stop_at_the_row_bound_with_next(ws: Workspace) -> None:
    name, _ = big_csv(ws, 1000)
    result = ws.table_read(name, rows="1-900")
    assert len(result["rows"]) == MAX_TABLE_ROWS
    assert result["next"] is not None
    assert f'rows="{MAX_TABLE_ROWS + 1}-' in result["next"]


def test_a_non_table_is_refused_with_the_tools_that_read_it(ws: Workspace) -> None:
    shutil.copy(SAMPLES / "red_64x48.png", root(ws) / "img.png")
    with pytest.raises(WrongFileTypeError, match="not a table.*image_view"):
        ws.table_read("img.png")


@pytest.mark.parametrize("name", ["table.csv", "sales.xlsx", "sales.ods", "sales.parquet"])
def test_group_by_agrees_with_python(ws: Workspace, name: str) -> None:
    if name == "table.csv":
        sql, expected = "SELECT sum(amount) FROM t", [[37.5]]
    else:
        sql = "SELECT region, sum(amount) AS total FROM t GROUP BY region ORDER BY region"
        totals: dict[str, float] = {}
        for region, _, amount in SALES[1:]:
            assert isinstance(region, str)
            assert isinstance(amount, int | float)
            totals[region] = totals.get(region, 0) + amount
        expected = [[r, totals[r]] for r in sorted(totals)]
    result = ws.table_query(name, sql)
    assert result["rows"] == expected
    assert result["truncated"] is False


def test_a_query_cannot_read_other_files(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    for sql, what in (
        ("SELECT * FROM read_csv('/etc/passwd')", "the table function read_csv()"),
        (f"SELECT * FROM read_csv('{secret}')", "the table function read_csv()"),
        ("SELECT * FROM read_text('/etc/hostname')", "the table function read_text()"),
        ("SELECT * FROM glob('/etc/*')", "the table function glob()"),
        (f"SELECT * FROM '{secret}'", f'the table "{secret}"'),
    ):
        with pytest.raises(InvalidArgumentError) as refused:
            ws.table_query("table.csv", sql)
        assert str(refused.value).startswith(
            f"table_query reads only the view t: {what} is not allowed; query t (columns "
        ), str(refused.value)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("COPY t TO 'out.csv'", "only SELECT is allowed, got COPY"),
        (f"COPY (SELECT 1) TO '{SAMPLES / 'table.csv'}'", "only SELECT"),
        ("ATTACH 'x.db'", "only SELECT"),
        ("SET enable_external_access = true", "only SELECT"),
        ("INSTALL httpfs", "only SELECT"),
        ("SELECT 1; SELECT 2", "exactly one statement, got 2"),
        ("SELEC amount FROM t", "does not parse"),
        ("SELECT price FROM t", r'query failed.*columns "id", "name", "amount"'),
    ],
    ids=str,
)
def test_only_one_select_runs(ws: Workspace, sql: str, message: str) -> None:
    before = (root(ws) / "table.csv").read_bytes()
    with pytest.raises(InvalidArgumentError, match=message):
        ws.table_query("table.csv", sql)
    assert (root(ws) / "table.csv").read_bytes() == before


def test_result_rows_are_bounded_with_a_note(ws: Workspace) -> None:
    name, _ = big_csv(ws, 1000)
    result = ws.table_query(name, "SELECT id FROM t ORDER BY id")
    assert len(result["rows"]) == MAX_QUERY_ROWS
    assert result["truncated"] is True
    assert any("LIMIT" in n for n in result["notes"])


def test_confinement_is_checked_before_the_query(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n")
    with pytest.raises(OutsideRootsError):
        ws.table_query(str(outside), "SELECT * FROM t")
    (root(ws) / "link.csv").symlink_to(outside)
    with pytest.raises(OutsideRootsError):
        ws.table_read("link.csv")


def test_tools_run_through_the_one_definition(ws: Workspace) -> None:
    result = call_tool(ws, "table_query", {"path": "sales.xlsx", "sql": "SELECT count(*) FROM t"})
    assert result["rows"] == [[5]]
    with pytest.raises(InvalidArgumentError, match="rows"):
        call_tool(ws, "table_read", {"path": "table.csv", "rows": "all"})
    json.dumps(ws.table_read("sales.parquet"))  # JSON-ready


def test_the_copy_builder_yields_to_queries_across_sessions() -> None:
    # The builder runs in a session of its own. Under Linux's autogroup a nice value counts
    # only inside its session's group, so the group must be niced too, or the builder takes
    # a core from the query it was meant to yield to.
    code = (
        "import os\n"
        "from leanreplay.index.tools import _duckcopy\n"
        "_duckcopy.lowest_priority()\n"
        "group = ''\n"
        "if os.path.exists('/proc/self/autogroup'):\n"
        "    group = open('/proc/self/autogroup').read().split()[-1]\n"
        "print(os.nice(0), group)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, start_new_session=True
    )
    assert run.returncode == 0, run.stderr
    nice, *group = run.stdout.split()
    assert nice == "19"
    if os.path.exists("/proc/self/autogroup"):
        assert group == ["19"]


@pytest.fixture
def builders_waited_for() -> Iterator[None]:
    """Waits for every copy builder the test started: a builder left behind is a child a
    later ``os.wait()`` of the test runner's process reaps (mutmut's, which took it for one of
    its workers and crashed)."""
    yield
    for target, pid in list(_duck._builds.items()):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        _duck._builds.pop(target, None)


@pytest.mark.usefixtures("builders_waited_for")
def test_large_text_tables_get_a_columnar_copy_in_the_background(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tables, "COPY_MIN_BYTES", 0)  # every text table counts as large
    name, _ = big_csv(ws, 300)
    sql = "SELECT count(*) AS n, max(id) AS top FROM t"
    assert ws.table_query(name, sql)["rows"] == [[300, 299]]  # scans in place, starts the copy
    tables = Path(ws.home) / "tables"
    cached = wait_for_copy(tables)
    assert ws.table_query(name, sql)["rows"] == [[300, 299]]
    stamp = cached.stat().st_mtime_ns
    assert ws.table_query(name, "SELECT name FROM t WHERE id = 7")["rows"] == [["name 7"]]
    assert cached.stat().st_mtime_ns == stamp  # reused
    with pytest.raises(InvalidArgumentError, match="reads only the view t"):
        ws.table_query(name, "SELECT * FROM read_csv('/etc/passwd')")
    with pytest.raises(InvalidArgumentError, match="only SELECT"):
        ws.table_query(name, "DROP TABLE t")
    big_csv(ws, 10)  # the file changes: a new copy, never the stale one
    assert ws.table_query(name, sql)["rows"] == [[10, 9]]
    assert ws.table_query(name, sql)["rows"] == [[10, 9]]
    assert wait_for_copy(tables, 2) != cached
    assert ws.table_query(name, sql)["rows"] == [[10, 9]]
    assert ws.table_query("sales.xlsx", "SELECT count(*) FROM t")["rows"] == [[5]]


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch, builders_waited_for: None) -> Iterator[None]:
    """Every text table counts as large, and no copy is open before or after the test."""
    monkeypatch.setattr(_tables, "COPY_MIN_BYTES", 0)
    _duck.close_open_copies()
    yield
    _duck.close_open_copies()


def csv_with_copy(ws: Workspace, rows: int, sql: str = "SELECT 1 FROM t") -> tuple[str, Path]:
    """big_csv's table, queried once (in place) and then given its built copy."""
    name, _ = big_csv(ws, rows)
    ws.table_query(name, sql)
    return name, wait_for_copy(Path(ws.home) / "tables")


@pytest.mark.usefixtures("copies")
def test_a_copy_stays_open_between_queries_and_is_closed_when_replaced(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Repeated queries on a copy open its database once (its blocks stay in DuckDB's
    # buffer pool); a new copy (the file changed) is opened and the old one closed, its
    # scratch folder removed.
    import duckdb

    sql = "SELECT count(*) AS n, max(id) AS top FROM t"
    name, copy = csv_with_copy(ws, 300, sql)
    tables = Path(ws.home) / "tables"
    opened: list[str] = []
    real_connect = duckdb.connect

    def counting_connect(database: str = ":memory:", *args: Any, **kwargs: Any) -> Any:
        opened.append(database)
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counting_connect)
    for _ in range(3):
        assert ws.table_query(name, sql)["rows"] == [[300, 299]]
    assert opened == [str(copy)]
    (entry,) = _duck._open_copies.values()
    big_csv(ws, 10)
    assert ws.table_query(name, sql)["rows"] == [[10, 9]]  # in place, building its copy
    new = wait_for_copy(tables, 2)
    assert ws.table_query(name, sql)["rows"] == [[10, 9]]
    assert opened[1:] == [":memory:", str(new)]  # the file in place, then its copy
    assert list(_duck._open_copies.values()) != [entry]
    assert not os.path.exists(entry.scratch)
    _duck.close_open_copies()
    assert not _duck._open_copies


@pytest.mark.usefixtures("copies")
def test_copies_in_use_stay_open_and_each_path_opens_once(ws: Workspace) -> None:
    # DuckDB opens a database file once per process: a copy in use is never closed or opened
    # a second time, whichever queries come between; once idle, all but the most recent
    # close.
    _, first = csv_with_copy(ws, 40)
    scratch = str(Path(ws.home) / "tables" / "scratch")
    other = first.with_name("other.duckdb")
    shutil.copyfile(first, other)
    count = "SELECT count(*) FROM t"
    with _duck.copy_cursor(str(first), scratch) as (held, paths):
        assert paths == []
        with _duck.copy_cursor(str(other), scratch) as (cursor, _):
            assert cursor.execute(count).fetchall() == [(40,)]
        with _duck.copy_cursor(str(first), scratch) as (again, _):  # the same database
            assert again.execute(count).fetchall() == [(40,)]
        assert held.execute(count).fetchall() == [(40,)]
        assert list(_duck._open_copies) == [str(other), str(first)]
    assert list(_duck._open_copies) == [str(first)]  # the other, idle and older, closed
    _duck.close_open_copies()
    assert not _duck._open_copies


def test_a_copy_removed_after_it_was_found_is_read_around(tmp_path: Path) -> None:
    # copy_path saw the copy; it is gone (a cache cleanup) before the query opens it: the
    # file is read in place, as before the copy was built, not a FileNotFoundError.
    table = tmp_path / "t.csv"
    table.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(7)))
    gone = tmp_path / "gone.duckdb"
    with _tables._table_connection(str(table), str(gone), str(tmp_path / "scratch")) as (
        con,
        paths,
        copy,
    ):
        assert copy is None
        assert paths == [str(table)]
        read = f"SELECT count(*) FROM read_csv({_duck.literal(paths[0])})"
        assert con.execute(read).fetchall() == [(7,)]


@pytest.mark.usefixtures("copies")
def test_threads_query_two_copies_at_once(ws: Workspace) -> None:
    # An MCP server answers calls on threads: queries of two tables, each with its copy,
    # interleave freely (each path opened once, none closed under a query).
    from concurrent.futures import ThreadPoolExecutor

    name, _ = csv_with_copy(ws, 40)
    (root(ws) / "other.csv").write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(25)))
    ws.table_query("other.csv", "SELECT 1 FROM t")
    wait_for_copy(Path(ws.home) / "tables", 2)
    calls = [name, "other.csv"] * 12
    with ThreadPoolExecutor(4) as pool:
        counts = list(
            pool.map(lambda n: ws.table_query(n, "SELECT count(*) FROM t")["rows"], calls)
        )
    assert counts == [[[40]], [[25]]] * 12
    assert len(_duck._open_copies) == 1


@pytest.mark.usefixtures("copies")
def test_a_copy_replaced_on_disk_is_opened_anew_and_a_broken_one_is_read_around(
    ws: Workspace,
) -> None:
    sql = "SELECT count(*) FROM t"
    name, copy = csv_with_copy(ws, 40, sql)
    assert ws.table_query(name, sql)["rows"] == [[40]]
    (entry,) = _duck._open_copies.values()
    # The same bytes at the same path, another inode: while a query holds the old one it
    # answers; once idle it is closed and the new file opened.
    scratch = str(Path(ws.home) / "tables" / "scratch")
    replacement = copy.with_name("replacement.tmp")
    shutil.copyfile(copy, replacement)
    with _duck.copy_cursor(str(copy), scratch):
        os.replace(replacement, copy)
        assert ws.table_query(name, sql)["rows"] == [[40]]
        assert list(_duck._open_copies.values()) == [entry]
    assert ws.table_query(name, sql)["rows"] == [[40]]
    (reopened,) = _duck._open_copies.values()
    assert reopened is not entry
    assert reopened.stamp == (copy.stat().st_ino, copy.stat().st_mtime_ns)
    # A copy DuckDB cannot open: the file is read in place, as before the copy was built.
    _duck.close_open_copies()
    broken = copy.with_name("broken.tmp")
    broken.write_bytes(b"not a database" * 100)
    os.replace(broken, copy)
    assert ws.table_query(name, sql)["rows"] == [[40]]
    assert ws.table_query(name, "SELECT max(id) FROM t")["rows"] == [[39]]
    assert not _duck._open_copies


def wait_for_copy(tables: Path, count: int = 1) -> Path:
    """The newest columnar copy under ``tables`` once ``count`` exist (they are built by a
    background process)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        copies = sorted(tables.glob("*.duckdb"), key=lambda p: p.stat().st_mtime_ns)
        if len(copies) >= count and not list(tables.glob("*.building")):
            return copies[-1]
        time.sleep(0.05)
    raise AssertionError(f"no columnar copy appeared in {tables}: {list(tables.iterdir())}")


@pytest.mark.usefixtures("builders_waited_for")
def test_a_copy_claimed_by_a_builder_that_died_is_built_again(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tables, "COPY_MIN_BYTES", 0)
    name, _ = big_csv(ws, 50)
    tables = Path(ws.home) / "tables"
    ws.table_query(name, "SELECT count(*) FROM t")
    copy = wait_for_copy(tables)
    copy.unlink()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(f"{copy}.building").write_text(dead)  # a builder killed before it finished
    assert ws.table_query(name, "SELECT count(*) FROM t")["rows"] == [[50]]
    assert wait_for_copy(tables) == copy


def test_cells_are_shown_as_json_values() -> None:
    # Spreadsheets store every number as a double: a whole one is shown as an int, up to the
    # doubles that still count exactly; anything else is shown as its text.
    assert type(_tables._cell(1000.0)) is int
    assert type(_tables._cell(2.0**53)) is float
    assert _tables._cell(complex(1, 2)) == "(1+2j)"


def test_a_missing_column_names_the_first_50_of_the_header(ws: Workspace) -> None:
    header = [f"c{i}" for i in range(60)]
    (root(ws) / "wide.csv").write_text(",".join(header) + "\n" + ",".join("1" * 60) + "\n")
    with pytest.raises(InvalidArgumentError) as caught:
        ws.table_read("wide.csv", columns=["nope"])
    message = str(caught.value)
    assert message.endswith(", ".join(json.dumps(h) for h in header[:50]) + " (+10 more)")


def test_a_header_keeps_its_trailing_spaces_but_not_its_cr(ws: Workspace) -> None:
    (root(ws) / "spaced.csv").write_bytes(b"a,b \r\n1,2\r\n")
    assert ws.table_read("spaced.csv")["columns"] == ["row", "a", "b "]


@pytest.mark.usefixtures("builders_waited_for")
def test_a_text_table_of_exactly_copy_min_bytes_gets_its_copy(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _ = big_csv(ws, 40)
    monkeypatch.setattr(_tables, "COPY_MIN_BYTES", (root(ws) / name).stat().st_size)
    assert ws.table_query(name, "SELECT count(*) FROM t")["rows"] == [[40]]
    wait_for_copy(Path(ws.home) / "tables")
    assert ws.table_query(name, "SELECT max(id) FROM t")["rows"] == [[39]]
