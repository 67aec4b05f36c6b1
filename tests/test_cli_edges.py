"""The CLI's edges as a new user meets them: errors that say what to do, JSON errors under
--json, help that lists the tools, safe homes, and the platform sentence."""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from leanreplay.index import TOOL_NAMES, NotFoundError, OutsideRootsError, Workspace, WorkspaceError
from leanreplay.index.faces.cli import cli
from leanreplay.index.faces.server import build_server
from leanreplay.index.store._home import HOME_MARKER
from tests.conftest import REPO, SAMPLES

PLATFORM_SENTENCE = "leanreplay runs on Linux and macOS; Windows is not supported yet."


def invoke(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_serve_token_without_http_is_an_error(tmp_path: Path) -> None:
    code, _, err = invoke(tmp_path / "home", "serve", "--token", "abc")
    assert code == 1
    assert "--token is for --http" in err


def test_a_taken_port_fails_before_saying_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [
                *(
                    sys.executable,
                    "-m",
                    "leanreplay.index.cli",
                    "--home",
                    str(tmp_path / "home"),
                    "serve",
                ),
                *("--http", f"127.0.0.1:{port}", "--token", "t" * 40),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
    assert run.returncode == 1
    assert f"cannot serve on 127.0.0.1:{port}" in run.stderr
    assert "serving" not in run.stderr + run.stdout


@pytest.mark.parametrize(
    ("args", "kind", "message"),
    [
        (["replay", "nope", "--json"], "ConversationNotFoundError", "no conversation 'nope'"),
        (["fold", "nope", "--json"], "ConversationNotFoundError", "no conversation 'nope'"),
        (["ingest", str(SAMPLES / "red_64x48.png"), "--json"], "ImportFormatError", "red_64x48"),
    ],
    ids=["replay", "fold", "ingest"],
)
def test_json_errors_are_json(tmp_path: Path, args: list[str], kind: str, message: str) -> None:
    code, out, _ = invoke(tmp_path / "home", *args)
    assert code == 1
    error = json.loads(out)
    assert error["type"] == kind
    assert message in error["error"]


def test_card_json_reports_each_bad_path_as_json(tmp_path: Path) -> None:
    code, out, _ = invoke(
        tmp_path / "home", "card", str(SAMPLES / "classic_xref.pdf"), "nope.pdf", "--json"
    )
    assert code == 1
    good, bad = json.loads(out)
    assert good["facts"]["pages"] == 12
    assert bad["path"] == "nope.pdf"
    assert bad["type"] == "FileMissingError"
    assert "nope.pdf" in bad["error"]


def test_call_help_lists_every_tool(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path / "home", "call", "--help")
    assert code == 0
    for name in TOOL_NAMES:
        assert f"  {name}" in out
    assert "Return the original of a stored message" in out


def test_empty_conversations_says_so(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path / "home", "conversations")
    assert code == 0
    assert "no conversations stored in" in out
    assert "leanreplay ingest FILE" in out


def test_a_missing_file_names_every_root_tried(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (second / "there.txt").write_text("found in the second root\n")
    home = tmp_path / "home"
    args = ["--root", str(first), "--root", str(second), "call", "file_read"]
    code, out, _ = invoke(home, *args, '{"path": "there.txt"}')
    assert code == 0
    assert json.loads(out)["content"] == "1\tfound in the second root"
    code, _, err = invoke(home, *args, '{"path": "missing.txt"}')
    assert code == 1
    assert str(first / "missing.txt") in err
    assert str(second / "missing.txt") in err


def test_the_library_needs_explicit_roots_for_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here.txt").write_text("in the working directory\n")
    monkeypatch.chdir(tmp_path)
    with Workspace(tmp_path / "home") as ws:
        with pytest.raises(NotFoundError, match="no file 'here.txt' in any root"):
            ws.file_read("here.txt")
        with pytest.raises(OutsideRootsError):
            ws.file_read(str(tmp_path / "here.txt"))


def test_server_info_version_is_the_package_version(tmp_path: Path) -> None:
    async def main() -> str | None:
        with Workspace(tmp_path / "home") as ws:
            async with Client(build_server(ws)) as client:
                return client.server_info.version if client.server_info else None

    assert anyio.run(main) == importlib.metadata.version("leanreplay")


def test_replay_file_says_it_stored_the_conversation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = str(SAMPLES / "conversation.jsonl")
    code, out, err = invoke(home, "replay", log, "--no-store", "--json")
    assert code == 0
    assert json.loads(out)["stats"]["placeholders"] == 1
    assert "not stored" in err
    assert "no conversations stored" in invoke(home, "conversations")[1]
    code, out, err = invoke(home, "replay", log, "--json")
    assert code == 0
    assert json.loads(out)["stats"]["placeholders"] == 1
    assert f"stored conversation 'conversation' (8 messages) in {home}" in err
    assert "leanreplay replay conversation" in err
    assert invoke(home, "conversations")[1].startswith("conversation\t8 messages")


def test_home_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "documents"
    foreign.mkdir()
    (foreign / "thesis.docx").write_text("not ours")
    code, _, err = invoke(foreign, "conversations")
    assert code == 1
    assert "is not a leanreplay home" in err
    assert "--home" in err
    assert sorted(os.listdir(foreign)) == ["thesis.docx"]  # nothing written into it
    code, out, _ = invoke(foreign, "conversations", "--json")
    assert code == 1
    assert json.loads(out)["type"] == "StoreError"

    new = tmp_path / "new-home"
    assert invoke(new, "conversations")[0] == 0
    assert (new / HOME_MARKER).is_file()
    (new / "extra.txt").write_text("the home may hold other files once it is ours")
    assert invoke(new, "conversations")[0] == 0

    older = tmp_path / "older-home"  # made before the marker existed: it holds a store
    with Workspace(older):
        pass
    (older / HOME_MARKER).unlink()
    assert invoke(older, "conversations")[0] == 0
    assert (older / HOME_MARKER).is_file()


def test_import_on_an_unsupported_platform_says_which_work(tmp_path: Path) -> None:
    code = "import sys; sys.platform = 'win32'; import index"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == f"ImportError: {PLATFORM_SENTENCE}"
    assert PLATFORM_SENTENCE in (REPO / "README.md").read_text()


def test_workspace_errors_stay_one_line(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError) as caught, Workspace(tmp_path / "home", [tmp_path]) as ws:
        ws.file_read("nope/../../x.txt")
    assert "\n" not in str(caught.value)
