"""The store on PostgreSQL against the embedded SQLite store, in the same run.

- ``appends``: appends per second from 1, 4 and 8 worker processes (each appending one message
  at a time, as `Workspace.append` does, to a conversation of its own), on PostgreSQL and on the
  SQLite store (all processes on one home), alternating.
- ``replay``: `Workspace.replay` of one 1,000-message conversation (tool calls, long results:
  placeholders apply) from each store, paired runs.
- ``search``: conversation_search over a corpus of ``--messages`` messages (default 1,000,000)
  stored through each store's own append (1,000 per transaction): time to searchable (PostgreSQL:
  the appends, whose vectors are made in their transactions; Tantivy: the SQLite appends plus
  the index's first catch-up; SQLite FTS5: its build from the same texts) and query p50/p99 over
  the same queries on each.

Prints one JSON object: medians, ratios (PostgreSQL over the peer), CPU seconds and the load
before and after. Needs PostgreSQL at ``$LEANREPLAY_BENCH_PG`` (default 127.0.0.1:5432, trust
auth); a database of its own is created and dropped.

    python bench/bench_fleet.py [appends] [replay] [search] [--messages N] [--per-worker N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paired import Paired, cpu_seconds, load, percentiles

from leanreplay.index import Workspace
from leanreplay.index.search._convindex import MessageIndex
from leanreplay.index.search._pgsearch import PgMessageSearch
from leanreplay.index.store._postgres import PgStore
from leanreplay.index.store._store import Store
from leanreplay.index.store._text import message_text

SERVER = os.environ.get("LEANREPLAY_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _url(name: str) -> str:
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(SERVER)._replace(path=f"/{name}"))


def _admin(sql: str) -> None:
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(sql.encode())


# appends


def _appender(home: str, store: str | None, tag: str, count: int, start: Any, out: Any) -> None:
    with Workspace(home, store=store, auto_fold=False) as ws:
        ws.append(tag, {"role": "user", "content": "warm up"})  # connect, migrate-check
        start.wait()
        cpu = time.process_time()
        for i in range(count):
            ws.append(tag, {"role": "user", "content": f"{tag} message {i} " + "x" * 200})
        out.put(time.process_time() - cpu)


def _append_run(tmp: Path, store: str | None, procs: int, per: int, run: int) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(procs + 1), ctx.Queue()
    kind = "pg" if store else "sqlite"
    workers = [
        ctx.Process(
            target=_appender,
            args=(
                str(tmp / (f"{kind}-home-{i}" if store else "sqlite-home")),
                store,
                f"{kind}-{procs}-{run}-{i}",
                per,
                start,
                out,
            ),
        )
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    start.wait()
    began = time.perf_counter()
    cpu = sum(out.get(timeout=600) for _ in workers)
    wall = time.perf_counter() - began
    for w in workers:
        w.join(60)
    return {"appends_per_s": procs * per / wall, "wall": wall, "cpu": cpu}


def appends(tmp: Path, url: str, per: int, runs: int = 3) -> dict[str, Any]:
    out: dict[str, Any] = {"per_worker": per, "runs": runs, "load_before": load()}
    for procs in (1, 4, 8):
        pg: list[dict[str, Any]] = []
        lite: list[dict[str, Any]] = []
        for run in range(runs):
            order = [(url, pg), (None, lite)] if run % 2 == 0 else [(None, lite), (url, pg)]
            for store, into in order:
                into.append(_append_run(tmp, store, procs, per, run))

        def med(rows: list[dict[str, Any]], key: str) -> float:
            return round(statistics.median(r[key] for r in rows), 3)

        out[f"{procs}_workers"] = {
            "postgresql_appends_per_s": round(med(pg, "appends_per_s"), 1),
            "sqlite_appends_per_s": round(med(lite, "appends_per_s"), 1),
            "ratio_postgresql_over_sqlite": round(
                statistics.median(
                    p["appends_per_s"] / s["appends_per_s"] for p, s in zip(pg, lite, strict=True)
                ),
                3,
            ),
            "postgresql_worker_cpu_s": med(pg, "cpu"),
            "sqlite_worker_cpu_s": med(lite, "cpu"),
        }
    out["load_after"] = load()
    return out


# replay


def conversation(n: int) -> list[dict[str, Any]]:
    """A coding session: a user turn, then tool calls and long results, answers."""
    rng = random.Random(3)
    out: list[dict[str, Any]] = []
    call = 0
    while len(out) < n:
        out.append(
            {"role": "user", "content": f"step {len(out)}: look at module{rng.randrange(50)}"}
        )
        for _ in range(3):
            call += 1
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"t{call}",
                            "name": "file_read",
                            "input": {"path": f"src/module{rng.randrange(50)}.py"},
                        }
                    ],
                }
            )
            out.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"t{call}",
                            "content": "\n".join(
                                f"{i}\tdef f{i}(x): return x * {rng.randrange(99)}"
                                for i in range(60)
                            ),
                        }
                    ],
                }
            )
        out.append({"role": "assistant", "content": "done with this step " * 5})
    return out[:n]


def replay(tmp: Path, url: str, runs: int = 9) -> dict[str, Any]:
    messages = conversation(1000)
    pg = Workspace(tmp / "replay-pg", store=url, auto_fold=False)
    lite = Workspace(tmp / "replay-sqlite", auto_fold=False)
    for ws in (pg, lite):
        ws.extend("long", messages)
    assert pg.replay("long").messages == lite.replay("long").messages
    paired = Paired().run(lambda: pg.replay("long"), lambda: lite.replay("long"), runs)
    pg.close()
    lite.close()
    report = paired.report(unit=1e-3)
    return {
        "messages": 1000,
        "postgresql_ms": report["ours_wall"],
        "sqlite_ms": report["peer_wall"],
        "ratio_postgresql_over_sqlite": report["ratio_wall"],
        "postgresql_cpu_ms": report["ours_cpu"],
        "sqlite_cpu_ms": report["peer_cpu"],
        "runs": runs,
        "load_before": report["load_before"],
        "load_after": report["load_after"],
    }


# search


VOCABULARY = [f"w{k}" for k in range(20_000)]
PATHS = [f"src/pkg{k % 40}/mod_{k}.py" for k in range(2_000)]
LANGS = ["درآمد فصلی", "東京タワー", "naïve café", "Größe", "مرحبا بالعالم"]


def corpus(n: int, per: int = 1000) -> list[tuple[str, list[dict[str, Any]]]]:
    rng = random.Random(7)
    batches = []
    for c in range(0, n, per):
        rows = []
        for i in range(min(per, n - c)):
            words = " ".join(VOCABULARY[int(rng.paretovariate(1.1)) % 20_000] for _ in range(14))
            extra = rng.choice(PATHS) if i % 5 == 0 else rng.choice(LANGS) if i % 7 == 0 else ""
            role = "user" if i % 2 == 0 else "assistant"
            rows.append({"role": role, "content": f"{words} {extra}"})
        batches.append((f"c{c // per:05d}", rows))
    return batches


def queries(count: int = 200) -> list[str]:
    rng = random.Random(11)
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            out.append(rng.choice(VOCABULARY[:2000]))
        elif kind == 1:
            out.append(" ".join(rng.sample(VOCABULARY[:5000], 2)))
        elif kind == 2:
            out.append(rng.choice(PATHS).rsplit("/", 1)[-1].removesuffix(".py"))
        else:
            out.append(rng.choice(LANGS).split()[0])
    return out


def _timed(fn: Any) -> tuple[float, float]:
    cpu, wall = cpu_seconds(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, cpu_seconds() - cpu


def search(tmp: Path, url: str, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"messages": n, "load_before": load()}
    batches = corpus(n)
    texts = [
        (cid, f"m{i + 1}", message_text(m)[0]) for cid, rows in batches for i, m in enumerate(rows)
    ]

    pg = PgStore(url, str(tmp / "search-pg"))

    def pg_build() -> None:
        for cid, rows in batches:
            pg.append(cid, rows)

    wall, cpu = _timed(pg_build)
    out["postgresql_to_searchable"] = {"seconds": round(wall, 1), "cpu_s": round(cpu, 1)}
    size = pg.query("SELECT pg_total_relation_size('messages')")[0][0]
    out["postgresql_messages_table_mb"] = round(int(size) / 2**20, 1)

    lite = Store(str(tmp / "search-sqlite"))

    def lite_build() -> None:
        with lite.batch():
            for cid, rows in batches:
                lite.append(cid, rows)

    wall, cpu = _timed(lite_build)
    index = MessageIndex(str(tmp / "search-sqlite"), lite)
    iwall, icpu = _timed(index.catch_up)
    out["tantivy_to_searchable"] = {
        "seconds": round(wall + iwall, 1),
        "sqlite_appends_s": round(wall, 1),
        "index_build_s": round(iwall, 1),
        "cpu_s": round(cpu + icpu, 1),
    }

    fts = sqlite3.connect(tmp / "fts5.sqlite3")
    fts.execute("CREATE VIRTUAL TABLE f USING fts5(conversation_id UNINDEXED, id UNINDEXED, text)")

    def fts_build() -> None:
        with fts:
            fts.executemany("INSERT INTO f VALUES (?,?,?)", texts)

    wall, cpu = _timed(fts_build)
    out["sqlite_fts5_to_searchable"] = {"seconds": round(wall, 1), "cpu_s": round(cpu, 1)}
    out["ratio_postgresql_over_tantivy_to_searchable"] = round(
        out["postgresql_to_searchable"]["seconds"] / out["tantivy_to_searchable"]["seconds"], 3
    )

    asked = queries()
    pg_search = PgMessageSearch(pg)
    engines = {
        "postgresql": lambda q: pg_search.search(q, conversations=None, limit=10),
        "tantivy": lambda q: index.search(q, conversations=None, limit=10),
        "sqlite_fts5": lambda q: fts.execute(
            "SELECT conversation_id, id, snippet(f, 2, '**', '**', ' … ', 24) FROM f "
            "WHERE f MATCH ? ORDER BY rank LIMIT 10",
            ('"' + q.replace('"', " ") + '"' if " " not in q else " OR ".join(q.split()),),
        ).fetchall(),
    }
    hits: dict[str, int] = {}
    for name, run in engines.items():
        run(asked[0])  # warm
        times, cpu0, found = [], cpu_seconds(), 0
        for q in asked:
            started = time.perf_counter()
            found += bool(run(q))
            times.append(time.perf_counter() - started)
        out[f"{name}_query_ms"] = {
            **percentiles(times),
            "cpu_ms_per_query": round((cpu_seconds() - cpu0) / len(asked) * 1e3, 3),
        }
        hits[name] = found
    out["queries"] = len(asked)
    out["queries_with_hits"] = hits
    for peer in ("tantivy", "sqlite_fts5"):
        out[f"ratio_postgresql_over_{peer}_p50"] = round(
            out["postgresql_query_ms"]["p50"] / out[f"{peer}_query_ms"]["p50"], 3
        )
    pg.close()
    lite.close()
    fts.close()
    out["load_after"] = load()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("parts", nargs="*", default=["appends", "replay", "search"])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--per-worker", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    name = f"lr_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    _admin(f'CREATE DATABASE "{name}"')
    report: dict[str, Any] = {"load_before": load(), "cpus": os.cpu_count()}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
            url = _url(name)
            if "appends" in args.parts:
                report["appends"] = appends(Path(tmp), url, args.per_worker, args.runs)
            if "replay" in args.parts:
                report["replay"] = replay(Path(tmp), url)
            if "search" in args.parts:
                report["search"] = search(Path(tmp), url, args.messages)
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    report["load_after"] = load()
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
