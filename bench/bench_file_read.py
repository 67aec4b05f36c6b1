"""file_read on a generated 2 GB text file against wc -l and sed, plus a 1 GB file with no
newline at all.

- first read: `file_read` near the end of the file in a fresh home (so the sparse line
  index is built from nothing) against `wc -l` on the same file, interleaved, 5 pairs; both
  run on a file that is already in the page cache. Wall and CPU seconds, medians of the
  paired ratios (floor: <= 1.0x wall).
- random reads: 1,000 `file_read` calls of 1-50 lines at random line numbers in one
  workspace, p50 and p99 (floor: p50 < 0.5 ms), with `sed -n 'A,Bp'` every 50 reads (sed
  must read from the start every time).
- memory: tracemalloc peak of the first read, and the process's anonymous RSS growth.
- no newline: the default first read of a 1 GB single-line file: time, output size, memory.

    python bench/bench_file_read.py [--gb 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._paired import Paired, load, measure, percentiles
from leanreplay.index import Workspace
from leanreplay.index.tools import _lines

LINE = b"2026-11-30T05:00:00Z worker-%d INFO request %09d served in 3ms path=/api/v1/items ok\n"


def rss_anon_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def write_text(path: Path, gigabytes: float) -> int:
    target = int(gigabytes * 1024**3)
    lines = 0
    with path.open("wb", buffering=16 * 1024 * 1024) as f:
        written = 0
        while written < target:
            block = b"".join(LINE % (i % 8, lines + i) for i in range(100_000))
            f.write(block)
            written += len(block)
            lines += 100_000
    return lines


def write_blob(path: Path, gigabytes: float) -> None:
    chunk = b"z" * (16 * 1024 * 1024)
    with path.open("wb") as f:
        for _ in range(int(gigabytes * 64)):
            f.write(chunk)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=2.0)
    args = parser.parse_args()
    # Which newline count the line index uses: the C counter, else NumPy, else bytes.count.
    counter = _lines._count_block.__name__.removeprefix("_count_block_")
    report: dict[str, object] = {"counter": counter, "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench_file_read_") as tmp:
        root = Path(tmp)
        big = root / "big.log"
        lines = write_text(big, args.gb)
        report["bytes"] = big.stat().st_size
        report["lines"] = lines
        subprocess.run(["cat", str(big)], stdout=subprocess.DEVNULL, check=True)  # page cache
        workspaces: list[Workspace] = []

        def fresh_home(run: int) -> None:  # opening the store is not part of the read
            workspaces.append(Workspace(root / f"home{run}", [root]))

        def first_read() -> None:
            result = workspaces[-1].file_read("big.log", start_line=lines - 10)
            assert result["content"].split("\t", 1)[0] == str(lines - 10), result["content"][:80]
            assert result["total_lines"] == lines

        def wc() -> None:
            subprocess.run(["wc", "-l", str(big)], capture_output=True, check=True)

        first = Paired().run(first_read, wc, 5, setup=fresh_home).report()
        for ws in workspaces:
            ws.close()
        report["first_read_vs_wc_l"] = first
        # Memory in a run of its own: tracemalloc slows the code it watches.
        with Workspace(root / "home_mem", [root]) as ws:
            before = rss_anon_kib()
            tracemalloc.start()
            ws.file_read("big.log", start_line=lines - 10)
            peaks = [tracemalloc.get_traced_memory()[1]]
            tracemalloc.stop()
            rss = [rss_anon_kib() - before]
        report["first_read_tracemalloc_peak_kib"] = round(max(peaks) / 1024, 1)
        report["first_read_rss_anon_growth_kib"] = max(rss)

        # Random reads in a long-lived workspace (an MCP server's), sed -n interleaved.
        rng = random.Random(3)
        load_before = load()
        with Workspace(root / "home0", [root]) as ws:
            times, cpus, sed = [], [], []
            for i in range(1000):
                start = rng.randrange(1, lines - 60)
                end = start + rng.randrange(0, 50)
                sample = measure(lambda s=start, e=end: ws.file_read("big.log", s, e))
                times.append(sample.wall)
                cpus.append(sample.cpu)
                if i % 50 == 0:
                    at = rng.randrange(1, lines - 60)
                    cmd = ["sed", "-n", f"{at},{at + 20}p;{at + 20}q", str(big)]
                    sed.append(
                        measure(lambda c=cmd: subprocess.run(c, capture_output=True, check=True))
                    )
        report["random_read_ms"] = {
            **percentiles(times),
            "cpu_ms_per_read": round(sum(cpus) / len(cpus) * 1000, 3),
            "sed_n_p50_ms": round(statistics.median(s.wall for s in sed) * 1000, 1),
            "load_before": load_before,
            "load_after": load(),
        }
        big.unlink()

        blob = root / "blob.txt"
        write_blob(blob, min(args.gb / 2, 1.0))
        with Workspace(root / "home_blob", [root]) as ws:
            started = time.perf_counter()
            result = ws.file_read("blob.txt")
            elapsed = time.perf_counter() - started
        with Workspace(root / "home_blob_mem", [root]) as ws:
            before = rss_anon_kib()
            tracemalloc.start()
            ws.file_read("blob.txt")
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        report["no_newline"] = {
            "bytes": blob.stat().st_size,
            "first_read_s": round(elapsed, 3),
            "output_chars": len(result["content"]),
            "notes": result["notes"],
            "tracemalloc_peak_kib": round(peak / 1024, 1),
            "rss_anon_growth_kib": rss_anon_kib() - before,
        }
    report["floors"] = {
        "first_read_within_1.0x_wc": first["ratio_wall"] <= 1.0,
        "random_p50_under_0.5ms": report["random_read_ms"]["p50"] < 0.5,  # type: ignore[index]
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
