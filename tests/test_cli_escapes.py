"""Every line the CLI prints is terminal-safe: a file name, a conversation id or a message can
neither forge a line nor send the terminal a control sequence (they are written as \\uXXXX,
as the cards write them)."""

from __future__ import annotations

import ast
import json
import unicodedata
from pathlib import Path

from click.testing import CliRunner

from leanreplay.index.faces.cli import cli
from tests.conftest import REPO

HOSTILE = {
    "rtl": "invoice\u202egpj.jsonl",
    "bell": "ring\a.jsonl",
    "escape": "red\x1b[31m.jsonl",
    "forged": "x\nimported  forged -> everything: 1 messages, openai.jsonl",
    "return": "over\rwrite.jsonl",
    "c1": "csi\x9b2J.jsonl",
}


def _unsafe(text: str) -> list[str]:
    return [
        unicodedata.name(ch, hex(ord(ch)))
        for ch in text
        if not ch.isprintable() and ch not in "\n\t"
    ]


def test_ingest_lines_escape_hostile_names(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in HOSTILE.values():
        (folder / name).write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    (folder / "bad\x1b]0;title\x07.jsonl").write_text("not json at all\n")
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "ingest", str(folder)])
    lines = result.output.splitlines()
    assert len(lines) == len(HOSTILE) + 2, result.output  # one per file, and the summary
    assert _unsafe(result.output) == []
    assert not any(line.startswith("imported  forged") for line in lines)
    assert any("\\u202e" in line for line in lines)
    assert any("\\u001b]0;title\\u0007" in line for line in lines)


def test_json_output_stays_json_with_the_same_strings(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "plain.jsonl").write_text(
        json.dumps({"role": "user", "content": "say \u202e\x1b[2J\x9b"}) + "\n"
    )
    home = ["--home", str(tmp_path / "home")]
    CliRunner().invoke(cli, [*home, "ingest", str(folder)])
    result = CliRunner().invoke(cli, [*home, "replay", "--json", "plain"])
    assert result.exit_code == 0, result.output
    assert _unsafe(result.output) == []
    messages = json.loads(result.output)["messages"]
    assert messages[0]["content"] == "say \u202e\x1b[2J\x9b"  # the same string, escaped


def test_an_error_line_is_escaped(tmp_path: Path) -> None:
    missing = tmp_path / "gone\x1b[2J\u202e.jsonl"
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "ingest", str(missing)])
    assert result.exit_code != 0
    assert _unsafe(result.output) == []
    assert "\\u001b[2J\\u202e" in result.output


def test_the_cli_prints_only_through_its_one_echo() -> None:
    """The mechanism: no face module calls click.echo (or print) but `_render.echo`."""
    faces = REPO / "index" / "faces"
    offenders = []
    for path in sorted(faces.glob("*.py")):
        if path.name in ("gateway.py", "server.py"):  # MCP servers: stdout is the protocol
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = (
                f"{func.value.id}.{func.attr}"
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                else getattr(func, "id", "")
            )
            if name in ("click.echo", "click.secho", "print"):
                offenders.append(f"{path.name} {name}")
    assert offenders == ["_render.py click.echo"], offenders  # inside echo itself
