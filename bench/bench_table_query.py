"""table_query on a 1 GB CSV against DuckDB on the same file, in the same run.

Ours (`Workspace.table_query`) and the peer (DuckDB 'SELECT ... FROM read_csv(file)' on a fresh
connection, as a user of DuckDB would write it) each run in their own worker process, fed the
same queries in turn (ours first, then the peer, per query), so each process's CPU seconds and
peak RSS are its own; each side imports DuckDB at its first query (ours does so itself). Each
query runs ROUNDS times in place (the first query of the file sniffs it, and starts the
columnar copy in the background when it is done); then the bench
waits for the copy (timed from the first query) and runs each query REPEATS more times.

Floors (issue 20): no query of ours slower than the peer's same query (ratio of paired wall
times <= 1.0 for every query, the first ones included); repeated queries (on the copy) <= 0.1x.

Prints one JSON object: per phase (before the copy was ready, after), per query the median
wall and CPU seconds of ours and the peer and the median of the paired ratios; the copy's
build time, CPU seconds and peak RSS; each worker's peak RSS; os.getloadavg() before and after.

    python bench/bench_table_query.py [--gb 1] [--rounds 1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tables import make_csv

REPO = Path(__file__).resolve().parent.parent
QUERIES = {
    "group_by": "SELECT region, count(*) AS n, sum(amount) AS total FROM t GROUP BY region "
    "ORDER BY region",
    "filter": "SELECT count(*) FROM t WHERE amount > 500 AND region = 'region-3'",
    "top_n": "SELECT id, amount FROM t ORDER BY amount DESC, id LIMIT 10",
}

# One worker per side: reads a query name per line, answers one JSON line.
WORKER = r"""
import json, os, resource, sys, time
sys.path.insert(0, REPO)
side, csv, home = sys.argv[1], sys.argv[2], sys.argv[3]
queries = json.loads(sys.argv[4])
if side == "ours":
    from leanreplay.index import Workspace
    ws = Workspace(home, [os.path.dirname(csv)])
    def run(sql):
        return ws.table_query(csv, sql)["rows"]
    def ready():
        return any(n.endswith(".duckdb") for n in os.listdir(os.path.join(home, "tables")))
else:
    def run(sql):
        # Imported at the first query, as ours imports it (each side's first query pays the
        # import, 0.2 s here, once per process).
        import duckdb
        con = duckdb.connect(config={"threads": 2, "memory_limit": "1GB"})
        con.execute("SET enable_progress_bar = false")  # it would print on our pipe
        try:
            con.execute(
                f"CREATE VIEW t AS SELECT * FROM read_csv('{csv}', delim = ',', header = true)"
            )
            return [list(r) for r in con.execute(sql).fetchall()]
        finally:
            con.close()
    def ready():
        return False
