"""conversation_read(part="input"): the tool input a placeholder names, byte-exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leanreplay.index import (
    ConversationNotFoundError,
    InvalidArgumentError,
    Workspace,
    tool_schemas,
)
from leanreplay.placeholders import ReplayPolicy
from tests.builders import (
    an_call,
    an_results,
    assistant,
    big_input,
    oa_call,
    oa_result,
    read_whole,
    rs_call,
    rs_result,
    user,
)
from tests.placeholders.test_replay import parse_call, parse_part


@pytest.mark.parametrize("shape", ["openai", "anthropic", "responses"], ids=str)
def test_an_elided_input_comes_back_byte_exact(tmp_path: Path, shape: str) -> None:
    text = 'print("héllo")\r\n\t' * 300 + "😀"
    calls = {"openai": oa_call, "anthropic": an_call}
    with Workspace(tmp_path) as ws:
        ws.append("c", user("write the files"))
        for i in range(5):
            if shape == "responses":
                call = rs_call(f"t{i}", "write")
            else:
                call = calls[shape]((f"t{i}", "write"))
            big_input(call, f"{i}{text}")
            ws.append("c", call)
            if shape == "openai":
                ws.append("c", oa_result(f"t{i}", "ok"))
            elif shape == "responses":
                ws.append("c", rs_result(f"t{i}", "ok"))
            else:
                ws.append("c", an_results((f"t{i}", "ok", False)))
        ws.append("c", assistant("done"))
        original = ws.messages("c")[1]
        lean = ws.replay("c", ReplayPolicy(timing="eager")).messages[1]
        if shape == "openai":
            field = json.loads(lean["tool_calls"][0]["function"]["arguments"])["command"]
            expected = original["tool_calls"][0]["function"]["arguments"]
        elif shape == "responses":
            assert set(lean) == set(original)  # the item keeps its keys
            field = json.loads(lean["arguments"])["command"]
            assert json.loads(lean["arguments"])["timeout"] == 5
            expected = original["arguments"]
        else:
            field = lean["content"][0]["input"]["content"]
            expected = original["content"][0]["input"]
        conv, mid, call = parse_call(field)
        assert parse_part(field) == "input"
        whole, pages = read_whole(ws, conv, mid, call, part="input")
        assert json.dumps(whole) == json.dumps(expected)  # byte-exact
        assert pages[0]["part"] == "input"
        assert pages[0]["format"] == ("json" if shape == "anthropic" else "text")


def test_a_long_input_comes_back_in_pages(tmp_path: Path) -> None:
    text = "x" * 95_000
    with Workspace(tmp_path) as ws:
        ws.append("c", user("write"))
        call = oa_call(("t1", "write"))
        big_input(call, text)
        mid = ws.append("c", call)
        whole, pages = read_whole(ws, "c", mid, "t1", part="input")
        assert whole == call["tool_calls"][0]["function"]["arguments"]
        assert len(pages) == 3
        assert 'part="input", offset=' in pages[0]["next"]


def test_bad_part_requests_say_what_to_do(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        ws.append("c", user("go"))
        mid = ws.append("c", an_call(("t1", "bash")))
        with pytest.raises(InvalidArgumentError, match="needs the tool_call_id"):
            ws.conversation_read("c", mid, part="input")
        with pytest.raises(
            ConversationNotFoundError, match="makes no tool call 'nope'; it makes 't1'"
        ):
            ws.conversation_read("c", mid, "nope", part="input")
        assert ws.conversation_read("c", mid, "t1", part="input")["content"] == '{"q": 1}'


def test_the_schemas_offer_part() -> None:
    (schema,) = [s for s in tool_schemas("anthropic") if s["name"] == "conversation_read"]
    assert "part" in schema["input_schema"]["properties"]
