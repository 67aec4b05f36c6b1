"""Ingest under real faults: two processes importing the same log at once, a SIGKILL in the
ingest window, attachment rows lost by an older version, hostile attachment titles."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leanreplay.index import Workspace
from tests.conftest import REPO

_INGEST = """
import os, sys, time
import pytest

from leanreplay.index import Workspace
home, log, go = sys.argv[1:4]
if len(sys.argv) > 4:
    open(sys.argv[4], "w").close()  # imported: ready to race
while not os.path.exists(go):
    time.sleep(0.0005)
with Workspace(home) as ws:
    ws.ingest(log)
"""


def _log_without_ids(path: Path, count: int) -> None:
    lines = []
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(json.dumps({"role": role, "content": f"message {i} " + "x" * (i % 50)}))
    path.write_text("\n".join(lines) + "\n")


def test_two_processes_ingesting_one_log_store_each_message_once(tmp_path: Path) -> None:
    log = tmp_path / "shared.jsonl"
    _log_without_ids(log, 2000)
    for trial in range(4):
        home, go = tmp_path / f"home{trial}", tmp_path / f"go{trial}"
        ready = [tmp_path / f"ready{trial}-{n}" for n in range(2)]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _INGEST, str(home), str(log), str(go), str(r)],
                cwd=str(REPO),
                stderr=subprocess.PIPE,
                text=True,
            )
            for r in ready
        ]
        while not all(r.exists() for r in ready) and all(p.poll() is None for p in procs):
            time.sleep(0.005)
        go.touch()
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        with Workspace(home) as ws:
            assert ws.info("shared").messages == 2000, f"trial {trial}"
            assert [m["content"] for m in ws.messages("shared")][:2] == [
                "message 0 ",
                "message 1 x",
            ]


def _attachment_log(path: Path, payload: bytes, title: str = "scan.png") -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Here is the scan."},
            {
                "type": "image",
                "title": title,
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(payload).decode(),
                },
            },
        ],
    }
    path.write_text(json.dumps(message) + "\n")


def _stored_rows(store: Path) -> int:
    try:
        with (
            contextlib.closing(
                sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1)
            ) as db,
            db,
        ):
            return int(db.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_sigkill_right_after_the_messages_commit_never_loses_the_card(tmp_path: Path) -> None:
    # 8 MB of image bytes: decoding, hashing and writing them takes long enough that a
    # kill at the first sight of the message row lands where the old code had not yet
    # recorded the card (it committed messages and cards in two transactions).
    log = tmp_path / "scan.jsonl"
    payload = b"\x89PNG\r\n\x1a\n" + os.urandom(8 * 1024 * 1024)
    _attachment_log(log, payload)
    for trial in range(2):
        home, go = tmp_path / f"home{trial}", tmp_path / f"go{trial}"
        store = home / "store.sqlite3"
        proc = subprocess.Popen(
            [sys.executable, "-c", _INGEST, str(home), str(log), str(go)], cwd=str(REPO)
        )
        go.touch()
        seen = False
        while proc.poll() is None:
            if store.exists() and _stored_rows(store):
                proc.send_signal(signal.SIGKILL)
                seen = True
                break
            time.sleep(0.0005)
        proc.wait(60)
        with Workspace(home) as ws:
            if seen and ws.conversations():
                replayed = ws.replay("scan").messages[0]["content"][1]
                assert replayed["type"] == "text", f"trial {trial}: card lost"
                assert replayed["text"].startswith("[attachment]")
            ws.ingest(log)  # after any kill, a re-ingest completes the conversation
            (message,) = ws.replay("scan").messages
            assert message["content"][1]["text"].startswith('[attachment] name="scan.png"')


def test_reingest_repairs_cards_an_older_version_lost(tmp_path: Path) -> None:
    log = tmp_path / "scan.jsonl"
    _attachment_log(log, (REPO / "sample_files" / "red_64x48.png").read_bytes())
    with Workspace(tmp_path / "home") as ws:
        ws.ingest(log)
    with contextlib.closing(sqlite3.connect(tmp_path / "home" / "store.sqlite3")) as db, db:
        db.execute("DELETE FROM attachments")  # what a kill between two commits left
    with Workspace(tmp_path / "home") as ws:
        assert ws.replay("scan").messages[0]["content"][1]["type"] == "image"
        assert list(ws.ingest(log)) == ["scan"]
        assert ws.info("scan").messages == 1
        card = ws.replay("scan").messages[0]["content"][1]
        assert card["type"] == "text"
        assert "64x48" in card["text"]


def test_a_nul_byte_in_an_attachment_title_is_stored_with_its_card(tmp_path: Path) -> None:
    log = tmp_path / "scan.jsonl"
    png = (REPO / "sample_files" / "red_64x48.png").read_bytes()
    _attachment_log(log, png, title="scan.p\x00ng")
    with Workspace(tmp_path / "home") as ws:
        assert list(ws.ingest(log)) == ["scan"]
        card = ws.replay("scan").messages[0]["content"][1]["text"]
        assert "64x48" in card
        assert "\x00" not in card
        saved = list((tmp_path / "home" / "attachments").rglob("*.png"))
        assert len(saved) == 1
        assert saved[0].read_bytes() == png
        assert ws.messages("scan")[0]["content"][1]["title"] == "scan.p\x00ng"  # byte-exact


@pytest.mark.timeout(60)  # a FIFO blocked the import for ever; /dev/zero read until 3 GB
def test_a_folder_with_fifos_and_device_links_imports_its_logs_and_refuses_the_rest(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    _log_without_ids(folder / "good.jsonl", 4)
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    (folder / "random.json").symlink_to("/dev/urandom")
    with Workspace(tmp_path / "home") as ws:
        report = ws.ingest(str(folder), errors="report")
    outcome = {Path(f.path).name: (f.status, f.reason) for f in report.files}
    assert outcome["good.jsonl"] == ("imported", None)
    assert outcome["pipe.jsonl"][0] == "refused"
    assert outcome["pipe.jsonl"][1] == (
        f"{folder / 'pipe.jsonl'} is a FIFO; ingest reads regular files (log files)"
    )
    for name in ("zero.jsonl", "random.json"):
        assert outcome[name][0] == "refused"
        assert outcome[name][1] == (
            f"{folder / name} is a device; ingest reads regular files (log files)"
        )
