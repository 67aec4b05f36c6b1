"""The README's proxy set-up is what a user types: its command lines run as written (the
upstream URL, the port and the home replaced by the test's), print the line it shows, and
its plain SDK clients, evaluated from the README's own text, talk through the proxy.
(Claude Code and Codex CLI take their set-up from the README too: `test_claude_code`,
`test_codex`.)"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest

from tests.conftest import REPO
from tests.proxy.conftest import Proxy
from tests.proxy.upstream import FakeUpstream, answer

ANTHROPIC_URL = "http://127.0.0.1:8787"
OPENAI_URL = "http://127.0.0.1:8788"


def proxy_section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## Proxy")
    return text[start : text.index("\n## ", start + 1)]


def console_lines() -> list[str]:
    blocks = re.findall(r"```console\n(.*?)```", proxy_section(), re.S)
    return [line for block in blocks for line in block.splitlines()]


def commands() -> list[str]:
    return [line[2:] for line in console_lines() if line.startswith("$ ")]


def claude_code_env() -> dict[str, str]:
    """The environment the README's Claude Code line sets, with the proxy's URL as shown."""
    (line,) = [c for c in commands() if c.endswith(" claude")]
    words = shlex.split(line)
    assert words[-1] == "claude"
    pairs = [w.split("=", 1) for w in words[:-1]]
    assert pairs, line
    assert all(len(p) == 2 for p in pairs), line
    return dict(pairs)  # type: ignore[arg-type]  # pairs of two, checked above


def test_the_install_line_is_the_checkouts_own_and_names_the_proxy_extra() -> None:
    install = commands()[0]
    assert install == 'python3 -m venv .venv && .venv/bin/pip install -q ".[proxy]"'
    assert re.search(r"^proxy = \[", (REPO / "pyproject.toml").read_text(), re.M)
    assert claude_code_env() == {"ANTHROPIC_BASE_URL": ANTHROPIC_URL}


@pytest.mark.parametrize("which", ["anthropic", "openai"])
def test_the_proxy_commands_run_as_written(
    which: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream_url = f"https://api.{which}.com"
    (line,) = [c for c in commands() if "proxy --upstream " + upstream_url in c]
    words = shlex.split(line)
    assert words[0] == ".venv/bin/leanreplay"
    port = words[words.index("--port") + 1] if "--port" in words else "8787"
    assert f"http://127.0.0.1:{port}" == (ANTHROPIC_URL if which == "anthropic" else OPENAI_URL)
    # As typed, with the test's venv, home, upstream and a free port.
    leanreplay = shutil.which("leanreplay", path=str(Path(sys.executable).parent))
    assert leanreplay is not None, "the venv has the leanreplay command"
    argv = [leanreplay, "--home", str(tmp_path / "home")]
    argv += [upstream.url if w == upstream_url else w for w in words[1:]]
    argv = [w for w in argv if w not in ("--port", port)] + ["--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            printed = process.stdout.readline().strip()
        finally:
            process.terminate()
            process.wait(10)
    # The line the README shows (for the first command), with the same replacements.
    (shown,) = [x for x in console_lines() if x.startswith("leanreplay proxy on ")]
    shown = shown.replace("https://api.anthropic.com", upstream_url)
    pattern = re.escape(shown).replace(re.escape(upstream_url), re.escape(upstream.url))
    assert re.fullmatch(pattern.replace(re.escape(":8787"), r":\d+"), printed), (printed, shown)


def sdk_expression(module: str) -> str:
    found = re.search(rf"`({module}\.\w+\(base_url=\"[^\"]+\"\))`", proxy_section())
    assert found, f"the README shows a plain {module} client"
    return found.group(1)


def test_the_plain_sdk_clients_work_as_the_readme_writes_them(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-readme")
    proxy.upstream.default = answer("through the proxy")
    written = sdk_expression("anthropic")
    assert ANTHROPIC_URL in written
    client = eval(written.replace(ANTHROPIC_URL, proxy.url), {"anthropic": anthropic})
    proxy.clients.append(client)
    message = client.messages.create(
        model="m", max_tokens=9, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "through the proxy"  # type: ignore[union-attr]
    sent = proxy.upstream.requests[-1].headers  # the key from the environment, untouched
    assert "sk-ant-readme" in sent.get("x-api-key", "") + sent.get("authorization", "")
    written = sdk_expression("openai")
    assert OPENAI_URL + "/v1" in written
    client = eval(written.replace(OPENAI_URL, proxy.url), {"openai": openai})
    proxy.clients.append(client)
    made = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert made.choices[0].message.content == "through the proxy"
    assert proxy.upstream.requests[-1].path == "/v1/chat/completions"
