"""Resource figures (wall time and peak memory) of the calls that meet the biggest inputs.

Each scenario builds its data under /tmp, then runs the measured call in a fresh child
process and reports its wall time and peak RSS (``VmHWM``: the call's own plus the
interpreter's, ~55 MiB with the imports). Peers run in the same session, their peak RSS
sampled from /proc while they run.

- ``pdf300``: first ``pdf_search`` on a 3,000-page PDF padded to 300 MB (peer: pdftotext)
- ``pdf100k``: first ``pdf_search`` on a 100,000-page PDF (indexing stops after 60 s a call;
  the figures say how far the first call got and what the second call took)
- ``bomb``: first ``pdf_search`` on the text bomb (5,000 pages sharing one 198k-char stream)
- ``file2g``: first ``file_read`` near the end of a 2 GB log (peer: ``wc -l``)
- ``replay100k``: ``replay`` of a folded 100,000-message conversation (floor: under 50 ms)
- ``search1m``: ``conversation_search`` over 1,000,000 stored messages: the first call
  (which indexes them all; floors 15 s and SQLite FTS5's build of the same text, the two
  interleaved in three pairs, medians and the median paired ratio) and warm p50 / p99
- ``append100k``: the first append to a 100,000-message conversation stored unfolded (floor
  200 ms; its fold runs behind it), when that fold lands, and the next append
- ``growth``: ingest, replay, append and search at 1k, 10k, 100k and 1M messages, with the
  cost per message (linear or better)
- ``ingest``: the real Claude Code logs of ../shared/transcripts ingested in fresh homes, with
  folds and without, interleaved with ``json.loads`` of the same lines (floor: 50 MB/s with
  folds), wall and CPU seconds

    python bench/bench_resources.py [pdf300 pdf100k bomb file2g replay100k search1m]
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import pdfgen  # noqa: E402

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from leanreplay.index import Workspace
home, root, kind, arg = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
ws = Workspace(home, [root])
out = {}
cpu_started = time.process_time()  # every thread of this process: Tantivy's indexers too
started = time.perf_counter()
if kind == "pdf_search":
    result = ws.pdf_search(arg, "marker00007 revenue")
    out["notes"] = result["notes"]
    out["hits"] = len(result["hits"])
elif kind == "file_read":
    result = ws.file_read(arg, start_line=int(sys.argv[6]))
    out["total_lines"] = result["total_lines"]
elif kind == "replay":
    result = ws.replay(arg)
    out["messages"] = len(result.messages)
elif kind == "search":
    result = ws.conversation_search(arg)
    out["hits"] = len(result["hits"])
    out["cpu_s"] = round(time.process_time() - cpu_started, 3)
elif kind == "append":
    cpu = time.process_time()
    ws.append(arg, {"role": "user", "content": "one more question"})
    out["append_cpu_s"] = round(time.process_time() - cpu, 4)
    out["append_s"] = round(time.perf_counter() - started, 4)
    ws.fold_state(arg)  # waits for the fold behind the append
    out["fold_landed_after_s"] = round(time.perf_counter() - started, 4)
    t = time.perf_counter()
    ws.append(arg, {"role": "assistant", "content": "an answer"})
    out["second_append_s"] = round(time.perf_counter() - t, 4)
out["seconds"] = round(time.perf_counter() - started, 4)
if kind in ("replay", "search"):
    warm = []
    for i in range(200 if kind == "search" else 50):
        t = time.perf_counter()
        if kind == "replay":
            ws.replay(arg)
        else:
            ws.conversation_search(f"word{i * 37 % 5000} budget")
        warm.append(time.perf_counter() - t)
    warm.sort()
    out["warm_p50_ms"] = round(warm[len(warm) // 2] * 1000, 3)
    out["warm_p99_ms"] = round(warm[int(len(warm) * 0.99)] * 1000, 3)
# VmHWM: the peak RSS of this address space (ru_maxrss would carry the bench parent's over
# fork and exec).
with open("/proc/self/status") as status:
    hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
out["peak_rss_mib"] = round(hwm / 1024, 1)
print(json.dumps(out))
"""


def child(home: Path, root: Path, kind: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO), str(home), str(root), kind, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr[-1500:]}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def timed_peer(cmd: list[str]) -> dict[str, Any]:
    """Wall time of a peer command, and its peak RSS sampled from /proc while it runs."""
    if shutil.which(cmd[0]) is None:
        return {"error": f"{cmd[0]} is not installed"}
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hwm = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.005)
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 3), "peak_rss_mib": round(hwm / 1024, 1)}


