"""The lean-start gateway with three real upstream MCP servers (stdio, HTTP, one that dies)."""

from __future__ import annotations

import json
import os
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
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ToolListChangedNotification

from leanreplay.index import TOOL_NAMES, InvalidArgumentError, Workspace
from leanreplay.index.faces.gateway import gateway, read_config
from tests.conftest import REPO

UPSTREAM = str(REPO / "tests" / "fixtures" / "mcp_upstream.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def weather_url() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, UPSTREAM, "weather", "--http", str(port)],
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
        else:
            pytest.fail("the HTTP upstream did not start within 30 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def config(tmp_path: Path, weather_url: str) -> Path:
    path = tmp_path / "servers.json"
    servers = {
        "notes": {"command": sys.executable, "args": [UPSTREAM, "notes"]},
        "weather": {"type": "http", "url": weather_url, "headers": {"X-Test": "1"}},
        "flaky": {"command": sys.executable, "args": [UPSTREAM, "flaky"]},
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


def test_a_client_sees_only_our_tools_then_activates_and_calls_upstream_ones(
    tmp_path: Path, config: Path
) -> None:
    changed: list[Any] = []

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with Workspace(tmp_path / "home") as ws:
            async with gateway(ws, read_config(config)) as server, Client(server) as client:
                out["first"] = [t.name for t in (await client.list_tools()).tools]
                out["instructions"] = client.instructions
                found = await client.call_tool("tool_search", {"query": "weather in a city"})
                out["search"] = json.loads(text_of(found))["tools"]
                out["index"] = ws.capabilities.render()
                out["early"] = await client.call_tool("forecast", {"city": "Oslo"})
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("tool_activate", {"names": ["forecast", "add_note"]})
                    with anyio.fail_after(10):
                        async for event in subscription:
                            changed.append(event)
                            break
                out["after"] = {t.name: t for t in (await client.list_tools()).tools}
                progress: list[float] = []

                async def on_progress(done: float, total: float | None, msg: Any) -> None:
                    progress.append(done)

                out["forecast"] = await client.call_tool(
                    "forecast", {"city": "Oslo"}, progress_callback=on_progress
                )
                out["progress"] = progress
                out["note"] = await client.call_tool("add_note", {"text": "buy milk"})
                await client.call_tool("tool_activate", {"names": ["failing_note"]})
                out["failing"] = await client.call_tool("failing_note", {"reason": "full"})
        direct = StdioServerParameters(command=sys.executable, args=[UPSTREAM, "notes"])
        async with Client(direct) as upstream:
            out["direct"] = await upstream.call_tool("failing_note", {"reason": "full"})
        return out

    out = anyio.run(main)
    assert out["first"] == list(TOOL_NAMES), "upstream schemas leaked into the first listing"
    assert "tool_activate(names=[...])" in out["instructions"]
    assert "\n[notes]\nadd_note: Save a short text note for later\n" in out["instructions"]
    assert out["search"][0]["name"] == "forecast"
    assert out["search"][0]["server"] == "weather"
    assert "[weather]\nforecast: Weather forecast for a city" in out["index"]
    assert out["early"].is_error
    assert "call tool_activate with names=['forecast'] first" in text_of(out["early"])
    assert [type(e).__name__ for e in changed] == ["ToolsListChanged"]
    assert list(out["after"])[: len(TOOL_NAMES)] == list(TOOL_NAMES)
    assert list(out["after"])[len(TOOL_NAMES) :] == ["forecast", "add_note"]
    assert out["after"]["forecast"].input_schema["properties"]["city"]["type"] == "string"
    assert text_of(out["forecast"]) == "sunny in Oslo"
    assert out["progress"] == [1, 2, 3], "upstream progress was not relayed"
    assert text_of(out["note"]) == "saved note 1"
    assert out["failing"].is_error
    assert "note refused: full" in text_of(out["failing"])
    assert out["failing"].model_dump() == out["direct"].model_dump(), "the error was rewritten"


def test_an_upstream_that_cannot_start_is_named_with_its_cause(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    servers = {
        "notes": {"command": sys.executable, "args": [UPSTREAM, "notes"]},
        "ghost": {"command": str(tmp_path / "no-such-server")},
    }
    config.write_text(json.dumps({"mcpServers": servers}))

    async def main() -> tuple[str | None, list[str]]:
        with Workspace(tmp_path / "home") as ws:
            async with gateway(ws, read_config(config)) as server, Client(server) as client:
                found = await client.call_tool("tool_search", {"query": "save a note"})
                return client.instructions, [t["name"] for t in json.loads(text_of(found))["tools"]]

    instructions, found = anyio.run(main)
    assert "add_note" in found, "one broken upstream took the others down"
    assert instructions is not None
    down = instructions.split("Servers that failed to start (their tools are missing):\n")[1]
    assert down.startswith("- ghost: FileNotFoundError"), down
    assert "ExceptionGroup" not in down


def test_legacy_clients_get_the_list_changed_notification(tmp_path: Path, config: Path) -> None:
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            seen.append("tools/list_changed")

    async def main() -> None:
        with Workspace(tmp_path / "home") as ws:
            async with (
                gateway(ws, read_config(config)) as server,
                Client(server, message_handler=on_message, mode="legacy") as client,
            ):
                await client.call_tool("tool_activate", {"names": ["file_read"]})
                assert seen == [], "activating our own tool changed nothing in the listing"
                await client.call_tool("tool_activate", {"names": ["list_notes"]})
                with anyio.fail_after(10):
                    while not seen:
                        await anyio.sleep(0.01)

    anyio.run(main)
    assert seen == ["tools/list_changed"]


def test_colliding_names_are_prefixed_and_a_dead_upstream_is_restarted_once(
    tmp_path: Path, config: Path
) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with Workspace(tmp_path / "home") as ws:
            async with gateway(ws, read_config(config)) as server, Client(server) as client:
                names = [c.name for c in ws.capabilities.capabilities]
                out["names"] = names
                await client.call_tool("tool_activate", {"names": ["ping", "flaky_ping"]})
                await client.call_tool("tool_activate", {"names": ["crash"]})
                out["ping"] = text_of(await client.call_tool("flaky_ping", {}))
                out["notes_ping"] = text_of(await client.call_tool("ping", {}))
                out["crash1"] = await client.call_tool("crash", {})
                out["ping2"] = text_of(await client.call_tool("flaky_ping", {}))
                out["crash2"] = await client.call_tool("crash", {})
                out["ping3"] = await client.call_tool("flaky_ping", {})
        return out

    out = anyio.run(main)
    assert out["names"].count("ping") == 1
    assert {"weather_ping", "flaky_ping"} <= set(out["names"])
    assert out["notes_ping"].startswith("pong from notes")
    assert out["ping"].startswith("pong from flaky")
    assert out["crash1"].is_error
    assert "was restarted: call the tool again" in text_of(out["crash1"])
    assert out["ping2"].startswith("pong from flaky"), "the restarted upstream does not answer"
    assert out["ping2"] != out["ping"], "the same process answered: no restart happened"
    assert out["crash2"].is_error
    assert "could not be restarted" in text_of(out["crash2"])
    assert out["ping3"].is_error
    assert "'flaky' is not running" in text_of(out["ping3"])


def test_the_cli_serves_the_gateway_over_stdio(tmp_path: Path, config: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "leanreplay.index.cli",
            "--home",
            str(tmp_path / "home"),
            "serve",
            "--upstream",
            str(config),
        ],
        cwd=str(REPO),
    )

    async def main() -> tuple[list[str], list[str], str]:
        async with Client(params, read_timeout_seconds=60) as client:
            first = [t.name for t in (await client.list_tools()).tools]
            await client.call_tool("tool_activate", {"names": ["list_notes"]})
            after = [t.name for t in (await client.list_tools()).tools]
            listed = text_of(await client.call_tool("list_notes", {}))
        return first, after, listed

    first, after, listed = anyio.run(main)
    assert first == list(TOOL_NAMES)
    assert after == [*TOOL_NAMES, "list_notes"]
    assert listed in ("[]", "")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not JSON"),
        ("[]", 'needs a non-empty "mcpServers" object'),
        ('{"mcpServers": {}}', 'needs a non-empty "mcpServers" object'),
        ('{"mcpServers": {"a": {}}}', 'mcpServers\\["a"\\] needs a command'),
        ('{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "args must be a list"),
        ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "needs a http\\(s\\) url"),
        ('{"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}', "has type 'sse'"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "env must be an object"),
    ],
    ids=["json", "array", "empty", "no-command", "args", "url", "sse", "env"],
)
def test_bad_configs_are_refused_with_what_to_fix(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(InvalidArgumentError, match=message):
        read_config(path)


def test_a_config_as_clients_write_it_is_read_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fs": {"command": "npx", "args": ["-y", "pkg", "/srv/data"], "env": {"A": "b"}},
                    "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "x"}},
                }
            }
        )
    )
    fs, web = read_config(path)
    assert (fs.name, fs.command, fs.args, fs.env) == (
        "fs",
        "npx",
        ("-y", "pkg", "/srv/data"),
        {"A": "b"},
    )
    assert (web.name, web.url, dict(web.headers)) == (
        "web",
        "http://127.0.0.1:9/mcp",
        {"Authorization": "x"},
    )


