"""A stored conversation nested as deep as the store takes is replayed, sent, shown and
migrated like any other: through `Workspace.replay`, `model_call`, the CLI and every page of
the web view (issue 18, item 6). Deep tool inputs come back verbatim."""

from __future__ import annotations

import html
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import INPUT_MARKER
from tests.conftest import REPO
from tests.placeholders.test_deep_nesting import anthropic, nest, openai
from tests.test_view import request

STORE_DEPTH = 450  # near what the store takes (about 1,000 levels of JSON)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("deep-home")
    with Workspace(folder) as ws:
        for message in openai(1_000):
            ws.append("deep-openai", message)
        for message in anthropic(STORE_DEPTH):
            ws.append("deep-anthropic", message)
    return folder


def test_replay_and_model_call_take_deep_conversations(home: Path) -> None:
    with Workspace(home) as ws:
        for cid in ("deep-openai", "deep-anthropic"):
            stored = ws.messages(cid)
            lean = ws.replay(cid).messages
            assert lean[1] == stored[1] or cid == "deep-anthropic"
            sent: list[Any] = []

            def model(messages: list[dict[str, Any]], box: list[Any] = sent) -> dict[str, Any]:
                box.append(messages)
                return {"role": "assistant", "content": "ok"}

            reply = ws.model_call(cid, model, context_window=200_000, output_reserve=8_000)
            assert reply == {"role": "assistant", "content": "ok"}
            assert sent, "the model was never called"
        deep_call = ws.replay("deep-openai").messages[1]["tool_calls"][0]
        assert deep_call == ws.messages("deep-openai")[1]["tool_calls"][0]
        assert INPUT_MARKER not in json.dumps(deep_call)


def test_the_cli_replays_a_deep_conversation(home: Path) -> None:
    for cid in ("deep-openai", "deep-anthropic"):
        done = subprocess.run(
            [sys.executable, "-m", "leanreplay.index.cli", "--home", str(home), "replay", cid],
            capture_output=True,
            text=True,
            cwd=str(REPO),
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def view(home: Path) -> Iterator[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LEANREPLAY_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "leanreplay.index.cli", "--home", str(home), "view", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=str(REPO),
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the view prints the URL to open on stdout
    found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
    assert found, f"no URL in {line!r}"
    try:
        yield {"port": int(found.group(1)), "token": found.group(2)}
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


def test_every_page_of_the_view_shows_deep_conversations(view: dict[str, Any]) -> None:
    auth = {"Authorization": f"Bearer {view['token']}"}
    todo = ["/", "/c?id=deep-openai", "/c?id=deep-anthropic"]
    todo += [f"/api/replay_stats?id={cid}" for cid in ("deep-openai", "deep-anthropic")]
    seen: dict[str, int] = {}
    while todo and len(seen) < 60:
        path = todo.pop(0)
        if path in seen:
            continue
        answer = request(view, path, headers=auth)
        seen[path] = answer.status
        if (answer.getheader("content-type") or "").startswith("text/html"):
            for link in re.findall(r'href="(/[^"]*)"', answer.body.decode()):
                link = html.unescape(link).split("#")[0]  # a browser keeps the fragment
                if "deep" in link and not link.startswith("/static"):
                    todo.append(link)
    assert len(seen) >= 9, f"too few pages reached: {sorted(seen)}"
    assert {p: s for p, s in seen.items() if s != 200} == {}


def test_the_migration_backfill_measures_a_deep_message(tmp_path: Path) -> None:
    with Workspace(tmp_path / "old"):
        pass
    db = sqlite3.connect(tmp_path / "old" / "store.sqlite3")
    body = json.dumps(
        {"role": "user", "id": "m1", "content": [{"type": "text", "text": "hi", "x": nest(900)}]}
    )
    nested = {"role": "user", "id": "m2", "content": [{"type": "tool_result", "content": "r"}]}
    for _ in range(440):
        inner = nested["content"]
        nested["content"] = [{"type": "tool_result", "tool_use_id": "t", "content": inner}]
    with db:
        db.execute("INSERT INTO conversations(id, source, format) VALUES ('old', NULL, NULL)")
        for seq, text in enumerate([body, json.dumps(nested)], start=1):
            db.execute(
                "INSERT INTO messages(conversation_id, seq, id, role, body, chars) "
                "VALUES ('old', ?, ?, 'user', ?, NULL)",
                (seq, f"m{seq}", text),
            )
        # Back to before the sizes step, so that its backfill runs again.
        db.execute("DELETE FROM migrations WHERE version > 3")
        db.execute("PRAGMA user_version=3")
    db.close()
    with Workspace(tmp_path / "old") as ws:
        assert [m["id"] for m in ws.messages("old")] == ["m1", "m2"]
    db = sqlite3.connect(tmp_path / "old" / "store.sqlite3")
    sizes = [row[0] for row in db.execute("SELECT chars FROM messages ORDER BY seq")]
    db.close()
    assert sizes == [2, 1]