def pdf300(tmp: Path) -> dict[str, Any]:
    root = tmp / "root"
    root.mkdir()
    pdfgen.write_pdf(str(root / "big.pdf"), 3000, pad=100_000)
    out: dict[str, Any] = {"bytes": (root / "big.pdf").stat().st_size}
    out["leanreplay_first_pdf_search"] = child(tmp / "home", root, "pdf_search", "big.pdf")
    out["pdftotext"] = timed_peer(["pdftotext", str(root / "big.pdf"), str(tmp / "out.txt")])
    return out


def pdf100k(tmp: Path) -> dict[str, Any]:
    root = tmp / "root"
    root.mkdir()
    pdfgen.write_pdf(str(root / "huge.pdf"), 100_000, fanout=100)
    out: dict[str, Any] = {"bytes": (root / "huge.pdf").stat().st_size, "pages": 100_000}
    out["leanreplay_first_pdf_search"] = child(tmp / "home", root, "pdf_search", "huge.pdf")
    out["leanreplay_second_pdf_search"] = child(tmp / "home", root, "pdf_search", "huge.pdf")
    out["pdftotext"] = timed_peer(["pdftotext", str(root / "huge.pdf"), str(tmp / "out.txt")])
    return out


def bomb(tmp: Path) -> dict[str, Any]:
    root = tmp / "root"
    root.mkdir()
    (root / "bomb.pdf").write_bytes(pdfgen.text_bomb(5000, 198_000))
    out: dict[str, Any] = {"bytes": (root / "bomb.pdf").stat().st_size}
    out["leanreplay_first_pdf_search"] = child(tmp / "home", root, "pdf_search", "bomb.pdf")
    return out


def file2g(tmp: Path) -> dict[str, Any]:
    root = tmp / "root"
    root.mkdir()
    line = b"2026-11-30T05:00:00Z worker-%d INFO request %09d served in 3ms path=/api/v1/items\n"
    lines = 0
    with (root / "big.log").open("wb", buffering=16 * 1024 * 1024) as f:
        while f.tell() < 2 * 1024**3:
            f.write(b"".join(line % (i % 8, lines + i) for i in range(100_000)))
            lines += 100_000
    subprocess.run(["cat", str(root / "big.log")], stdout=subprocess.DEVNULL, check=True)
    out: dict[str, Any] = {"bytes": (root / "big.log").stat().st_size, "lines": lines}
    out["leanreplay_first_file_read"] = child(
        tmp / "home", root, "file_read", "big.log", str(lines - 10)
    )
    out["wc_l"] = timed_peer(["wc", "-l", str(root / "big.log")])
    return out


def _store(home: Path, conversations: int, per: int, fold_through: int = 0) -> None:
    """A store written straight through SQLite (what ingest would write, much faster)."""
    from leanreplay.index.store._store import Store

    Store(str(home)).close()  # the schema
    rng = random.Random(5)
    db = sqlite3.connect(home / "store.sqlite3")
    with db:
        for c in range(conversations):
            cid = f"conv{c:05d}"
            db.execute("INSERT INTO conversations(id) VALUES (?)", (cid,))
            rows = []
            for seq in range(1, per + 1):
                role = "user" if seq % 2 else "assistant"
                text = f"message {seq} of {cid} word{rng.randrange(5000)} budget " + "x" * 80
                body = json.dumps({"role": role, "content": text, "id": f"m{seq}"})
                rows.append((cid, seq, f"m{seq}", role, body, len(text)))
            db.executemany(
                "INSERT INTO messages(conversation_id, seq, id, role, body, chars) "
                "VALUES (?,?,?,?,?,?)",
                rows,
            )
            if fold_through:
                db.execute(
                    "INSERT INTO folds VALUES (?,?,?,?,?)",
                    (cid, "summary " * 500, fold_through, f"m{fold_through}", 1),
                )
    db.close()


def replay100k(tmp: Path) -> dict[str, Any]:
    (tmp / "root").mkdir()
    _store(tmp / "home", 1, 100_000, fold_through=99_987)
    return {
        "messages": 100_000,
        "leanreplay_replay": child(tmp / "home", tmp / "root", "replay", "conv00000"),
    }


def fts5_build(store: Path, target: Path) -> dict[str, Any]:
    """The peer: SQLite FTS5 built over the same messages' text (read from the same store,
    the JSON of each parsed), on disk, one transaction."""
    cpu, started = time.process_time(), time.perf_counter()
    src = sqlite3.connect(store)
    db = sqlite3.connect(target)
    db.execute("CREATE VIRTUAL TABLE f USING fts5(conversation_id UNINDEXED, id UNINDEXED, text)")
    rows = src.execute("SELECT conversation_id, id, body FROM messages ORDER BY rowid")
    with db:
        while batch := rows.fetchmany(50_000):
            db.executemany(
                "INSERT INTO f VALUES (?,?,?)",
                [(c, m, json.loads(b).get("content") or "") for c, m, b in batch],
            )
    src.close()
    db.close()
    return {
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
    }


