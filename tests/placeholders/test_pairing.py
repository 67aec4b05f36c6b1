"""check_pairing finds what providers reject, in both shapes."""

from __future__ import annotations

from typing import Any

import pytest

from leanreplay.placeholders import check_pairing, repair_pairing
from tests.builders import an_call, an_results, assistant, oa_call, oa_result, user

CASES: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    "valid-openai-parallel": (
        [
            user("q"),
            oa_call(("a", "x"), ("b", "y")),
            oa_result("b", "1"),
            oa_result("a", "2"),
            assistant("ok"),
        ],
        [],
    ),
    "valid-anthropic": (
        [user("q"), an_call(("a", "x")), an_results(("a", "1", False)), assistant("ok")],
        [],
    ),
    "openai-missing-result": (
        [user("q"), oa_call(("a", "x"), ("b", "y")), oa_result("a", "1"), assistant("ok")],
        ["tool call 'b' in message 1 has no result right after it"],
    ),
    "openai-orphan-result": (
        [user("q"), oa_result("zz", "1")],
        ["message 1 is a tool result for 'zz', which the assistant message before it did not call"],
    ),
    "anthropic-result-not-adjacent": (
        [user("q"), an_call(("a", "x")), user("interrupt"), an_results(("a", "1", False))],
        [
            "tool call 'a' in message 1 has no result right after it",
            "message 3 has a tool_result for 'a'",
        ],
    ),
    "starts-with-assistant": (
        [{"role": "system", "content": "s"}, assistant("hi"), user("q")],
        ["message 1 is the first after the system prompt but has role 'assistant'"],
    ),
    "same-id-twice-in-one-message": (
        [user("q"), oa_call(("a", "x"), ("a", "y")), oa_result("a", "1")],
        ["message 1 makes tool call id 'a' twice"],
    ),
    # A server tool (web search, an MCP connector) is answered inside the same message.
    "anthropic-server-tool-answered-in-place": (
        [
            user("q"),
            {
                "role": "assistant",
                "content": [
                    {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
                    {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []},
                    {"type": "text", "text": "found it"},
                ],
            },
            user("thanks"),
        ],
        [],
    ),
    "id-reused-in-a-later-turn-is-fine": (
        [
            user("q"),
            oa_call(("a", "x")),
            oa_result("a", "1"),
            user("q2"),
            oa_call(("a", "x")),
            oa_result("a", "2"),
        ],
        [],
    ),
}


def test_a_server_tool_call_gets_no_stub_result() -> None:
    messages = CASES["anthropic-server-tool-answered-in-place"][0]
    repaired, notes = repair_pairing(messages)
    assert repaired == messages
    assert notes == []


@pytest.mark.parametrize("name", sorted(CASES), ids=str)
def test_check_pairing(name: str) -> None:
    messages, expected = CASES[name]
    problems = check_pairing(messages)
    assert len(problems) == len(expected), problems
    for problem, prefix in zip(problems, expected, strict=True):
        assert problem.startswith(prefix), problem
