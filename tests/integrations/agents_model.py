"""A scripted model for the OpenAI Agents SDK: the SDK's own `Model` interface, no network.

Each call records the input it was given. It calls the ``logs`` tool (whose output is large)
``calls_per_turn`` times and then answers; whenever its input holds a placeholder it has not
followed yet, it first calls the ``conversation_read`` the placeholder names, as a model
would when it needs the elided text back.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from agents import Model, ModelResponse, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from leanreplay import parse_read_call
from leanreplay.placeholders import PLACEHOLDER_MARKER

LOG_LINES = 120  # each `logs` output: 120 lines of ~50 chars, about 6,000 chars


def log_output(n: int) -> str:
    return "".join(
        f"2026-12-01T10:{i % 60:02d}:00Z run {n} line {i} ok\n" for i in range(LOG_LINES)
    )


@function_tool
def logs(n: int) -> str:
    """Return the log of run n."""
    return log_output(n)


def placeholders_in(items: list[dict[str, Any]]) -> list[str]:
    return [
        item["output"]
        for item in items
        if item.get("type") == "function_call_output"
        and isinstance(item.get("output"), str)
        and item["output"].startswith(PLACEHOLDER_MARKER)
    ]


class ScriptedModel(Model):
    def __init__(self, calls_per_turn: int = 3, read_back: bool = True) -> None:
        self.calls_per_turn = calls_per_turn
        self.read_back = read_back
        self.inputs: list[list[dict[str, Any]]] = []
        self.n = 0
        self.tool_calls_this_turn = 0
        self.followed: set[str] = set()

    async def get_response(  # type: ignore[override]
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.inputs.append(copy.deepcopy(items))
        self.n += 1
        last = items[-1]
        if last.get("role") == "user":
            self.tool_calls_this_turn = 0
        output: Any
        # Only the logs' placeholders: a read-back's own result ages into a placeholder too.
        pending = [
            p for p in placeholders_in(items) if p not in self.followed and '"logs"' in p[:60]
        ]
        if self.read_back and pending:
            self.followed.add(pending[0])
            call = parse_read_call(pending[0])
            output = self._call("conversation_read", call)
        elif self.tool_calls_this_turn < self.calls_per_turn:
            self.tool_calls_this_turn += 1
            output = self._call("logs", {"n": self.n})
        else:
            text = ResponseOutputText(type="output_text", text=f"answer {self.n}", annotations=[])
            output = ResponseOutputMessage(
                id=f"msg_{self.n}", role="assistant", status="completed", type="message",
                content=[text],
            )  # fmt: skip
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def _call(self, name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
        return ResponseFunctionToolCall(
            id=f"fc_{self.n}",
            call_id=f"call_{self.n}",
            name=name,
            arguments=json.dumps(arguments),
            type="function_call",
            status="completed",
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests run Runner.run")
