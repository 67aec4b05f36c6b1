"""Side-by-side timing for the benches: ours and a peer in the same run, interleaved.

The machine is shared, so a single median says little: each pair runs ours and the peer
back to back (alternating which goes first), and the figure that counts is the median of
the per-pair ratios, which cancels drift in the load between pairs. Every sample has its
wall time and its CPU seconds (this process and its threads, plus children it waited for),
and every report says how loaded the machine was before and after.
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of its reaped children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


@dataclass
class Sample:
    wall: float
    cpu: float


def measure(fn: Callable[[], object]) -> Sample:
    cpu, wall = cpu_seconds(), time.perf_counter()
    fn()
    return Sample(time.perf_counter() - wall, cpu_seconds() - cpu)


@dataclass
class Paired:
    """Interleaved samples of ours and the peer, one pair per run."""

    ours: list[Sample] = field(default_factory=list)
    peer: list[Sample] = field(default_factory=list)
    load_before: list[float] = field(default_factory=load)

    def run(
        self,
        ours: Callable[[], object],
        peer: Callable[[], object],
        runs: int,
        *,
        setup: Callable[[int], None] | None = None,
    ) -> Paired:
        for i in range(runs):
            if setup is not None:
                setup(i)
            if i % 2:
                self.peer.append(measure(peer))
                self.ours.append(measure(ours))
            else:
                self.ours.append(measure(ours))
                self.peer.append(measure(peer))
        return self

    def report(self, unit: float = 1.0, digits: int = 3) -> dict[str, Any]:
        """Medians (in ``unit`` seconds), CPU seconds and the median of paired ratios."""

        def med(xs: list[float]) -> float:
            return round(statistics.median(xs) / unit, digits)

        pairs = list(zip(self.ours, self.peer, strict=True))
        return {
            "runs": len(pairs),
            "ours_wall": med([s.wall for s in self.ours]),
            "ours_cpu": med([s.cpu for s in self.ours]),
            "peer_wall": med([s.wall for s in self.peer]),
            "peer_cpu": med([s.cpu for s in self.peer]),
            "ratio_wall": round(statistics.median(o.wall / p.wall for o, p in pairs), 3),
            "ratio_cpu": round(statistics.median(o.cpu / p.cpu for o, p in pairs if p.cpu > 0), 3)
            if any(p.cpu > 0 for _, p in pairs)
            else None,
            "load_before": self.load_before,
            "load_after": load(),
        }


def percentiles(times: list[float], unit: float = 1e-3) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50": round(ordered[len(ordered) // 2] / unit, 3),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / unit, 3),
    }
