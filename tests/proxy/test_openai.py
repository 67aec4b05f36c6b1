"""The proxy in front of OpenAI Chat Completions and Responses, with the real `openai` SDK
(sync, async and its stream helpers): lean requests, the client's bytes, and the proxy's
retrieval rounds hidden from the client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from leanreplay.placeholders import PLACEHOLDER_MARKER, check_pairing
from tests.proxy.conftest import Proxy, assert_paired, start_proxy
from tests.proxy.test_anthropic import BIG, EAGER
from tests.proxy.test_rounds import read_a_placeholder
from tests.proxy.upstream import FakeUpstream, Tool, answer


@pytest.fixture
def eager(upstream: FakeUpstream, tmp_path: Path) -> Any:
    upstream.script.clear()
    upstream.requests.clear()
    upstream.default = None
    running, close = start_proxy(tmp_path / "home", upstream, policy=EAGER)
    yield running
    close()  # type: ignore[operator]
    assert_paired(upstream)


def chat_history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        out.append({"role": "user", "content": f"task {t}"})
        call = {
            "id": f"call_{t}",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"cmd": "cat log"}'},
        }
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"call_{t}", "content": BIG})
        out.append({"role": "assistant", "content": f"done {t}"})
    out.append({"role": "user", "content": "and now?"})
    return out


def items_history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in range(turns):
        out.append({"role": "user", "content": f"task {t}"})
        out.append(
            {
                "type": "function_call",
                "call_id": f"call_{t}",
                "name": "shell",
                "arguments": '{"cmd": "cat log"}',
            }
        )
        out.append({"type": "function_call_output", "call_id": f"call_{t}", "output": BIG})
        out.append({"role": "assistant", "content": [{"type": "output_text", "text": f"done {t}"}]})
    out.append({"role": "user", "content": "and now?"})
    return out


TOOLS_CHAT = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
TOOLS_RESPONSES = [
    {"type": "function", "name": "shell", "parameters": {"type": "object"}, "strict": False}
]


def test_chat_sync_async_and_stream(eager: Proxy) -> None:
    eager.upstream.default = answer("all good")
    sync = eager.openai()
    made = sync.chat.completions.create(model="gpt-x", messages=chat_history(3), tools=TOOLS_CHAT)
    assert made.choices[0].message.content == "all good"
    sent = eager.upstream.requests[-1].json
    assert sent["messages"][3]["content"].startswith(PLACEHOLDER_MARKER)
    assert [t["function"]["name"] for t in sent["tools"]] == [
        "bash",
        "conversation_read",
        "conversation_search",
    ]
    with sync.chat.completions.stream(
        model="gpt-x", messages=chat_history(3), tools=TOOLS_CHAT
    ) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.content == "all good"

    async def run() -> str | None:
        aclient = openai.AsyncOpenAI(base_url=f"{eager.url}/v1", api_key="k", max_retries=0)
        made = await aclient.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "async"}]
        )
        async with aclient.chat.completions.stream(
            model="gpt-x", messages=[{"role": "user", "content": "as"}]
        ) as s:
            final = await s.get_final_completion()
        await aclient.close()
        assert made.choices[0].message.content == "all good"
        return final.choices[0].message.content

    assert asyncio.run(run()) == "all good"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_chat_round_hidden_from_the_client(eager: Proxy, stream: bool) -> None:
    up = eager.upstream
    up.push(read_a_placeholder, answer("Nothing in it.", Tool("bash", {"cmd": "ls"}, id="call_ls")))
    kwargs: dict[str, Any] = {"model": "gpt-x", "messages": chat_history(3), "tools": TOOLS_CHAT}
    if stream:
        with eager.openai().chat.completions.stream(
            **kwargs, stream_options={"include_usage": True}
        ) as s:
            completion = s.get_final_completion()
    else:
        completion = eager.openai().chat.completions.create(**kwargs)
    message = completion.choices[0].message
    assert message.content == "Let me read the original.Nothing in it."
    assert [c.function.name for c in message.tool_calls or []] == ["bash"]  # type: ignore[union-attr]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 200
    second = up.requests[1].json["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "conversation_read"
    assert json.loads(second[-1]["content"])["content"] == BIG
    # The client answers its call; the hidden round is replayed in place.
    up.push(answer("ok"))
    follow = [
        *chat_history(3),
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_ls", "content": "a b c"},
    ]
    eager.openai().chat.completions.create(model="gpt-x", messages=follow, tools=TOOLS_CHAT)
    third = up.requests[2].json["messages"]
    assert third[-4]["tool_calls"][0]["function"]["name"] == "conversation_read"
    assert third[-2]["tool_calls"][0]["function"]["name"] == "bash"
    assert check_pairing(third) == []
    assert len(eager.workspace().conversations()) == 1


def test_responses_sync_async_and_stream(eager: Proxy) -> None:
    eager.upstream.default = answer("all good")
    sync = eager.openai()
    made = sync.responses.create(model="gpt-x", input=items_history(3), tools=TOOLS_RESPONSES)
    assert made.output_text == "all good"
    sent = eager.upstream.requests[-1].json
    assert sent["input"][2]["output"].startswith(PLACEHOLDER_MARKER)
    assert [t["name"] for t in sent["tools"]] == [
        "shell",
        "conversation_read",
        "conversation_search",
    ]
    with sync.responses.stream(model="gpt-x", input=items_history(3), tools=TOOLS_RESPONSES) as s:
        final = s.get_final_response()
    assert final.output_text == "all good"

    async def run() -> str:
        aclient = openai.AsyncOpenAI(base_url=f"{eager.url}/v1", api_key="k", max_retries=0)
        made = await aclient.responses.create(
            model="gpt-x", input=[{"role": "user", "content": "a"}]
        )
        async with aclient.responses.stream(
            model="gpt-x", input=[{"role": "user", "content": "b"}]
        ) as s:
            final = await s.get_final_response()
        await aclient.close()
        assert made.output_text == "all good"
        return final.output_text

    assert asyncio.run(run()) == "all good"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_responses_round_hidden_from_the_client(eager: Proxy, stream: bool) -> None:
    up = eager.upstream
    up.push(read_a_placeholder, answer("Nothing in it."))
    kwargs: dict[str, Any] = {"model": "gpt-x", "input": items_history(3), "tools": TOOLS_RESPONSES}
    if stream:
        with eager.openai().responses.stream(**kwargs) as s:
            events = list(s)
            response = s.get_final_response()
        indexes = [e.output_index for e in events if e.type == "response.output_item.added"]
        assert indexes == [0, 1]
        numbers = [e.sequence_number for e in events]
        assert numbers == sorted(numbers)
        assert len(set(numbers)) == len(numbers)
    else:
        response = eager.openai().responses.create(**kwargs)
    kinds = [item.type for item in response.output]
    assert kinds == ["message", "message"]
    assert response.output_text == "Let me read the original.Nothing in it."
    assert response.usage is not None
    assert response.usage.input_tokens == 200
    second = up.requests[1].json["input"]
    assert second[-2]["name"] == "conversation_read"
    assert json.loads(second[-1]["output"])["content"] == BIG
    up.push(answer("ok"))
    follow = [*items_history(3), *(item.model_dump(exclude_none=True) for item in response.output)]
    follow.append({"role": "user", "content": "thanks"})
    eager.openai().responses.create(model="gpt-x", input=follow, tools=TOOLS_RESPONSES)
    third = up.requests[2].json["input"]
    assert [i.get("type") for i in third[-5:]] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        None,
    ]
    assert len(eager.workspace().conversations()) == 1


def test_history_kept_upstream_is_forwarded_as_it_is(proxy: Proxy) -> None:
    proxy.upstream.push(answer("continued"))
    made = proxy.openai().responses.create(
        model="gpt-x", input="go on", previous_response_id="resp_1"
    )
    assert made.output_text == "continued"
    assert proxy.upstream.requests[-1].json == {
        "model": "gpt-x",
        "input": "go on",
        "previous_response_id": "resp_1",
    }
    assert proxy.workspace().conversations() == []
