"""The billing of bench/bench_cost.py (bench/_billing.py): the prompt cache with its TTL, the
1-hour cache at 2x, prefix reads, and the re-read detector, on small hand-built
conversations whose answers are worked out here independently (whole bodies compared
character by character, prices multiplied out by hand)."""

from __future__ import annotations

import json

import pytest

from bench._billing import (
    READ,
    WRITE_1H,
    WRITE_5M,
    PromptCache,
    RereadDetector,
    ThinkingAsBilled,
    prefix_bill,
    reread_round_trip,
    write_price,
)


def body(parts: list[str]) -> str:
    return '{"messages":[' + ",".join(parts) + "]}"


def prefix(a: list[str], b: list[str]) -> int:
    """Characters the two whole bodies share from the start, compared one by one."""
    x, y = body(a), body(b)
    return next(
        (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y))
    )


A = ['{"role":"user","content":"aaaa"}', '{"role":"assistant","content":"bbbb"}']
B = [*A, '{"role":"user","content":"cccc"}']


def test_a_warm_cache_reads_the_shared_prefix_and_writes_the_rest() -> None:
    cache = PromptCache(ttl_s=None)
    first = cache.request(A, None)
    assert (first.read, first.write) == (0, len(body(A)))
    second = cache.request(B, None)
    assert second.read == prefix(A, B) == len(body(A)) - 2  # all of A but its closing "]}"
    assert second.write == len(body(B)) - second.read
    same = cache.request(B, None)
    assert (same.read, same.write) == (len(body(B)), 0)


def test_a_prefix_read_stops_inside_the_first_changed_message() -> None:
    cache = PromptCache(ttl_s=None)
    cache.request(B, None)
    edited = [A[0], '{"role":"assistant","content":"bbXX"}', B[2]]
    bill = cache.request(edited, None)
    assert bill.read == prefix(B, edited)
    assert body(edited)[: bill.read].endswith('"content":"bb')


def test_a_prefix_bill_reads_what_the_previous_body_shares_and_writes_the_rest() -> None:
    previous, now = body(A), body(B)
    bill = prefix_bill(previous, now)
    assert (bill.read, bill.write, bill.uncached) == (prefix(A, B), len(now) - prefix(A, B), 0)
    assert bill.billed(WRITE_5M) == (0.1 * bill.read + 1.25 * bill.write) / 4
    first = prefix_bill("", now)  # nothing cached yet: all written
    assert (first.read, first.write) == (0, len(now))
    again = prefix_bill(now, now)  # the same body: all read
    assert (again.read, again.write) == (len(now), 0)
    edited = now.replace("bbbb", "bbXb")
    assert prefix_bill(now, edited).read == now.index("bbbb") + 2


def test_the_cache_expires_after_its_ttl_and_a_read_refreshes_it() -> None:
    cache = PromptCache(ttl_s=300)
    cache.request(A, 0.0)
    late = cache.request(B, 301.0)  # 301 s after the last use: expired, all written again
    assert (late.read, late.write, late.expired) == (0, len(body(B)), True)

    cache = PromptCache(ttl_s=300)
    cache.request(A, 0.0)
    assert cache.request(B, 299.0).read == prefix(A, B)  # within 5 minutes
    # The read at 299 s refreshed it: at 560 s (261 s later) it is still there.
    again = cache.request(B, 560.0)
    assert (again.read, again.expired) == (len(body(B)), False)
    # 301 s after that last use, nothing is left.
    assert cache.request(B, 861.0).read == 0


def test_the_one_hour_cache_writes_at_twice_the_price() -> None:
    assert write_price(3600) == WRITE_1H == 2.0
    assert write_price(300) == WRITE_5M == 1.25
    hour = PromptCache(ttl_s=3600)
    hour.request(A, 0.0)
    bill = hour.request(B, 3000.0)  # 50 minutes later: still cached
    read, write = prefix(A, B), len(body(B)) - prefix(A, B)
    assert (bill.read, bill.write) == (read, write)
    assert bill.billed(write_price(3600)) == pytest.approx((0.1 * read + 2.0 * write) / 4)
    five = PromptCache(ttl_s=300)
    five.request(A, 0.0)
    assert five.request(B, 3000.0).billed(write_price(300)) == pytest.approx(
        1.25 * len(body(B)) / 4
    )
    assert READ == 0.1


def test_a_request_under_the_minimum_is_billed_uncached_and_caches_nothing() -> None:
    cache = PromptCache(ttl_s=300, min_tokens=1024)
    small = cache.request(A, 0.0)
    assert (small.read, small.write, small.uncached) == (0, 0, len(body(A)))
    assert small.billed(1.25) == pytest.approx(len(body(A)) / 4)
    big = [*A, json.dumps({"role": "user", "content": "x" * 5000})]
    assert cache.request(big, 1.0).read == 0  # nothing was cached by the small one
    assert cache.request(big, 2.0).read == len(body(big))


def test_an_older_body_is_still_read_after_a_detour() -> None:
    """Two cached bodies: a request that returns to the first reads it whole."""
    cache = PromptCache(ttl_s=None)
    cache.request(B, None)
    detour = [A[0], '{"role":"assistant","content":"other"}']
    cache.request(detour, None)
    assert cache.request(B, None).read == len(body(B))


# --- re-reads -------------------------------------------------------------------------------

