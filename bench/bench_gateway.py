"""What the gateway adds to a forwarded call, against the same call made directly.

Two real stdio MCP servers of the same kind (``tests/fixtures/mcp_upstream.py notes``, or
``@modelcontextprotocol/server-everything`` when bench/bench_lean_start.py installed it): one
called directly, one behind ``leanreplay serve --upstream`` (stdio). Calls alternate, so load
hits both alike; the JSON gives p50 / p99 of each, the median of the paired differences (the
floor: at most 1 ms), the CPU seconds each process spent (read from /proc) and per call, and
the load average before and after.

    python bench/bench_gateway.py [--calls 400]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    / "leanreplay-bench/npm/node_modules/.bin/mcp-server-everything"
)
FLOOR_MS = 1.0


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc), children first."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        here = todo.pop(0)
        kids = [p for p, parent in parents.items() if parent == here]
        out += kids
        todo += kids
    return out


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _pct(values: list[float], q: float) -> float:
    return round(sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000, 3)


async def run(calls: int, tmp: str) -> dict[str, Any]:
    if EVERYTHING.exists():
        upstream = StdioServerParameters(command=str(EVERYTHING))
        tool, args, label = "echo", {"message": "hi"}, "server-everything echo"
    else:
        script = REPO / "tests" / "fixtures" / "mcp_upstream.py"
        upstream = StdioServerParameters(command=sys.executable, args=[str(script), "notes"])
        tool, args, label = "ping", {}, "tests/fixtures/mcp_upstream.py ping"
    config = Path(tmp) / "gateway.json"
    entry = {"command": upstream.command, "args": upstream.args}
    config.write_text(json.dumps({"mcpServers": {"up": entry}}))
    home = str(Path(tmp) / "home")
    cli = ["-m", "leanreplay.index.cli", "--home", home, "serve", "--upstream", str(config)]
    gateway = StdioServerParameters(command=sys.executable, args=cli, cwd=str(REPO))
    direct_s: list[float] = []
    via_s: list[float] = []
    async with Client(upstream) as direct, Client(gateway, read_timeout_seconds=120) as via:
        await via.call_tool("tool_activate", {"names": [tool]})
        for _ in range(20):  # warm both paths
            await direct.call_tool(tool, args)
            await via.call_tool(tool, args)
        pids = _children(os.getpid())
        gateway_pid = next(p for p in pids if "leanreplay.index.cli" in _cmdline(p))
        behind = _children(gateway_pid)
        direct_pids = [p for p in pids if p != gateway_pid and p not in behind]
        cpu0 = {p: _cpu_s(p) for p in [gateway_pid, *behind, *direct_pids]}
        for _ in range(calls):
            t0 = time.perf_counter()
            await direct.call_tool(tool, args)
            t1 = time.perf_counter()
            result = await via.call_tool(tool, args)
            t2 = time.perf_counter()
            assert not result.is_error, result
            direct_s.append(t1 - t0)
            via_s.append(t2 - t1)
        cpu = {p: round(_cpu_s(p) - cpu0[p], 3) for p in cpu0}
    added = statistics.median(v - d for v, d in zip(via_s, direct_s, strict=True)) * 1000
    return {
        "upstream": label,
        "calls": calls,
        "direct_ms": {"p50": _pct(direct_s, 0.5), "p99": _pct(direct_s, 0.99)},
        "gateway_ms": {"p50": _pct(via_s, 0.5), "p99": _pct(via_s, 0.99)},
        "added_ms_p50": round(added, 3),
        "ratio_p50": round(statistics.median(via_s) / statistics.median(direct_s), 2),
        "cpu_s": {
            "gateway_process": cpu[gateway_pid],
            "upstream_behind_gateway": round(sum(cpu[p] for p in behind), 3),
            "upstream_direct": round(sum(cpu[p] for p in direct_pids), 3),
        },
        # Under load CPU time is the steadier figure: what one forwarded call costs the gateway.
        "cpu_ms_per_call": {
            "gateway_process": round(cpu[gateway_pid] / calls * 1000, 3),
            "upstream_direct": round(sum(cpu[p] for p in direct_pids) / calls * 1000, 3),
        },
        "floor": {"added_ms_p50_at_most": FLOOR_MS, "holds": added <= FLOOR_MS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    options = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        report = anyio.run(run, options.calls, tmp)
    report["loadavg"] = {"before": load_before, "after": os.getloadavg()}
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
