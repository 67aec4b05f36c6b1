"""`leanreplay call` takes a call pasted as the tools print it: every placeholder's
``conversation_read(...)`` and every ``next`` (and search hit's ``read``) a tool returns."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from leanreplay import ReplayPolicy, Workspace
from leanreplay.index import TOOL_NAMES
from leanreplay.index.faces._callexpr import parse_call
from leanreplay.index.faces.cli import cli
from tests.builders import an_call, an_results, assistant, big_input, strings, user
from tests.conftest import SAMPLES

# First calls whose answers name a call that continues them (or reads a hit).
FIRST_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("file_read", {"path": "long.txt"}),
    ("file_search", {"path": "long.txt", "query": "needle", "limit": 2}),
    ("table_read", {"path": "table.csv", "rows": "1-1"}),
    ("table_read", {"path": "sales.xlsx", "rows": "1-1"}),
    ("doc_read", {"path": "voyage.epub", "part": "1"}),
    ("doc_search", {"path": "report.docx", "query": "revenue"}),
    ("pdf_read", {"path": "classic_xref.pdf", "pages": "1"}),
    ("file_list", {"limit": 1}),
    ("file_list", {"limit": 1, "pattern": "*.pdf", "include_ignored": True}),
    ("conversation_read", {"conversation_id": "sample", "message_id": "m3", "max_chars": 2000}),
    ("conversation_search", {"query": "disk quota"}),
]
CALL = re.compile(r"^([a-z_]+)\(.*\)$", re.S)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    shutil.copytree(SAMPLES, root)
    (root / "long.txt").write_text("".join(f"line {i} needle\n" for i in range(5000)))
    home = tmp_path / "home"
    with Workspace(home, [root]) as ws:
        ws.ingest(str(root / "conversation.jsonl"), conversation_id="sample")
        ws.extend("inputs", with_big_inputs())
    return root, home


def with_big_inputs() -> list[dict[str, Any]]:
    """Calls whose long inputs age into placeholders naming part="input"."""
    messages = [user("write them")]
    for i in range(6):
        call = an_call((f"t{i}", "write"))
        big_input(call, f"{i}" + "line\n" * 1000)
        messages += [call, an_results((f"t{i}", "ok", False))]
    return [*messages, assistant("done")]


def named_calls(output: Any) -> list[str]:
    """Every string of a tool's answer that is a whole call of a tool."""
    return [s for s in strings(output) if (m := CALL.match(s)) is not None and m[1] in TOOL_NAMES]


def python_reading(text: str) -> tuple[str, dict[str, Any]]:
    """The oracle: what Python itself reads the call as (tool name, keyword arguments)."""
    name = text.split("(", 1)[0]
    captured: dict[str, Any] = eval(
        text, {"__builtins__": {}, name: lambda **kw: kw}
    )  # our own tools' output, in a test
    return name, captured


def run_cli(root: Path, home: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--home", str(home), "--root", str(root), "call", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_next_call_a_tool_prints_runs_pasted(setup: tuple[Path, Path]) -> None:
    root, home = setup
    named: dict[str, list[str]] = {}
    with Workspace(home, [root]) as ws:
        for tool, arguments in FIRST_CALLS:
            first = ws.call(tool, arguments)
            calls = named_calls(first)
            assert calls, (tool, arguments, first)  # each first call does name one
            named[tool] = calls
            for text in calls[:3]:
                pasted = run_cli(root, home, text)
                name, kwargs = python_reading(text)
                assert pasted == json.loads(json.dumps(ws.call(name, kwargs))), text
                assert pasted != first  # it continues, or reads another thing
    assert set(named) == {tool for tool, _ in FIRST_CALLS}


def test_every_placeholder_call_runs_pasted(setup: tuple[Path, Path]) -> None:
    root, home = setup
    with Workspace(home, [root]) as ws:
        policy = ReplayPolicy(timing="eager")
        texts = [
            *strings(ws.replay("sample", policy).messages),
            *strings(ws.replay("inputs", policy).messages),
        ]
        calls = sorted({m for t in texts for m in re.findall(r"conversation_read\([^)]*\)", t)})
        assert any('part="input"' in c for c in calls)
        assert any('part="input"' not in c for c in calls)
        for text in calls:
            pasted = run_cli(root, home, text)
            _, kwargs = python_reading(text)
            assert pasted == json.loads(json.dumps(ws.conversation_read(**kwargs))), text
            assert pasted["content"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('conversation_read(conversation_id="c", message_id=m3)', "'m3' is not a literal"),
        ('conversation_read("c", "m3")', "arguments are named"),
        ('conversation_read(conversation_id="c"', "not a call"),
        ("os.system(x='1')", "not a call of one tool by name"),
        ('conversation_read(**{"a": 1})', "expansion"),
        ('conversation_read(conversation_id=__import__("os"))', "not a literal"),
    ],
    ids=["bare-name", "positional", "unclosed", "attribute", "double-star", "call-in-value"],
)
def test_a_call_that_is_not_a_printed_one_says_why(text: str, match: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "call", text])
    assert result.exit_code == 1
    assert re.search(match, result.stderr), result.stderr
    assert "paste a call as printed" in result.stderr


def test_a_call_with_json_arguments_too_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--home", str(tmp_path), "call", 'file_read(path="a")', '{"path": "b"}']
    )
    assert result.exit_code == 2
    assert "takes no ARGUMENTS" in result.stderr


def test_parse_call_reads_json_literals() -> None:
    assert parse_call('t(a=true, b=null, c=[1, "x"], d={"k": false}, e=-2)') == (
        "t",
        {"a": True, "b": None, "c": [1, "x"], "d": {"k": False}, "e": -2},
    )
