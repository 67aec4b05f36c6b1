"""The pairing of bench/_paired.py: ours and the peer alternate who goes first, an allocator
reset runs before every timed call, the variants of `interleave` take turns pair by pair and
report the same shape, and without glibc the resets are skipped and say so."""

from __future__ import annotations

import os

import pytest

from bench._paired import AllocatorReset, Paired, allocator_resets, interleave, measure


def recorder(log: list[str], name: str) -> AllocatorReset:
    return AllocatorReset(name, f"logs {name}", lambda: log.append(f"reset:{name}"))


def test_interleave_alternates_resets_before_each_call_and_variants_take_turns() -> None:
    log: list[str] = []
    paired = interleave(
        lambda: log.append("ours"),
        lambda: log.append("peer"),
        3,
        {"raw": None, "a": recorder(log, "a")},
        block=2,
    )
    ours_first, peer_first = ["ours", "peer"], ["peer", "ours"]

    def turn(reset: str | None, *pairs: list[str]) -> list[str]:
        # The untimed pair that opens each turn, then the timed ones.
        calls = [c for pair in (ours_first, *pairs) for c in pair]
        return calls if reset is None else [x for c in calls for x in (f"reset:{reset}", c)]

    assert log == [
        *turn(None, ours_first, peer_first),
        *turn("a", ours_first, peer_first),
        *turn(None, ours_first),
        *turn("a", ours_first),
    ]
    reports = {name: one.report() for name, one in paired.items()}
    assert {name: r["runs"] for name, r in reports.items()} == {"raw": 3, "a": 3}
    assert {name: r["reset"]["name"] for name, r in reports.items()} == {"raw": "none", "a": "a"}
    shapes = {frozenset(r) for r in reports.values()}
    assert len(shapes) == 1, shapes


def test_run_pairs_in_alternation_like_interleave() -> None:
    log: list[str] = []
    Paired(reset=recorder(log, "r")).run(lambda: log.append("ours"), lambda: log.append("peer"), 2)
    assert log == ["reset:r", "ours", "reset:r", "peer", "reset:r", "peer", "reset:r", "ours"]


def test_without_the_c_library_the_resets_are_skipped_and_say_why() -> None:
    resets = allocator_resets("libleanreplay-no-such-libc.so.1")
    assert set(resets) == {"malloc_trim", "settle"}
    for reset in resets.values():
        assert reset.call is None
        assert reset.skipped is not None
        assert "skipped" in reset.skipped
    log: list[str] = []
    report = (
        Paired(reset=resets["settle"])
        .run(lambda: log.append("ours"), lambda: log.append("peer"), 2)
        .report()
    )
    assert log == ["ours", "peer", "peer", "ours"]
    assert report["reset"]["skipped"] == resets["settle"].skipped


@pytest.mark.skipif(
    not hasattr(os, "confstr") or not os.confstr("CS_GNU_LIBC_VERSION"), reason="needs glibc"
)
def test_glibc_resets_run() -> None:
    resets = allocator_resets()
    for reset in resets.values():
        assert reset.call is not None, reset.skipped
        reset.call()
        reset.call()


def test_a_sample_counts_the_pages_a_call_touches_first() -> None:
    # 8 MiB written through is fresh memory (mmap'd): the kernel faults its pages in, 4 KiB
    # or (transparent huge pages) 2 MiB at a time.
    assert measure(lambda: b"x" * (8 << 20)).faults >= 4
