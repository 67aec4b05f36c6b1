"""Messages nested past any depth a walk could recurse through are replayed verbatim, never
refused: a tool input nested deeper than MAX_INSPECT_DEPTH is not inspected, tool results
inside tool results are walked without recursion, and sizes are measured to the same count."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leanreplay.placeholders import (
    INPUT_MARKER,
    MAX_INSPECT_DEPTH,
    OfflineSummarizer,
    ReplayPolicy,
    check_pairing,
    compact_turn,
    content_chars,
    for_provider,
    repair_pairing,
    replay,
)
from leanreplay.placeholders._shapes import _walked_json_chars, json_chars, json_text, load_input

DEEP = 30_000  # far past the JSON module's limit on every Python (3.11: ~1,000; 3.13: ~10,000)
BIG = "y" * 3_000  # a string field long enough to be elided when inspected


def nest(depth: int, leaf: Any = "leaf") -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_results(depth: int) -> list[Any]:
    value: list[Any] = [{"type": "text", "text": "r" * 3_000}]
    for _ in range(depth):
        value = [{"type": "tool_result", "tool_use_id": "t1", "content": value}]
    return value


def later_exchanges() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(4):
        out += [
            {"role": "user", "content": f"and then {k}", "id": f"u{k}"},
            {"role": "assistant", "content": "done", "id": f"a{k}"},
        ]
    return out


def arguments(depth: int) -> str:
    """2 KB and more of JSON nested ``depth`` deep, with a long string field beside it."""
    return '{"big": "' + BIG + '", "x": ' + "[" * depth + "]" * depth + "}"


def openai(depth: int) -> list[dict[str, Any]]:
    deep = {"name": "f", "arguments": arguments(depth)}
    call = {"id": "t1", "type": "function", "function": deep}
    big = {"name": "g", "arguments": json.dumps({"big": BIG})}
    shallow = {"id": "t2", "type": "function", "function": big}
    return [
        {"role": "user", "content": "go", "id": "m0"},
        {"role": "assistant", "content": None, "tool_calls": [call, shallow], "id": "m1"},
        {"role": "tool", "tool_call_id": "t1", "content": "x" * 3_000, "id": "m2"},
        {"role": "tool", "tool_call_id": "t2", "content": "z" * 3_000, "id": "m3"},
        *later_exchanges(),
    ]


def anthropic(depth: int) -> list[dict[str, Any]]:
    deep_input = {"big": BIG, "deep": nest(depth)}
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "s", "extra": nest(depth)}
    return [
        {"role": "user", "content": "go", "id": "m0"},
        {
            "role": "assistant",
            "content": [
                thinking,
                {"type": "tool_use", "id": "t1", "name": "f", "input": deep_input},
                {"type": "tool_use", "id": "t2", "name": "g", "input": {"big": BIG}},
            ],
            "id": "m1",
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": nested_results(depth)},
                {"type": "tool_result", "tool_use_id": "t2", "content": "z" * 3_000},
            ],
            "id": "m2",
        },
        *later_exchanges(),
    ]


def responses(depth: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "go", "id": "m0"},
        {"type": "function_call", "call_id": "t1", "name": "f", "arguments": arguments(depth)},
        {"type": "function_call_output", "call_id": "t1", "output": "x" * 3_000, "id": "m2"},
        *later_exchanges(),
    ]


def test_the_openai_arguments_of_the_report_are_over_2_kb_and_too_deep_to_parse() -> None:
    text = arguments(1_000)
    assert len(text) > 2_000
    if sys.version_info < (3, 12):  # later versions parse it; the rule below holds on all
        with pytest.raises(RecursionError):
            json.loads(text)
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_INSPECT_DEPTH} levels"):
        load_input(text)


@pytest.mark.parametrize("timing", ["cache_aware", "eager"])
@pytest.mark.parametrize(
    ("shape", "depth"),
    [
        ("openai", 1_000),
        ("openai", MAX_INSPECT_DEPTH + 1),
        ("anthropic", DEEP),
        ("responses", 1_000),
    ],
)
def test_a_too_deep_input_is_replayed_verbatim_and_the_rest_is_still_elided(
    shape: str, depth: int, timing: str
) -> None:
    messages = {"openai": openai, "anthropic": anthropic, "responses": responses}[shape](depth)
    # cache-aware elides at once; earlier thinking kept, so blocks keep their places
    policy = ReplayPolicy(
        timing=timing, pressure_chars=1_000, min_request_chars=0, drop_thinking=False
    )
    result = replay(messages, conversation_id="c", policy=policy)
    out = result.messages
    assert check_pairing(out) == []
    if shape == "openai":
        calls = out[1]["tool_calls"]
        assert calls[0] == messages[1]["tool_calls"][0], "the deep input was rewritten"
        assert INPUT_MARKER in json.loads(calls[1]["function"]["arguments"])["big"]
        assert "elided tool result" in out[2]["content"], "inspection stopped altogether"
    elif shape == "anthropic":
        blocks = out[1]["content"]
        assert blocks[1] is messages[1]["content"][1], "the deep input was rewritten"
        assert INPUT_MARKER in blocks[2]["input"]["big"]
        assert "elided tool result" in json.dumps(out[2]["content"][1])
    else:
        assert out[1] == messages[1]
        assert "elided tool result" in json.dumps(out[2])
    assert result.chars_in == sum(content_chars(m) for m in repair_pairing(messages)[0])


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai-responses"])
def test_every_other_transform_takes_deep_messages(provider: str) -> None:
    shape = {"openai": openai, "anthropic": anthropic, "openai-responses": responses}[provider]
    messages = shape(DEEP if provider == "anthropic" else 1_000)
    lean = replay(messages, conversation_id="c").messages
    payload = for_provider(lean, provider)  # type: ignore[arg-type]
    assert len(payload) == len(lean)
    compacted = compact_turn(messages, context_window=4_000, output_reserve=100)
    assert compacted.messages[0] == messages[0]
    summary = OfflineSummarizer()(None, messages, max_chars=2_000)
    assert "go" in summary


def test_nested_tool_results_are_counted_whole() -> None:
    message = {"role": "user", "content": nested_results(DEEP)}
    assert content_chars(message) == 3_000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_the_walked_size_is_the_encoders_size(value: Any) -> None:
    assert _walked_json_chars(value) == len(json.dumps(value, ensure_ascii=False))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=30,
    )
)
def test_the_measured_size_is_json_dumps_size(value: Any) -> None:
    # NaN and infinities too: a tool input is measured, never refused.
    assert json_chars(value) == len(json.dumps(value, ensure_ascii=False))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=30,
    ),
    st.booleans(),
)
def test_json_text_is_json_dumps(value: Any, allow_nan: bool) -> None:
    # The stored encoding of a message (allow_nan=False) and the measure of a tool input.
    try:
        expected = json.dumps(value, ensure_ascii=False, allow_nan=allow_nan)
    except ValueError as refusal:
        with pytest.raises(ValueError, match=re.escape(str(refusal))):
            json_text(value, allow_nan=allow_nan)
    else:
        assert json_text(value, allow_nan=allow_nan) == expected


def test_a_value_too_deep_for_the_encoder_is_measured_by_the_walk() -> None:
    value = nest(DEEP, "é")
    with pytest.raises(RecursionError):
        json.dumps(value)
    assert json_chars(value) == DEEP * len('{"a": }') + len('"é"')
