"""bench/bench_cost.py's sweep points: the fresh cap's values around the default, and
``--points`` choosing a few of them by label (written with or without digit separators)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.bench_cost import _new_knobs, _point, sweep
from leanreplay.placeholders import ReplayPolicy


@pytest.mark.parametrize(
    ("label", "point"),
    [
        ("fresh_cap_chars=20_000", "fresh_cap_chars=20000"),
        ("fresh_cap_chars=20,000", "fresh_cap_chars=20000"),
        (" min_request_chars=0 ", "min_request_chars=0"),
        ("fresh_cap_chars=None", "fresh_cap_chars=None"),
        ("default", "default"),
    ],
    ids=str,
)
def test_a_point_is_its_label_without_separators(label: str, point: str) -> None:
    assert _point(label) == point


def test_the_fresh_cap_is_swept_around_the_default_and_keeps_under_it() -> None:
    base = ReplayPolicy()
    labels = dict(_new_knobs(base))
    caps = [label for label in labels if label.startswith("fresh_cap_chars=")]
    assert caps == [
        f"fresh_cap_chars={cap}"
        for cap in (10_000, 12_500, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000, 100_000, None)
        if cap != base.fresh_cap_chars
    ]
    assert labels["fresh_cap_chars=None"].fresh_cap_chars is None
    keeps = {label: p for label, p in labels.items() if label.startswith("fresh_keep_chars=")}
    assert f"fresh_keep_chars={base.fresh_keep_chars}" not in keeps
    assert sorted(keeps) == [
        "fresh_keep_chars=1000",
        "fresh_keep_chars=2000",
        "fresh_keep_chars=8000",
    ]
    assert all(p.fresh_keep_chars < (p.fresh_cap_chars or 0) for p in keeps.values())
    # Under a small cap, no variant keeps more than the cap (the policy would refuse it).
    small = dict(_new_knobs(replace(base, fresh_cap_chars=3_000, fresh_keep_chars=500)))
    assert sorted(k for k in small if k.startswith("fresh_keep_chars=")) == [
        "fresh_keep_chars=1000",
        "fresh_keep_chars=2000",
    ]


def test_points_choose_variants_and_an_unknown_one_is_named() -> None:
    assert sweep({}, 300.0, ReplayPolicy(), {}, points=[]) == {}
    with pytest.raises(SystemExit, match=r"no sweep point fresh_cap_chars=7; known: default, "):
        sweep({}, 300.0, ReplayPolicy(), {}, points=["default", "fresh_cap_chars=7"])
