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
    """Execute the block line by line; a `# value` comment under an expression is checked."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HOME", str(tmp_path))  # the example's ~/.local/share goes here
    namespace: dict[str, object] = {}
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.startswith("#"):
            continue
        statement = line.split("  #")[0]
        comment = []
        while i < len(lines) and lines[i].startswith("#"):
            comment.append(lines[i][1:].strip())
            i += 1
        tree = ast.parse(statement)
        if comment and isinstance(tree.body[0], ast.Expr):
            value = eval(compile(ast.Expression(tree.body[0].value), "<readme>", "eval"), namespace)
            shown = " ".join(comment)
            expected = ast.literal_eval(shown)
            if isinstance(expected, str) and value != expected and re.search(r"\.\.\.|…", expected):
                # A long string shown with "..." elisions: every shown piece must be real.
                pieces = [p for p in re.split(r"\.\.\.|…", expected) if p.strip()]
                assert all(p in str(value) for p in pieces), (pieces, value)
                continue
            assert value == expected, (statement, value, expected)
        else:
            exec(compile(tree, "<readme>", "exec"), namespace)


@pytest.mark.parametrize("index", range(len(python_blocks())), ids=lambda i: f"block{i}")
def test_readme_python_blocks(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_block(python_blocks()[index], tmp_path, monkeypatch)


def test_readme_has_python_examples() -> None:
    assert len(python_blocks()) >= 2
