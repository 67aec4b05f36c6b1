"""The last 100 lines of a generated 239 MB log: `file_read(path, start_line=-100)` in a fresh
home (no line index: "cold" for leanreplay) against `tail -n 100` run as a process,
interleaved, 21 pairs: medians of wall and CPU time and of the paired ratios (floor: ours
<= 0.5 ms). The log is generated once under the temp dir and reused.

    python bench/bench_tail.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._paired import Paired, measure
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
    homes: list[tempfile.TemporaryDirectory[str]] = []
    workspaces: list[Workspace] = []

    def fresh_home(run: int) -> None:  # opening the store is not part of the read
        homes.append(tempfile.TemporaryDirectory())
        workspaces.append(Workspace(homes[-1].name, [str(base)]))

    def ours() -> None:
        result = workspaces[-1].file_read(str(log), start_line=-100)
        assert result["content"].count("\n") == 99

    def tail() -> None:
        subprocess.run(["tail", "-n", "100", str(log)], check=True, capture_output=True)

    # The first call of the process asks libmagic what the file is; later calls, even in a
    # fresh home, find the verdict for the same head in memory.
    fresh_home(-1)
    first_in_process = measure(ours)
    paired = Paired().run(ours, tail, 21, setup=fresh_home).report(unit=1e-3)
    for ws in workspaces:
        ws.close()
    for home in homes:
        home.cleanup()
    report = {
        "log_bytes": log.stat().st_size,
        "first_call_in_process_ms": round(first_in_process.wall * 1000, 3),
        "file_read_last_100_vs_tail_n_100_ms": paired,
        "floor_ms": 0.5,
    }
    report["floor_held"] = paired["ours_wall"] <= 0.5
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
