"""`leanreplay serve` without --root serves no files of its own: the file tools read the
folders a real MCP client offers through the roots protocol, on handshake-era sessions
(roots/list, notifications/roots/list_changed) and on 2026-07-28 ones (input_required)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from leanreplay.index import Workspace
from leanreplay.index.faces.server import NO_CLIENT_ROOTS, build_server
from tests.conftest import REPO


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name in ("alpha", "beta"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.txt").write_text(f"{name} content\n")
        out[name] = folder
    out["home"] = tmp_path / "home"
    return out


class OfferedRoots:
    """The client side: the folders it offers, changeable while connected."""

    def __init__(self, *folders: Path) -> None:
        self.folders = list(folders)

    async def __call__(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[types.Root(uri=f.as_uri(), name=f.name) for f in self.folders]
        )


@pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["roots/list", "input_required"])
def test_file_tools_read_the_roots_the_client_offers(folders: dict[str, Path], mode: str) -> None:
    offered = OfferedRoots(folders["alpha"])

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with Workspace(folders["home"]) as ws:
            server = build_server(ws, client_roots=True)
            async with Client(server, mode=mode, list_roots_callback=offered) as client:
                out["alpha"] = await client.call_tool("file_read", {"path": "alpha.txt"})
                out["beta_refused"] = await client.call_tool(
                    "file_read", {"path": str(folders["beta"] / "beta.txt")}
                )
                offered.folders = [folders["beta"]]
                if mode == "legacy":
                    with warnings.catch_warnings():  # roots are deprecated in 2026-07-28
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await client.send_roots_list_changed()
                out["beta"] = await client.call_tool("file_read", {"path": "beta.txt"})
                out["alpha_refused"] = await client.call_tool(
                    "file_read", {"path": str(folders["alpha"] / "alpha.txt")}
                )
                out["search"] = await client.call_tool("conversation_search", {"query": "x"})
        return out

    out = anyio.run(main)
    assert json.loads(text_of(out["alpha"]))["content"] == "1\talpha content"
    assert json.loads(text_of(out["beta"]))["content"] == "1\tbeta content"
    for refused in ("beta_refused", "alpha_refused"):
        assert out[refused].is_error
        assert "outside the allowed roots" in text_of(out[refused])
    assert out["search"].is_error is False  # conversation tools need no roots


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_without_roots_is_told_what_to_do(folders: dict[str, Path], mode: str) -> None:
    async def main() -> Any:
        with Workspace(folders["home"]) as ws:
            async with Client(build_server(ws, client_roots=True), mode=mode) as client:
                return await client.call_tool("file_read", {"path": "alpha.txt"})

    result = anyio.run(main)
    assert result.is_error
    assert text_of(result) == NO_CLIENT_ROOTS


def test_serve_without_root_over_stdio_uses_client_roots_and_says_so(
    folders: dict[str, Path],
) -> None:
    args = ["-m", "leanreplay.index.cli", "--home", str(folders["home"]), "serve"]
    quiet = subprocess.run(
        [sys.executable, *args],
        input="",
        capture_output=True,
        text=True,
        cwd="/",
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert "no --root given: the file tools serve no files until the client provides roots" in (
        quiet.stderr
    )
    params = StdioServerParameters(
        command=sys.executable, args=args, cwd="/", env={"PYTHONPATH": str(REPO)}
    )
    offered = OfferedRoots(folders["beta"])

    async def main() -> tuple[Any, Any]:
        async with Client(params, list_roots_callback=offered, read_timeout_seconds=120) as c:
            inside = await c.call_tool("file_read", {"path": "beta.txt"})
            cwd = await c.call_tool("file_read", {"path": "/etc/passwd"})
            return inside, cwd

    inside, cwd = anyio.run(main)
    assert json.loads(text_of(inside))["content"] == "1\tbeta content"
    assert cwd.is_error
    assert "outside the allowed roots" in text_of(cwd)
