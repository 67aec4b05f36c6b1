"""The gateway's JSON lines (`_wire.loads`, `_wire.dumps`) read and write what the json module
does: msgspec does the work, and whatever it refuses the json module decides. The oracle here
is the json module itself, on generated values and on generated text that is mostly not JSON.
A forwarded result the gateway passes as plain without its pydantic model is one the model of
the connection's version takes (the oracle: the model)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from mcp_types.methods import SERVER_RESULTS

from leanreplay.index.faces._wire import dumps, loads, no_constants
from leanreplay.index.faces.gateway import _plain_result, _result_shape

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # past 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),  # lone surrogates included
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
# Text over JSON's own alphabet and a few strangers: mostly not JSON, sometimes nearly.
json_ish = st.text(alphabet='{}[]:,"\\ \t\n0123456789-+.eEtruefalsnNIinfyu\ud800\x01é', max_size=40)


def reference(text: str | bytes) -> tuple[str, Any]:
    """What the json module says: ("ok", value) or ("error", the exception's kind)."""
    try:
        raw = text.decode() if isinstance(text, bytes) else text
        return "ok", json.loads(raw, parse_constant=no_constants)
    except RecursionError:
        return "error", RecursionError
    except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return "error", ValueError


def ours(text: str | bytes) -> tuple[str, Any]:
    try:
        return "ok", loads(text)
    except RecursionError:
        return "error", RecursionError
    except ValueError:
        return "error", ValueError


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types (1 and 1.0 and True differ; -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (a != a and b != b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def agree(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    return a[0] == b[0] and (same(a[1], b[1]) if a[0] == "ok" else a[1] is b[1])


@given(json_ish)
@example('"\\ud800"')  # a lone surrogate escape: msgspec refuses it, json reads it
@example("[1e400]")  # past a float's range: json reads inf
@example('{"a":1,"a":2}')  # the last of two equal keys wins
@example("NaN")
@example("-0")
@example("\ufeff{}")
def test_loads_reads_any_text_as_the_json_module_does(text: str) -> None:
    assert agree(ours(text), reference(text))
    assert agree(
        ours(text.encode("utf-8", "surrogatepass")),
        reference(text.encode("utf-8", "surrogatepass")),
    )


@given(json_values)
def test_loads_reads_the_json_module_s_writing_back_to_the_same_value(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert agree(ours(text), reference(text))
    assert agree(ours(json.dumps(value)), ("ok", json.loads(json.dumps(value))))


def has_float(value: Any) -> bool:
    if isinstance(value, list):
        return any(has_float(v) for v in value)
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    return isinstance(value, float)


@given(json_values)
def test_dumps_writes_the_json_module_s_compact_line(value: Any) -> None:
    line = dumps(value)
    assert line.endswith(b"\n")
    assert same(json.loads(line), json.loads(json.dumps(value)))
    try:
        compact = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate: written escaped
        compact = json.dumps(value, separators=(",", ":")).encode()
    if not has_float(value):  # a float may be spelled differently (1e22 for 1e+22)
        assert line == compact + b"\n"


def test_a_lone_surrogate_is_written_escaped() -> None:
    assert dumps({"text": "a\ud800b"}) == b'{"text":"a\\ud800b"}\n'


@pytest.mark.parametrize("depth", [10, 100_000], ids=["shallow", "past-the-stack"])
def test_deep_nesting_is_read_or_refused_as_the_json_module_does(depth: int) -> None:
    text = "[" * depth + "]" * depth
    assert agree(ours(text), reference(text))


# A tool result as an upstream may write it: mostly the plain text shape, sometimes not.
_texts = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image"]), "text": st.text() | json_values}
)
_items = _texts | st.dictionaries(st.sampled_from(["type", "text", "data", "x"]), json_values)
results = st.fixed_dictionaries(
    {"content": st.lists(_items, max_size=3) | json_values},
    optional={
        "isError": st.booleans() | json_values,
        "structuredContent": st.dictionaries(st.text(), json_values) | json_values,
        "resultType": st.just("complete"),
        "_meta": st.dictionaries(st.text(), json_values),
        "extra": json_values,
    },
)


@pytest.mark.parametrize("version", sorted(v for m, v in SERVER_RESULTS if m == "tools/call"))
@given(result=results)
def test_a_result_passed_as_plain_is_one_the_version_s_model_takes(
    version: str, result: dict[str, Any]
) -> None:
    if _plain_result(result, version):
        _result_shape(version).validate_python(result, by_name=False)


@pytest.mark.parametrize("version", sorted(v for m, v in SERVER_RESULTS if m == "tools/call"))
def test_the_plain_text_result_is_passed_without_the_model_where_the_model_takes_it(
    version: str,
) -> None:
    plain = {"content": [{"type": "text", "text": "pong"}], "isError": False}
    complete = {**plain, "resultType": "complete"}
    taken = [_plain_result(r, version) for r in (plain, complete)]
    assert taken == ([False, True] if version >= "2026-07-28" else [True, True])
