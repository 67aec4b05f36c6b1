"""Every failure is a one-line `WorkspaceError`, never a raw exception: hostile numbers and
nesting, PDFs PDFium refuses, files swapped mid-read, a full disk, a read-only home and a
home whose folders were replaced by files. Each is checked through the library, the CLI
(exit non-zero, one line, no traceback) and MCP (an error text, not "a leanreplay bug")."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from leanreplay.index import (
    ImportFormatError,
    InvalidArgumentError,
    NotFoundError,
    StoreError,
    Workspace,
    WorkspaceError,
    WrongFileTypeError,
)
from leanreplay.index.faces.cli import cli
from leanreplay.index.faces.server import build_server
from tests import pdfgen
from tests.conftest import SAMPLES
from tests.smallfs import on_small_home

HUGE = "9" * 4301


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    for name in ("classic_xref.pdf", "notes_utf8.txt", "conversation.jsonl", "red_64x48.png"):
        shutil.copy(SAMPLES / name, folder / name)
    whole = (SAMPLES / "classic_xref.pdf").read_bytes()
    (folder / "truncated.pdf").write_bytes(whole[: len(whole) // 2])
    return folder


def cli_run(home: Path, root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), "--root", str(root), *args])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), repr(result.exception)
    return result.exit_code, result.output


def mcp_call(home: Path, root: Path, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    async def main() -> tuple[bool, str]:
        with Workspace(home, [root]) as ws:
            async with Client(build_server(ws)) as client:
                result = await client.call_tool(name, arguments)
                return bool(result.is_error), "".join(
                    c.text for c in result.content if c.type == "text"
                )

    return anyio.run(main)


def one_line_error(code: int, out: str) -> str:
    assert code != 0
    assert "Traceback" not in out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return lines[0]


def mcp_error(home: Path, root: Path, name: str, arguments: dict[str, Any]) -> str:
    is_error, text = mcp_call(home, root, name, arguments)
    assert is_error
    assert "leanreplay bug" not in text
    assert "Traceback" not in text
    return text


# hostile numbers and nesting


def test_a_4301_digit_page_number_is_an_argument_error(tmp_path: Path, root: Path) -> None:
    with (
        Workspace(tmp_path / "home", [root]) as ws,
        pytest.raises(InvalidArgumentError, match="at most 9 digits"),
    ):
        ws.pdf_read("classic_xref.pdf", f"{HUGE}-{HUGE}")
    arguments = {"path": "classic_xref.pdf", "pages": HUGE}
    code, out = cli_run(tmp_path / "home", root, "call", "pdf_read", json.dumps(arguments))
    assert "at most 9 digits" in one_line_error(code, out)
    assert "at most 9 digits" in mcp_error(tmp_path / "home", root, "pdf_read", arguments)


def test_a_5000_digit_integer_argument_is_refused(tmp_path: Path, root: Path) -> None:
    huge = 10**5000 - 1
    with (
        Workspace(tmp_path / "home", [root]) as ws,
        pytest.raises(
            InvalidArgumentError,
            match=r"start_line: an integer of about 5,00\d digits is out of range",
        ),
    ):
        ws.call("file_read", {"path": "notes_utf8.txt", "start_line": huge})
    text = '{"path": "notes_utf8.txt", "start_line": ' + "9" * 5000 + "}"
    code, out = cli_run(tmp_path / "home", root, "call", "file_read", text)
    assert "integer too long" in one_line_error(code, out)
    message = mcp_error(
        tmp_path / "home", root, "file_read", {"path": "notes_utf8.txt", "start_line": huge}
    )
    assert "out of range" in message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "deeper than Python can parse"),
        ('[{"role": "user", "content": "x", "n": ' + "9" * 5000 + "}]", "4,300 digits"),
        ('{"role": "user", "content": "x", "n": ' + "9" * 5000 + "}\n", "4,300 digits"),
    ],
    ids=["nested-100k", "integer-5000-json", "integer-5000-jsonl"],
)
def test_json_python_cannot_hold_is_an_import_error(
    tmp_path: Path, root: Path, text: str, reason: str
) -> None:
    log = tmp_path / "hostile.json"
    log.write_text(text)
    with Workspace(tmp_path / "home") as ws, pytest.raises(ImportFormatError, match=reason):
        ws.ingest(log)
    code, out = cli_run(tmp_path / "home", root, "ingest", str(log))
    assert reason in one_line_error(code, out)


def test_a_message_nested_too_deep_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    message: dict[str, Any] = {"role": "user", "content": "x"}
    inner = message
    for _ in range(5000):
        inner["more"] = {}
        inner = inner["more"]
    with Workspace(tmp_path) as ws:
        ws.append("c", {"role": "user", "content": "first"})
        with pytest.raises(InvalidArgumentError, match="too deeply"):
            ws.append("c", message)
        assert ws.info("c").messages == 1


def _nested(levels: int) -> dict[str, Any]:
    """A message whose lists and dicts nest exactly ``levels`` deep (the message is one)."""
    message: dict[str, Any] = {"role": "user", "content": "x"}
    inner = message
    for _ in range(levels - 1):
        inner["more"] = {}
        inner = inner["more"]
    return message


def test_the_nesting_bound_is_exact_whatever_the_encoder_reaches(tmp_path: Path) -> None:
    # 950 levels store; 951 to 990 are refused although every Python's JSON encoder writes
    # them (the bound is ours, not the encoder's).
    from leanreplay.index.store._store import MAX_MESSAGE_DEPTH

    with Workspace(tmp_path) as ws:
        ws.append("c", _nested(MAX_MESSAGE_DEPTH))
        for levels in (MAX_MESSAGE_DEPTH + 1, 990):
            with pytest.raises(InvalidArgumentError, match="too deeply"):
                ws.append("c", _nested(levels))
        assert ws.info("c").messages == 1


def test_brackets_inside_strings_are_not_nesting(tmp_path: Path) -> None:
    # Thousands of brackets in the text, two levels deep: stored byte-exact.
    message = {"role": "user", "content": "[{" * 3000, "tool_input": {"a": ["]}" * 3000]}}
    with Workspace(tmp_path) as ws:
        ws.append("c", message)
        assert ws.messages("c")[0]["content"] == message["content"]
        assert ws.messages("c")[0]["tool_input"] == message["tool_input"]


def test_a_deep_message_that_is_not_json_is_refused_for_its_depth(tmp_path: Path) -> None:
    message = _nested(2000)
    message["bad"] = {1, 2}  # a set: not JSON either; the depth is what it is told first
    with Workspace(tmp_path) as ws, pytest.raises(InvalidArgumentError, match="too deeply"):
        ws.append("c", message)


# PDFs the backend refuses, files swapped while read


def test_a_truncated_pdf_pdfium_refuses_is_a_file_type_error(tmp_path: Path, root: Path) -> None:
    with Workspace(tmp_path / "home", [root]) as ws:
        for call in (
            lambda: ws.pdf_read("truncated.pdf", "1"),
            lambda: ws.pdf_search("truncated.pdf", "revenue"),
        ):
            with pytest.raises(WrongFileTypeError, match="cannot be read as a PDF"):
                call()
    code, out = cli_run(
        tmp_path / "home", root, "call", "pdf_read", '{"path": "truncated.pdf", "pages": "1"}'
    )
    assert "cannot be read as a PDF" in one_line_error(code, out)
    text = mcp_error(tmp_path / "home", root, "pdf_search", {"path": "truncated.pdf", "query": "a"})
    assert "cannot be read as a PDF" in text


@pytest.mark.parametrize("how", ["rename", "symlink"])
def test_pdf_read_while_the_file_is_replaced_answers_or_says_retry(
    tmp_path: Path, root: Path, how: str
) -> None:
    pdfgen.write_pdf(str(root / "a.pdf"), 3, compress=True)
    pdfgen.write_pdf(str(root / "b.pdf"), 5, compress=True)
    versions = [(root / n).read_bytes() for n in ("a.pdf", "b.pdf")]
    target = root / "swapped.pdf"
    target.write_bytes(versions[0])
    stop = threading.Event()

    def swap() -> None:
        n = 0
        while not stop.is_set():
            staged = root / f".staged{n % 2}"
            if how == "rename":
                staged.write_bytes(versions[n % 2])  # a new inode under the same name
            else:
                staged.symlink_to(root / ("a.pdf", "b.pdf")[n % 2])  # the link moves
            os.replace(staged, target)
            n += 1

    answers = errors = 0
    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        with Workspace(tmp_path / "home", [root]) as ws:
            for _ in range(300):
                try:
                    result = ws.pdf_read("swapped.pdf", "1")
                except NotFoundError as exc:
                    assert "changed while it was read" in str(exc)
                    errors += 1
                except WorkspaceError:
                    errors += 1  # e.g. a half-written PDF, refused as one
                else:
                    assert result["total_pages"] in (3, 5)
                    answers += 1
    finally:
        stop.set()
        swapper.join()
    assert answers + errors == 300
    assert answers > 0


# the home: full disk, read-only, folders replaced by files


def test_a_file_where_the_index_folder_belongs_is_a_store_error(tmp_path: Path, root: Path) -> None:
    home = tmp_path / "home"
    with Workspace(home, [root]) as ws:
        ws.ingest(root / "conversation.jsonl")
    (home / "index").write_text("not a folder")
    with Workspace(home, [root]) as ws:
        for call in (
            lambda: ws.conversation_search("quota"),
            lambda: ws.pdf_search("classic_xref.pdf", "revenue"),
        ):
            with pytest.raises(StoreError, match="a file stands where the home needs a folder"):
                call()
        assert ws.pdf_read("classic_xref.pdf", "1")["pages"][0]["page"] == 1  # reads work
        assert ws.file_read("notes_utf8.txt")["end_line"] == 4
    code, out = cli_run(home, root, "search", "quota")
    line = one_line_error(code, out)
    assert "'index' folder" in line
    assert str(home) not in line
    text = mcp_error(home, root, "conversation_search", {"query": "quota"})
    assert "move it away" in text


_SCENARIO = """
import base64, json, os, sys
from leanreplay.index import Workspace, WorkspaceError
home, root, mode = sys.argv[1:4]
if mode == "setup":
    with Workspace(home, [root]) as ws:
        ws.ingest(os.path.join(root, "conversation.jsonl"))
        ws.call("file_read", {"path": "notes_utf8.txt"})
    sys.exit()
