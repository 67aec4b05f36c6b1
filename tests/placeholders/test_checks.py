"""The one bool-rejecting int check that `placeholders` and `index` share."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leanreplay.index import InvalidArgumentError
from leanreplay.placeholders import PlaceholderError
from leanreplay.placeholders._checks import check_int
from tests.conftest import REPO


@given(st.integers(), st.integers(min_value=-5, max_value=5), st.integers(0, 10))
def test_an_int_in_range_is_returned_and_any_other_refused(value: int, low: int, span: int) -> None:
    high = low + span
    if low <= value <= high:
        assert check_int("x", value, minimum=low, maximum=high) == value
    else:
        with pytest.raises(PlaceholderError, match=f"x must be from {low} to {high}, got {value}"):
            check_int("x", value, minimum=low, maximum=high)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "n must be an int, got bool"),
        (False, "n must be an int, got bool"),
        (1.0, "n must be an int, got float"),
        ("1", "n must be an int, got str"),
        (None, "n must be an int, got NoneType"),
        (0, "n must be >= 1, got 0"),
    ],
    ids=repr,
)
def test_bools_and_non_ints_are_refused_with_the_error_asked_for(value: Any, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        check_int("n", value, minimum=1, error=InvalidArgumentError)


def test_the_rule_is_written_once() -> None:
    # The bool-rejecting int check was written five times and drifted in its messages.
    rule = re.compile(r"isinstance\((\w+), bool\) or not isinstance\(\1, int\)")
    found = [
        str(path.relative_to(REPO))
        for package in ("placeholders", "index")
        for path in (REPO / package).rglob("*.py")
        if rule.search(path.read_text())
    ]
    assert found == ["placeholders/_checks.py"]
