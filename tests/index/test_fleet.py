"""A fleet of workers on one PostgreSQL database: real processes, each with a home of its own.

What one worker stores, another replays, reads and finds at once (tool activations and prompt
snapshots too); a worker killed with SIGKILL in the middle of its appends loses nothing it
acknowledged while three others go on; workers whose connections are cut mid-run (every backend
of the test's workers terminated with ``pg_terminate_backend``, which is what a restart of
PostgreSQL does to them, without restarting the server other engineers share) recover and lose
nothing; two workers folding one conversation at once write one fold.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import psycopg

from leanreplay.index import Workspace
from tests.conftest import REPO
from tests.pgstore import database_url

PEER = """
import json, sys
from leanreplay.index import Workspace
ws = Workspace(sys.argv[1], store=sys.argv[2])
print("ready", flush=True)
for line in sys.stdin:
    cid, word = json.loads(line)
    hits = ws.conversation_search(word, conversation_id=cid)["hits"]
    replay = ws.replay(cid)
    print(json.dumps({
        "messages": [m["content"] for m in ws.messages(cid)],
        "replayed": [m.get("content") for m in replay.messages],
        "found": [h["message_id"] for h in hits],
        "tools": ws.active_tools(cid),
        "snapshots": [s["messages_stored"] for s in ws.snapshots(cid)],
    }), flush=True)
"""

WRITER = """
import sys
from leanreplay.index import StoreError, Workspace
home, url, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ws = Workspace(home, store=url, auto_fold=False)
i = 0
while i < count:
    message = {"role": "user", "content": f"{tag} says {i} \\u00e9\\u00e8 {{\\"k\\": [1, 2]}}",
               "z": {"b": 1, "a": 2}, "id": f"{tag}-{i}"}
    try:
        ws.append("shared", message)
    except StoreError as exc:
        # Cut off mid-call: stored or not, the id says which.
        print("lost", exc, file=sys.stderr, flush=True)
        try:
            ws.raw_message("shared", f"{tag}-{i}")
        except Exception:
            continue  # not stored: append it again
    print(i, flush=True)
    i += 1
ws.close()
"""


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(REPO),
    )


def _expected(tag: str, i: int) -> str:
    message = {
        "role": "user",
        "content": f'{tag} says {i} éè {{"k": [1, 2]}}',
        "z": {"b": 1, "a": 2},
        "id": f"{tag}-{i}",
    }
    return json.dumps(message, ensure_ascii=False)


def test_what_one_worker_stores_another_replays_reads_and_finds_at_once(
    pg_url: str, tmp_path: Path
) -> None:
    peer = _spawn(PEER, str(tmp_path / "b"), pg_url)
    assert peer.stdin is not None
    assert peer.stdout is not None
    try:
        assert peer.stdout.readline().strip() == "ready"
        with Workspace(tmp_path / "a", store=pg_url) as a:

            def ask(word: str) -> dict[str, Any]:
                assert peer.stdin is not None
                assert peer.stdout is not None
                peer.stdin.write(json.dumps(["c", word]) + "\n")
                peer.stdin.flush()
                answer: dict[str, Any] = json.loads(peer.stdout.readline())
                return answer

            a.append("c", {"role": "user", "content": "the quarterly_report.xlsx is late"})
            seen = ask("quarterly_report.xlsx")
            assert seen["messages"] == seen["replayed"] == ["the quarterly_report.xlsx is late"]
            assert seen["found"] == ["m1"]
            assert (seen["tools"], seen["snapshots"]) == ([], [])

            a.append("c", {"role": "assistant", "content": "درآمد فصلی is in"})
            a.call("tool_activate", {"names": ["pdf_read"]}, conversation_id="c")
            a.replay("c", snapshot=True)
            seen = ask("درآمد")
            assert seen["messages"][-1] == "درآمد فصلی is in"
            assert seen["found"] == ["m2"]
            assert seen["tools"] == ["pdf_read"]
            assert seen["snapshots"] == [2]
    finally:
        peer.stdin.close()
        peer.wait(30)
        peer.stdout.close()
    assert peer.returncode == 0


def _acknowledged(proc: subprocess.Popen[str], until: int) -> int:
    """Read the worker's acknowledgements until ``until`` (or it ends); the last one seen."""
    assert proc.stdout is not None
    last = -1
    deadline = time.monotonic() + 60
    while last < until and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        last = int(line)
    return last


def _stored(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT id, body FROM messages WHERE conversation_id='shared' ORDER BY seq"
        ).fetchall()
    return [(str(i), str(b)) for i, b in rows]


def _check(url: str, acked: dict[str, int]) -> None:
    stored = _stored(url)
    ids = [i for i, _ in stored]
    assert len(ids) == len(set(ids))  # every message once
    by_id = dict(stored)
    for tag, last in acked.items():
        for i in range(last + 1):
            assert by_id[f"{tag}-{i}"] == _expected(tag, i)  # present, byte-exact
    seqs = _seqs(url)
    assert seqs == list(range(1, len(seqs) + 1))  # one total order, no gaps