if mode == "full":
    fill_disk(home)
out = {}
def run(name, fn):
    try:
        fn()
        out[name] = "ok"
    except WorkspaceError as exc:
        out[name] = type(exc).__name__ + ": " + str(exc)
    except BaseException as exc:
        out[name] = "RAW " + type(exc).__name__ + ": " + str(exc)
ws = Workspace(home, [root])
run("conversation_read", lambda: ws.call(
    "conversation_read", {"conversation_id": "conversation", "message_id": "m3"}))
run("replay", lambda: ws.replay("conversation"))
run("file_read", lambda: ws.call("file_read", {"path": "big.txt", "start_line": 90000}))
run("pdf_read", lambda: ws.call("pdf_read", {"path": "book.pdf", "pages": "2"}))
run("pdf_info", lambda: ws.call("pdf_info", {"path": "book.pdf"}))
run("image_view", lambda: ws.call("image_view", {"path": "red_64x48.png"}))
run("pdf_search", lambda: ws.call("pdf_search", {"path": "book.pdf", "query": "marker00002"}))
run("append", lambda: ws.append("conversation", {"role": "user", "content": "more"}))
png = base64.b64encode(open(os.path.join(root, "red_64x48.png"), "rb").read()).decode()
block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
run("append_image", lambda: ws.append("c2", {"role": "user", "content": [block]}))
run("ingest", lambda: ws.ingest(os.path.join(root, "other.jsonl")))
import subprocess
def cli(name, *args):
    done = subprocess.run(
        [sys.executable, "-m", "leanreplay.index.cli", "--home", home, "--root", root, *args],
        capture_output=True, text=True,
    )
    out[name] = [done.returncode, done.stderr.strip().splitlines()]
