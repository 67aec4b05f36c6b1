"""The `mcp` extra beside the MCP packages of the ecosystem (issue 22).

langchain-mcp-adapters 0.3.2 requires mcp<2; 0.3.1 requires mcp>=1.24 with no cap. With the
extra's pin (mcp>=2.3,<3), ``pip install "leanreplay[mcp]" langchain-mcp-adapters`` resolves
to adapters 0.3.1 and mcp 2.x: the server works. Installing the adapters later, on their own,
lets pip downgrade mcp without a word (it checks no extra's pins); ``leanreplay serve`` then
refuses in one line that names the package that pulled the old mcp in, instead of failing on
an import.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

from leanreplay.index.faces._mcp_pin import MCP_SUPPORTED, mcp_conflict
from tests.conftest import REPO


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"[0-9]+", version)[:3])


def test_the_pin_in_pyproject_is_the_one_serve_checks() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert extras["optional-dependencies"]["mcp"] == ["mcp>=2.3,<3"]
    assert MCP_SUPPORTED == ((2, 3), (3,))


def test_the_test_install_holds_the_combination_with_an_mcp_we_support() -> None:
    # .ci/run installs the test extra, which holds langchain-mcp-adapters beside leanreplay[mcp]:
    # pip must have kept an mcp the server supports, and the adapters must accept it.
    mcp = _release(importlib.metadata.version("mcp"))
    assert MCP_SUPPORTED[0] <= mcp < MCP_SUPPORTED[1]
    adapters = importlib.metadata.requires("langchain-mcp-adapters") or []
    (theirs,) = [r for r in adapters if re.match(r"mcp\b", r)]
    caps = [_release(v) for v in re.findall(r"<=?\s*([0-9.]+)", theirs)]
    assert all(mcp < cap for cap in caps), (theirs, mcp)
    assert mcp_conflict() is None


def _fake_dist(folder: Path, name: str, version: str, requires: list[str]) -> None:
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


def test_serve_names_the_package_that_downgraded_mcp(tmp_path: Path) -> None:
    # What `pip install langchain-mcp-adapters` leaves after `pip install "leanreplay[mcp]"`:
    # the metadata of mcp 1.30.0 and of the adapters that required it, first on the path.
    site = tmp_path / "site"
    _fake_dist(site, "mcp", "1.30.0", ["anyio>=4.5"])
    _fake_dist(site, "langchain-mcp-adapters", "0.3.2", ["mcp<2.0.0,>=1.24.0"])
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        from leanreplay.index.faces.cli import cli
        cli(["--home", {str(tmp_path / "home")!r}, "serve"])
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        "Error: `leanreplay serve` needs mcp>=2.3,<3, but mcp 1.30.0 is installed "
        "(langchain-mcp-adapters 0.3.2 requires mcp<2.0.0,>=1.24.0); serve from a virtual "
        "environment of its own"
    ), line


def test_langchain_mcp_adapters_beside_the_server(tmp_path: Path) -> None:
    # The adapters pip installs beside the mcp extra, against `leanreplay serve` over stdio.
    try:
        from langchain_mcp_adapters.client import MultiServerMCPClient
    except ImportError as exc:
        # 0.3.1 (the newest without an mcp<2 cap) imports names mcp 2 no longer has: the
        # adapters' own break, which the README states. The server beside them works.
        assert importlib.metadata.version("langchain-mcp-adapters") == "0.3.1", exc
        assert "mcp" in str(exc)
        assert mcp_conflict() is None
        return
    server = {
        "command": sys.executable,
        "args": ["-m", "leanreplay.index.cli", "--home", str(tmp_path / "home"), "--root",
                 str(REPO / "sample_files"), "serve"],
        "transport": "stdio",
        "cwd": str(REPO),
    }  # fmt: skip

    async def use() -> Any:
        tools = {t.name: t for t in await MultiServerMCPClient({"lr": server}).get_tools()}
        return await tools["pdf_info"].ainvoke({"path": "classic_xref.pdf"})

    assert '"pages": 12' in str(asyncio.run(use()))
