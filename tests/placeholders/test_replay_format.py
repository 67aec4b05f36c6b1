"""The exact words of placeholders, the policy's checks and `drop_thinking`.

Placeholders are a contract (bars and tests parse them; their bytes are deterministic),
so their full text is pinned here for each variant: lines counted, images, an error result,
a cut or whole head, no head, an input field.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from leanreplay.placeholders import (
    FoldPolicy,
    InvalidMessagesError,
    InvalidPolicyError,
    ReplayPolicy,
    content_chars,
    replay,
)
from tests.builders import IMAGE_B64, an_call, assistant, oa_call, oa_result, user, with_ids

SEED = ReplayPolicy.seed()
WHY = "older than the last 2 user exchanges"


def stale(content: Any, *, is_error: bool = False, tool: str = "bash") -> list[dict[str, Any]]:
    result = oa_result("c1", content)
    if is_error:
        result["is_error"] = True
    return with_ids(
        [user("u1"), oa_call(("c1", tool)), result, assistant("a1"), user("u2"), user("u3")]
    )


def placeholder(messages: list[dict[str, Any]], policy: ReplayPolicy = SEED) -> Any:
    out = replay(messages, conversation_id="c", policy=policy)
    assert out.placeholders == 1
    return out.messages[2]["content"]


CALL = 'Full original: conversation_read(conversation_id="c", message_id="m3")'


@pytest.mark.parametrize(
    ("text", "counted"),
    [
        ("x" * 2500, "2,500 chars, 1 line"),
        ("x" * 2499 + "\n", "2,500 chars, 1 line"),
        ("x" * 2498 + "\ny", "2,500 chars, 2 lines"),
        ("a\n" * 1250, "2,500 chars, 1,250 lines"),
    ],
    ids=["one-line", "one-line-ended", "two-lines", "many"],
)
def test_a_result_placeholder_counts_lines(text: str, counted: str) -> None:
    head = json.dumps(text[:200], ensure_ascii=False)
    assert placeholder(stale(text)) == (
        f'[elided tool result] Output of tool "bash" ({counted}) elided from this replay '
        f"because it is {WHY}. Head: {head}... {CALL}"
    )


def test_an_error_result_says_so_and_names_are_quoted() -> None:
    policy = replace(SEED, min_chars=1000, preview_chars=5)
    assert placeholder(stale("e" * 1500, is_error=True, tool='we"ird'), policy) == (
        '[elided tool result] Output of tool "we\\"ird" (1,500 chars, 1 line) elided from this '
        f'replay because it is {WHY}. It was an error result. Head: "eeeee"... {CALL}'
    )


def test_no_head_with_preview_zero() -> None:
    assert placeholder(stale("z" * 3000), replace(SEED, preview_chars=0)) == (
        '[elided tool result] Output of tool "bash" (3,000 chars, 1 line) elided from this '
        f"replay because it is {WHY}. {CALL}"
    )


@pytest.mark.parametrize(("images", "said"), [(1, "1 image"), (2, "2 images")], ids=str)
def test_images_are_counted_and_the_list_shape_kept(images: int, said: str) -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + IMAGE_B64}}
    content = [{"type": "text", "text": "shot"}] + [image] * images
    size = 4 + images * len(image["image_url"]["url"])
    assert placeholder(stale(content)) == [
        {
            "type": "text",
            "text": f'[elided tool result] Output of tool "bash" ({size:,} chars, 1 line, '
            f'{said}) elided from this replay because it is {WHY}. Head: "shot" {CALL}',
        }
    ]


def test_an_empty_text_with_an_image_has_no_lines_and_no_head() -> None:
    image = {"type": "image", "source": {"type": "base64", "data": IMAGE_B64}}
    text = placeholder(stale([image]))[0]["text"]
    assert text == (
        f'[elided tool result] Output of tool "bash" ({len(IMAGE_B64):,} chars, 0 lines, '
        f"1 image) elided from this replay because it is {WHY}. {CALL}"
    )


def test_an_input_placeholder_names_the_field_size_head_and_call() -> None:
    call = an_call(("t1", "write"))
    call["content"][0]["input"] = {"path": "a.txt", "content": "w" * 3000}
    messages = with_ids([user("u1"), call, assistant("a1"), user("u2"), user("u3")])
    policy = replace(SEED, elide_inputs=True, preview_chars=10)
    out = replay(messages, conversation_id="c", policy=policy)
    field = out.messages[1]["content"][0]["input"]["content"]
    assert field == (
        '[elided tool input] 3,000 chars of this "write" input elided from this replay because '
        f'it is {WHY}. Head: "wwwwwwwwww"... Full input: conversation_read(conversation_id="c", '
        'message_id="m2", tool_call_id="t1", part="input")'
    )
    assert out.messages[1]["content"][0]["input"]["path"] == "a.txt"
    assert out.placeholders == 1
    assert out.elided_chars == 3000
    assert out.chars_out == sum(content_chars(m) for m in out.messages)


@pytest.mark.parametrize(
    ("policy", "why"),
    [
        (SEED, "older than the last 2 user exchanges"),
        (
            ReplayPolicy(age_unit="assistant_turn", keep_assistant_turns=4),
            "older than the last 4 assistant turns",
        ),
        (
            ReplayPolicy(keep_user_exchanges=1),
            "older than the last 1 user exchanges or the last 2 assistant turns",
        ),
    ],
    ids=["exchange", "turn", "either"],
)
def test_why(policy: ReplayPolicy, why: str) -> None:
    assert policy.why() == why


def test_stats_names_every_figure() -> None:
    out = replay(stale("x" * 3000), conversation_id="c", policy=SEED)
    assert out.stats() == {
        "messages": 6,
        "chars_in": out.chars_in,
        "chars_out": out.chars_out,
        "placeholders": 1,
        "elided_chars": 3000,
    }
    assert out.chars_in == sum(content_chars(m) for m in stale("x" * 3000))
    assert out.notes == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_chars": 0}, "min_chars must be >= 1, got 0"),
        ({"keep_user_exchanges": -1}, "keep_user_exchanges must be >= 0, got -1"),
        ({"keep_assistant_turns": -1}, "keep_assistant_turns must be >= 0, got -1"),
        ({"keep_assistant_turns": 1.5}, "keep_assistant_turns must be an int, got float"),
        ({"preview_chars": -1}, "preview_chars must be >= 0, got -1"),
        ({"preview_chars": 2001}, "preview_chars must be <= 2000, got 2001"),
        ({"min_savings": -1}, "min_savings must be >= 0, got -1"),
        ({"pressure_chars": 0}, "pressure_chars must be >= 1, got 0"),
        ({"min_request_chars": -1}, "min_request_chars must be >= 0, got -1"),
        ({"timing": "lazy"}, "timing must be one of eager, cache_aware, got 'lazy'"),
        (
            {"age_unit": "turn"},
            "age_unit must be one of user_exchange, assistant_turn, exchange_or_turn, got 'turn'",
        ),
        ({"elide_inputs": 1}, "elide_inputs must be a bool"),
        ({"drop_thinking": "yes"}, "drop_thinking must be a bool"),
        ({"exclude_tools": 5}, "exclude_tools must be a collection of tool names"),
        ({"exclude_tools": ["a", 1]}, r"exclude_tools must hold tool names \(str\)"),
    ],
    ids=str,
)
def test_each_policy_field_is_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidPolicyError, match=f"^{message}$"):
        ReplayPolicy(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold_chars": 0}, "threshold_chars must be >= 1, got 0"),
        ({"keep_last": 0}, "keep_last must be >= 1, got 0"),
        ({"keep_last": True}, "keep_last must be an int, got bool"),
        ({"max_summary_chars": 199}, "max_summary_chars must be >= 200, got 199"),
    ],
    ids=str,
)
def test_each_fold_policy_field_is_checked(kwargs: dict[str, Any], message: str) -> None:
    # One error for a bad field of either policy, and a ValueError as a dataclass check is.
    with pytest.raises(InvalidPolicyError, match=f"^{message}$") as caught:
        FoldPolicy(**kwargs)
    assert isinstance(caught.value, ValueError)
    assert not isinstance(caught.value, InvalidMessagesError)


def test_policy_limits_are_allowed() -> None:
    policy = ReplayPolicy(
        min_chars=1,
        keep_user_exchanges=0,
        keep_assistant_turns=0,
        preview_chars=2000,
        min_savings=0,
        pressure_chars=1,
        exclude_tools=["a", "b"],  # type: ignore[arg-type]
    )
    assert policy.exclude_tools == frozenset({"a", "b"})


# --- drop_thinking -----------------------------------------------------------------------------

THINK = {"type": "thinking", "thinking": "t" * 400, "signature": "s" * 100}
REDACTED = {"type": "redacted_thinking", "data": "r" * 300}


def thinking_conversation() -> list[dict[str, Any]]:
    answer = {"role": "assistant", "content": [THINK, REDACTED, {"type": "text", "text": "a1"}]}
    only = {"role": "assistant", "content": [THINK]}
    current = {"role": "assistant", "content": [THINK, {"type": "text", "text": "a2"}]}
    return with_ids([user("u1"), answer, user("meta", meta=True), only, user("u2"), current])


@pytest.mark.parametrize("timing", ["eager", "cache_aware"], ids=str)
def test_drop_thinking_leaves_out_earlier_turns_thinking_only(timing: str) -> None:
    messages = thinking_conversation()
    policy = ReplayPolicy(drop_thinking=True, timing=timing)  # type: ignore[arg-type]
    out = replay(messages, conversation_id="c", policy=policy)
    assert out.messages[1]["content"] == [{"type": "text", "text": "a1"}]
    assert out.messages[3] is messages[3], "a turn of only thinking would be left empty"
    assert out.messages[5] is messages[5], "the current exchange keeps its signed thinking"
    assert out.placeholders == 0
    dropped = len(json.dumps(THINK)) + len(json.dumps(REDACTED))
    assert out.elided_chars == dropped
    assert out.chars_out == sum(content_chars(m) for m in out.messages)
    assert out.chars_in - out.chars_out == 400  # the thinking text; redacted data counts 0
    kept = replay(messages, conversation_id="c", policy=replace(policy, drop_thinking=False))
    assert kept.messages == messages


def test_a_new_user_message_makes_the_last_turns_thinking_earlier() -> None:
    messages = with_ids([*thinking_conversation(), user("u3")])
    out = replay(messages, conversation_id="c", policy=ReplayPolicy(drop_thinking=True))
    assert out.messages[5]["content"] == [{"type": "text", "text": "a2"}]
    assert out.messages[1]["content"] == [{"type": "text", "text": "a1"}]


def test_drop_thinking_without_a_genuine_user_keeps_everything() -> None:
    messages = thinking_conversation()
    messages[0]["meta"] = True
    messages[4]["meta"] = True
    out = replay(messages, conversation_id="c", policy=ReplayPolicy(drop_thinking=True))
    assert out.messages == messages
