"""replay(): the rule, the placeholder format, and its invariants (hypothesis)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.placeholders import (
    INPUT_MARKER,
    PLACEHOLDER_MARKER,
    InvalidMessagesError,
    InvalidPolicyError,
    ReplayPolicy,
    check_pairing,
    content_chars,
    is_genuine_user,
    is_placeholder,
    parse_read_call,
    read_call,
    replay,
    result_slots,
)
from tests.builders import (
    IMAGE_B64,
    an_call,
    an_results,
    assistant,
    big_input,
    conversations,
    dumps,
    oa_call,
    oa_result,
    user,
    with_ids,
)

SEED = ReplayPolicy.seed()
SEED_LOOP = replace(SEED, age_unit="assistant_turn", keep_assistant_turns=5)


def parse_part(text: str) -> str | None:
    args = parse_read_call(text)
    assert args, text
    return args.get("part")


def parse_call(text: str) -> tuple[str, str, str | None]:
    args = parse_read_call(text)
    assert args, text
    return args["conversation_id"], args["message_id"], args.get("tool_call_id")


@given(
    conversation_id=st.text(min_size=1),
    message_id=st.text(min_size=1),
    tool_call_id=st.none() | st.text(min_size=1),
    part=st.none() | st.just("input"),
    before=st.text(),
    after=st.text(),
)
def test_parse_read_call_is_the_inverse_of_read_call(
    conversation_id: str,
    message_id: str,
    tool_call_id: str | None,
    part: str | None,
    before: str,
    after: str,
) -> None:
    call = read_call(conversation_id, message_id, tool_call_id, part)
    if "conversation_read(" in before:
        return  # the first call in the text is the one parsed
    expected = {"conversation_id": conversation_id, "message_id": message_id}
    if tool_call_id is not None:
        expected["tool_call_id"] = tool_call_id
    if part is not None:
        expected["part"] = part
    assert parse_read_call(f"{before} {call} {after}") == expected


def test_parse_read_call_finds_no_call_in_plain_text() -> None:
    assert parse_read_call("conversation_read() is a tool") is None
    assert parse_read_call('conversation_read(message_id="m1")') is None


def three_exchanges(size: int, *, shape: str = "openai") -> list[dict[str, Any]]:
    if shape == "openai":
        first = [oa_call(("c1", "bash")), oa_result("c1", "x" * size)]
    else:
        first = [an_call(("c1", "bash")), an_results(("c1", "x" * size, False))]
    return with_ids(
        [
            user("u1"),
            *first,
            assistant("a1"),
            user("u2"),
            assistant("a2"),
            user("u3"),
            assistant("a3"),
        ]
    )


# --- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["openai", "anthropic"], ids=str)
def test_stale_result_at_threshold_becomes_a_placeholder(shape: str) -> None:
    messages = three_exchanges(2000, shape=shape)
    result = replay(messages, conversation_id="c1", policy=SEED)
    assert result.placeholders == 1
    assert result.elided_chars == 2000
    replaced = result.messages[2]
    text = replaced["content"] if shape == "openai" else replaced["content"][0]["content"]
    assert text.startswith(PLACEHOLDER_MARKER)
    assert parse_call(text) == ("c1", "m3", None)
    assert '"bash"' in text
    assert "2,000 chars" in text
    assert "older than the last 2 user exchanges" in text


@pytest.mark.parametrize("shape", ["openai", "anthropic"], ids=str)
def test_stale_result_below_threshold_stays(shape: str) -> None:
    messages = three_exchanges(1999, shape=shape)
    result = replay(messages, conversation_id="c1", policy=SEED)
    assert result.placeholders == 0
    assert result.messages == messages


def test_large_result_inside_the_last_two_exchanges_stays() -> None:
    messages = with_ids(
        [
            user("u1"),
            assistant("a1"),
            user("u2"),
            oa_call(("c1", "bash")),
            oa_result("c1", "x" * 5000),
            assistant("a2"),
            user("u3"),
            assistant("a3"),
        ]
    )
    assert replay(messages, conversation_id="c1", policy=SEED).placeholders == 0


def test_one_user_message_and_thirty_round_trips_is_one_exchange() -> None:
    messages = [user("do the task")]
    for i in range(30):
        messages += [oa_call((f"c{i}", "bash")), oa_result(f"c{i}", "y" * 3000)]
    messages = with_ids([*messages, assistant("done")])
    assert replay(messages, conversation_id="c", policy=SEED).placeholders == 0
    loop = replay(messages, conversation_id="c", policy=SEED_LOOP)
    # Everything before the 5th most recent assistant turn ages out in agent-loop mode.
    assert loop.placeholders == 26
    assert check_pairing(loop.messages) == []


def test_anthropic_tool_results_in_user_messages_are_not_exchanges() -> None:
    messages = [user("start")]
    for i in range(5):
        messages += [an_call((f"t{i}", "read")), an_results((f"t{i}", "z" * 4000, False))]
    messages = with_ids(messages)
    assert sum(is_genuine_user(m) for m in messages) == 1
    assert replay(messages, conversation_id="c", policy=SEED).placeholders == 0


def test_meta_user_messages_do_not_count_as_exchanges() -> None:
    messages = three_exchanges(3000)
    # Replace the genuine u3 by an injected one: only two exchanges remain, nothing is stale.
    messages[6] = {**messages[6], "meta": True}
    assert replay(messages, conversation_id="c1", policy=SEED).placeholders == 0


def test_several_results_in_one_message_name_their_tool_call() -> None:
    messages = with_ids(
        [
            user("u1"),
            an_call(("a", "bash"), ("b", "grep")),
            an_results(("a", "x" * 3000, False), ("b", "y" * 3000, True)),
            assistant("a1"),
            user("u2"),
            user("u3"),
        ]
    )
    result = replay(messages, conversation_id="c9", policy=SEED)
    blocks = result.messages[2]["content"]
    assert [b["tool_use_id"] for b in blocks] == ["a", "b"]
    assert [b["is_error"] for b in blocks] == [False, True]
    assert parse_call(blocks[0]["content"]) == ("c9", "m3", "a")
    assert parse_call(blocks[1]["content"]) == ("c9", "m3", "b")
    assert "It was an error result." in blocks[1]["content"]
    assert result.messages[1] is messages[1], "the assistant's call stays untouched"


def test_images_in_stale_results_are_elided_with_the_text() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": IMAGE_B64},
    }
    messages = with_ids(
        [
            user("u1"),
            an_call(("s", "screenshot")),
            an_results(("s", [{"type": "text", "text": "ok"}, image], False)),
            user("u2"),
            user("u3"),
        ]
    )
    result = replay(messages, conversation_id="c", policy=SEED)
    content = result.messages[2]["content"][0]["content"]
    assert content == [{"type": "text", "text": content[0]["text"]}]
    assert "1 image" in content[0]["text"]
    assert IMAGE_B64 not in dumps(result.messages)


def test_exclude_tools_keeps_their_results() -> None:
    messages = three_exchanges(5000)
    result = replay(messages, conversation_id="c1", policy=replace(SEED, exclude_tools={"bash"}))
    assert result.placeholders == 0


@pytest.mark.parametrize(("preview", "present"), [(0, False), (50, True)], ids=["off", "50"])
def test_preview_chars(preview: int, present: bool) -> None:
    messages = three_exchanges(3000)
    messages[2]["content"] = "HEAD-" + "x" * 2995
    text = replay(
        messages, conversation_id="c1", policy=replace(SEED, preview_chars=preview)
    ).messages[2]["content"]
    assert ('Head: "HEAD-' in text) is present
    if present:
        assert len(text) < 400


def test_placeholder_ids_are_quoted_safely() -> None:
    messages = three_exchanges(3000)
    messages[2]["id"] = 'weird"id\\with\nstuff'
    text = replay(messages, conversation_id='conv "x"', policy=SEED).messages[2]["content"]
    assert parse_call(text) == ('conv "x"', 'weird"id\\with\nstuff', None)


def test_message_to_elide_without_id_is_a_clear_error() -> None:
    messages = three_exchanges(3000)
    del messages[2]["id"]
    with pytest.raises(
        InvalidMessagesError, match="message 2 holds a stale tool result but has no string 'id'"
    ):
        replay(messages, conversation_id="c1", policy=SEED)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_chars": 0}, "min_chars must be >= 1, got 0"),
        ({"keep_user_exchanges": True}, "keep_user_exchanges must be an int, got bool"),
        ({"age_unit": "turn"}, "age_unit must be one of"),
        ({"preview_chars": 5000}, "preview_chars must be <= 2000"),
        ({"exclude_tools": "bash"}, "exclude_tools must be a collection"),
        ({"min_savings": -1}, "min_savings must be >= 0"),
    ],
    ids=str,
)
def test_policy_validation(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidPolicyError, match=match):
        ReplayPolicy(**kwargs)


def test_bad_messages_are_rejected() -> None:
    with pytest.raises(InvalidMessagesError, match="message 1 is not a dict"):
        replay([user("a"), "oops"], conversation_id="c")  # type: ignore[list-item]
    with pytest.raises(InvalidMessagesError, match="conversation_id must be a non-empty str"):
        replay([], conversation_id="")


def test_stats_add_up() -> None:
    messages = three_exchanges(5000)
    result = replay(messages, conversation_id="c1", policy=SEED)
    assert result.chars_in == sum(content_chars(m) for m in messages)
    assert result.chars_out == sum(content_chars(m) for m in result.messages)
    assert result.stats()["placeholders"] == 1


def test_min_savings_batches_elisions() -> None:
    messages = [user("u0")]
    for i in range(4):
        messages += [
            oa_call((f"c{i}", "bash")),
            oa_result(f"c{i}", "x" * 3000),
            assistant("ok"),
            user(f"u{i + 1}"),
        ]
    messages = with_ids(messages)
    # Three results are stale; each saves ~2,600 chars, so a batch of 6,000 needs three.
    batched = replay(messages, conversation_id="c", policy=replace(SEED, min_savings=6000))
    assert batched.placeholders == 3
    fewer = replay(messages[:-4], conversation_id="c", policy=replace(SEED, min_savings=6000))
    assert fewer.placeholders == 0  # only two stale: under the batch size, nothing changes yet


# --- invariants (hypothesis) ------------------------------------------------------------------

POLICIES = st.sampled_from(
    [
        SEED,
        replace(SEED, age_unit="assistant_turn", keep_assistant_turns=2),
        replace(SEED, min_savings=5000),
        replace(SEED, keep_user_exchanges=1, preview_chars=0),
        replace(SEED, min_chars=10),
        ReplayPolicy(),
        ReplayPolicy(keep_assistant_turns=1, min_chars=10),
        ReplayPolicy(min_savings=5000, drop_thinking=True),
        ReplayPolicy(timing="eager", drop_thinking=True),
        ReplayPolicy(pressure_chars=3000),
        ReplayPolicy(pressure_chars=3000, min_request_chars=6000),
        ReplayPolicy(min_request_chars=0, preview_chars=200, drop_thinking=False),
    ]
)


def call_shapes(message: dict[str, Any]) -> list[Any]:
    """What must never change in an assistant message: call ids, names and input keys."""
    out: list[Any] = [c["id"] for c in message.get("tool_calls") or ()]
    out += [sorted(json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or ()]
    for block in message["content"] if isinstance(message["content"], list) else ():
        if block.get("type") == "tool_use":
            out.append((block["id"], block["name"], sorted(block["input"])))
        elif block.get("type") == "text":
            out.append(block["text"])
    return out


@settings(max_examples=150, deadline=None)
@given(messages=conversations(big_inputs=True), policy=POLICIES)
def test_replay_is_pure_deterministic_idempotent_and_keeps_pairing(
    messages: list[dict[str, Any]], policy: ReplayPolicy
) -> None:
    before = copy.deepcopy(messages)
    first = replay(messages, conversation_id="c", policy=policy)
    assert messages == before, "input mutated"
    second = replay(copy.deepcopy(messages), conversation_id="c", policy=policy)
    assert dumps(first.messages) == dumps(second.messages)
    again = replay(first.messages, conversation_id="c", policy=policy)
    assert dumps(again.messages) == dumps(first.messages)
    assert check_pairing(messages) == []
    assert check_pairing(first.messages) == []
    assert len(first.messages) == len(messages)
    for old, new in zip(messages, first.messages, strict=True):
        assert content_chars(new) <= content_chars(old)
        assert new["role"] == old["role"]
        assert new.get("tool_call_id") == old.get("tool_call_id")
        if old["role"] == "assistant":
            if not policy.elide_inputs and not policy.drop_thinking:
                assert new is old
            assert call_shapes(new) == call_shapes(old)  # arguments still parse as JSON
            continue
        if isinstance(old["content"], list):
            assert [b.get("type") for b in new["content"]] == [
                b.get("type") for b in old["content"]
            ]
            assert [b.get("tool_use_id") for b in new["content"]] == [
                b.get("tool_use_id") for b in old["content"]
            ]
            assert [b.get("is_error") for b in new["content"]] == [
                b.get("is_error") for b in old["content"]
            ]


@settings(max_examples=80, deadline=None)
@given(messages=conversations(), policy=st.sampled_from([SEED, replace(SEED, min_savings=5000)]))
def test_seed_bytes_change_only_when_a_genuine_user_exchange_arrives(
    messages: list[dict[str, Any]], policy: ReplayPolicy
) -> None:
    previous = replay(messages[:1], conversation_id="c", policy=policy).messages
    elided: set[int] = set()
    for k in range(2, len(messages) + 1):
        current = replay(messages[:k], conversation_id="c", policy=policy).messages
        changed = [j for j in range(k - 1) if dumps(current[j]) != dumps(previous[j])]
        if changed:
            assert is_genuine_user(messages[k - 1]), f"message {k - 1} changed earlier bytes"
        # A prefix cut inside a tool call replays with stub results after message k - 1.
        now = {j for j, m in enumerate(current[:k]) if dumps(m) != dumps(messages[j])}
        assert elided <= now, "an elided result came back"
        elided = now
        previous = current


def assert_prefix_extensions(
    messages: list[dict[str, Any]], policy: ReplayPolicy, conversation_id: str = "c"
) -> int:
    """Replay before every assistant message, as an agent loop does: between two applied
    batches (new placeholders, or, with ``drop_thinking``, a finished exchange's thinking
    left out, which `elided_chars` counts) each request extends the one before byte for
    byte; nothing comes back. Returns the number of batches."""
    previous: list[dict[str, Any]] | None = None
    count = batches = elided = 0
    for k in range(1, len(messages)):
        if messages[k]["role"] != "assistant" or messages[k - 1]["role"] == "assistant":
            continue  # a request goes out before an assistant message, not inside a split one
        result = replay(messages[:k], conversation_id=conversation_id, policy=policy)
        assert result.placeholders >= count, "an elided result came back"
        new_batch = result.placeholders > count or result.elided_chars > elided
        if previous is not None and not new_batch:
            for old, new in zip(previous, result.messages, strict=False):
                assert old is new or dumps(old) == dumps(new), f"request {k} rewrote its prefix"
        batches += new_batch
        count, previous, elided = result.placeholders, result.messages, result.elided_chars
    return batches


@settings(max_examples=80, deadline=None)
@given(
    messages=conversations(big_inputs=True),
    policy=st.sampled_from([ReplayPolicy(), ReplayPolicy(keep_assistant_turns=1, min_chars=300)]),
)
def test_cache_aware_requests_extend_each_other_between_batches(
    messages: list[dict[str, Any]], policy: ReplayPolicy
) -> None:
    assert_prefix_extensions(messages, policy)


def test_seed_is_the_original_rule() -> None:
    seed = ReplayPolicy.seed()
    assert (seed.min_chars, seed.keep_user_exchanges, seed.age_unit) == (2000, 2, "user_exchange")
    assert (seed.timing, seed.elide_inputs, seed.drop_thinking) == ("eager", False, False)
    assert (seed.min_savings, seed.exclude_tools) == (0, frozenset())


def test_a_long_agent_loop_ages_by_assistant_turns_and_waits_for_the_cache() -> None:
    messages = [user("do the task")]
    for i in range(40):
        messages += [oa_call((f"c{i}", "bash")), oa_result(f"c{i}", f"{i}:" + "y" * 6000)]
    messages = with_ids([*messages, assistant("done")])
    assert replay(messages, conversation_id="c", policy=SEED).placeholders == 0  # one exchange
    eager = replay(messages, conversation_id="c", policy=ReplayPolicy(timing="eager"))
    assert eager.placeholders == 39  # all but the results of the last 2 turns
    lean = replay(messages, conversation_id="c")
    assert 0 < lean.placeholders <= eager.placeholders
    assert check_pairing(lean.messages) == []
    # The first stale result is not elided the moment it ages: one more result is not worth
    # rewriting the cached prefix after it.
    early = replay(messages[:6], conversation_id="c")
    assert early.placeholders == 0
    assert replay(
        messages[:6], conversation_id="c", policy=ReplayPolicy(timing="eager")
    ).placeholders
    assert assert_prefix_extensions(messages, ReplayPolicy()) >= 2


def test_pressure_applies_stale_elisions_at_once() -> None:
    messages = [user("do the task")]
    for i in range(4):
        messages += [oa_call((f"c{i}", "bash")), oa_result(f"c{i}", "y" * 6000)]
    messages = with_ids(messages)
    # Two stale results are not worth rewriting the two big ones after them...
    assert replay(messages, conversation_id="c").placeholders == 0
    # ...unless the request is over the pressure size.
    pressed = replay(messages, conversation_id="c", policy=ReplayPolicy(pressure_chars=20_000))
    assert pressed.placeholders == 2


def test_a_request_under_min_request_chars_elides_nothing() -> None:
    messages = [user("do the task")]
    for i in range(4):
        messages += [oa_call((f"c{i}", "bash")), oa_result(f"c{i}", "y" * 6000)]
    messages = with_ids(messages)
    pressed = ReplayPolicy(pressure_chars=20_000)  # both stale results due at once
    assert replay(messages, conversation_id="c", policy=pressed).placeholders == 2
    size = sum(content_chars(m) for m in messages)  # about 24,000 chars
    # A request smaller than the floor goes verbatim, pressure or not, expired or not...
    small = replace(pressed, min_request_chars=size + 1)
    times = {str(m["id"]): 0.0 for m in messages}
    warm = replay(messages, conversation_id="c", policy=small)
    cold = replay(messages, conversation_id="c", policy=small, times=times, now=10_000.0)
    for lean in (warm, cold):
        assert lean.placeholders == 0
        assert lean.messages == messages
    # ...and one at the floor decides as before.
    at = replace(pressed, min_request_chars=size)
    assert replay(messages, conversation_id="c", policy=at).placeholders == 2
    assert assert_prefix_extensions(messages, small) >= 0


@pytest.mark.parametrize(("result_chars", "stale"), [(4_900, 0), (5_100, 2)], ids=str)
def test_the_default_replays_a_request_under_20_000_chars_whole(
    result_chars: int, stale: int
) -> None:
    """The default floor (bench_cost's sweep chose it): even a request that finds the cache
    expired, where every pending elision is free, is replayed whole under 20,000 chars."""
    assert ReplayPolicy().min_request_chars == 20_000
    messages = [user("do the task")]
    for i in range(4):
        messages += [oa_call((f"c{i}", "bash")), oa_result(f"c{i}", "y" * result_chars)]
    messages = with_ids(messages)
    size = sum(content_chars(m) for m in messages)
    assert (size >= 20_000) == bool(stale)
    times = {str(m["id"]): 0.0 for m in messages}
    lean = replay(messages, conversation_id="c", times=times, now=10_000.0)  # expired
    assert lean.placeholders == stale
    assert (lean.messages == messages) == (not stale)


@pytest.mark.parametrize("shape", ["openai", "anthropic"], ids=str)
def test_stale_tool_inputs_become_placeholders_and_the_call_stays_valid(shape: str) -> None:
    big = "line\n" * 1000  # 5,000 chars
    messages = [user("write it")]
    for i in range(6):
        call = oa_call((f"c{i}", "write")) if shape == "openai" else an_call((f"c{i}", "write"))
        big_input(call, f"{i}" + big)
        result = (
            oa_result(f"c{i}", "ok") if shape == "openai" else an_results((f"c{i}", "ok", False))
        )
        messages += [call, result]
    messages = with_ids([*messages, assistant("done")])
    lean = replay(messages, conversation_id="c9", policy=ReplayPolicy(timing="eager"))
    assert lean.placeholders == 5  # all but the calls of the last 2 assistant turns
    assert check_pairing(lean.messages) == []
    old, new = messages[1], lean.messages[1]
    if shape == "openai":
        args = json.loads(new["tool_calls"][0]["function"]["arguments"])
        assert sorted(args) == ["command", "timeout"]
        assert args["timeout"] == 5
        field = args["command"]
    else:
        block = new["content"][0]
        assert block["id"] == "c0"
        assert sorted(block["input"]) == ["content", "lines", "path"]
        assert block["input"]["path"] == "a.txt"
        assert block["input"]["lines"][1] == 2
        field = block["input"]["content"]
    assert field.startswith(INPUT_MARKER)
    assert is_placeholder(field)
    assert "5,001 chars" in field
    assert field.endswith(
        'conversation_read(conversation_id="c9", message_id="m2", tool_call_id="c0", part="input")'
    )
    assert old != new
    assert lean.messages[-3] is messages[-3]


def test_placeholder_detection() -> None:
    messages = three_exchanges(3000)
    text = replay(messages, conversation_id="c1", policy=SEED).messages[2]["content"]
    assert is_placeholder(text)
    assert is_placeholder([{"type": "text", "text": text}])
    assert not is_placeholder("[elided tool result] but no call")


@pytest.mark.parametrize(("keep", "elided"), [(0, 1), (1, 0)], ids=["keep-0", "keep-1"])
def test_keep_user_exchanges_zero_elides_the_current_exchange_too(keep: int, elided: int) -> None:
    # Both sides of the 0 boundary: with 0 nothing is protected, with 1 the last exchange is.
    messages = with_ids(
        [user("u1"), oa_call(("c1", "bash")), oa_result("c1", "x" * 5000), assistant("a1")]
    )
    policy = ReplayPolicy(keep_user_exchanges=keep, min_request_chars=0)
    result = replay(messages, conversation_id="c", policy=policy)
    assert result.placeholders == elided


@settings(max_examples=60, deadline=None)
@given(messages=conversations())
def test_the_stats_measure_the_output(messages: list[dict[str, Any]]) -> None:
    # chars_out is the measured size of what replay returns; elided_chars the sum of the
    # originals that placeholders replaced (catches "+=" mutated into "=").
    policy = ReplayPolicy(min_chars=1, keep_user_exchanges=0, drop_thinking=False)
    result = replay(messages, conversation_id="c", policy=policy)
    assert result.chars_in == sum(content_chars(m) for m in messages)
    assert result.chars_out == sum(content_chars(m) for m in result.messages)
    originals = {m.get("id"): m for m in messages}
    elided = 0
    for message in result.messages:
        for slot in result_slots(message):
            if is_placeholder(slot.content):
                source = originals[message.get("id")]
                (original,) = [s for s in result_slots(source) if s.block == slot.block]
                elided += original.chars()
    assert result.elided_chars == elided


def test_both_placeholder_markers_hold_the_words_a_short_input_is_checked_for() -> None:
    from leanreplay.placeholders import _replay

    assert _replay._MARKED in _replay.PLACEHOLDER_MARKER
    assert _replay._MARKED in _replay.INPUT_MARKER
