"""The gateway under hostile upstreams (tests/fixtures/hostile_upstream.py): each upstream is
isolated, start-up and every forwarded call are bounded, replies are capped, what an upstream
says is escaped before it is rendered, and our meta-tools are never shadowed."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from leanreplay.index import Workspace
from leanreplay.index.faces.gateway import UpstreamSpec, gateway
from tests.conftest import REPO

HOSTILE = str(REPO / "tests" / "fixtures" / "hostile_upstream.py")
BOUND_S = 3.0  # the start-up and call bounds these tests run with


def upstream(name: str, *args: str) -> UpstreamSpec:
    return UpstreamSpec(name, sys.executable, (HOSTILE, *args))


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


def test_upstreams_that_list_nothing_or_garbage_lose_only_their_own_tools(
    tmp_path: Path,
) -> None:
    specs = [
        upstream("silent", "silent"),
        upstream("unlisted", "unlisted"),
        upstream("bad", "badnames"),
        upstream("many", "many", "10000"),
        upstream("fine", "echo"),
    ]

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with Workspace(tmp_path / "home") as ws:
            async with (
                gateway(ws, specs, start_timeout=BOUND_S, call_timeout=BOUND_S) as server,
                Client(server) as client,
            ):
                out["instructions"] = client.instructions
                out["names"] = [c.name for c in ws.capabilities.capabilities]
                out["search"] = json.loads(
                    text_of(await client.call_tool("tool_search", {"query": "upstream search"}))
                )
                out["activate"] = await client.call_tool("tool_activate", {"names": ["echo"]})
                out["echo"] = text_of(await client.call_tool("echo", {"text": "still here"}))
        return out

    out = anyio.run(main)
    instructions = out["instructions"]
    down = instructions.split("Servers that failed to start (their tools are missing):\n")[1]
    assert f"- silent: it did not start and list its tools within {BOUND_S:g} s" in down
    assert f"- unlisted: it did not start and list its tools within {BOUND_S:g} s" in down
    left = instructions.split("Tools the index could not take (they are missing):\n")[1]
    assert "- bad: tool name 'bad name!' is not 1-64 letters" in left
    assert "tool name 'dup' is listed twice; the first is kept" in left
    assert "- many: every tool past the first 1000" in left
    assert "\nbell: Rings \\u0007 the \\u001b[31mbell\\u001b[0m \\u202eevil\n" in instructions
    assert not any(c in instructions for c in "\x07\x1b\u202e"), "raw controls were rendered"
    assert "\ndup: The first dup\n" in instructions
    names = out["names"]
    assert "tool_search" not in names, "an upstream tool took our meta-tool's name"
    assert "tool_activate" not in names
    assert {"bad_tool_search", "bad_tool_activate"} <= set(names)
    assert len([n for n in names if n.startswith("t") and n[1:].isdigit()]) == 1000
    assert out["search"]["query"] == "upstream search", "tool_search was not ours"
    assert "bad_tool_search" in [t["name"] for t in out["search"]["tools"]]
    assert not out["activate"].is_error, text_of(out["activate"])
    assert out["echo"] == "still here"


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("hang", f"upstream server 'u' did not answer work within {BOUND_S:g} s"),
        ("giant", "upstream server 'u' answered work with an error: the upstream's reply of "),
        ("garbage", "the upstream's reply is not valid JSON-RPC: Invalid JSON"),
        ("nested", "the upstream's reply is not valid JSON-RPC: Invalid JSON: recursion limit"),
    ],
)
def test_a_forwarded_call_always_answers_and_names_the_upstream(
    tmp_path: Path, mode: str, words: str
) -> None:
    args = [mode, str(40 * 1024 * 1024)] if mode == "giant" else [mode]

    async def main() -> tuple[Any, str]:
        with Workspace(tmp_path / "home") as ws:
            async with (
                gateway(ws, [upstream("u", *args)], call_timeout=BOUND_S) as server,
                Client(server) as client,
            ):
                await client.call_tool("tool_activate", {"names": ["work", "echo"]})
                result = await client.call_tool("work", {})
                after = text_of(await client.call_tool("echo", {"text": "alive"}))
        return result, after

    result, after = anyio.run(main)
    assert result.is_error
    assert words in text_of(result)
    if mode == "giant":
        assert "over the gateway's limit of 33,554,432 bytes per message" in text_of(result)
    assert after == "alive", "one bad reply broke the upstream's connection"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def giant_http() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, HOSTILE, "giant", str(40 * 1024 * 1024), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx2.get(url, timeout=1)
                break
            except httpx2.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_giant_json_body_from_an_http_upstream_is_refused_at_the_cap(
    tmp_path: Path, giant_http: str
) -> None:
    async def main() -> tuple[Any, str]:
        with Workspace(tmp_path / "home") as ws:
            spec = UpstreamSpec("web", url=giant_http)
            async with (
                gateway(ws, [spec], call_timeout=30) as server,
                Client(server) as client,
            ):
                await client.call_tool("tool_activate", {"names": ["work", "echo"]})
                result = await client.call_tool("work", {})
                after = text_of(await client.call_tool("echo", {"text": "alive"}))
        return result, after

    result, after = anyio.run(main)
    assert result.is_error
    assert "upstream server 'web' answered work with an error" in text_of(result)
    assert "over the gateway's limit of 33,554,432 bytes per message" in text_of(result)
    assert after == "alive"
