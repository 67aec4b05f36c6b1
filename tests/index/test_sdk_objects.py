"""Workspace.append takes the provider SDKs' response objects as they come back; the replay
of such a conversation goes back through for_provider valid for the same SDK's types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anthropic.types import Message, TextBlock, ToolUseBlock, Usage
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)

from leanreplay.index import Workspace
from leanreplay.placeholders import ReplayPolicy, for_provider
from tests.sdk_types import assert_valid

BIG = "line of a long tool output\n" * 200  # stale and large: becomes a placeholder


def _no_nulls(value: Any) -> bool:
    if isinstance(value, dict):
        return all(v is not None and _no_nulls(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_nulls(v) for v in value)
    return True


def test_anthropic_message_and_content_blocks(tmp_path: Path) -> None:
    with Workspace(tmp_path, roots=[tmp_path]) as ws:
        for turn in range(4):
            ws.append("a", {"role": "user", "content": f"question {turn}"})
            response = Message(
                id=f"msg_{turn}",
                type="message",
                role="assistant",
                model="claude-sonnet-4-5",
                content=[
                    TextBlock(type="text", text="Let me look."),
                    ToolUseBlock(type="tool_use", id=f"toolu_{turn}", name="file_read", input={}),
                ],
                stop_reason="tool_use",
                stop_sequence=None,
                usage=Usage(input_tokens=10, output_tokens=5),
            )
            if turn % 2:
                ws.append("a", response)  # the whole Message object
            else:
                ws.append(
                    "a", {"role": "assistant", "content": response.content}
                )  # the SDK's idiom
            result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": BIG}
            ws.append("a", {"role": "user", "content": [result]})
            ws.append("a", {"role": "assistant", "content": [TextBlock(type="text", text="Done.")]})
        stored = ws.messages("a")
        assert _no_nulls(stored), "None fields are left out"
        assert stored[1]["content"][1] == {
            "type": "tool_use",
            "id": "toolu_0",
            "name": "file_read",
            "input": {},
        }
        assert json.loads(json.dumps(stored[5]))["usage"]["input_tokens"] == 10
        lean = ws.replay("a", ReplayPolicy.seed())
        assert lean.placeholders == 2
        assert_valid(for_provider(lean.messages, "anthropic"), "anthropic")


def test_openai_chat_completion_message(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        for turn in range(4):
            ws.append("o", {"role": "user", "content": f"question {turn}"})
            call = ChatCompletionMessageFunctionToolCall(
                id=f"call_{turn}",
                type="function",
                function=Function(name="file_read", arguments='{"path": "x.log"}'),
            )
            ws.append("o", ChatCompletionMessage(role="assistant", content=None, tool_calls=[call]))
            ws.append("o", {"role": "tool", "tool_call_id": f"call_{turn}", "content": BIG})
            ws.append("o", ChatCompletionMessage(role="assistant", content="Done."))
        stored = ws.messages("o")
        assert "content" not in stored[1], "content=None is left out, not stored as null"
        assert stored[1]["tool_calls"][0]["function"]["name"] == "file_read"
        lean = ws.replay("o", ReplayPolicy.seed())
        assert lean.placeholders == 2
        assert_valid(for_provider(lean.messages, "openai"), "openai")


def test_openai_responses_output_items(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        for turn in range(4):
            ws.append("r", {"role": "user", "content": f"question {turn}"})
            ws.append("r", ResponseReasoningItem(id=f"rs_{turn}", type="reasoning", summary=[]))
            ws.append(
                "r",
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{turn}",
                    call_id=f"call_{turn}",
                    name="file_read",
                    arguments="{}",
                    status="completed",
                ),
            )
            output = {"type": "function_call_output", "call_id": f"call_{turn}", "output": BIG}
            ws.append("r", output)
            text = ResponseOutputText(type="output_text", text="Done.", annotations=[])
            message = ResponseOutputMessage(
                id=f"msg_{turn}",
                type="message",
                role="assistant",
                status="completed",
                content=[text],
            )
            ws.append("r", message)
        stored = ws.messages("r")
        assert [m.get("type") for m in stored[:5]] == [
            None,
            "reasoning",
            "function_call",
            "function_call_output",
            "message",
        ]
        lean = ws.replay("r", ReplayPolicy.seed())
        assert lean.placeholders == 2
        payload = for_provider(lean.messages, "openai-responses")
        assert_valid(payload, "openai-responses")
        assert [m.get("call_id") for m in payload] == [m.get("call_id") for m in stored]
        assert "id" not in payload[2], "a function_call goes back without an id"
        assert payload[1]["id"] == "rs_0", "a reasoning item keeps its own id"
        hits = ws.conversation_search("long tool output", conversation_id="r")["hits"]
        assert {h["message_id"] for h in hits} >= {stored[3]["id"]}, "outputs are searchable"
