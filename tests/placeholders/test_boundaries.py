"""Both sides of every threshold the rules name: exactly at it, one below, one above.

- the fold: "when the unsummarized region exceeds fold_threshold_chars" (exceeds: equal
  does not fold);
- the in-turn compactor: "above 75% of the input budget" (equal does not compact), with
  tokens estimated as chars / 1.5;
- `min_savings`: "elide only when a batch saves at least that much" (equal elides);
- the 2,000-char size of a result or a tool input: "at least 2,000" (equal is elided).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from leanreplay.placeholders import (
    INPUT_MARKER,
    PLACEHOLDER_MARKER,
    FoldPolicy,
    ReplayPolicy,
    compact_turn,
    content_chars,
    fold_boundary,
    replay,
)
from tests.builders import an_call, an_results, assistant, oa_call, oa_result, user, with_ids

SEED = ReplayPolicy.seed()
PRESSED = ReplayPolicy(pressure_chars=1, min_request_chars=0)  # every stale batch due at once


# --- the fold threshold --------------------------------------------------------------------


def folding_conversation() -> list[dict[str, Any]]:
    return with_ids(
        [
            user("u0 " + "a" * 500),
            assistant("b" * 700),
            user("u1"),
            assistant("c" * 300),
            user("u2"),
            assistant("done"),
        ]
    )


@pytest.mark.parametrize(("over", "folds"), [(-1, True), (0, False), (1, False)], ids=str)
def test_the_fold_starts_only_above_its_threshold(over: int, folds: bool) -> None:
    messages = folding_conversation()
    region = sum(content_chars(m) for m in messages)
    policy = FoldPolicy(threshold_chars=region + over, keep_last=2, max_summary_chars=500)
    boundary, why = fold_boundary(messages, 0, policy)
    assert (boundary is not None) is folds, why
    if folds:
        assert boundary == 4  # the last user turn before the kept tail
        assert why == f"folding 4 messages ({region:,} chars unsummarized)"
    else:
        assert why == (
            f"unsummarized messages carry {region:,} chars, not over the threshold of "
            f"{region + over:,}"
        )


def test_the_fold_threshold_counts_only_the_unsummarized_region() -> None:
    messages = folding_conversation()
    after_first = sum(content_chars(m) for m in messages[2:])
    policy = FoldPolicy(threshold_chars=after_first, keep_last=1, max_summary_chars=500)
    assert fold_boundary(messages, 2, policy)[0] is None
    policy = FoldPolicy(threshold_chars=after_first - 1, keep_last=1, max_summary_chars=500)
    assert fold_boundary(messages, 2, policy)[0] == 4


# --- the compactor trigger -----------------------------------------------------------------

WINDOW, RESERVE = 10_000, 2_000  # budget 8,000 tokens: the trigger is above 6,000


@pytest.mark.parametrize(
    ("reported", "triggered"), [(5_999, False), (6_000, False), (6_001, True)], ids=str
)
def test_reported_tokens_trigger_only_above_75_percent(reported: int, triggered: bool) -> None:
    messages = with_ids([user("hi"), assistant("hello")])
    result = compact_turn(
        messages, context_window=WINDOW, output_reserve=RESERVE, reported_input_tokens=reported
    )
    assert result.triggered is triggered
    assert result.tokens_before == reported
    assert result.budget_tokens == 8_000
    if not triggered:
        assert result.messages == messages
        assert result.reason == f"{reported:,} tokens is under 75% of the 8,000-token input budget"


@pytest.mark.parametrize(
    ("chars", "tokens", "triggered"),
    [(8_999, 5_999, False), (9_000, 6_000, False), (9_001, 6_001, True)],
    ids=str,
)
def test_estimated_tokens_trigger_only_above_75_percent(
    chars: int, tokens: int, triggered: bool
) -> None:
    # 1.5 chars a token, rounded to the nearest: 9,000 chars are 6,000 tokens, the trigger.
    messages = with_ids([user("u" * (chars - 1_000)), assistant("a" * 1_000)])
    result = compact_turn(messages, context_window=WINDOW, output_reserve=RESERVE)
    assert result.tokens_before == tokens
    assert result.triggered is triggered


@pytest.mark.parametrize(("reported", "reached"), [(4_000, True), (4_001, False)], ids=str)
def test_the_target_is_half_the_budget_inclusive(reported: int, reached: bool) -> None:
    result = compact_turn(
        with_ids([user("hi")]),
        context_window=WINDOW,
        output_reserve=RESERVE,
        reported_input_tokens=reported,
    )
    assert result.target_tokens == 4_000
    assert result.target_reached is reached


# --- min_savings ---------------------------------------------------------------------------


def one_stale_result(size: int = 5_000) -> list[dict[str, Any]]:
    return with_ids(
        [
            user("u1"),
            oa_call(("c1", "bash")),
            oa_result("c1", "x" * size),
            assistant("a1"),
            user("u2"),
            assistant("a2"),
            user("u3"),
        ]
    )


def saving(messages: list[dict[str, Any]], policy: ReplayPolicy) -> int:
    """What eliding the one stale result saves, measured on the output."""
    out = replay(messages, conversation_id="c", policy=replace(policy, min_savings=0))
    assert out.placeholders == 1
    return out.chars_in - out.chars_out


@pytest.mark.parametrize("policy", [SEED, PRESSED], ids=["eager", "cache-aware"])
@pytest.mark.parametrize(("extra", "elided"), [(-1, 1), (0, 1), (1, 0)], ids=str)
def test_min_savings_elides_a_batch_that_saves_exactly_that_much(
    policy: ReplayPolicy, extra: int, elided: int
) -> None:
    messages = one_stale_result()
    saved = saving(messages, policy)
    out = replay(messages, conversation_id="c", policy=replace(policy, min_savings=saved + extra))
    assert out.placeholders == elided
    assert out.chars_in - out.chars_out == (saved if elided else 0)


@pytest.mark.parametrize(("extra", "elided"), [(-1, 2), (0, 2), (1, 0)], ids=str)
def test_min_savings_counts_the_whole_batch(extra: int, elided: int) -> None:
    # Two stale results in one batch: each alone saves too little, together exactly enough.
    messages = with_ids(
        [
            user("u1"),
            an_call(("a", "bash"), ("b", "read")),
            an_results(("a", "x" * 3_000, False), ("b", "y" * 4_000, False)),
            assistant("a1"),
            user("u2"),
            user("u3"),
        ]
    )
    free = replay(messages, conversation_id="c", policy=SEED)
    saved = free.chars_in - free.chars_out
    out = replay(messages, conversation_id="c", policy=replace(SEED, min_savings=saved + extra))
    assert out.placeholders == elided


# --- the 2,000-char size -------------------------------------------------------------------


@pytest.mark.parametrize("policy", [SEED, PRESSED], ids=["eager", "cache-aware"])
@pytest.mark.parametrize(("size", "elided"), [(1_999, 0), (2_000, 1), (2_001, 1)], ids=str)
def test_a_stale_result_is_elided_from_2000_chars(
    policy: ReplayPolicy, size: int, elided: int
) -> None:
    out = replay(one_stale_result(size), conversation_id="c", policy=policy)
    assert out.placeholders == elided
    assert out.messages[2]["content"].startswith(PLACEHOLDER_MARKER) is bool(elided)


def input_of(size: int, shape: str) -> list[dict[str, Any]]:
    """A stale call whose input, measured as the rule measures it, is ``size`` chars."""
    if shape == "openai":
        call = oa_call(("c1", "write"))
        pad = size - len(json.dumps({"text": ""}))
        call["tool_calls"][0]["function"]["arguments"] = json.dumps({"text": "w" * pad})
        result = oa_result("c1", "ok")
    else:
        call = an_call(("c1", "write"))
        pad = size - len(json.dumps({"text": ""}, sort_keys=True))
        call["content"][0]["input"] = {"text": "w" * pad}
        result = an_results(("c1", "ok", False))
    return with_ids([user("u1"), call, result, assistant("a1"), user("u2"), user("u3")])


@pytest.mark.parametrize("shape", ["openai", "anthropic"], ids=str)
@pytest.mark.parametrize(("size", "elided"), [(1_999, 0), (2_000, 1), (2_001, 1)], ids=str)
def test_a_stale_tool_input_is_elided_from_2000_chars(shape: str, size: int, elided: int) -> None:
    messages = input_of(size, shape)
    assert content_chars(messages[1]) == size
    out = replay(messages, conversation_id="c", policy=ReplayPolicy(timing="eager"))
    assert out.placeholders == elided
    call = out.messages[1]
    if shape == "openai":
        field = json.loads(call["tool_calls"][0]["function"]["arguments"])["text"]
    else:
        field = call["content"][0]["input"]["text"]
    assert field.startswith(INPUT_MARKER) is bool(elided)


def test_eager_elisions_stay_when_a_new_exchange_begins() -> None:
    # A long single-task exchange ages its results by turns; a new genuine user message then
    # makes that exchange one of the last two, whose results are not stale by exchanges.
    # What a request elided must stay elided: bringing originals back rewrites the cache.
    from leanreplay.placeholders import ReplayPolicy, replay
    from tests.builders import an_call, an_results, assistant, user, with_ids

    messages = [user("fix the bug")]
    for i in range(6):
        messages += [an_call((f"t{i}", "bash")), an_results((f"t{i}", f"{i}" * 3000, False))]
    policy = ReplayPolicy(timing="eager")
    before = replay(with_ids(messages), conversation_id="c", policy=policy)
    assert before.placeholders == 4  # the results older than the last 2 assistant turns
    later = with_ids([*messages, assistant("done"), user("thanks, one more thing")])
    after = replay(later, conversation_id="c", policy=policy)
    assert after.placeholders == before.placeholders
    assert after.messages[: len(messages)] == before.messages