cli("cli_ingest", "ingest", os.path.join(root, "other.jsonl"))
read = {"conversation_id": "conversation", "message_id": "m3"}
cli("cli_read", "call", "conversation_read", json.dumps(read))
import anyio
from mcp import Client
from leanreplay.index.faces.server import build_server
async def mcp():
    async with Client(build_server(ws)) as client:
        search = {"path": "book.pdf", "query": "x"}
        for name, args in (("conversation_read", read), ("pdf_search", search)):
            result = await client.call_tool(name, args)
            text = "".join(c.text for c in result.content if c.type == "text")
            out["mcp_" + name] = [bool(result.is_error), text]
anyio.run(mcp)
print(json.dumps(out))
"""


def _on_small_fs(tmp_path: Path, root: Path, remount: str) -> dict[str, str]:
    mode = "full" if remount == "full" else "read"
    read_only = remount == "ro"
    return on_small_home(
        tmp_path, _SCENARIO, str(root), size="4m", setup=True, read_only=read_only, mode=mode
    )


@pytest.fixture
def busy_root(root: Path) -> Path:
    pdfgen.write_pdf(str(root / "book.pdf"), 12, compress=True)
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(100_000)))
    text = (root / "conversation.jsonl").read_text()
    (root / "other.jsonl").write_text(text)
    return root


@pytest.mark.parametrize("remount", ["full", "ro"], ids=["full-disk", "read-only-home"])
def test_a_full_or_read_only_home_still_reads_and_refuses_writes_clearly(
    tmp_path: Path, busy_root: Path, remount: str
) -> None:
    out = _on_small_fs(tmp_path, busy_root, remount)
    for read in ("conversation_read", "replay", "file_read", "pdf_read", "pdf_info", "image_view"):
        assert out[read] == "ok", (read, out[read])
    for write in ("append", "append_image", "ingest", "pdf_search"):
        assert out[write].startswith("StoreError: "), (write, out[write])
        assert "\n" not in out[write]
        assert str(tmp_path) not in out[write]
    reason = "full" if remount == "full" else "read-only"
    assert reason in out["append"]
    assert "reads still work" in out["append"]
    code, lines = out["cli_ingest"]
    assert code != 0
    assert len(lines) == 1, lines
    assert lines[0].startswith("Error: nothing was stored")
    assert out["cli_read"] == [0, []]
    assert out["mcp_conversation_read"][0] is False
    is_error, text = out["mcp_pdf_search"]
    assert is_error
    assert reason in text, text
    assert "leanreplay bug" not in text


_FILL_WHILE_OPEN = """
import json, os, sys
from leanreplay.index import Workspace, WorkspaceError
home = sys.argv[1]
ws = Workspace(home)
ws.append("c", {"role": "user", "content": "first"})
fill_disk(home)
errors = []
for _ in range(3):
    try:
        ws.append("c", {"role": "user", "content": "x" * 200_000})
        errors.append(None)
    except WorkspaceError as exc:
        errors.append(type(exc).__name__ + ": " + str(exc))
print(json.dumps({"errors": errors, "kept": [m["content"] for m in ws.messages("c")]}))
"""


def test_a_disk_that_fills_under_an_open_store_refuses_writes_and_keeps_what_was_stored(
    tmp_path: Path,
) -> None:
    out = on_small_home(tmp_path, _FILL_WHILE_OPEN, size="2m")
    assert out["kept"] == ["first"]
    for error in out["errors"]:
        assert error == (
            "StoreError: nothing was stored: the disk holding the home is full; free space "
            "and retry"
        )
