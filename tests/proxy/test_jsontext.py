"""JSON text with spans: parsing agrees with json.loads, an unchanged value is its own text,
a changed one keeps every unchanged part's bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leanreplay.index.faces.proxy._jsontext import (
    JsonTextError,
    array_elements,
    dumps,
    parse_object,
    splice,
    without_key,
)

scalars = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
objects = st.dictionaries(st.text(max_size=6), values, max_size=6)
styles = st.sampled_from(
    [
        {"separators": (",", ":")},
        {"indent": 2},
        {"separators": (" , ", " : ")},
        {"ensure_ascii": False},
    ]
)


@given(objects, styles)
def test_parse_object_agrees_with_json_loads(value: dict[str, Any], style: dict[str, Any]) -> None:
    text = json.dumps(value, **style)
    parsed = parse_object(text)
    assert parsed.value == json.loads(text)
    for key, member in parsed.members.items():
        assert json.loads(text[member.start : member.end]) == parsed.value[key]


@given(objects, styles)
def test_an_unchanged_value_is_its_own_text(value: dict[str, Any], style: dict[str, Any]) -> None:
    text = json.dumps(value, **style)
    assert splice(text, 0, len(text), json.loads(text), json.loads(text)) == text


@given(objects, styles, st.text(max_size=6), values)
def test_a_changed_member_keeps_the_others_bytes(
    value: dict[str, Any], style: dict[str, Any], key: str, new_value: Any
) -> None:
    text = json.dumps(value, **style)
    old = json.loads(text)
    new = {**old, key: new_value}
    out = splice(text, 0, len(text), old, new)
    assert json.loads(out) == new
    members = parse_object(text).members
    for name, member in members.items():
        if name != key:
            assert text[member.key_start : member.end] in out


def test_arrays_of_another_length_reuse_the_text_of_equal_elements() -> None:
    text = '[ {"a" : 1} , "x",  [2, 3] ]'
    old = json.loads(text)
    out = splice(text, 0, len(text), old, [{"a": 1}, {"new": True}, "x", [2, 3]])
    assert out == '[{"a" : 1},{"new":true},"x",[2, 3]]'


def test_booleans_are_not_numbers() -> None:
    text = '{"a": 1}'
    assert splice(text, 0, len(text), {"a": 1}, {"a": True}) == '{"a": true}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"t":"x","cache_control":{"type":"ephemeral"}}', '{"t":"x"}'),
        ('{"cache_control":{"type":"ephemeral"}, "t":"x"}', '{"t":"x"}'),
        ('{"cache_control":{}}', "{}"),
        ('[{"a":[{"b":1,"cache_control":{}}]}, 2]', '[{"a":[{"b":1}]}, 2]'),
        (
            '{"text":"\\"cache_control\\" in a string"}',
            '{"text":"\\"cache_control\\" in a string"}',
        ),
    ],
)
def test_without_key_cuts_only_that_member(text: str, expected: str) -> None:
    assert without_key(text, 0, len(text), json.loads(text), "cache_control") == expected


@pytest.mark.parametrize(
    "text",
    ['{"a":1', '{"a":1}}', "[1]", '{"a":NaN}', '{"a":Infinity}', "{a:1}", '{"a" 1}', ""],
)
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(JsonTextError):
        parse_object(text)


def test_element_spans() -> None:
    text = '{"m": [ {"x":1},\n "y" ]}'
    doc = parse_object(text, arrays=("m",))
    assert [text[s:e] for s, e in doc.elements["m"]] == ['{"x":1}', '"y"']
    elements, end = array_elements(text, text.index("["))
    assert [v for v, _, _ in elements] == [{"x": 1}, "y"]
    assert text[end - 1] == "]"


def test_dumps_keeps_a_lone_surrogate_escaped() -> None:
    assert dumps({"s": "\ud800x"}) == '{"s":"\\ud800x"}'
    assert dumps({"s": "é"}) == '{"s":"é"}'


histories = st.lists(values, max_size=6)


@given(histories, histories, st.integers(0, 6), objects, styles)
def test_a_parse_that_takes_an_earlier_ones_values_is_the_same_parse(
    earlier: list[Any], more: list[Any], changed: int, rest: dict[str, Any], style: dict[str, Any]
) -> None:
    # A client's next request: its history so far (one element perhaps changed), then more.
    before = json.dumps({**rest, "messages": earlier}, **style)
    history = [*earlier, *more]
    if changed < len(history):
        history[changed] = {"changed": history[changed]}
    after = json.dumps({**rest, "messages": history}, **style)
    first = parse_object(before, arrays=("messages",))
    cold = parse_object(after, arrays=("messages",))
    warm = parse_object(after, arrays=("messages",), like=[first])
    assert warm.value == cold.value == json.loads(after)
    assert warm.members == cold.members
    assert warm.elements == cold.elements
    taken = warm.reused.get("messages", (None, 0))[1]
    assert taken <= min(changed, len(earlier))
    for n in range(taken):  # taken: the earlier parse's own objects
        assert warm.value["messages"][n] is first.value["messages"][n]


def test_a_number_is_not_taken_for_a_longer_one() -> None:
    first = parse_object('{"m": [{"a": 1}, 1]}', arrays=("m",))
    later = parse_object('{"m": [{"a": 1}, 12]}', arrays=("m",), like=[first])
    assert later.value == {"m": [{"a": 1}, 12]}
    assert later.reused["m"][1] == 1
