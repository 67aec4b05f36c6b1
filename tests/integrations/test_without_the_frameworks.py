"""The frameworks are extras: the library, the CLI and every other face run without them (and
import none of them), and an integration without its extra says in one line what to install.
Proven in a subprocess where importing a framework fails as it does when it is not installed
(the blocker of tests/test_extras.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from leanreplay.index.faces.cli import MCP_EXTRA_MODULES
from tests.conftest import REPO, SAMPLES
from tests.test_extras import BLOCKER

# The integrations' frameworks: `leanreplay[agents]` and `leanreplay[langchain]`.
FRAMEWORKS = ["agents", "langchain", "langchain_core", "langgraph"]
FRAMEWORK_BLOCKER = BLOCKER.replace(repr(sorted(MCP_EXTRA_MODULES | {"httpx2"})), repr(FRAMEWORKS))


assert FRAMEWORK_BLOCKER != BLOCKER


def run_without_frameworks(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", FRAMEWORK_BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)},
        timeout=120,
    )


def test_the_library_cli_and_faces_never_import_the_frameworks(tmp_path: Path) -> None:
    result = run_without_frameworks(
        f"""
        import sys
        import leanreplay, leanreplay.integrations
        from leanreplay.index.faces import cli, server, gateway, view
        from leanreplay.index import Workspace
        with Workspace({str(tmp_path / "home")!r}) as ws:
            (cid,) = ws.ingest({str(SAMPLES / "conversation.jsonl")!r})
            assert ws.replay(cid).stats()["placeholders"] == 1
        try:
            cli.cli(["--home", {str(tmp_path / "home")!r}, "tools", "--format", "openai"])
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        print("loaded:", sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout


@pytest.mark.parametrize(
    ("module", "extra"),
    [("openai_agents", "agents"), ("langchain", "langchain")],
    ids=str,
)
def test_an_integration_without_its_extra_names_it(module: str, extra: str, tmp_path: Path) -> None:
    result = run_without_frameworks(f"import leanreplay.integrations.{module}", tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: leanreplay.integrations.{module} needs the {extra} ")
    assert last.endswith(
        f"({module.split('_')[-1]} is not installed): pip install 'leanreplay[{extra}]'"
    )
    assert "During handling" not in result.stderr  # one error, not a chain
