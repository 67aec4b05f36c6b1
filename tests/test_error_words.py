"""Library errors speak in the library's terms; the command line adds its flags.

A message raised by `cards`, `placeholders` or `index` reaches an MCP model or a library user,
for whom "pass --home" is wrong: it says what was wrong and what to do with argument and tool
names, and lists those names on the error (`WorkspaceError.names`). The CLI turns the names
into its own words through one mapping (`CLI_TERMS`).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from click.testing import CliRunner
from mcp import Client

from leanreplay.index import OutsideRootsError, StoreError, Workspace, load_log
from leanreplay.index._errors import NotALogError
from leanreplay.index.faces._render import CLI_TERMS, cli_message
from leanreplay.index.faces.cli import cli
from leanreplay.index.faces.server import NO_CLIENT_ROOTS, build_server
from leanreplay.index.tools._listing import matching_files
from tests.conftest import REPO, SAMPLES

# The command line and the faces only it starts: their words are for its user.
CLI_MODULES = {
    "index/faces/cli.py",
    "index/faces/_address.py",  # --http HOST:PORT and the bind rules of serve/view
    "index/faces/_demo.py",
    "index/faces/_mcp_pin.py",  # why `leanreplay serve` refuses an mcp another package pulled in
    "index/faces/_render.py",
    "index/faces/_html.py",  # `leanreplay view`'s pages (and CSS custom properties, --fg)
    "index/faces/view.py",  # `leanreplay view`: its token page names the URL it printed
}
# Strings that are not messages: arguments of a program the library runs.
NOT_MESSAGES = {
    ("index/tools/_listing.py", "--cached"),
    ("index/tools/_listing.py", "--others"),
    ("index/tools/_listing.py", "--exclude-standard"),
}


def _cli_words() -> re.Pattern[str]:
    commands = "|".join(sorted(cli.commands))
    return re.compile(rf"(?<![\w-])--[a-z][a-z0-9-]*|\bleanreplay (?:{commands})\b")


CLI_WORDS = _cli_words()


def _library_files() -> list[Path]:
    files = [
        path
        for package in ("cards", "placeholders", "index")
        for path in sorted((REPO / package).rglob("*.py"))
        if path.relative_to(REPO).as_posix() not in CLI_MODULES
    ]
    assert len(files) > 40
    return files


def _docstrings(tree: ast.AST) -> set[int]:
    docs = set()
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and ast.get_docstring(node, clean=False) is not None:
            first = node.body[0]
            assert isinstance(first, ast.Expr)
            docs.add(id(first.value))
    return docs


def test_the_cli_modules_listed_exist() -> None:
    for name in CLI_MODULES:
        assert (REPO / name).is_file(), f"{name} is gone: update CLI_MODULES"


def test_library_string_literals_name_no_cli_flag_or_command() -> None:
    """Every string literal of the library but docstrings: error messages, notices, the
    MCP server's answers. Docstrings are for maintainers and may name the command line."""
    found = []
    for path in _library_files():
        shown = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if id(node) in docs or (shown, node.value) in NOT_MESSAGES:
                continue
            for match in CLI_WORDS.finditer(node.value):
                found.append(f"{shown}:{node.lineno}: {match.group()!r} in {node.value!r}")
    assert not found, "library strings name the command line:\n" + "\n".join(found)


def test_the_scan_sees_a_flag_in_a_message() -> None:
    # The scan's pattern, on the kinds of words this file exists to keep out.
    for text in (
        "pass --home (or LEANREPLAY_HOME)",
        "list them with `leanreplay conversations`",
        "start with --root DIR",
        "name one with --format",
    ):
        assert CLI_WORDS.search(text), text
    for text in ("give the workspace roots", "a -- b", "leanreplay runs on Linux", "x--y"):
        assert not CLI_WORDS.search(text), text


def _error_names() -> set[str]:
    """Every name a library error lists (``names=(...)`` at its raise site)."""
    names = set()
    for path in _library_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "names":
                value = ast.literal_eval(node.value)
                assert isinstance(value, tuple), ast.unparse(node)
                names.update(value)
    return names


