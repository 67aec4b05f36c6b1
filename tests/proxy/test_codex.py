"""Codex CLI, run headless (``codex exec``) against the proxy with the README's own
``config.toml`` block, the port changed to the test's: the model asks the proxy's
``conversation_search`` first, and Codex prints only the answer after it.

Codex comes from npm (``.ci/run`` installs it under ``.ci/node``); without it the test skips,
except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.proxy.conftest import Proxy
from tests.proxy.test_claude_code import binary
from tests.proxy.upstream import Answer, Recorded, Tool, answer


def readme_config() -> str:
    found = re.search(
        r"```toml\n(model_provider = \"leanreplay\".*?)```", (REPO / "README.md").read_text(), re.S
    )
    assert found, "the README shows Codex's config.toml"
    return found.group(1)


def test_codex_through_the_proxy(proxy: Proxy, tmp_path: Path) -> None:
    codex = binary("codex", "@openai/codex")
    home = tmp_path / "codex-home"
    home.mkdir()
    config = readme_config().replace("http://127.0.0.1:8788", proxy.url)
    assert config != readme_config()
    (home / "config.toml").write_text(config)
    work = tmp_path / "work"
    work.mkdir()

    def model(recorded: Recorded) -> Answer:
        last = recorded.json["input"][-1]
        if last.get("type") == "function_call_output":
            return answer("Nothing was said before this.")
        return answer(Tool("conversation_search", {"query": "earlier"}))

    proxy.upstream.default = model
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "CODEX_HOME": str(home),
        "OPENAI_API_KEY": "sk-codex-test",
    }
    done = subprocess.run(
        [codex, "exec", "--skip-git-repo-check", "what did I say earlier?"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Nothing was said before this." in done.stdout
    assert "conversation_search" not in done.stdout + done.stderr
    first, second = (r for r in proxy.upstream.requests if r.path == "/v1/responses")
    assert first.headers["authorization"] == "Bearer sk-codex-test"
    assert [t.get("name") for t in first.json["tools"]][-2:] == [
        "conversation_read",
        "conversation_search",
    ]
    assert second.json["input"][-2]["name"] == "conversation_search"
    assert len(proxy.workspace().conversations()) == 1
