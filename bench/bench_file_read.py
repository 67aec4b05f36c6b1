"""file_read on a generated 2 GB text file against wc -l and sed, plus a 1 GB file with no
newline at all.

- first read: `file_read` near the end of the file in a fresh home (so the sparse line
  index is built from nothing) against `wc -l` on the same file; both run on a file that is
  already in the page cache, median of 3.
- random reads: 1,000 `file_read` calls of 1-50 lines at random line numbers, p50 and p99,
  against `sed -n 'A,Bp'` (20 samples: sed must read from the start every time).
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

from leanreplay.index import Workspace
from leanreplay.index.tools._lines import _np

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


def timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=2.0)
    args = parser.parse_args()
    report: dict[str, object] = {"numpy": _np is not None, "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench_file_read_") as tmp:
        root = Path(tmp)
        big = root / "big.log"
        lines = write_text(big, args.gb)
        report["bytes"] = big.stat().st_size
        report["lines"] = lines
        subprocess.run(["cat", str(big)], stdout=subprocess.DEVNULL, check=True)  # page cache
        wc = [
            timed(lambda: subprocess.run(["wc", "-l", str(big)], capture_output=True, check=True))
            for _ in range(3)
        ]
        firsts = []
        for run in range(3):
            with Workspace(root / f"home{run}", [root]) as ws:
                started = time.perf_counter()
                result = ws.file_read("big.log", start_line=lines - 10)
                firsts.append(time.perf_counter() - started)
                assert result["content"].split("\t", 1)[0] == str(lines - 10), result["content"][
                    :80
                ]
                assert result["total_lines"] == lines
        # Memory in a run of its own: tracemalloc slows the code it watches.
        with Workspace(root / "home_mem", [root]) as ws:
            before = rss_anon_kib()
            tracemalloc.start()
            ws.file_read("big.log", start_line=lines - 10)
            peaks = [tracemalloc.get_traced_memory()[1]]
            tracemalloc.stop()
            rss = [rss_anon_kib() - before]
        report["first_read_s"] = round(statistics.median(firsts), 3)
        report["wc_l_s"] = round(statistics.median(wc), 3)
        report["ratio_first_over_wc"] = round(statistics.median(firsts) / statistics.median(wc), 3)
        report["first_read_tracemalloc_peak_kib"] = round(max(peaks) / 1024, 1)
        report["first_read_rss_anon_growth_kib"] = max(rss)

        rng = random.Random(3)
        with Workspace(root / "home0", [root]) as ws:
            times = []
            for _ in range(1000):
                start = rng.randrange(1, lines - 60)
                end = start + rng.randrange(0, 50)
                started = time.perf_counter()
                result = ws.file_read("big.log", start_line=start, end_line=end)
                times.append(time.perf_counter() - started)
                assert result["end_line"] == end
            times.sort()
            sed = []
            for _ in range(20):
                start = rng.randrange(1, lines - 60)
                sed.append(
                    timed(
                        lambda s=start: subprocess.run(
                            ["sed", "-n", f"{s},{s + 20}p;{s + 20}q", str(big)],
                            capture_output=True,
                            check=True,
                        )
                    )
                )
        report["random_read_p50_ms"] = round(times[500] * 1000, 3)
        report["random_read_p99_ms"] = round(times[990] * 1000, 3)
        report["sed_random_p50_ms"] = round(statistics.median(sed) * 1000, 1)
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
        "first_read_within_1.5x_wc": report["ratio_first_over_wc"] <= 1.5,  # type: ignore[operator]
        "random_p50_under_2ms": report["random_read_p50_ms"] < 2,  # type: ignore[operator]
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
