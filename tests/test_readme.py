"""The README's Python examples run, and the results their comments show are the real ones."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO


def python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def run_block(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Execute the block statement by statement; an expression followed by ``# value``
    comment lines must evaluate to that value (long strings may elide parts with "...")."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HOME", str(tmp_path))  # the examples' ~/.local/share goes here
    namespace: dict[str, object] = {}
    lines = code.splitlines()
    for node in ast.parse(code).body:
        comment = []
        i = node.end_lineno or node.lineno  # the line after the statement (1-based -> index)
        while i < len(lines) and lines[i].startswith("#"):
            comment.append(lines[i][1:].strip())
            i += 1
        if comment and isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), "<readme>", "eval"), namespace)
            expected = ast.literal_eval(" ".join(comment))
            if isinstance(expected, str) and value != expected and re.search(r"\.\.\.|…", expected):
                # A long string shown with "..." elisions: every shown piece must be real.
                pieces = [p for p in re.split(r"\.\.\.|…", expected) if p.strip()]
                assert all(p in str(value) for p in pieces), (pieces, value)
                continue
            assert value == expected, (ast.unparse(node), value, expected)
        else:
            exec(compile(ast.Module([node], type_ignores=[]), "<readme>", "exec"), namespace)


@pytest.mark.parametrize("index", range(len(python_blocks())), ids=lambda i: f"block{i}")
def test_readme_python_blocks(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_block(python_blocks()[index], tmp_path, monkeypatch)


def test_readme_has_python_examples() -> None:
    assert len(python_blocks()) >= 2


def agent_loop_block() -> str:
    (block,) = [b for b in python_blocks() if "ws.model_call(" in b and 'id="msg_01"' in b]
    return block


def test_readme_agent_loop_runs_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run again on the same home, the example's reply (same id, same bytes) is a no-op."""
    from leanreplay import Workspace

    run_block(agent_loop_block(), tmp_path, monkeypatch)
    run_block(agent_loop_block(), tmp_path, monkeypatch)
    with Workspace(tmp_path / ".local/share/leanreplay") as ws:
        roles = [(m["role"], m["id"]) for m in ws.messages("chat")]
    assert roles == [("user", "m1"), ("assistant", "msg_01"), ("user", "m3")]
