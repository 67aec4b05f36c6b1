"""for_provider strips bookkeeping keys so a replay can be sent as is."""

from __future__ import annotations

import pytest

from leanreplay.placeholders import InvalidMessagesError, for_provider, replay
from tests.builders import an_call, an_results, assistant, oa_call, oa_result, user, with_ids


def test_anthropic_payload_keeps_role_and_content_only() -> None:
    messages = with_ids(
        [
            user("q", meta=False),
            an_call(("t", "bash")),
            {**an_results(("t", "x" * 3000, False)), "stub": True},
            assistant("a"),
            user("u2"),
            user("u3"),
        ]
    )
    lean = replay(messages, conversation_id="c").messages
    payload = for_provider(lean, "anthropic")
    assert all(set(m) == {"role", "content"} for m in payload)
    assert payload[2]["content"] == lean[2]["content"]
    assert "id" in lean[0], "the replay itself keeps its ids"


def test_openai_payload_keeps_tool_fields() -> None:
    messages = with_ids(
        [
            {"role": "system", "content": "s"},
            user("q"),
            oa_call(("c", "f")),
            {**oa_result("c", "r"), "extra": {"raw": 1}},
        ]
    )
    payload = for_provider(messages, "openai")
    assert set(payload[2]) == {"role", "content", "tool_calls"}
    assert set(payload[3]) == {"role", "content", "tool_call_id"}


def test_anthropic_refuses_system_messages_and_unknown_providers() -> None:
    with pytest.raises(
        InvalidMessagesError, match="send a system prompt as the request's `system`"
    ):
        for_provider([{"role": "system", "content": "s"}], "anthropic")
    with pytest.raises(InvalidMessagesError, match="provider must be one of"):
        for_provider([], "gemini")  # type: ignore[arg-type]
