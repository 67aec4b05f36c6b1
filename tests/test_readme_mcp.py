"""The README's MCP section works when pasted: its stdio entry starts the server through a
real MCP client exactly as written (the example paths replaced by real ones), and the other
snippets agree with it."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import REPO

EXAMPLE_COMMAND = "/home/you/leanreplay/.venv/bin/leanreplay"
EXAMPLE_HOME = "/home/you/.local/share/leanreplay"
EXAMPLE_ROOT = "/home/you/project"


def mcp_section() -> str:
    text = (REPO / "README.md").read_text()
    return text[text.index("## MCP server") : text.index("\n## ", text.index("## MCP server") + 1)]


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", mcp_section(), re.S)


def stdio_entry() -> dict[str, Any]:
    (entry,) = [
        json.loads(b)["mcpServers"]["leanreplay"]
        for b in blocks("json")
        if '"command": "' + EXAMPLE_COMMAND in b
    ]
    return dict(entry)


def test_every_json_snippet_is_valid_client_configuration() -> None:
    configs = [json.loads(b) for b in blocks("json")]
    assert len(configs) == 3
    for config in configs:
        server = config["mcpServers"]["leanreplay"]
        assert "command" in server or "url" in server
        assert not server.get("command", "/").startswith("leanreplay")  # never a bare PATH name


def test_claude_code_line_runs_the_same_server_as_the_json() -> None:
    entry = stdio_entry()
    (line,) = [
        line
        for b in blocks("console")
        for line in b.splitlines()
        if line.startswith("$ claude mcp add leanreplay --")
    ]
    command = shlex.split(line[2:])
    assert command[command.index("--") + 1 :] == [entry["command"], *entry["args"]]


def test_the_stdio_entry_starts_the_server_as_written(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("the README snippet works\n")
    home = tmp_path / "home"
    command = str(Path(sys.executable).with_name("leanreplay"))  # the venv's console script
    replaced = {EXAMPLE_COMMAND: command, EXAMPLE_HOME: str(home), EXAMPLE_ROOT: str(project)}
    entry = stdio_entry()
    params = StdioServerParameters(
        command=replaced[entry["command"]],
        args=[replaced.get(a, a) for a in entry["args"]],
        cwd="/",  # as a desktop client may start it
    )

    async def main() -> tuple[str, Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            name = client.server_info.name if client.server_info else ""
            result = await client.call_tool("file_read", {"path": "notes.txt"})
            return name, result

    name, result = anyio.run(main)
    assert name == "leanreplay"
    assert result.is_error is False
    text = "".join(c.text for c in result.content if c.type == "text")
    assert json.loads(text)["content"] == "1\tthe README snippet works"
    assert (home / ".leanreplay-home").is_file()
