"""The in-turn emergency compactor, the overflow classifier and retry, the fill guard."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    CHARS_PER_TOKEN,
    OfflineSummarizer,
    PlaceholderError,
    ReplayPolicy,
    call_with_overflow_retry,
    check_pairing,
    compact_turn,
    content_chars,
    continuation_allowed,
    is_context_overflow,
)
from tests.builders import IMAGE_B64, an_call, assistant, user, with_ids

WINDOW, RESERVE = 40_000, 4_000  # input budget 36,000 tokens = 54,000 chars


def image(data: str = IMAGE_B64) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def heavy_turn() -> list[dict[str, Any]]:
    """A turn at ~80% of the budget, with everything the compactor must protect."""
    return with_ids(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Fix the build."}, image("U" * 4000)],
            },
            an_call(("r1", "read"), ("r2", "read"), ("r3", "read")),
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "r1", "content": "A" * 12_000},
                    {"type": "tool_result", "tool_use_id": "r2", "content": "B" * 6_000},
                    {
                        "type": "tool_result",
                        "tool_use_id": "r3",
                        "content": "E" * 5_000,
                        "is_error": True,
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "T" * 3000, "signature": "sig=="},
                    {"type": "tool_use", "id": "s1", "name": "screenshot", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "s1",
                        "content": [{"type": "text", "text": "shot"}, image()],
                    }
                ],
            },
            assistant("Looking at the results now. " + "n" * 4000),
            user("More logs: " + "L" * 3000),
            an_call(("r4", "read")),
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "r4", "content": "F" * 5000}],
            },
        ]
    )


def test_under_the_trigger_nothing_changes() -> None:
    messages = with_ids([user("hi"), assistant("hello")])
    result = compact_turn(messages, context_window=WINDOW, output_reserve=RESERVE)
    assert not result.triggered
    assert result.messages == messages
    assert "under 75%" in result.reason


def test_reported_tokens_trigger_even_when_chars_are_few() -> None:
    messages = heavy_turn()
    small = compact_turn(
        messages[:2], context_window=WINDOW, output_reserve=RESERVE, reported_input_tokens=30_000
    )
    assert small.triggered
    assert small.tokens_before == 30_000


def test_compaction_order_protections_and_labels() -> None:
    messages = heavy_turn()
    before = copy.deepcopy(messages)
    chars = sum(content_chars(m) for m in messages)
    assert chars / CHARS_PER_TOKEN > 0.75 * (WINDOW - RESERVE)
    result = compact_turn(
        messages, context_window=WINDOW, output_reserve=RESERVE, conversation_id="c1"
    )
    out = result.messages
    assert messages == before, "input mutated"
    assert result.triggered
    assert result.target_reached, result.reason
    assert result.tokens_after <= result.target_tokens
    assert out[0] == messages[0], "messages[0] (with its user image) is protected"
    assert out[-3:] == messages[-3:], "the last 3 messages are protected"
    assert out[2]["content"][2] == messages[2]["content"][2], "error results are protected"
    assert out[3]["content"][0] == messages[3]["content"][0], "signed thinking is untouched"
    shot = out[4]["content"][0]["content"]
    assert shot[0] == {"type": "text", "text": "shot"}
    assert "image removed" in shot[1]["text"]
    assert 'conversation_read(conversation_id="c1", message_id="m5")' in shot[1]["text"]
    biggest = out[2]["content"][0]["content"]
    assert "[TRUNCATED — " in biggest
    assert biggest.startswith("AAAA")
    assert biggest.endswith("AAAA")
    assert 'tool_call_id="r1"' in biggest
    # Proportional: the 12k result loses more than the 6k one, both keep head and tail.
    assert len(biggest) < len(out[2]["content"][1]["content"]) * 2 + 500
    assert check_pairing(out) == []
    assert [m["role"] for m in out] == [m["role"] for m in messages]
    assert result.actions[0].startswith("stripped")


def test_protected_part_over_target_is_reported_not_looped() -> None:
    messages = with_ids(
        [user("Q" * 30_000), assistant("a"), user("R" * 30_000), assistant("S" * 30_000)]
    )
    result = compact_turn(messages, context_window=WINDOW, output_reserve=RESERVE)
    assert result.triggered
    assert not result.target_reached
    assert "cannot reach the target" in result.reason
    assert "protected" in result.reason
    assert result.messages[0] == messages[0]
    assert result.messages[-3:] == messages[-3:]


def test_summary_and_continuation_reminder() -> None:
    result = compact_turn(
        heavy_turn(),
        context_window=WINDOW,
        output_reserve=RESERVE,
        summarizer=OfflineSummarizer(),
        conversation_id="c1",
    )
    last = result.messages[-1]
    assert last["role"] == "user"
    reminder = last["content"][-1]["text"]
    sections = [
        re.split(r"[ :]", line)[0]
        for line in reminder.splitlines()
        if re.match(r"^[A-Z]+( \(|:)", line)
    ]
    assert sections == ["TASK", "PROGRESS", "REMAINING", "DATA", "DECISIONS"]
    assert "TASK: [m1] Fix the build." in reminder
    assert (
        "5 tool calls: read x4 (r1, r2, r3, r4), screenshot x1 (s1); 1 error result(s)." in reminder
    )
    assert (
        '- [m3] result of r1: 12,000 chars -> conversation_read(conversation_id="c1", message_id="m3", tool_call_id="r1")'
        in reminder
    )
    assert "- [m5] image in the result of s1" in reminder
    assert "User requests: - [m1] Fix the build." in reminder  # the summarizer's narrative
    assert "Continue from REMAINING" in reminder
    assert check_pairing(result.messages) == []


def test_placeholders_are_never_truncated_again() -> None:
    from leanreplay.placeholders import is_placeholder, replay

    messages = heavy_turn()
    # An old exchange whose big result already became a placeholder.
    messages = (
        with_ids(
            [
                user("old"),
                an_call(("o1", "read")),
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "o1", "content": "P" * 9000}
                    ],
                },
                assistant("ok"),
                user("u2"),
                user("u3"),
            ]
        )[:4]
        + messages
    )
    messages = [{**m, "id": f"m{i}"} for i, m in enumerate(messages, 1)]
    lean = replay(messages, conversation_id="c1", policy=ReplayPolicy.seed()).messages
    assert is_placeholder(lean[2]["content"][0]["content"])
    result = compact_turn(lean, context_window=WINDOW, output_reserve=RESERVE, conversation_id="c1")
    assert result.messages[2] == lean[2]


def test_compaction_is_deterministic() -> None:
    a = compact_turn(heavy_turn(), context_window=WINDOW, output_reserve=RESERVE)
    b = compact_turn(heavy_turn(), context_window=WINDOW, output_reserve=RESERVE)
    assert json.dumps(a.messages) == json.dumps(b.messages)


@pytest.mark.parametrize(("window", "reserve"), [(100, 100), (-1, 0), (True, 0)], ids=str)
def test_bad_budgets(window: Any, reserve: Any) -> None:
    with pytest.raises(PlaceholderError):
        compact_turn([], context_window=window, output_reserve=reserve)


OVERFLOWS = [
    "Error code: 400 - {'error': {'message': \"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.\", 'type': 'invalid_request_error', 'code': 'context_length_exceeded'}}",
    "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'prompt is too long: 215000 tokens > 200000 maximum'}}",
    "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease input length or `max_tokens` and try again",
    "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError",
    "ValidationException: Input is too long for requested model.",
    "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
    {
        "error": {
            "code": "context_length_exceeded",
            "message": "Please reduce the length of the messages.",
        }
    },
]
NOT_OVERFLOWS = [
    "messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01",
    "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_02",
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
    "Rate limit reached for gpt-4o: tokens per min (TPM): Limit 30000",
    "overloaded_error: Overloaded",
]


@pytest.mark.parametrize("error", OVERFLOWS, ids=range(len(OVERFLOWS)))
def test_overflow_errors_are_recognized(error: Any) -> None:
    assert is_context_overflow(error)
    assert is_context_overflow(RuntimeError(str(error)))


@pytest.mark.parametrize("error", NOT_OVERFLOWS, ids=range(len(NOT_OVERFLOWS)))
def test_malformed_history_and_other_errors_are_not_overflows(error: str) -> None:
    assert not is_context_overflow(RuntimeError(error))


class Provider:
    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        self.calls.append(messages)
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def test_overflow_forces_one_compaction_and_one_retry() -> None:
    provider = Provider([RuntimeError(OVERFLOWS[1])])
    messages = heavy_turn()
    assert (
        call_with_overflow_retry(provider, messages, context_window=WINDOW, output_reserve=RESERVE)
        == "ok"
    )
    assert len(provider.calls) == 2
    assert sum(map(content_chars, provider.calls[1])) < sum(map(content_chars, messages))


def test_second_overflow_is_raised_not_looped() -> None:
    provider = Provider(
        [RuntimeError(OVERFLOWS[0]), RuntimeError(OVERFLOWS[0]), RuntimeError(OVERFLOWS[0])]
    )
    with pytest.raises(RuntimeError, match="maximum context length"):
        call_with_overflow_retry(
            provider, heavy_turn(), context_window=WINDOW, output_reserve=RESERVE
        )
    assert len(provider.calls) == 2


def test_malformed_history_is_raised_without_compaction() -> None:
    provider = Provider([RuntimeError(NOT_OVERFLOWS[0])])
    with pytest.raises(RuntimeError, match="tool_use"):
        call_with_overflow_retry(
            provider, heavy_turn(), context_window=WINDOW, output_reserve=RESERVE
        )
    assert len(provider.calls) == 1


@pytest.mark.parametrize(
    ("used", "window", "allowed"),
    [
        (1000, 200_000, True),
        (199_487, 200_000, True),
        (199_488, 200_000, False),
        (200_000, 200_000, False),
    ],
    ids=str,
)
def test_fill_guard(used: int, window: int, allowed: bool) -> None:
    assert continuation_allowed(used, window) is allowed


def test_workspace_logs_compaction_events(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        result = ws.compact_turn(
            heavy_turn(), context_window=WINDOW, output_reserve=RESERVE, conversation_id="c1"
        )
    assert result.triggered
    (log,) = (tmp_path / "logs").glob("compaction-*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events] == ["compaction.started", "compaction.applied"]
    applied = events[1]
    assert applied["conversation_id"] == "c1"
    assert applied["tokens_saved"] == result.tokens_before - result.tokens_after > 0
    assert applied["target_tokens"] == result.target_tokens
    assert applied["duration_ms"] >= 0
