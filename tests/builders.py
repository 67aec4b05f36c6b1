"""Tiny builders for messages in both provider shapes, and a hypothesis strategy for whole
conversations (parallel calls, errors, images, meta users, thinking blocks)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

IMAGE_B64 = "iVBORw0KGgo" + "A" * 3000  # not a real image: replay treats it as opaque data
# The first JSON-RPC message of an MCP client, for the tests that speak to a server raw.
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def oa_call(*calls: tuple[str, str]) -> dict[str, Any]:
    """An OpenAI assistant message calling (call_id, tool_name) pairs."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": '{"q": 1}'}}
            for cid, name in calls
        ],
    }


def oa_result(call_id: str, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def an_call(*calls: tuple[str, str], thinking: bool = False) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": "plan", "signature": "sig=="})
    blocks += [
        {"type": "tool_use", "id": cid, "name": name, "input": {"q": 1}} for cid, name in calls
    ]
    return {"role": "assistant", "content": blocks}


def an_results(*results: tuple[str, Any, bool]) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": cid, "content": content, "is_error": err}
            for cid, content, err in results
        ],
    }


def rs_call(call_id: str, name: str) -> dict[str, Any]:
    """An OpenAI Responses ``function_call`` item (a role-less assistant item)."""
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": '{"q": 1}'}


def rs_result(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def with_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "id": f"m{i}"} for i, m in enumerate(messages, start=1)]


def dumps(messages: Any) -> str:
    return json.dumps(messages, ensure_ascii=False, sort_keys=True)


# --- hypothesis ------------------------------------------------------------------------

_texts = st.text(
    alphabet=st.sampled_from(list("abcdefghij klmnop\nqrs\r\nدرآمد😀é\u0301")),
    min_size=0,
    max_size=40,
)


@st.composite
def result_content(draw: st.DrawFn, shape: str) -> Any:
    size = draw(st.sampled_from([5, 300, 1999, 2000, 2500, 6000]))
    text = (draw(_texts) + "x" * size)[:size] if size else ""
    if shape == "anthropic" and draw(st.booleans()) and draw(st.integers(0, 4)) == 0:
        return [
            {"type": "text", "text": text},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": IMAGE_B64},
            },
        ]
    if draw(st.integers(0, 5)) == 0:
        return [{"type": "text", "text": text}]
    return text


def big_input(message: dict[str, Any], text: str) -> None:
    """Give every call of an assistant message a long string field (and a short one)."""
    for call in message.get("tool_calls") or ():
        call["function"]["arguments"] = json.dumps({"command": text, "timeout": 5})
    if message.get("type") == "function_call":
        message["arguments"] = json.dumps({"command": text, "timeout": 5})
        return
    for block in message["content"] if isinstance(message["content"], list) else ():
        if block.get("type") == "tool_use":
            block["input"] = {"path": "a.txt", "content": text, "lines": [text[:300], 2]}


@st.composite
def conversations(
    draw: st.DrawFn, shape: str | None = None, big_inputs: bool = False
) -> list[dict[str, Any]]:
    """A valid conversation in one provider shape, with ids m1, m2, ...; with
    ``big_inputs``, some calls carry long inputs."""
    shape = shape or draw(st.sampled_from(["openai", "anthropic"]))
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": "You are helpful."})
    call_no = 0
    for _turn in range(draw(st.integers(1, 5))):
        messages.append(user("question " + draw(_texts)))
        if draw(st.integers(0, 4)) == 0:
            messages.append(user("<command-name>/clear</command-name>", meta=True))
        for _round in range(draw(st.integers(0, 3))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_no += 1
                calls.append((f"call_{call_no}", draw(st.sampled_from(["bash", "read", "grep"]))))
            if shape == "openai":
                messages.append(oa_call(*calls))
                if big_inputs and draw(st.booleans()):
                    big_input(messages[-1], draw(_texts) + "w" * draw(st.sampled_from([300, 2500])))
                for cid, _ in calls:
                    result = oa_result(cid, draw(result_content("openai")))
                    if draw(st.integers(0, 6)) == 0:
                        result["is_error"] = True
                    messages.append(result)
            else:
                messages.append(an_call(*calls, thinking=draw(st.booleans())))
                if big_inputs and draw(st.booleans()):
                    big_input(messages[-1], draw(_texts) + "w" * draw(st.sampled_from([300, 2500])))
                messages.append(
                    an_results(
                        *(
                            (cid, draw(result_content("anthropic")), draw(st.integers(0, 6)) == 0)
                            for cid, _ in calls
                        )
                    )
                )
        messages.append(assistant("answer " + draw(_texts)))
    return with_ids(messages)


def read_whole(
    ws: Any, conversation_id: str, message_id: str, tool_call_id: str | None = None, **args: Any
) -> tuple[Any, list[dict[str, Any]]]:
    """Every page of a conversation_read, and the original they spell (images put back)."""
    pages: list[dict[str, Any]] = []
    offset = 0
    while True:
        arguments = {"conversation_id": conversation_id, "message_id": message_id, **args}
        if tool_call_id is not None:
            arguments["tool_call_id"] = tool_call_id
        answer = ws.call("conversation_read", {**arguments, "offset": offset})
        pages.append(answer)
        offset += len(answer["content"])
        if answer["next"] is None:
            break
        assert answer["next"].endswith(f"offset={offset})"), answer["next"]
    text = "".join(p["content"] for p in pages)
    if pages[0]["format"] == "text":
        return text, pages
    images = [part for p in pages for part in p["images"]]

    def put_back(node: Any) -> Any:
        if isinstance(node, list):
            return [put_back(x) for x in node]
        if isinstance(node, dict):
            return {k: put_back(v) for k, v in node.items()}
        if isinstance(node, str):
            for match in re.finditer(r"<image (\d+): returned as image content>", node):
                data = images[int(match.group(1)) - 1]["source"]["data"]
                node = node.replace(match.group(0), data, 1)
        return node

    return put_back(json.loads(text)), pages


def strings(value: Any) -> Iterator[str]:
    """Every string at any depth, a JSON object held in a string (OpenAI arguments) opened."""
    if isinstance(value, str):
        if value.startswith("{"):
            try:
                inner = json.loads(value)
            except ValueError:
                inner = None
            if isinstance(inner, dict):
                yield from strings(inner)
                return
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
