"""Forwarded calls on the gateway's stdio take the fast path (`_FastPath`, `Relay`): real SDK
clients in front of a real stdio gateway process, real upstream processes behind it. What the
upstream said comes back as it said it, and every failure is the same tool error as on the
SDK path (tests/test_gateway_hostile.py says the same words for it)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types import SERVER_INFO_META_KEY, JSONRPCResponse

from tests.conftest import REPO

GATEWAY = str(REPO / "tests" / "fixtures" / "stdio_gateway.py")
HOSTILE = str(REPO / "tests" / "fixtures" / "hostile_upstream.py")
UPSTREAM = str(REPO / "tests" / "fixtures" / "mcp_upstream.py")
BOUND_S = 3.0  # the call bound the gateway runs with here


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


def served(tmp_path: Path, servers: dict[str, Any]) -> StdioServerParameters:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    home = str(tmp_path / "home")
    args = [GATEWAY, home, str(config), str(BOUND_S)]
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO))


def hostile(mode: str, *args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [HOSTILE, mode, *args]}


@contextlib.asynccontextmanager
async def recording(
    params: StdioServerParameters, results: list[dict[str, Any]]
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport, with every result kept as it came off the wire (before the
    client's models read it)."""
    async with stdio_client(params) as (read, write), anyio.create_task_group() as tg:
        send, receive = anyio.create_memory_object_stream[Any](16)

        async def tee() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, SessionMessage) and isinstance(
                        item.message, JSONRPCResponse
                    ):
                        results.append(dict(item.message.result))
                    await send.send(item)

        tg.start_soon(tee)
        yield receive, write
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_forwarded_result_keeps_the_fields_the_sdk_does_not_know(
    tmp_path: Path, mode: str
) -> None:
    raw: list[dict[str, Any]] = []

    async def main() -> list[Any]:
        params = served(tmp_path, {"u": hostile("extra")})
        async with Client(recording(params, raw), mode=mode, read_timeout_seconds=60) as client:
            await client.call_tool("tool_activate", {"names": ["work"]})
            return [
                await client.call_tool("work", {}),
                await client.call_tool("tool_call", {"name": "work", "arguments": {}}),
            ]

    results = anyio.run(main)
    assert [text_of(r) for r in results] == ["done", "done"]
    for result in raw[-2:]:
        assert result["x-vendor"] == {"trace": [1, 2.5]}, "a field the SDK does not know was lost"
        assert result["content"] == [{"type": "text", "text": "done", "x-vendor-note": "kept"}]
        if mode == "auto":  # a 2026-07-28 session: the fields its results must carry
            assert result["resultType"] == "complete"
            assert result["_meta"][SERVER_INFO_META_KEY]["name"] == "leanreplay"
        else:
            assert "resultType" not in result
            assert "_meta" not in result


def test_a_nan_from_the_upstream_reaches_the_client_as_json(tmp_path: Path) -> None:
    raw: list[dict[str, Any]] = []

    async def main() -> Any:
        params = served(tmp_path, {"u": hostile("nan")})
        async with Client(recording(params, raw), read_timeout_seconds=60) as client:
            await client.call_tool("tool_activate", {"names": ["work"]})
            return await client.call_tool("work", {})

    result = anyio.run(main)
    assert not result.is_error
    assert raw[-1]["structuredContent"] == {"x": None}, "NaN (not JSON) went to the client"


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("hang", f"upstream server 'u' did not answer work within {BOUND_S:g} s"),
        ("giant", "upstream server 'u' answered work with an error: the upstream's reply of "),
        ("garbage", "the upstream's reply is not valid JSON-RPC: Invalid JSON"),
        ("nested", "the upstream's reply is not valid JSON-RPC: Invalid JSON: recursion limit"),
        ("malformed", "upstream server 'u' answered work with an error: 1 validation error"),
        ("echo", "upstream server 'u' answered work with an error: no"),
    ],
)
def test_a_bad_upstream_answer_is_the_same_clear_tool_error(
    tmp_path: Path, mode: str, words: str
) -> None:
    args = [str(40 * 1024 * 1024)] if mode == "giant" else []

    async def main() -> tuple[Any, str]:
        params = served(tmp_path, {"u": hostile(mode, *args)})
        async with Client(params, read_timeout_seconds=60) as client:
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


def test_progress_activation_and_restarts_hold_on_the_fast_path(tmp_path: Path) -> None:
    servers = {
        "weather": {"command": sys.executable, "args": [UPSTREAM, "weather"]},
        "flaky": {"command": sys.executable, "args": [UPSTREAM, "flaky"]},
    }

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        progress: list[float] = []

        async def on_progress(done: float, total: float | None, message: Any) -> None:
            progress.append(done)

        async with Client(served(tmp_path, servers), read_timeout_seconds=60) as client:
            out["early"] = await client.call_tool("forecast", {"city": "Oslo"})
            await client.call_tool("tool_activate", {"names": ["forecast", "crash", "flaky_ping"]})
            out["forecast"] = await client.call_tool(
                "forecast", {"city": "Oslo"}, progress_callback=on_progress
            )
            out["via"] = await client.call_tool(
                "tool_call",
                {"name": "forecast", "arguments": {"city": "Lima"}},
                progress_callback=on_progress,
            )
            out["progress"] = progress
            out["bad"] = await client.call_tool(
                "tool_call", {"name": "forecast", "arguments": "Oslo"}
            )
            out["ping"] = text_of(await client.call_tool("flaky_ping", {}))
            out["crash"] = await client.call_tool("crash", {})
            out["ping2"] = text_of(await client.call_tool("flaky_ping", {}))
        return out

    out = anyio.run(main)
    assert out["early"].is_error
    assert "call tool_activate with names=['forecast'] first" in text_of(out["early"])
    assert text_of(out["forecast"]) == "sunny in Oslo"
    assert text_of(out["via"]) == "sunny in Lima"
    assert out["progress"] == [1, 2, 3, 1, 2, 3], "upstream progress was not relayed"
    assert out["bad"].is_error
    assert "arguments (an object of that tool's arguments)" in text_of(out["bad"])
    assert out["crash"].is_error
    assert "upstream server 'flaky' stopped during crash" in text_of(out["crash"])
    assert "was restarted: call the tool again" in text_of(out["crash"])
    assert out["ping2"].startswith("pong from flaky")
    assert out["ping2"] != out["ping"], "the same process answered: no restart happened"


def test_a_call_the_client_cancels_leaves_the_session_working(tmp_path: Path) -> None:
    async def main() -> tuple[bool, str, list[Any]]:
        async with Client(served(tmp_path, {"u": hostile("hang")})) as client:
            await client.call_tool("tool_activate", {"names": ["work", "echo"]})
            with anyio.move_on_after(0.5) as scope:
                await client.call_tool("work", {})
            after = text_of(await client.call_tool("echo", {"text": "alive"}))
            heard: list[Any] = []
            for _ in range(20):  # told at once, not at the 3 s bound (which tells it too)
                heard = json.loads(text_of(await client.call_tool("echo", {"text": "cancelled?"})))
                if heard:
                    break
                await anyio.sleep(0.05)
        return scope.cancelled_caught, after, heard

    cancelled, after, heard = anyio.run(main)
    assert cancelled
    assert after == "alive"
    assert len(heard) == 1, "the upstream was not told the call was cancelled"
    assert str(heard[0]).startswith("leanreplay-"), "the upstream heard of another request"
