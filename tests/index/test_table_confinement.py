"""table_query's DuckDB, confined: the model's SQL reads only the view t; the connection under
it reads only the one file (its temp folder is a fresh one under the home, never the working
directory's .tmp), names no folder outside, and its configuration is locked."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from leanreplay.index import InvalidArgumentError, Workspace
from leanreplay.index.tools._duck import QUERY_TABLE_FUNCTIONS, connect
from leanreplay.index.tools._paths import open_confined
from leanreplay.index.tools._tables import _cell


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A root with a table, and a working directory whose .tmp (DuckDB's default temp
    folder) holds a secret."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "t.csv").write_text("a,b\n1,2\n")
    cwd = tmp_path / "cwd"
    (cwd / ".tmp").mkdir(parents=True)
    (cwd / ".tmp" / "secret.csv").write_text("secret,x\n9,9\n")
    monkeypatch.chdir(cwd)
    return {"root": root, "home": tmp_path / "home", "cwd": cwd}


@pytest.fixture
def raw(layout: dict[str, Path]) -> Iterator[duckdb.DuckDBPyConnection]:
    """The connection a query runs on, before any check of the model's SQL."""
    with (
        open_confined(str(layout["root"] / "t.csv"), [str(layout["root"])]) as f,
        connect([f], str(layout["home"] / "tables" / "scratch")) as (con, _),
    ):
        yield con


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM glob('.tmp/*')",
        "SELECT * FROM read_csv('.tmp/secret.csv')",
        "SELECT * FROM '.tmp/secret.csv'",
        "SELECT * FROM duckdb_settings()",
        "SELECT current_setting('secret_directory')",
        "SELECT * FROM duckdb_extensions()",
        "SELECT * FROM t, (SELECT * FROM read_text('/etc/hostname'))",
        "WITH t AS (SELECT * FROM glob('*')) SELECT * FROM t",
        "SELECT (SELECT count(*) FROM glob('.tmp/*')) FROM t",
        "DESCRIBE SELECT * FROM read_csv('.tmp/secret.csv')",
        "SELECT * FROM system.main.duckdb_settings()",
        "SELECT * FROM memory.main.t",
    ],
    ids=str,
)
def test_the_model_sql_reads_only_t(layout: dict[str, Path], sql: str) -> None:
    with (
        Workspace(layout["home"], [layout["root"]]) as ws,
        pytest.raises(InvalidArgumentError) as refused,
    ):
        ws.table_query("t.csv", sql)
    message = str(refused.value)
    assert message.startswith("table_query reads only the view t: "), message
    assert message.endswith('is not allowed; query t (columns "a", "b")'), message
    assert "9,9" not in message


def test_every_table_function_but_a_few_is_refused(layout: dict[str, Path]) -> None:
    """An oracle from DuckDB itself: each of its table functions, called by name."""
    con = duckdb.connect()
    names = sorted(
        {
            name
            for (name,) in con.execute(
                "SELECT DISTINCT function_name FROM duckdb_functions() "
                "WHERE function_type = 'table'"
            ).fetchall()
        }
    )
    assert len(names) > 30
    refused = []
    with Workspace(layout["home"], [layout["root"]]) as ws:
        for name in names:
            try:
                ws.table_query("t.csv", f"SELECT * FROM {name}()")
            except InvalidArgumentError as exc:
                if "reads only the view t" in str(exc):
                    refused.append(name)
    assert sorted(set(names) - set(refused)) == sorted(QUERY_TABLE_FUNCTIONS & set(names))


def test_queries_over_t_still_run(layout: dict[str, Path]) -> None:
    with Workspace(layout["home"], [layout["root"]]) as ws:
        for sql, rows in (
            ("SELECT a + b FROM t", [[3]]),
            ("WITH x AS (SELECT * FROM t) SELECT b FROM x", [[2]]),
            ("SELECT * FROM range(2)", [[0], [1]]),
            ("SELECT count(*) FROM t, unnest([1, 2])", [[2]]),
            ("FROM T", [[1, 2]]),
        ):
            assert ws.table_query("t.csv", sql)["rows"] == rows, sql