def test_the_gateway_over_http_keeps_the_token_and_serves_activated_tools(
    tmp_path: Path, config: Path
) -> None:
    port = _free_port()
    token = "gateway-token-of-at-least-32-characters"
    command = [
        "-m",
        "leanreplay.index.cli",
        "--home",
        str(tmp_path / "home"),
        "serve",
        "--upstream",
    ]
    proc = subprocess.Popen(
        [sys.executable, *command, str(config), "--http", f"127.0.0.1:{port}"],
        env={**os.environ, "LEANREPLAY_TOKEN": token},
        cwd=str(REPO),
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"

    async def main() -> tuple[int, list[str], str]:
        with anyio.fail_after(60):
            while True:
                try:
                    refused = httpx2.post(url, json={}, timeout=1).status_code
                    break
                except httpx2.TransportError:
                    await anyio.sleep(0.1)
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            await client.call_tool("tool_activate", {"names": ["forecast"]})
            names = [t.name for t in (await client.list_tools()).tools]
            answer = text_of(await client.call_tool("forecast", {"city": "Lima"}))
        return refused, names, answer

    try:
        refused, names, answer = anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(10)
    assert refused == 401
    assert names == [*TOOL_NAMES, "forecast"]
    assert answer == "sunny in Lima"


def test_a_client_with_a_fixed_tools_list_activates_and_calls_through_tool_call(
    tmp_path: Path, config: Path
) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with Workspace(tmp_path / "home") as ws:
            ws.append("chat", {"role": "user", "content": "the zebra crossing report"})
            async with gateway(ws, read_config(config)) as server:
                # The initialize handshake (what the TypeScript SDK and today's desktop
                # clients speak): the capability must say the list changes.
                async with Client(server, mode="legacy") as legacy:
                    out["legacy"] = legacy.server_capabilities.tools
                async with Client(server) as client:
                    out["modern"] = client.server_capabilities.tools
                    listed = {t.name: t for t in (await client.list_tools()).tools}
                    out["fixed"], out["call_hints"] = list(listed), listed["tool_call"].annotations
                    out["early"] = await client.call_tool(
                        "tool_call", {"name": "forecast", "arguments": {"city": "Oslo"}}
                    )
                    activated = await client.call_tool(
                        "tool_activate", {"names": ["forecast", "conversation_search"]}
                    )
                    out["schemas"] = json.loads(text_of(activated))["tools"]
                    again = await client.call_tool("tool_activate", {"names": ["forecast"]})
                    out["again"] = json.loads(text_of(again))
                    progress: list[float] = []

                    async def on_progress(done: float, total: float | None, msg: Any) -> None:
                        progress.append(done)

                    out["forecast"] = await client.call_tool(
                        "tool_call",
                        {"name": "forecast", "arguments": {"city": "Oslo"}},
                        progress_callback=on_progress,
                    )
                    out["progress"] = progress
                    out["own"] = await client.call_tool(
                        "tool_call",
                        {"name": "conversation_search", "arguments": {"query": "zebra"}},
                    )
                    out["bad"] = await client.call_tool(
                        "tool_call", {"name": "forecast", "arguments": "Oslo"}
                    )
                    out["unknown"] = await client.call_tool(
                        "tool_call", {"name": "no_such_tool", "arguments": {}}
                    )
        return out

    out = anyio.run(main)
    assert out["legacy"].list_changed is True
    assert out["modern"].list_changed is True
    assert out["fixed"] == list(TOOL_NAMES)
    assert "tool_call" in out["fixed"]
    assert out["call_hints"] is None, "tool_call forwards to tools that may write"
    assert out["early"].is_error
    assert "call tool_activate with names=['forecast'] first" in text_of(out["early"])
    assert [s["name"] for s in out["schemas"]] == ["forecast", "conversation_search"]
    assert out["schemas"][0]["inputSchema"]["properties"]["city"]["type"] == "string"
    assert out["again"]["already_active"] == ["forecast"]
    assert [s["name"] for s in out["again"]["tools"]] == ["forecast"], "schemas every time"
    assert text_of(out["forecast"]) == "sunny in Oslo"
    assert out["progress"] == [1, 2, 3], "upstream progress was not relayed through tool_call"
    hits = json.loads(text_of(out["own"]))["hits"]
    assert [h["conversation_id"] for h in hits] == ["chat"]
    assert out["bad"].is_error
    assert "arguments (an object of that tool's arguments)" in text_of(out["bad"])
    assert out["unknown"].is_error
    assert "no tool named 'no_such_tool'" in text_of(out["unknown"])


def test_upstream_prompts_and_resources_are_forwarded(tmp_path: Path, config: Path) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with Workspace(tmp_path / "home") as ws:
            async with gateway(ws, read_config(config)) as server, Client(server) as client:
                out["prompts"] = {p.name: p for p in (await client.list_prompts()).prompts}
                out["greet"] = await client.get_prompt("greet", {"name": "Ada"})
                out["weather_greet"] = await client.get_prompt("weather_greet", {"name": "Bo"})
                await client.call_tool("tool_activate", {"names": ["add_note"]})
                await client.call_tool("add_note", {"text": "buy milk"})
                out["review"] = await client.get_prompt("review_notes", {"topic": "food"})
                listed = (await client.list_resources()).resources
                out["resources"] = {str(r.uri): r for r in listed}
                templates = (await client.list_resource_templates()).resource_templates
                out["templates"] = [t.uri_template for t in templates]
                out["all"] = await client.read_resource("notes://all", cache_mode="bypass")
                out["one"] = await client.read_resource("notes://note/1")
                out["logo"] = await client.read_resource("notes://logo.png")
                with pytest.raises(Exception) as unknown:  # noqa: PT011 - the SDK's own error
                    await client.get_prompt("no_such_prompt", {})
                out["unknown"] = str(unknown.value)
                with pytest.raises(Exception) as missing:  # noqa: PT011 - the SDK's own error
                    await client.read_resource("nowhere://x")
                out["missing"] = str(missing.value)
        direct = StdioServerParameters(command=sys.executable, args=[UPSTREAM, "notes"])
        async with Client(direct) as upstream:
            out["direct"] = await upstream.get_prompt("greet", {"name": "Ada"})
            out["direct_logo"] = await upstream.read_resource("notes://logo.png")
        return out

    out = anyio.run(main)
    assert list(out["prompts"]) == ["greet", "review_notes", "weather_greet", "flaky_greet"]
    assert out["prompts"]["review_notes"].description == "Review the saved notes on a topic."
    assert [a.name for a in out["prompts"]["greet"].arguments] == ["name"]
    assert out["greet"].messages == out["direct"].messages, "the prompt was rewritten"
    assert out["greet"].description == out["direct"].description
    assert out["weather_greet"].messages[0].content.text == "Say hello to Bo from weather."
    assert "buy milk" in out["review"].messages[0].content.text
    assert set(out["resources"]) == {"notes://all", "notes://logo.png"}
    assert out["templates"] == ["notes://note/{index}"]
    assert out["all"].contents[0].text == "buy milk"
    assert out["one"].contents[0].text == "buy milk"
    assert out["logo"].contents == out["direct_logo"].contents  # the bytes, the MIME type
    assert "no_such_prompt" in out["unknown"]
    assert "nowhere://x" in out["missing"]