print("ready", flush=True)
for line in sys.stdin:
    name = line.strip()
    if name == "poll":
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(json.dumps({"copy_ready": ready(),
                          "children_cpu_s": children.ru_utime + children.ru_stime,
                          "children_peak_rss_mib": children.ru_maxrss / 1024}), flush=True)
        continue
    cpu, wall = time.process_time(), time.perf_counter()
    rows = run(queries[name])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # Sums of floats differ in the last bits between scans: compare them rounded.
    first = [[round(v, 2) if isinstance(v, float) else v for v in r] for r in rows[:1]]
    print(json.dumps({"s": wall, "cpu_s": cpu, "rows": len(rows), "first": repr(first)[:80],
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
          flush=True)
"""


class Worker:
    def __init__(self, side: str, csv: Path, home: Path) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"REPO = {str(REPO)!r}\n" + WORKER,
                side,
                str(csv),
                str(home),
                json.dumps(QUERIES),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.ask(None) == "ready"

    def ask(self, line: str | None) -> str:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        if line is not None:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def query(self, name: str) -> dict[str, float]:
        result: dict[str, float] = json.loads(self.ask(name))
        return result

    def poll(self) -> dict[str, float]:
        result: dict[str, float] = json.loads(self.ask("poll"))
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


def summary(pairs: list[tuple[dict[str, float], dict[str, float]]]) -> dict[str, float]:
    return {
        "runs": len(pairs),
        "ours_s_median": round(statistics.median(o["s"] for o, _ in pairs), 4),
        "ours_cpu_s_median": round(statistics.median(o["cpu_s"] for o, _ in pairs), 4),
        "peer_s_median": round(statistics.median(p["s"] for _, p in pairs), 4),
        "peer_cpu_s_median": round(statistics.median(p["cpu_s"] for _, p in pairs), 4),
        "ratio_median": round(statistics.median(o["s"] / p["s"] for o, p in pairs), 4),
        "ratio_max": round(max(o["s"] / p["s"] for o, p in pairs), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="rounds before the copy")
    parser.add_argument("--wait", type=float, default=300, help="most seconds for the copy")
    args = parser.parse_args()
    load_before = os.getloadavg()
    base = Path(tempfile.gettempdir()) / "leanreplay-bench-tables"
    base.mkdir(exist_ok=True)
    csv = base / f"sales_{args.gb:g}gb.csv"
    make_csv(csv, args.gb)
    subprocess.run(["cat", str(csv)], stdout=subprocess.DEVNULL, check=True)  # page cache
    home = Path(tempfile.mkdtemp(prefix="bench-table-query-"))
    ours = Worker("ours", csv, home)
    peer = Worker("peer", csv, home / "peer")
    before: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {q: [] for q in QUERIES}
    after: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {q: [] for q in QUERIES}
    started = time.perf_counter()
    copy_ready_s = None
    try:
        # Before the copy: each query once a round, in place (the first one also sniffs the
        # file); the rounds stop once the copy is ready, so no query on it counts here.
        for name in (name for _ in range(args.rounds) for name in QUERIES):
            if before[name] and ours.poll()["copy_ready"]:
                break
            o, p = ours.query(name), peer.query(name)
            assert (o["first"], o["rows"]) == (p["first"], p["rows"]), (name, o, p)
            before[name].append((o, p))
        while time.perf_counter() - started < args.wait:
            if ours.poll()["copy_ready"]:
                copy_ready_s = time.perf_counter() - started
                break
            time.sleep(0.5)
        for _ in range(args.repeats if copy_ready_s is not None else 0):
            for name in QUERIES:
                o, p = ours.query(name), peer.query(name)
                assert (o["first"], o["rows"]) == (p["first"], p["rows"]), (name, o, p)
                after[name].append((o, p))
        builder = ours.poll()
        ours_rss = max(
            o["peak_rss_mib"] for runs in (before, after) for q in runs.values() for o, _ in q
        )
        peer_rss = max(
            p["peak_rss_mib"] for runs in (before, after) for q in runs.values() for _, p in q
        )
    finally:
        ours.close()
        peer.close()
        shutil.rmtree(home, ignore_errors=True)
    print(
        json.dumps(
            {
                "file_bytes": csv.stat().st_size,
                "before_copy": {q: summary(v) for q, v in before.items()},
                "on_copy": {q: summary(v) for q, v in after.items() if v},
                "copy": {
                    "ready_after_s": None if copy_ready_s is None else round(copy_ready_s, 2),
                    "builder_cpu_s": round(builder["children_cpu_s"], 2),
                    "builder_peak_rss_mib": round(builder["children_peak_rss_mib"], 1),
                },
                "peak_rss_mib": {"ours": round(ours_rss, 1), "peer": round(peer_rss, 1)},
                "floors": {
                    "every query <= peer": all(
                        o["s"] <= p["s"]
                        for runs in (before, after)
                        for q in runs.values()
                        for o, p in q
                    ),
                    "repeated <= 0.1x": all(
                        summary(v)["ratio_median"] <= 0.1 for v in after.values() if v
                    ),
                },
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