def test_the_temp_folder_is_a_fresh_one_under_the_home(
    raw: duckdb.DuckDBPyConnection, layout: dict[str, Path]
) -> None:
    (temp,) = raw.execute("SELECT current_setting('temp_directory')").fetchone() or ("",)
    assert temp.startswith(str(layout["home"] / "tables" / "scratch") + os.sep), temp
    assert os.listdir(temp) == []
    for sql in ("SELECT * FROM read_csv('.tmp/secret.csv')", "SELECT * FROM glob('.tmp/*')"):
        with pytest.raises(duckdb.PermissionException, match="disabled by configuration"):
            raw.execute(sql).fetchall()


def test_no_setting_names_a_folder_outside(
    raw: duckdb.DuckDBPyConnection, layout: dict[str, Path]
) -> None:
    values = raw.execute("SELECT name, value FROM duckdb_settings()").fetchall()
    outside = [os.path.expanduser("~"), str(layout["cwd"])]
    named = [
        (name, path)
        for name, value in values
        for path in str(value).strip("[]").split(", ")
        if any(path == o or path.startswith(o + os.sep) for o in outside)
    ]
    assert named == []
    # What the settings do name: the one file, and the connection's own scratch folder.
    paths = dict(values)
    assert paths["allowed_paths"] == f"[{layout['root'] / 't.csv'}]"
    assert paths["allowed_directories"].startswith(f"[{layout['home'] / 'tables' / 'scratch'}")


@pytest.mark.parametrize(
    "statement",
    [
        "SET enable_external_access = true",
        "SET allowed_directories = ['/']",
        "SET temp_directory = '.tmp'",
        "RESET allowed_paths",
        "SET lock_configuration = false",
    ],
    ids=str,
)
def test_the_configuration_is_locked(raw: duckdb.DuckDBPyConnection, statement: str) -> None:
    with pytest.raises(duckdb.Error, match="configuration has been locked"):
        raw.execute(statement)


def test_errors_name_the_file_as_given_never_a_descriptor_or_the_home(
    layout: dict[str, Path],
) -> None:
    rows = "".join(f"{i},{i}\n" for i in range(30_000))
    (layout["root"] / "bad.csv").write_text("a,b\n" + rows + "x,y,z\n")
    with (
        Workspace(layout["home"], [layout["root"]]) as ws,
        pytest.raises(InvalidArgumentError) as failed,
    ):
        ws.table_query("bad.csv", "SELECT sum(b) FROM t")
    message = str(failed.value)
    assert message.startswith("query failed: "), message
    assert "/proc/self/fd" not in message
    assert str(layout["home"]) not in message


CSVS = {
    "quoted.csv": 'id,name,note\n1,"a, b","say ""hi"""\n2,c,\n3,"multi\nline",x\n',
    "types.csv": "d,ts,n,f,b\n2024-01-02,2024-01-02 03:04:05,1,1.5,true\n"
    "2024-02-03,2024-02-03 04:05:06,,2,false\n",
    "crlf.csv": "a,b\r\n1,x\r\n2,y\r\n",
    "bom.csv": "\ufeffa,b\n1,2\n",
    "semicolon.csv": "a;b\n1;2,5\n3;4\n",
    "mixed.csv": "a,b\n1,x\n2,3\nthree,4\n",
}


@pytest.mark.parametrize("name", sorted(CSVS), ids=str)
def test_the_remembered_dialect_reads_as_duckdb_itself(layout: dict[str, Path], name: str) -> None:
    """The sniffed options kept per file give what DuckDB's own detection gives, at the
    first query (which sniffs) and the next (which reuses them)."""
    path = layout["root"] / name
    path.write_text(CSVS[name], encoding="utf-8", newline="")
    delim = ";" if name.startswith("semicolon") else ","
    expected = [
        [_cell(c) for c in r]
        for r in duckdb.connect()
        .execute(f"SELECT * FROM read_csv('{path}', delim = '{delim}', header = true)")
        .fetchall()
    ]
    with Workspace(layout["home"], [layout["root"]]) as ws:
        for _ in range(2):
            rows = ws.table_query(name, "SELECT * FROM t")["rows"]
            assert rows == expected
    assert list((layout["home"] / "tables").glob("*.sniff"))
