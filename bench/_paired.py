"""Side-by-side timing for the benches: ours and a peer in the same run, interleaved.

The machine is shared, so a single median says little: each pair runs ours and the peer
back to back (alternating which goes first), and the figure that counts is the median of
the per-pair ratios, which cancels drift in the load between pairs. Every sample has its
wall time and its CPU seconds (this process and its threads, plus children it waited for),
and every report says how loaded the machine was before and after.

Two calls in one process also share its allocator: glibc defers work on the chunks a call
frees (fastbins are consolidated, and the unsorted bin sorted, by a later large malloc), so
a side can pay for the other's frees. `allocator_resets` gives calls that settle the heap
before each timed call, outside the timed region, for the benches that pair C libraries with
Python (`Paired(reset=...)`, `interleave`); every sample also counts its minor page faults.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A malloc this large is a large-bin request for glibc (>= 1 KiB on 64-bit): it first
# consolidates the fastbins and sorts the unsorted bin, the work the frees before it deferred.
SETTLE_BYTES = 32 * 1024


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of its reaped children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@dataclass
class Sample:
    wall: float
    cpu: float
    faults: int = 0  # minor page faults during the call (memory the kernel had to hand back)


def measure(fn: Callable[[], object]) -> Sample:
    faults = minor_faults()
    cpu, wall = cpu_seconds(), time.perf_counter()
    fn()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    return Sample(wall, cpu, minor_faults() - faults)


@dataclass(frozen=True)
class AllocatorReset:
    """One way to settle the C heap between two timed calls; ``call`` is None where it cannot
    run here, and ``skipped`` then says why."""

    name: str
    how: str
    call: Callable[[], object] | None
    skipped: str | None = None


def allocator_resets(libc_name: str | None = None) -> dict[str, AllocatorReset]:
    """The two glibc resets, by name: ``malloc_trim`` (``malloc_trim(0)``: consolidates the
    fastbins and hands every free page back to the kernel, so both sides then refault the
    pages they touch) and ``settle`` (``malloc(SETTLE_BYTES)``, a large-bin request that makes
    glibc consolidate the fastbins and sort the unsorted bin then; the block is held until the
    next reset, since freeing it at once can trim the heap's top back to the kernel).

    ``libc_name`` names the C library to load (found by ctypes.util when None). Without
    glibc neither can run: both come back with ``call`` None and the reason."""
    how = {
        "malloc_trim": "malloc_trim(0) before each timed call, outside the timed region",
        "settle": f"malloc({SETTLE_BYTES}) before each timed call, outside the timed region "
        "(the block from the reset before is freed first)",
    }
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        glibc = None
    try:
        if not glibc:
            raise OSError("the C library is not glibc")
        libc = ctypes.CDLL(libc_name or ctypes.util.find_library("c") or "libc.so.6")
        trim, malloc, free = libc.malloc_trim, libc.malloc, libc.free
    except (OSError, AttributeError) as exc:
        reason = f"skipped, glibc unavailable through ctypes: {exc}"
        return {name: AllocatorReset(name, text, None, reason) for name, text in how.items()}
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    malloc.argtypes, malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    free.argtypes, free.restype = [ctypes.c_void_p], None

    held: list[int | None] = [None]

    def settle() -> None:
        free(held[0])
        held[0] = malloc(SETTLE_BYTES)

    return {
        "malloc_trim": AllocatorReset("malloc_trim", how["malloc_trim"], lambda: trim(0)),
        "settle": AllocatorReset("settle", how["settle"], settle),
    }


@dataclass
class Paired:
    """Interleaved samples of ours and the peer, one pair per run."""

    ours: list[Sample] = field(default_factory=list)
    peer: list[Sample] = field(default_factory=list)
    load_before: list[float] = field(default_factory=load)
    reset: AllocatorReset | None = None  # run before each timed call, when it can run

    def pair(
        self, i: int, ours: Callable[[], object], peer: Callable[[], object], *, timed: bool = True
    ) -> None:
        """Pair ``i``: ours first when ``i`` is even, the peer first when it is odd; an untimed
        pair runs the same calls and records nothing."""
        reset = self.reset.call if self.reset is not None else None
        for side in (peer, ours) if i % 2 else (ours, peer):
            if reset is not None:
                reset()
            if not timed:
                side()
                continue
            (self.ours if side is ours else self.peer).append(measure(side))

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
            self.pair(i, ours, peer)
        return self

    def report(self, unit: float = 1.0, digits: int = 3) -> dict[str, Any]:
        """Medians (in ``unit`` seconds), CPU seconds and the median of paired ratios."""

        def med(xs: list[float]) -> float:
            return round(statistics.median(xs) / unit, digits)

        pairs = list(zip(self.ours, self.peer, strict=True))
        reset: dict[str, Any] = {"name": "none", "how": "no reset: the calls follow each other"}
        if self.reset is not None:
            reset = {"name": self.reset.name, "how": self.reset.how}
            if self.reset.call is None:
                reset["skipped"] = self.reset.skipped
        return {
            "reset": reset,
            "runs": len(pairs),
            "ours_wall": med([s.wall for s in self.ours]),
            "ours_cpu": med([s.cpu for s in self.ours]),
            "peer_wall": med([s.wall for s in self.peer]),
            "peer_cpu": med([s.cpu for s in self.peer]),
            "ratio_wall": round(statistics.median(o.wall / p.wall for o, p in pairs), 3),
            "ratio_cpu": round(statistics.median(o.cpu / p.cpu for o, p in pairs if p.cpu > 0), 3)
            if any(p.cpu > 0 for _, p in pairs)
            else None,
            "ours_faults_mean": round(statistics.fmean(s.faults for s in self.ours), 1),
            "peer_faults_mean": round(statistics.fmean(s.faults for s in self.peer), 1),
            "load_before": self.load_before,
            "load_after": load(),
        }


def interleave(
    ours: Callable[[], object],
    peer: Callable[[], object],
    runs: int,
    resets: Mapping[str, AllocatorReset | None],
    *,
    block: int = 25,
) -> dict[str, Paired]:
    """``runs`` pairs under each reset (None: none). The variants take turns ``block`` pairs
    at a time, so that a change in the machine's load falls on all of them alike; each turn
    starts with one pair left untimed, which washes out what the variant before left in the
    heap (after ``malloc_trim``, the pages the kernel took back)."""
    paired = {name: Paired(reset=reset) for name, reset in resets.items()}
    for start in range(0, runs, block):
        for one in paired.values():
            one.pair(start, ours, peer, timed=False)
            for i in range(start, min(start + block, runs)):
                one.pair(i, ours, peer)
    return paired


def percentiles(times: list[float], unit: float = 1e-3) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50": round(ordered[len(ordered) // 2] / unit, 3),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / unit, 3),
    }
