"""The MCP server stack is the `mcp` extra: the library and every other command run without it,
and `leanreplay serve` says how to install it. Proven in a subprocess where importing the
server stack fails exactly as it does when the extra is not installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from leanreplay.index.faces.cli import MCP_EXTRA_MODULES
from tests.conftest import REPO, SAMPLES

# Installed first in the child: any import of the server stack raises ModuleNotFoundError.
BLOCKER = textwrap.dedent(
    f"""
    import importlib.abc, sys

    BLOCKED = {sorted(MCP_EXTRA_MODULES | {"httpx2"})!r}

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    """
)


def run_without_mcp(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)},
        timeout=120,
    )


def test_the_library_works_without_the_server_stack(tmp_path: Path) -> None:
    result = run_without_mcp(
        f"""
        import sys
        from leanreplay import cards, placeholders
        from leanreplay.index import Workspace, tool_schemas

        with Workspace({str(tmp_path / "home")!r}, [{str(SAMPLES)!r}]) as ws:
            (cid,) = ws.ingest({str(SAMPLES / "conversation.jsonl")!r})
            assert ws.replay(cid).stats()["placeholders"] == 1
            assert ws.call("pdf_info", {{"path": "classic_xref.pdf"}})["facts"]["pages"] == 12
        assert len(tool_schemas("openai")) > 0
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        print("loaded:", loaded)
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout


def test_serve_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    result = run_without_mcp(
        f"""
        import sys
        from leanreplay.index.faces.cli import cli
        cli(["--home", {str(tmp_path / "home")!r}, "serve"])
        """,
        tmp_path,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "pip install 'leanreplay[mcp]'" in result.stderr
    assert "`leanreplay serve` needs the MCP server stack" in result.stderr


def test_view_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    result = run_without_mcp(
        f"""
        from leanreplay.index.faces.cli import cli
        cli(["--home", {str(tmp_path / "home")!r}, "view", "--port", "0"])
        """,
        tmp_path,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "`leanreplay view` needs the web server stack" in result.stderr
    assert "pip install 'leanreplay[mcp]'" in result.stderr


def test_the_blocker_really_blocks(tmp_path: Path) -> None:
    # Without this, the two tests above would pass vacuously if the blocker matched nothing.
    result = run_without_mcp("import mcp.server.mcpserver", tmp_path)
    assert result.returncode == 1
    assert "ModuleNotFoundError: No module named 'mcp" in result.stderr
