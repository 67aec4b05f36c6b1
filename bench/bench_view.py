"""`leanreplay view` on a large store: how long its pages take over HTTP.

Builds a home of 1,000,000 messages (one conversation of 100,000, the rest in 900
conversations of 1,000), starts the real ``leanreplay view`` command, and times the pages a
person opens first: the conversation list, the 100k conversation's History (tail first), an
older page of it, a message found by search. The peer is what a view without paging would
do: load the whole 100k conversation from the store (``Workspace.messages``). Prints JSON.

    python bench/bench_view.py [--messages 1000000]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leanreplay.index import Workspace

ROOT = Path(__file__).resolve().parent.parent

TOKEN = "bench-view-token-of-at-least-32-chars"
BIG = 100_000
SMALL = 1_000


def message(i: int) -> dict[str, Any]:
    if i % 4 == 0:
        return {"role": "user", "content": f"Step {i}: check the deployment of service {i % 97}."}
    if i % 4 == 1:
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"n": i}}],
        }
    if i % 4 == 2:
        return {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "ok\n" * 40}
            ],
        }
    return {"role": "assistant", "content": f"Service {i % 97} is healthy (check {i})."}


def build(home: Path, total: int) -> dict[str, Any]:
    started = time.perf_counter()
    with Workspace(home, auto_fold=False) as ws:
        for start in range(0, BIG, 10_000):
            ws._store.append("big", [message(i) for i in range(start, start + 10_000)])
        for c in range((total - BIG) // SMALL):
            ws._store.append(f"c{c:04d}", [message(i) for i in range(SMALL)])
        ws._store.append("big", [{"role": "user", "content": "zebra-needle in the last page"}])
    return {"messages": total + 1, "build_seconds": round(time.perf_counter() - started, 1)}


def get(port: int, token: str, path: str) -> tuple[float, int, int]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    connection.request(
        "GET", path, headers={"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {token}"}
    )
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed, response.status, len(body)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_view_") as tmp:
        home = Path(tmp) / "home"
        report["store"] = build(home, args.messages)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "leanreplay.index.cli",
                "--home",
                str(home),
                "view",
                "--port",
                "0",
            ],
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(ROOT),
            env={**os.environ, "PYTHONPATH": str(ROOT), "LEANREPLAY_TOKEN": TOKEN},
        )
        assert process.stderr is not None
        found = re.search(r":(\d+)/", process.stderr.readline())
        assert found
        port = int(found.group(1))
        try:
            pages = {
                "list_first_visit": "/",
                "list_again": "/",
                "history_100k_tail": "/c?id=big",
                "history_100k_tail_again": "/c?id=big",
                "history_100k_older_page": "/c?id=big&before=50000",
                "history_100k_search_hit": "/c?id=big&at=m100001",
                "search": "/?q=zebra-needle",
                "summary_100k": "/c?id=big&tab=summary",
                "replay_100k_unfolded": "/c?id=big&tab=replay",
                "size_chart_100k": "/c?id=big&tab=size",
                "size_chart_100k_again": "/c?id=big&tab=size",
            }
            timings = {}
            for name, path in pages.items():
                runs = [get(port, TOKEN, path) for _ in range(3 if "again" in name else 1)]
                assert all(status == 200 for _, status, _ in runs), (name, runs)
                timings[name] = {
                    "seconds": round(statistics.median(r[0] for r in runs), 3),
                    "bytes": runs[0][2],
                }
            report["pages"] = timings
        finally:
            process.terminate()
            process.wait(timeout=30)
            process.stderr.close()
        with Workspace(home) as ws:
            started = time.perf_counter()
            whole = ws.messages("big")
            peer = time.perf_counter() - started
        report["peer_load_whole_100k_conversation_seconds"] = round(peer, 3)
        report["peer_messages"] = len(whole)
        tail = timings["history_100k_tail"]["seconds"]
        report["history_tail_over_peer"] = round(tail / peer, 3)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
