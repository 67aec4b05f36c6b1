"""Real MCP sessions: the SDK client talks to `leanreplay serve` over stdio and over
streamable HTTP (with and without the bearer token), and to the server in memory."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from leanreplay.index import TOOL_NAMES, Workspace, tool_schemas
from leanreplay.index.faces.server import build_server
from tests import pdfgen
from tests.builders import MCP_INITIALIZE
from tests.conftest import REPO, SAMPLES


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mcp")
    root = base / "root"
    root.mkdir()
    for name in (
        "classic_xref.pdf",
        "red_64x48.png",
        "notes_utf8.txt",
        "conversation.jsonl",
        "sales.xlsx",
        "deck.pptx",
        "bundle.tar.gz",
    ):
        (root / name).write_bytes((SAMPLES / name).read_bytes())
    pdfgen.write_pdf(str(root / "book.pdf"), 200, compress=True)
    for session in ("memory", "stdio", "http"):  # each session's first search must index
        (root / f"book_{session}.pdf").write_bytes((root / "book.pdf").read_bytes())
    home = base / "home"
    with Workspace(home, [root]) as ws:
        ws.ingest(root / "conversation.jsonl")
    return {"root": root, "home": home}


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


async def exercise(client: Client, session: str) -> dict[str, Any]:
    """Call every tool once, plus some bad calls; return what the tests check."""
    listed = await client.list_tools()
    out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    calls = {
        "pdf_info": {"path": "classic_xref.pdf"},
        "pdf_search": {"path": f"book_{session}.pdf", "query": "marker00150"},
        "pdf_read": {"path": "book.pdf", "pages": "3-4"},
        "file_read": {"path": "notes_utf8.txt", "end_line": 2},
        "file_search": {"path": "notes_utf8.txt", "query": "café"},
        "image_view": {"path": "red_64x48.png", "max_side": 32},
        "table_read": {"path": "sales.xlsx", "rows": "2-3"},
        "table_query": {"path": "sales.xlsx", "sql": "SELECT count(*) AS n FROM t"},
        "doc_read": {"path": "deck.pptx", "part": "2"},
        "doc_search": {"path": "deck.pptx", "query": "hire"},
        "archive_list": {"path": "bundle.tar.gz", "prefix": "docs/"},
        "file_list": {"pattern": "*.pptx"},
        "conversation_read": {"conversation_id": "conversation", "message_id": "m3"},
        "conversation_search": {"query": "quota"},
        "tool_search": {"query": "read numbered lines of a text file"},
        "tool_activate": {"names": ["file_read"]},
        "tool_call": {"name": "file_read", "arguments": {"path": "notes_utf8.txt", "end_line": 2}},
    }
    for name, args in calls.items():
        kwargs = {"progress_callback": on_progress} if name == "pdf_search" else {}
        out[name] = await client.call_tool(name, args, **kwargs)
    out["progress"] = progress
    out["outside"] = await client.call_tool("file_read", {"path": "/etc/passwd"})
    out["bad_arg"] = await client.call_tool("pdf_read", {"path": "book.pdf", "pages": "x"})
    out["missing_arg"] = await client.call_tool("file_read", {})
    out["unknown"] = await client.call_tool(
        "conversation_read", {"conversation_id": "nope", "message_id": "m1"}
    )
    return out


def check(out: dict[str, Any]) -> None:
    assert set(out["tools"]) == set(TOOL_NAMES)
    for tool in out["tools"].values():
        assert tool.annotations.read_only_hint is True
        assert tool.description
        assert tool.input_schema["type"] == "object"
    assert (
        out["tools"]["file_read"].input_schema["properties"]["end_line"]["anyOf"][0]["minimum"] == 1
    )
    for name in TOOL_NAMES:
        assert out[name].is_error is False, (name, text_of(out[name]))
    assert json.loads(text_of(out["pdf_info"]))["facts"]["pages"] == 12
    assert json.loads(text_of(out["pdf_search"]))["hits"][0]["page"] == 150
    assert [p["page"] for p in json.loads(text_of(out["pdf_read"]))["pages"]] == [3, 4]
    assert (
        json.loads(text_of(out["file_read"]))["content"]
        == "1\tMeeting notes\n2\tدرآمد فصلی افزایش یافت"
    )
    assert json.loads(text_of(out["file_search"]))["hits"][0]["line"] == 3
    assert [r[0] for r in json.loads(text_of(out["table_read"]))["rows"]] == [2, 3]
    assert json.loads(text_of(out["table_query"]))["rows"] == [[5]]
    assert json.loads(text_of(out["doc_read"]))["parts"][0]["text"].startswith("# Regions")
    assert json.loads(text_of(out["doc_search"]))["hits"][0]["part"] == 3
    assert len(json.loads(text_of(out["file_list"]))["files"]) == 1
    assert [e["name"] for e in json.loads(text_of(out["archive_list"]))["entries"]] == [
        "docs/guide.md"
    ]
    image = next(c for c in out["image_view"].content if c.type == "image")
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG")
    original = json.loads((SAMPLES / "conversation.jsonl").read_text().splitlines()[2])
    read = json.loads(text_of(out["conversation_read"]))
    assert read["content"] == original["content"][0]["content"]
    assert (read["format"], read["next"]) == ("text", None)
    assert json.loads(text_of(out["conversation_search"]))["hits"]
    assert json.loads(text_of(out["tool_search"]))["tools"][0]["name"] == "file_read"
    assert json.loads(text_of(out["tool_activate"]))["tools"][0]["name"] == "file_read"
    assert text_of(out["tool_call"]) == text_of(out["file_read"]), "tool_call answers as the tool"
    assert out["progress"], "first pdf_search sent no progress notifications"
    assert out["progress"][-1][0] == out["progress"][-1][1]
    assert out["outside"].is_error
    assert "outside the allowed roots" in text_of(out["outside"])
    assert out["bad_arg"].is_error
    assert "bad arguments for pdf_read: pages: String should match pattern" in text_of(
        out["bad_arg"]
    )
    assert "(it takes: path, pages)" in text_of(out["bad_arg"])
    assert out["missing_arg"].is_error
    assert "path: Field required" in text_of(out["missing_arg"])
    assert out["unknown"].is_error
    assert "no conversation 'nope'" in text_of(out["unknown"])
    for key in ("outside", "bad_arg", "missing_arg", "unknown"):
        assert "Traceback" not in text_of(out[key])


def test_in_memory_session(env: dict[str, Path], tmp_path: Path) -> None:
    async def main() -> dict[str, Any]:
        with Workspace(env["home"], [env["root"]]) as ws:
            async with Client(build_server(ws)) as client:
                return await exercise(client, "memory")

    check(anyio.run(main))


def _sans_titles(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k not in ("title", "additionalProperties")}
    if "properties" in out:
        out["properties"] = {k: _sans_titles(v) for k, v in out["properties"].items()}
    return out


def test_the_server_advertises_the_library_signatures(tmp_path: Path) -> None:
    # The SDK builds each tool from the Workspace method (add_tool); what it advertises must
    # be what `tool_schemas` exports, so the CLI, MCP and function calling agree.
    async def main() -> list[Any]:
        with Workspace(tmp_path) as ws:
            async with Client(build_server(ws)) as client:
                return list((await client.list_tools()).tools)

    listed = {t.name: t for t in anyio.run(main)}
    assert list(listed) == list(TOOL_NAMES)
    for exported in tool_schemas("mcp"):
        tool = listed[exported["name"]]
        assert tool.description == exported["description"]
        assert _sans_titles(tool.input_schema) == _sans_titles(exported["inputSchema"])
        assert tool.annotations.read_only_hint is exported["annotations"]["readOnlyHint"] is True


def test_stdio_session_with_a_subprocess(env: dict[str, Path]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "leanreplay.index.cli",
            "--home",
            str(env["home"]),
            "--root",
            str(env["root"]),
            "serve",
        ],
        cwd=str(REPO),
    )

    async def main() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            return await exercise(client, "stdio")

    check(anyio.run(main))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(env: dict[str, Path]) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leanreplay.index.cli",
            "--home",
            str(env["home"]),
            "--root",
            str(env["root"]),
            "serve",
            "--http",
            f"127.0.0.1:{port}",
        ],
        env={**os.environ, "LEANREPLAY_TOKEN": "s3cret-token-of-at-least-32-chars"},
        cwd=str(REPO),
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_http_session_with_the_bearer_token(http_server: str) -> None:
    async def main() -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(
                headers={"Authorization": "Bearer s3cret-token-of-at-least-32-chars"}, timeout=120
            ) as http,
            Client(streamable_http_client(http_server, http_client=http)) as client,
        ):
            return await exercise(client, "http")

    check(anyio.run(main))


@pytest.mark.parametrize(
    "header",
    [None, "Bearer wrong", "s3cret-token-of-at-least-32-chars", "Basic czNjcmV0"],
    ids=repr,
)
def test_http_refuses_requests_without_the_token(http_server: str, header: str | None) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if header is not None:
        headers["Authorization"] = header
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx2.post(http_server, json=body, headers=headers, timeout=10)
    assert response.status_code == 401
    assert "bearer token" in response.text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--http", "0.0.0.0:9"], "not a loopback address"),
        (["serve", "--http", "127.0.0.1:9", "--token", "short"], "fewer than 32"),
        (
            ["serve", "--http", "0.0.0.0:9", "--allow-remote", "--no-auth"],
            "allowed only on a loopback address",
        ),
        (["serve", "--http", "localhost"], "--http takes HOST:PORT"),
    ],
    ids=["remote", "short-token", "no-auth-remote", "no-port"],
)
def test_serve_refuses_unsafe_http_settings(tmp_path: Path, args: list[str], message: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LEANREPLAY_TOKEN"}
    result = subprocess.run(
        [sys.executable, "-m", "leanreplay.index.cli", "--home", str(tmp_path), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO),
        timeout=60,
    )
    assert result.returncode == 1
    assert message in result.stderr


def test_a_stdio_frame_over_the_cap_gets_an_error_and_the_session_goes_on(
    env: dict[str, Path],
) -> None:
    from leanreplay.index.faces.server import MAX_STDIO_FRAME_BYTES

    proc = subprocess.Popen(
        [sys.executable, "-m", "leanreplay.index.cli", "--home", str(env["home"]), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(REPO),
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    oversized = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "file_read", '
        b'"arguments": {"path": "' + b"x" * (MAX_STDIO_FRAME_BYTES + 1024) + b'"}}}\n'
    )
    after = {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}}

    def send() -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(MCP_INITIALIZE).encode() + b"\n")
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        proc.stdin.write(oversized)
        proc.stdin.write(json.dumps(after).encode() + b"\n")
        proc.stdin.flush()

    writer = threading.Thread(target=send)
    writer.start()
    try:
        answers: dict[int, Any] = {}
        while 8 not in answers:
            line = proc.stdout.readline()
            assert line, "the server closed the session"
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message
        writer.join()
        error = answers[7]["error"]
        assert error["code"] == -32600
        assert f"limit of {MAX_STDIO_FRAME_BYTES:,} bytes" in error["message"]
        assert {t["name"] for t in answers[8]["result"]["tools"]} >= {"file_read"}
    finally:
        proc.kill()
        proc.wait(10)
        writer.join()
        for pipe in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
