"""Expiry-aware timing: a request after the provider's cache expired applies its pending batch.

The oracle: when every request comes after a gap longer than ``cache_ttl_s``, each pending
batch is applied at the first request where it is stale, so the replay is exactly the eager
replay of the same policy (every stale elision, at once). With no gap, the times change
nothing. In between, the rule is followed request by request.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.placeholders import (
    InvalidMessagesError,
    InvalidPolicyError,
    ReplayPolicy,
    cache_expired,
    check_pairing,
    replay,
)
from tests.builders import assistant, conversations, dumps, oa_call, oa_result, user, with_ids

ANY = ReplayPolicy(min_request_chars=0)  # the default, at any request size: these are small

POLICIES = [
    ReplayPolicy(min_request_chars=0),
    ReplayPolicy(min_request_chars=0, keep_assistant_turns=1),
    ReplayPolicy(min_request_chars=0, age_unit="user_exchange", keep_user_exchanges=1),
    ReplayPolicy(
        min_request_chars=0, min_savings=5000, preview_shape=("head", "tail", "errors", "paths")
    ),
]


def times_of(messages: list[dict[str, Any]], gaps: list[float]) -> dict[str, float]:
    """Append times: message i comes ``gaps[i % len(gaps)]`` seconds after message i - 1."""
    out, at = {}, 1_000_000.0
    for i, message in enumerate(messages):
        at += gaps[i % len(gaps)]
        out[message["id"]] = at
    return out


def one_big_stale_result() -> list[dict[str, Any]]:
    """A 6,000-char result that goes stale behind a much larger recent part: the batch
    never pays for its rewrite on a warm cache."""
    return with_ids(
        [
            user("first question"),
            oa_call(("c1", "bash")),
            oa_result("c1", "old " * 1500),
            assistant("done"),
            user("second question"),
            oa_call(("c2", "bash")),
            oa_result("c2", "r" * 1900),
            assistant("done"),
            user("third question"),
            oa_call(("c3", "bash")),
            oa_result("c3", "n" * 1900),
            assistant("done"),
            user("fourth, after a coffee break"),
        ]
    )


def test_a_request_after_expiry_applies_the_batch_a_warm_one_keeps_waiting() -> None:
    messages = one_big_stale_result()
    warm = replay(messages, conversation_id="c", policy=ANY, times=times_of(messages, [10.0]))
    assert warm.placeholders == 0, "the warm cache makes the batch wait"
    times = times_of(messages, [10.0])
    cold = replay(
        messages, conversation_id="c", policy=ANY, times=times, now=times[messages[-1]["id"]] + 301
    )
    assert cold.placeholders == 1
    assert cold.messages[2]["content"].startswith("[elided tool result]")
    assert cold.messages[3:] == messages[3:]
    # The same request known only by the previous request's time.
    last = replay(messages, conversation_id="c", policy=ANY, now=5000.0, last_request_at=4000.0)
    assert dumps(last.messages) == dumps(cold.messages)
    within = replay(messages, conversation_id="c", policy=ANY, now=5000.0, last_request_at=4800.0)
    assert within.placeholders == 0


def test_the_gap_is_measured_against_cache_ttl_s() -> None:
    messages = one_big_stale_result()
    times = times_of(messages, [10.0])
    end = times[messages[-1]["id"]]
    long_cache = ReplayPolicy(min_request_chars=0, cache_ttl_s=3600)

    def placeholders(policy: ReplayPolicy, now: float) -> int:
        return replay(
            messages, conversation_id="c", policy=policy, times=times, now=now
        ).placeholders

    assert placeholders(long_cache, end + 600) == 0
    assert placeholders(long_cache, end + 3700) == 1
    assert placeholders(ReplayPolicy(min_request_chars=0), end + 600) == 1
    # The previous request went out after message 11, 20 s before the newest message.
    assert cache_expired(messages, times=times, now=end + 281)
    assert not cache_expired(messages, times=times, now=end + 279)
    assert not cache_expired(messages[:-1], times=times, now=end + 301), "no request pending"
    assert not cache_expired(messages), "no times: unknown, so not expired"


def test_a_past_expired_request_keeps_its_elisions_in_every_later_replay() -> None:
    messages = one_big_stale_result()
    # The gap is before the fourth question; after it the session goes on warm.
    gaps = {m["id"]: 10.0 for m in messages}
    gaps[messages[-1]["id"]] = 900.0
    later = [*messages, oa_call(("c4", "bash")), oa_result("c4", "ok"), assistant("fine")]
    later = with_ids(later)
    times, at = {}, 0.0
    for m in later:
        at += gaps.get(m["id"], 10.0)
        times[m["id"]] = at
    previous = None
    for end in range(len(messages), len(later) + 1):
        if later[end - 1]["role"] == "assistant":
            continue
        result = replay(later[:end], conversation_id="c", policy=ANY, times=times)
        assert result.placeholders >= 1
        if previous is not None:  # each request extends the one before, byte for byte
            assert dumps(result.messages[: len(previous)]) == dumps(previous)
        previous = result.messages


@settings(max_examples=60, deadline=None)
@given(
    messages=conversations("openai"),
    policy=st.sampled_from(POLICIES),
    gaps=st.lists(st.sampled_from([0.5, 30.0, 299.0, 301.0, 4000.0]), min_size=1, max_size=6),
)
def test_timed_replays_are_deterministic_idempotent_and_keep_pairing(
    messages: list[dict[str, Any]], policy: ReplayPolicy, gaps: list[float]
) -> None:
    times = times_of(messages, gaps)
    before = copy.deepcopy(messages)
    first = replay(messages, conversation_id="c", policy=policy, times=times)
    assert messages == before, "input mutated"
    second = replay(copy.deepcopy(messages), conversation_id="c", policy=policy, times=times)
    assert dumps(first.messages) == dumps(second.messages)
    again = replay(first.messages, conversation_id="c", policy=policy, times=times)
    assert dumps(again.messages) == dumps(first.messages)
    assert check_pairing(first.messages) == []
    # Expiry only ever applies more: what a warm replay elides, a timed one elides too.
    warm = replay(messages, conversation_id="c", policy=policy)
    assert first.chars_out <= warm.chars_out


@settings(max_examples=60, deadline=None)
@given(messages=conversations(), policy=st.sampled_from(POLICIES))
def test_when_every_request_comes_after_expiry_the_replay_is_the_eager_one(
    messages: list[dict[str, Any]], policy: ReplayPolicy
) -> None:
    # A request is pending (the list ends with the user's next message), so both rules look
    # at the same requests.
    messages = [*messages, {**user("and now?"), "id": "next"}]
    cold = replay(messages, conversation_id="c", policy=policy, times=times_of(messages, [400]))
    eager = replace(policy, timing="eager", min_savings=0)
    assert dumps(cold.messages) == dumps(
        replay(messages, conversation_id="c", policy=eager).messages
    )
    hot = replay(messages, conversation_id="c", policy=policy, times=times_of(messages, [1.0]))
    assert dumps(hot.messages) == dumps(
        replay(messages, conversation_id="c", policy=policy).messages
    )


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), float("inf"), "300", True], ids=repr)
def test_a_bad_cache_ttl_is_refused(ttl: Any) -> None:
    with pytest.raises(InvalidPolicyError, match="cache_ttl_s must be a number of seconds > 0"):
        ReplayPolicy(min_request_chars=0, cache_ttl_s=ttl)


def test_a_bad_request_time_is_refused() -> None:
    with pytest.raises(InvalidMessagesError, match="now must be unix seconds"):
        replay([user("hi")], conversation_id="c", now="soon")  # type: ignore[arg-type]