def search1m(tmp: Path, runs: int = 3) -> dict[str, Any]:
    """FTS5's build and our first search (which indexes the store), interleaved in pairs
    (alternating which goes first), each run on a fresh index; medians, the median of the
    paired ratios, CPU seconds (ours: every thread of the child, the indexers too)."""
    (tmp / "root").mkdir()
    started = time.perf_counter()
    _store(tmp / "home", 100, 10_000)
    out: dict[str, Any] = {
        "messages": 1_000_000,
        "store_build_s": round(time.perf_counter() - started, 1),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    store = tmp / "home" / "store.sqlite3"

    def peer() -> dict[str, Any]:
        (tmp / "fts5.sqlite3").unlink(missing_ok=True)
        return fts5_build(store, tmp / "fts5.sqlite3")

    def ours() -> dict[str, Any]:
        shutil.rmtree(tmp / "home" / "index", ignore_errors=True)
        return child(tmp / "home", tmp / "root", "search", "budget")

    pairs = []
    for run in range(runs):
        if run % 2:
            theirs, mine = peer(), ours()
        else:
            mine, theirs = ours(), peer()
        pairs.append({"fts5": theirs, "ours": mine, "load": round(os.getloadavg()[0], 2)})
        print(json.dumps({"search1m_pair": pairs[-1]}), flush=True)
    if any("error" in p["ours"] for p in pairs):
        out["leanreplay_conversation_search"] = next(
            p["ours"] for p in pairs if "error" in p["ours"]
        )
        out["ratio_first_search_over_fts5_build"] = 1e9
        return out

    def med(side: str, key: str) -> float:
        return round(statistics.median(p[side][key] for p in pairs), 3)

    out["pairs"] = pairs
    out["sqlite_fts5_build"] = {"seconds": med("fts5", "seconds"), "cpu_s": med("fts5", "cpu_s")}
    out["leanreplay_conversation_search"] = {
        "hits": pairs[-1]["ours"]["hits"],
        "seconds": med("ours", "seconds"),
        "cpu_s": med("ours", "cpu_s"),
        "warm_p50_ms": med("ours", "warm_p50_ms"),
        "warm_p99_ms": med("ours", "warm_p99_ms"),
        "peak_rss_mib": max(p["ours"]["peak_rss_mib"] for p in pairs),
    }
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out["ratio_first_search_over_fts5_build"] = round(
        statistics.median(p["ours"]["seconds"] / p["fts5"]["seconds"] for p in pairs), 3
    )
    out["ratio_cpu"] = round(
        statistics.median(p["ours"]["cpu_s"] / p["fts5"]["cpu_s"] for p in pairs), 3
    )
    return out


TRANSCRIPTS = REPO.parent / "shared" / "transcripts"


def ingest(tmp: Path) -> dict[str, Any]:
    """Ingest of the real Claude Code logs (with folds, the default, and without), each run
    in a fresh home, interleaved with json.loads of every line of the same files."""
    files = sorted(str(p) for p in (TRANSCRIPTS / "claude-code-m-claude").glob("*.jsonl"))
    if not files:
        return {"error": f"no Claude Code logs under {TRANSCRIPTS}"}
    size = sum(os.path.getsize(f) for f in files)
    texts = [Path(f).read_text(encoding="utf-8") for f in files]

    def loads() -> None:
        for text in texts:
            for line in text.split("\n"):
                with contextlib.suppress(ValueError):  # blank and broken lines: skipped too
                    json.loads(line)

    out: dict[str, Any] = {"files": len(files), "bytes": size}
    for fold in (True, False):
        paired = _ingest_pairs(tmp / f"fold-{fold}", files, fold, loads)
        paired["ours_mb_per_s"] = round(size / paired["ours_wall"] / 1e6, 1)
        paired["ours_mb_per_cpu_s"] = round(size / paired["ours_cpu"] / 1e6, 1)
        paired["json_loads_mb_per_s"] = round(size / paired["peer_wall"] / 1e6, 1)
        out["with_folds" if fold else "unfolded"] = paired
    return out


def _ingest_pairs(
    base: Path, files: list[str], fold: bool, peer: Callable[[], None]
) -> dict[str, Any]:
    from bench._paired import Paired
    from leanreplay.index import Workspace

    workspaces: list[Workspace] = []

    def fresh(run: int) -> None:  # opening a store is not part of the ingest
        workspaces.append(Workspace(base / f"home{run}"))

    def ours() -> None:
        workspaces[-1].ingest(*files, fold=fold)

    paired = Paired().run(ours, peer, 9, setup=fresh).report()
    for ws in workspaces:
        ws.close()
    return paired


def append100k(tmp: Path) -> dict[str, Any]:
    """The first append to a 100,000-message conversation stored unfolded (floor: the append
    under 200 ms; the fold runs behind it), the time until that fold lands, a second append."""
    (tmp / "root").mkdir()
    _store(tmp / "home", 1, 100_000)
    out = child(tmp / "home", tmp / "root", "append", "conv00000")
    return {"messages": 100_000, "leanreplay_append": out}


GROWTH_CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
from leanreplay.index import Workspace
home, log, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
def timed(fn):
    c, w = time.process_time(), time.perf_counter()
    fn()
    return {"s": round(time.perf_counter() - w, 4), "cpu_s": round(time.process_time() - c, 4)}
ws = Workspace(home)
out = {"messages": n}
out["ingest"] = timed(lambda: ws.ingest(log))
cid = ws.conversations()[0]
ws.fold_state(cid)
out["replay"] = timed(lambda: ws.replay(cid))
out["append"] = timed(lambda: ws.append(cid, {"role": "user", "content": "one more"}))
out["search_first"] = timed(lambda: ws.conversation_search("budget"))
out["search_warm"] = timed(lambda: ws.conversation_search("word17 budget"))
ws.close()
with open("/proc/self/status") as status:
    hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
out["peak_rss_mib"] = round(hwm / 1024, 1)
print(json.dumps(out))
"""


def growth(tmp: Path) -> dict[str, Any]:
    """Ingest (with folds), replay, append and the first and a warm search at 1k, 10k, 100k
    and 1M messages of one conversation (a JSONL log: user questions, tool calls with their
    results, answers), each size in a fresh child process; per-message cost beside each."""
    rng = random.Random(9)
    out: dict[str, Any] = {}
    for n in (1_000, 10_000, 100_000, 1_000_000):
        log = tmp / f"log{n}.jsonl"
        with log.open("w") as f:
            for i in range(n):
                kind = i % 4
                if kind == 0:
                    m = {
                        "role": "user",
                        "content": f"question {i} word{rng.randrange(5000)} budget",
                    }
                elif kind == 1:
                    call = {
                        "id": f"t{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"cmd": f"make {i}"})},
                    }
                    m = {"role": "assistant", "content": None, "tool_calls": [call]}
                elif kind == 2:
                    m = {
                        "role": "tool",
                        "tool_call_id": f"t{i - 1}",
                        "content": f"built {i} " + "ok " * 60,
                    }
                else:
                    m = {"role": "assistant", "content": f"answer {i}: the build passed"}
                f.write(json.dumps(m) + "\n")
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                GROWTH_CHILD,
                str(REPO),
                str(tmp / f"home{n}"),
                str(log),
                str(n),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        log.unlink()
        shutil.rmtree(tmp / f"home{n}", ignore_errors=True)
        if proc.returncode != 0:
            out[str(n)] = {"error": proc.stderr[-1500:]}
            continue
        row = json.loads(proc.stdout)
        for step in ("ingest", "replay", "append", "search_first", "search_warm"):
            row[step]["us_per_message"] = round(row[step]["s"] / n * 1e6, 3)
        out[str(n)] = row
        print(json.dumps({f"growth_{n}": row}), flush=True)
    return out


SCENARIOS = {
    "pdf300": pdf300,
    "pdf100k": pdf100k,
    "bomb": bomb,
    "file2g": file2g,
    "replay100k": replay100k,
    "search1m": search1m,
    "ingest": ingest,
    "append100k": append100k,
    "growth": growth,
}


def main() -> None:
    names = sys.argv[1:] or list(SCENARIOS)
    report: dict[str, Any] = {"cpu_count": os.cpu_count()}
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"bench_resources_{name}_", dir="/tmp") as tmp:
            started = time.perf_counter()
            report[name] = SCENARIOS[name](Path(tmp))
            report[name]["scenario_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps({name: report[name]}), flush=True)
    floors: dict[str, bool] = {}
    if "replay100k" in report:
        floors["replay100k_under_50ms"] = (
            report["replay100k"]["leanreplay_replay"].get("seconds", 1e9) < 0.05
        )
    if "search1m" in report:
        floors["search1m_first_under_15s"] = (
            report["search1m"]["leanreplay_conversation_search"].get("seconds", 1e9) < 15
        )
        floors["search1m_first_within_fts5_build"] = (
            report["search1m"]["ratio_first_search_over_fts5_build"] <= 1.0
        )
    if "append100k" in report:
        floors["append100k_under_200ms"] = (
            report["append100k"]["leanreplay_append"].get("append_s", 1e9) < 0.2
        )
    if "ingest" in report and "with_folds" in report["ingest"]:
        floors["ingest_50mb_per_s_with_folds"] = (
            report["ingest"]["with_folds"]["ours_mb_per_s"] >= 50
        )
    report["floors"] = floors
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