def _seqs(url: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT seq FROM messages WHERE conversation_id='shared' ORDER BY seq"
        ).fetchall()
    return [int(r[0]) for r in rows]


COUNT = 20


def test_a_worker_killed_mid_appends_loses_nothing_acknowledged(
    pg_url: str, tmp_path: Path
) -> None:
    tags = ["w0", "w1", "w2", "w3"]
    procs = {t: _spawn(WRITER, str(tmp_path / t), pg_url, t, str(COUNT)) for t in tags}
    acked = {}
    try:
        acked["w0"] = _acknowledged(procs["w0"], 6)
        os.kill(procs["w0"].pid, signal.SIGKILL)  # in the middle of its appends
        for t in tags[1:]:
            acked[t] = _acknowledged(procs[t], COUNT - 1)
    finally:
        for proc in procs.values():
            proc.wait(60)
            assert proc.stdout is not None
            assert proc.stdin is not None
            proc.stdout.close()
            proc.stdin.close()
    assert acked["w0"] >= 6
    assert [acked[t] for t in tags[1:]] == [COUNT - 1] * 3
    assert [procs[t].returncode for t in tags[1:]] == [0, 0, 0]
    _check(pg_url, acked)


def _terminate_workers(url: str, application: str) -> int:
    database = urllib.parse.urlsplit(url).path.lstrip("/")
    with psycopg.connect(database_url(database), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname=%s AND application_name=%s",
            (database, application),
        ).fetchall()
    return len(rows)


def test_workers_whose_connections_are_cut_mid_run_recover_and_lose_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    app = f"lr_{uuid.uuid4().hex[:8]}"
    url = pg_url + "&application_name=" + app
    tags = ["r0", "r1"]
    procs = {t: _spawn(WRITER, str(tmp_path / t), url, t, str(COUNT)) for t in tags}
    acked = {}
    cut = 0
    try:
        _acknowledged(procs["r0"], 3)
        cut += _terminate_workers(url, app)  # as a restart of the server does
        _acknowledged(procs["r0"], 10)
        cut += _terminate_workers(url, app)
        for t in tags:
            acked[t] = _acknowledged(procs[t], COUNT - 1)
    finally:
        for proc in procs.values():
            proc.wait(60)
            assert proc.stdout is not None
            assert proc.stdin is not None
            proc.stdout.close()
            proc.stdin.close()
    assert cut >= 2
    assert acked == {t: COUNT - 1 for t in tags}
    assert [p.returncode for p in procs.values()] == [0, 0]
    _check(pg_url, acked)
    assert len(_stored(pg_url)) == len(tags) * COUNT


FOLDER = """
import os, sys, time
from leanreplay.index import Workspace
from leanreplay.placeholders import FoldPolicy
done = os.path.join(sys.argv[4], "done-")

def slow(previous, messages, *, max_chars):
    # Holding the fold: wait until the other worker has tried its own (or 20 s pass).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(
        os.path.exists(done + t) for t in ("f0", "f1") if t != sys.argv[3]
    ):
        time.sleep(0.02)
    return f"summary by {sys.argv[3]} of {len(messages)} messages"

ws = Workspace(sys.argv[1], store=sys.argv[2], auto_fold=False,
               fold_policy=FoldPolicy(threshold_chars=100, keep_last=2))
print("ready", flush=True)
sys.stdin.readline()
result = ws.fold("long", summarizer=slow)
open(done + sys.argv[3], "w").close()
print(int(result.folded), result.reason, flush=True)
ws.close()
"""


def test_two_workers_folding_one_conversation_at_once_write_one_fold(
    pg_url: str, tmp_path: Path
) -> None:
    with Workspace(tmp_path / "setup", store=pg_url, auto_fold=False) as ws:
        for i in range(12):
            role = "user" if i % 2 == 0 else "assistant"
            ws.append("long", {"role": role, "content": f"turn {i} " + "words " * 20})
    procs = [_spawn(FOLDER, str(tmp_path / t), pg_url, t, str(tmp_path)) for t in ("f0", "f1")]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        answers = []
        for proc in procs:
            assert proc.stdout is not None
            answers.append(proc.stdout.readline().strip())
    finally:
        for proc in procs:
            proc.wait(60)
            assert proc.stdout is not None
            assert proc.stdin is not None
            proc.stdout.close()
            proc.stdin.close()
    assert sorted(a[0] for a in answers) == ["0", "1"], answers
    assert any("another fold of this conversation is running" in a for a in answers), answers
    with Workspace(tmp_path / "check", store=pg_url) as ws:
        state = ws.fold_state("long")
    assert state is not None
    assert state["generation"] == 1
