"""The stored text of a message is what ``json.dumps(message, ensure_ascii=False,
allow_nan=False)`` writes, byte for byte, however the store calls the encoder: a stored body
is compared with a re-encoded log when it is ingested again."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leanreplay.index import InvalidArgumentError
from leanreplay.index.store._store import encode_message

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)
messages = st.dictionaries(st.text(), values, max_size=5)


def _dumps(message: dict[str, Any]) -> str:
    body = json.dumps(message, ensure_ascii=False, allow_nan=False)
    if any("\ud800" <= c <= "\udfff" for c in body):
        body = json.dumps(message, allow_nan=False)  # the store's rule for lone surrogates
    return body


@given(messages)
def test_the_stored_text_is_json_dumps(message: dict[str, Any]) -> None:
    assert encode_message(message) == _dumps(message)


@pytest.mark.parametrize(
    ("message", "match"),
    [
        ({"role": "user", "content": math.nan}, "not JSON data"),
        ({"role": "user", "content": {1, 2}}, "not JSON data"),
        ({"role": "user", "content": b"bytes"}, "not JSON data"),
    ],
    ids=["nan", "set", "bytes"],
)
def test_what_json_cannot_carry_is_refused(message: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        encode_message(message)


def test_a_circular_message_is_refused_and_the_next_one_encodes() -> None:
    looped: dict[str, Any] = {"role": "user"}
    looped["content"] = [looped]
    with pytest.raises(InvalidArgumentError, match="too deeply"):  # it nests without end
        encode_message(looped)
    # The circular-reference table is not shared between calls: the same containers encode.
    plain = {"role": "user", "content": [{"type": "text", "text": "x"}]}
    assert encode_message(plain) == _dumps(plain)
    assert encode_message(plain) == _dumps(plain)
