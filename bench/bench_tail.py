"""The last 100 lines of a generated 239 MB log: `file_read(path, start_line=-100)` in a fresh
home (no line index: "cold" for leanreplay) against `tail -n 100` run as a process, median
of 5 each (floor: under 50 ms). The log is generated once under the temp dir and reused.

    python bench/bench_tail.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leanreplay.index import Workspace

LINE = b"2026-11-30T05:00:00Z worker-%d INFO request %09d served in 3ms path=/api/v1/items ok\n"
SIZE = 239 * 1024 * 1024


def main() -> None:
    base = Path(tempfile.gettempdir()) / "leanreplay-bench-tail"
    base.mkdir(exist_ok=True)
    log = base / "app.log"
    if not log.exists() or log.stat().st_size < SIZE:
        with log.open("wb") as f:
            written = n = 0
            while written < SIZE:
                block = b"".join(LINE % (i % 8, n + i) for i in range(100_000))
                f.write(block)
                written += len(block)
                n += 100_000
    ours, peer = [], []
    for _ in range(5):
        with tempfile.TemporaryDirectory() as home:
            ws = Workspace(home, [str(base)])
            t = time.perf_counter()
            result = ws.file_read(str(log), start_line=-100)
            ours.append((time.perf_counter() - t) * 1000)
            assert result["content"].count("\n") == 99
            ws.close()
        t = time.perf_counter()
        subprocess.run(["tail", "-n", "100", str(log)], check=True, capture_output=True)
        peer.append((time.perf_counter() - t) * 1000)
    print(
        json.dumps(
            {
                "log_bytes": log.stat().st_size,
                "file_read_last_100_cold_ms": round(statistics.median(ours), 3),
                "tail_n_100_process_ms": round(statistics.median(peer), 3),
                "ratio_tail_over_ours": round(statistics.median(peer) / statistics.median(ours), 1),
                "floor_ms": 50,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