def _options() -> set[str]:
    options = set()
    for command in [cli, *cli.commands.values()]:
        for param in command.params:
            if isinstance(param, click.Option):
                options.update(param.opts)
    return options


def test_every_name_an_error_lists_has_cli_words_that_exist() -> None:
    names = _error_names()
    assert names, "no error lists names: the scan is broken"
    assert names <= set(CLI_TERMS), f"names without CLI words: {names - set(CLI_TERMS)}"
    options = _options()
    for name, words in CLI_TERMS.items():
        for flag in re.findall(r"--[a-z][a-z-]*", words):
            assert flag in options, f"CLI_TERMS[{name!r}] names {flag}, which no command has"
        for command in re.findall(r"`leanreplay ([a-z-]+)`", words):
            assert command in cli.commands, f"CLI_TERMS[{name!r}] names a missing command"


def _mcp_answers(home: Path) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        out = {}
        with Workspace(home) as ws:
            async with Client(build_server(ws)) as client:
                out["unknown"] = await client.call_tool(
                    "conversation_read", {"conversation_id": "nope", "message_id": "m1"}
                )
            async with Client(build_server(ws, client_roots=True)) as client:
                out["no_client_roots"] = await client.call_tool("file_read", {"path": "a.txt"})
        return out

    return {
        key: "".join(c.text for c in result.content if c.type == "text")
        for key, result in anyio.run(main).items()
        if result.is_error
    }


def test_mcp_answers_name_tools_not_flags(tmp_path: Path) -> None:
    answers = _mcp_answers(tmp_path / "home")
    assert set(answers) == {"unknown", "no_client_roots"}
    assert answers["unknown"].startswith("no conversation 'nope'")
    assert "conversation_search" in answers["unknown"]  # what the model can call instead
    assert answers["no_client_roots"] == NO_CLIENT_ROOTS
    for key, text in answers.items():
        assert not CLI_WORDS.search(text), (key, text)


def _stderr(tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), *args])
    assert result.exit_code == 1, result.output
    return result.output


@pytest.mark.parametrize(
    ("args", "library", "cli_words"),
    [
        (["replay", "nope"], "no conversation 'nope'", "`leanreplay conversations`"),
        (["replay", str(SAMPLES / "manifest.json")], "with the format argument", "--format"),
    ],
    ids=["conversation", "format"],
)
def test_the_cli_adds_its_words_to_the_library_message(
    tmp_path: Path, args: list[str], library: str, cli_words: str
) -> None:
    out = _stderr(tmp_path, *args)
    assert library in out
    assert f"(on the command line: {cli_words})" in out
    as_json = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), *args, "--json"])
    assert cli_words in json.loads(as_json.output)["error"]


def test_an_unusable_home_says_home_to_the_library_and_home_flag_to_the_cli(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the home's folders go")
    with pytest.raises(StoreError, match="give a writable folder as the home") as caught:
        Workspace(blocked / "home")
    assert not CLI_WORDS.search(str(caught.value))
    assert caught.value.names == ("home",)
    out = CliRunner().invoke(cli, ["--home", "/proc/leanreplay-no-home", "conversations"]).output
    assert "give a writable folder as the home (on the command line: --home or " in out


def test_library_words_for_format_and_roots(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    with pytest.raises(NotALogError, match="name one with the format argument: ") as log:
        load_log(str(junk))
    with pytest.raises(OutsideRootsError, match="no roots are configured") as roots:
        matching_files("notes", "**/*", ())
    for error in (log.value, roots.value):
        assert not CLI_WORDS.search(str(error)), error
    assert cli_message(log.value).endswith("(on the command line: --format)")
    assert cli_message(roots.value).endswith("(on the command line: --root DIR)")


def test_a_refused_line_of_an_ingest_has_the_cli_words(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    args = ["ingest", str(SAMPLES / "conversation.jsonl"), str(junk)]
    out = _stderr(tmp_path, *args)
    (refused,) = [line for line in out.splitlines() if line.startswith("refused")]
    assert refused.endswith("(on the command line: --format)"), refused
    assert "with the format argument" in refused