LOG = (
    "Traceback (most recent call last):\n  File 'src/app.py', line 12\n"
    "KeyError: parse_config_v2 could not find retry_budget\n" + "log line\n" * 300
)


def conversation() -> list[dict[str, object]]:
    return [
        {"role": "user", "id": "u1", "content": "Please fix the failing start-up."},
        {
            "role": "assistant",
            "id": "a1",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "python -m app"}'},
                }
            ],
        },
        {"role": "tool", "id": "t1", "tool_call_id": "c1", "content": LOG},
        {"role": "assistant", "id": "a2", "content": "It failed at start-up."},
        {"role": "user", "id": "u2", "content": "Go on."},
    ]


def elided(history: list[dict[str, object]]) -> list[dict[str, object]]:
    """What a trimming strategy sends: the tool result replaced (a new message object)."""
    sent = list(history)
    sent[2] = {**history[2], "content": "[elided tool result] 2,700 chars"}
    return sent


def detector(history: list[dict[str, object]]) -> RereadDetector:
    found = RereadDetector()
    found.extend(history)
    return found


def test_a_token_found_only_in_elided_text_is_a_reread() -> None:
    history = conversation()
    nxt = {"role": "assistant", "id": "a3", "content": "I will patch parse_config_v2 now."}
    (reread,) = detector(history).rereads(elided(history), nxt)
    assert (reread.index, reread.tool_call_id, reread.text) == (2, "c1", LOG)
    assert reread.reason == "token parse_config_v2"


def test_nothing_is_reread_when_the_text_was_sent() -> None:
    history = conversation()
    nxt = {"role": "assistant", "id": "a3", "content": "I will patch parse_config_v2 now."}
    assert detector(history).rereads(history, nxt) == []  # the same objects: all visible
    # The token is visible elsewhere in what was sent (the user named it): no re-read.
    said = [*history[:4], {"role": "user", "id": "u2", "content": "Look at parse_config_v2."}]
    assert detector(said).rereads(elided(said), nxt) == []


def test_plain_words_are_not_distinctive() -> None:
    history = conversation()
    nxt = {"role": "assistant", "id": "a3", "content": "Traceback shows a missing line."}
    assert detector(history).rereads(elided(history), nxt) == []


def test_a_call_on_the_same_command_as_an_elided_result_is_a_reread() -> None:
    history = conversation()
    nxt = {
        "role": "assistant",
        "id": "a3",
        "content": None,
        "tool_calls": [
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "python -m app"}'},
            }
        ],
    }
    (reread,) = detector(history).rereads(elided(history), nxt)
    assert (reread.index, reread.tool_call_id, reread.reason) == (
        2,
        "c1",
        "same command python -m app",
    )
    assert detector(history).rereads(history, nxt) == []  # the result was sent: no re-read


def test_a_call_on_the_same_path_as_an_elided_result_is_a_reread_until_read_back() -> None:
    history = [
        {"role": "user", "id": "u1", "content": "Read the config."},
        {
            "role": "assistant",
            "id": "a1",
            "content": [
                {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/a.toml"}}
            ],
        },
        {
            "role": "user",
            "id": "t1",
            "content": [{"type": "tool_result", "tool_use_id": "r1", "content": "k = 1\n" * 500}],
        },
    ]
    sent = [*history[:2], {**history[2], "content": [{"type": "text", "text": "[elided]"}]}]
    nxt = {
        "role": "assistant",
        "id": "a2",
        "content": [
            {"type": "tool_use", "id": "r2", "name": "Read", "input": {"file_path": "/a.toml"}}
        ],
    }
    found = detector(history)
    (reread,) = found.rereads(sent, nxt)
    assert (reread.index, reread.tool_call_id, reread.reason) == (2, "r1", "same path /a.toml")
    # Read back: the round trip's result stands for the original from then on.
    trip = reread_round_trip(reread, "anthropic", "conv", "t1", 1)
    assert trip[0]["content"][0]["input"] == {  # type: ignore[index]
        "conversation_id": "conv",
        "message_id": "t1",
        "tool_call_id": "r1",
    }
    found.read_back(reread, trip)
    assert found.rereads([*sent, *trip], nxt) == []


# --- thinking as Anthropic bills it ---------------------------------------------------------


def thinking_turn(n: int) -> dict[str, object]:
    return {
        "role": "assistant",
        "id": f"a{n}",
        "content": [
            {"type": "thinking", "thinking": f"plan {n}", "signature": "sig"},
            {"type": "text", "text": f"answer {n}"},
        ],
    }


def test_earlier_turns_thinking_is_billed_by_opus_and_dropped_by_sonnet_and_haiku() -> None:
    messages = [
        {"role": "user", "id": "u1", "content": "first"},
        thinking_turn(1),
        {"role": "user", "id": "u2", "content": "second"},
        thinking_turn(2),  # the current exchange's turn: always billed as sent
    ]
    billed = ThinkingAsBilled()
    assert billed(messages, "claude-opus-4-5-20251101") is messages
    for model in ("claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"):
        out = billed(messages, model)
        assert out[1]["content"] == [{"type": "text", "text": "answer 1"}]
        assert out[3] is messages[3]
        assert [m for i, m in enumerate(out) if i != 1] == [
            m for i, m in enumerate(messages) if i != 1
        ]
    # The same stripped copy each time: its serialization (and the cache) stays stable.
    assert billed(messages, "claude-haiku-4-5-20251001")[1] is out[1]
