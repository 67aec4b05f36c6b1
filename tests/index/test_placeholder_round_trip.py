"""Every placeholder in the replay of every shared transcript names a call that returns its
original: a result's content, or a tool call's input, byte-exact, over all its pages.

The oracle is written from the rule, not from the code: the call is read by Python's own
parser, and the original is looked up in the stored message by the provider's shape (an
Anthropic ``tool_use`` block's ``input``, an OpenAI ``tool_calls`` entry's ``arguments``, a
Responses ``function_call``'s ``arguments``, a result by its call id)."""

from __future__ import annotations

import ast
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import ReplayPolicy
from tests.builders import read_whole, strings
from tests.conftest import transcript_files

CALL = re.compile(r"conversation_read\((?:[a-z_]+=\"(?:[^\"\\]|\\.)*\"(?:, )?)+\)")


def arguments_of(call: str) -> dict[str, str]:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call)
    return {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}


def original_input(message: dict[str, Any], call_id: str) -> Any:
    """The input of the call ``call_id`` in a stored message, by its provider's shape."""
    if message.get("type") == "function_call" and message.get("call_id") == call_id:
        return message["arguments"]
    for call in message.get("tool_calls") or ():
        if call.get("id") == call_id:
            return call["function"]["arguments"]
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_use" and block["id"] == call_id:
            return block["input"]
    raise AssertionError(f"no call {call_id!r} in message {message.get('id')!r}")


def original_result(message: dict[str, Any], call_id: str | None) -> Any:
    """The result content of ``call_id`` (or the one result) in a stored message."""
    if message.get("type") == "function_call_output":
        return message["output"]
    if message.get("role") == "tool":
        return message["content"]
    found = [
        block.get("content", "")
        for block in message["content"]
        if isinstance(block, dict)
        and block.get("type") == "tool_result"
        and (call_id is None or block.get("tool_use_id") == call_id)
    ]
    assert len(found) == 1, (message.get("id"), call_id)
    return found[0]


def round_trip(ws: Workspace, path: Path) -> dict[str, int]:
    """Read back every placeholder of the replays of the log at ``path``; counts by kind."""
    seen = {"input": 0, "result": 0}
    for cid in ws.ingest(path, fold=False):
        originals = {m["id"]: m for m in ws.messages(cid)}
        calls: set[str] = set()
        for policy in (ReplayPolicy(timing="eager"), None):
            lean = ws.replay(cid, policy)
            named = [c for t in strings(lean.messages) for c in CALL.findall(t)]
            assert len(named) == lean.placeholders, path  # each names its call once
            calls.update(named)
        for call in sorted(calls):
            args = arguments_of(call)
            assert args["conversation_id"] == cid
            message = originals[args["message_id"]]
            call_id = args.get("tool_call_id")
            extra = {"part": args["part"]} if "part" in args else {}
            whole, _ = read_whole(ws, cid, args["message_id"], call_id, **extra)
            if args.get("part") == "input":
                assert call_id is not None
                expected = original_input(message, call_id)
                seen["input"] += 1
            else:
                expected = original_result(message, call_id)
                seen["result"] += 1
            assert json.dumps(whole, ensure_ascii=False) == json.dumps(
                expected, ensure_ascii=False
            ), call
    return seen


FOLDERS = ["claude-code-m-claude", "mini-swe-agent-pr816", "tau-bench"]


@pytest.mark.parametrize("folder", FOLDERS, ids=str)
def test_every_placeholder_reads_back_its_original(folder: str, transcripts: Path) -> None:
    files = [p for p in transcript_files() if p.parent.is_relative_to(transcripts / folder)]
    assert files
    total = {"input": 0, "result": 0}
    for path in files:
        with tempfile.TemporaryDirectory() as home, Workspace(home) as ws:
            for kind, n in round_trip(ws, path).items():
                total[kind] += n
    assert total["result"] > 0
    if folder == "claude-code-m-claude":
        assert total["input"] >= 7  # the Claude Code sessions' tool inputs, all of them read
