"""The most important client: the real Claude Code, run headless against the proxy exactly as
the README sets it up (``ANTHROPIC_BASE_URL``), with a scripted model upstream.

Two turns of one session: the first attaches an image (``@red.png``, a card upstream) and
reads two large logs and three small files; by the fifth request the first log has gone
stale and the request is over the pressure size, so the model sees a placeholder, asks the
proxy for the original with ``conversation_read`` and quotes a line of it. Claude Code never
sees that call. The second turn (``--resume``) continues the same stored conversation, the
proxy's round replayed in place.

Claude Code comes from npm (``.ci/run`` installs it under ``.ci/node``); without it the
test skips, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from leanreplay.placeholders import check_pairing, is_placeholder, parse_read_call
from tests.conftest import REPO, SAMPLES, in_ci
from tests.proxy.conftest import Proxy
from tests.proxy.test_readme_proxy import ANTHROPIC_URL, claude_code_env
from tests.proxy.upstream import Answer, Recorded, Tool, answer

NODE_BIN = REPO / ".ci" / "node" / "node_modules" / ".bin"
LINES = 1500  # per log: two of them are over the 150,000-char pressure size together


def binary(name: str, package: str) -> str:
    """A client's command, as .ci/run installs it (``LEANREPLAY_<NAME>`` or PATH otherwise)."""
    local = NODE_BIN / name
    found = os.environ.get(f"LEANREPLAY_{name.upper()}") or (str(local) if local.exists() else None)
    found = found or shutil.which(name)
    if found is None:
        message = (
            f"needs {package} (npm install --prefix .ci/node {package}, as .ci/run does); "
            f"not found at {local}"
        )
        if in_ci():
            pytest.fail(message + " under CI=true")
        pytest.skip(message)
    return found


def log_blocks(log: str) -> list[dict[str, Any]]:
    """Every content block of every message in a Claude Code session log (JSON lines)."""
    out = []
    for line in log.splitlines():
        entry = json.loads(line)
        message = entry.get("message") if isinstance(entry, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        out += (
            [b for b in content or [] if isinstance(b, dict)] if isinstance(content, list) else []
        )
    return out


def log_line(name: str, n: int) -> str:
    return f"{name} {n:05d}: the service answered in {n % 97} ms"


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


class Model:
    """The scripted model: reads the files in order, retrieves what was elided, answers."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.plan = ["big1.log", "big2.log", "a.txt", "b.txt", "c.txt"]

    def __call__(self, recorded: Recorded) -> Answer:
        body = recorded.json
        names = {t.get("name") for t in body.get("tools") or []}
        if "Read" not in names:
            return answer("ok")  # Claude Code's side requests (titles, summaries)
        messages = body["messages"]
        last = messages[-1]
        content = last.get("content")
        blocks = content if isinstance(content, list) else []
        ours = [
            b
            for b in blocks
            if b.get("type") == "tool_result" and b["tool_use_id"].startswith("ours_")
        ]
        if ours:  # the proxy's round: the original is here
            original = json.loads(ours[0]["content"][0]["text"])["content"]
            quoted = next(line for line in original.splitlines() if "big1 00007" in line)
            return answer(f"Line 7 of big1.log reads: {quoted.split(chr(9), 1)[-1]}")
        texts = [s for m in messages for s in strings(m.get("content"))]
        if any("line 9" in t for t in texts[-3:]):
            return answer("Line 9 is in the log too; ask me to read it.")
        placeholder = next((t for t in texts if is_placeholder(t)), None)
        read = [
            b
            for m in messages
            for b in m.get("content") or []
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Read"
        ]
        if placeholder is not None:
            call = parse_read_call(placeholder)
            assert call is not None
            return answer(
                "Let me fetch the elided log.", Tool("conversation_read", call, id="ours_1")
            )
        if len(read) < len(self.plan):
            path = str(self.root / self.plan[len(read)])
            return answer(Tool("Read", {"file_path": path}, id=f"toolu_read_{len(read)}"))
        return answer("All files read.")


def run_claude(claude: str, proxy: Proxy, cwd: Path, home: Path, *args: str) -> str:
    readme = {k: v.replace(ANTHROPIC_URL, proxy.url) for k, v in claude_code_env().items()}
    assert readme == {"ANTHROPIC_BASE_URL": proxy.url}  # the README's set-up, its port ours
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        **readme,
        "ANTHROPIC_API_KEY": "sk-ant-claude-code-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    done = subprocess.run(
        [claude, "-p", *args, "--allowedTools", "Read"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_claude_code_through_the_proxy(proxy: Proxy, tmp_path: Path) -> None:
    claude = binary("claude", "@anthropic-ai/claude-code")
    root = tmp_path / "project"
    root.mkdir()
    for name in ("big1", "big2"):
        (root / f"{name}.log").write_text("\n".join(log_line(name, n) for n in range(LINES)) + "\n")
    for name in ("a", "b", "c"):
        (root / f"{name}.txt").write_text(f"small file {name}\n")
    shutil.copy(SAMPLES / "red_64x48.png", root / "red.png")
    home = tmp_path / "user-home"
    home.mkdir()
    proxy.upstream.default = Model(root)
    session = str(uuid.uuid4())

    first = run_claude(
        claude, proxy, root, home, "Look at @red.png, then read the logs.", "--session-id", session
    )
    assert "Line 7 of big1.log reads: big1 00007: the service answered in 7 ms" in first

    main = [
        r
        for r in proxy.upstream.requests
        if r.path == "/v1/messages" and "Read" in {t.get("name") for t in r.json.get("tools") or []}
    ]
    # The image went upstream as a card with its reader; the tools end with ours.
    card = [s for s in strings(main[0].json["messages"]) if s.startswith("[attachment]")]
    assert card
    assert 'name="' in card[0]
    names = [t["name"] for t in main[0].json["tools"]]
    assert names[-3:] == ["conversation_read", "conversation_search", "image_view"]
    # The stale log was a placeholder, the model fetched it in the proxy's own round.
    fetched = main[-1].json["messages"]
    assert fetched[-2]["content"][-1]["name"] == "conversation_read"
    assert any(is_placeholder(s) for s in strings(fetched))
    for recorded in main:
        assert check_pairing(recorded.json["messages"]) == []
    # Claude Code saw none of it: its own log of the session has no tool or call of ours,
    # only the calls of its own Read tool.
    (log,) = home.glob(f".claude/projects/*/{session}.jsonl")
    seen = log.read_text()
    for ours in names[-3:]:
        assert ours not in seen, ours
    used = {b.get("name") for b in log_blocks(seen) if b.get("type") == "tool_use"}
    assert used == {"Read"}

    second = run_claude(claude, proxy, root, home, "--resume", session, "And what about line 9?")
    assert "Line 9 is in the log too" in second
    latest = [
        r
        for r in proxy.upstream.requests
        if r.path == "/v1/messages" and "Read" in {t.get("name") for t in r.json.get("tools") or []}
    ][-1]
    replayed = latest.json["messages"]
    calls = [
        b.get("name")
        for m in replayed
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    assert "conversation_read" in calls  # the round, replayed in place
    assert check_pairing(replayed) == []
    ws = proxy.workspace()  # the last request's new messages are stored after its answer
    assert f"claude-code-{session}" in ws.conversations()
    stored = ws.messages(f"claude-code-{session}")
    assert re.search(r"And what about line 9\?", json.dumps(stored[-1]))
