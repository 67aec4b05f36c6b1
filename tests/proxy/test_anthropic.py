"""The proxy in front of the Anthropic Messages API: what the upstream receives (lean,
paired, the client's bytes, breakpoints, thinking, headers) and what the client gets back
(the SDK's own objects), with the real `anthropic` SDK and raw HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from leanreplay.index.faces.proxy import FAMILY_HEADER
from leanreplay.placeholders import PLACEHOLDER_MARKER, ReplayPolicy, check_pairing
from tests.conftest import SAMPLES
from tests.proxy.conftest import KEY, Proxy, start_proxy
from tests.proxy.upstream import FakeUpstream, Thinking, Tool, answer

BIG = "".join(f"line {i}: the build log says nothing of interest here\n" for i in range(120))
PNG = base64.b64encode((SAMPLES / "red_64x48.png").read_bytes()).decode()
# Every stale elision at once (exact assertions); earlier turns' thinking kept, so the tests
# see what becomes of its bytes.
EAGER = ReplayPolicy(timing="eager", drop_thinking=False)


def post(proxy: Proxy, body: str | bytes, **headers: str) -> httpx2.Response:
    sent = {"content-type": "application/json", "x-api-key": KEY, **headers}
    content = body.encode() if isinstance(body, str) else body
    return httpx2.post(f"{proxy.url}/v1/messages", content=content, headers=sent, timeout=30)


def history(turns: int, *, big: str = BIG) -> list[dict[str, Any]]:
    """A coding session: ``turns`` user exchanges, each with a large tool result."""
    out: list[dict[str, Any]] = []
    for t in range(turns):
        out.append({"role": "user", "content": f"task {t}: look at the log"})
        out.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": f"toolu_{t}", "name": "Read", "input": {"n": t}},
                ],
            }
        )
        out.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{t}", "content": big}],
            }
        )
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"done {t}"}]})
    out.append({"role": "user", "content": "and now?"})
    return out


def body(messages: list[dict[str, Any]], **fields: Any) -> str:
    return json.dumps({"model": "claude-x", "max_tokens": 512, "messages": messages, **fields})


def count_breakpoints(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(count_breakpoints(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_breakpoints(v) for v in value)
    return 0


@pytest.fixture
def eager(upstream: FakeUpstream, tmp_path: Path) -> Any:
    """A proxy whose replay elides at once (the seed rule's timing), for exact assertions."""
    upstream.script.clear()
    upstream.requests.clear()
    running, close = start_proxy(tmp_path / "home", upstream, policy=EAGER)
    yield running
    close()  # type: ignore[operator]


def test_a_first_request_goes_upstream_as_sent_with_our_tools_after_the_clients(
    proxy: Proxy,
) -> None:
    # Odd spacing, an unknown field and block type, a system prompt with a breakpoint: all of
    # it byte for byte; only the tools array grows, at its end.
    text = (
        '{ "model":"claude-x",  "max_tokens" :512, "x_future_field": {"a": [1, 2.50]},\n'
        ' "system": [{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],'
        ' "tools": [ {"name":"Read","description":"read","input_schema":{"type":"object"}} ],'
        ' "messages": [ {"role":"user","content":[{"type":"text","text":"hi \\u00e9"},'
        '{"type":"mystery_block","payload":{"k":"v"}}]} ] }'
    )
    proxy.upstream.push(answer("hello"))
    response = post(proxy, text)
    assert response.status_code == 200
    sent = proxy.upstream.requests[-1].body.decode()
    close = text.index("} ],") + 2  # the tools array's closing bracket
    assert sent[:close] == text[:close]
    assert sent[len(sent) - (len(text) - close) :] == text[close:]
    assert sent[close] == ","
    tools = [t["name"] for t in json.loads(sent)["tools"]]
    assert tools == ["Read", "conversation_read", "conversation_search"]
    # The upstream's answer reaches the client byte for byte.
    assert json.loads(response.content)["content"] == [{"type": "text", "text": "hello"}]


def test_the_sdk_clients_get_their_own_objects(proxy: Proxy) -> None:
    proxy.upstream.default = answer("fine, thanks")
    sync = proxy.anthropic()
    message = sync.messages.create(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "how are you?"}]
    )
    assert isinstance(message, anthropic.types.Message)
    assert message.content[0].type == "text"
    assert message.content[0].text == "fine, thanks"
    with sync.messages.stream(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "streamed?"}]
    ) as stream:
        assert "".join(stream.text_stream) == "fine, thanks"
        assert stream.get_final_message().stop_reason == "end_turn"

    async def run() -> str:
        client = anthropic.AsyncAnthropic(base_url=proxy.url, api_key=KEY, max_retries=0)
        created = await client.messages.create(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "async?"}]
        )
        async with client.messages.stream(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "a-stream?"}]
        ) as stream:
            final = await stream.get_final_message()
        await client.close()
        assert created.content[0].type == "text"
        return final.content[0].text  # type: ignore[union-attr]

    assert asyncio.run(run()) == "fine, thanks"


def test_auth_headers_pass_through_untouched_and_are_never_stored(proxy: Proxy) -> None:
    proxy.upstream.push(answer("ok"))
    headers = {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
        "authorization": "Bearer oauth-token-abcdef123456",
        "x-organization": "org-42",
    }
    post(proxy, body([{"role": "user", "content": "hello"}]), **headers)
    got = proxy.upstream.requests[-1].headers
    for name, value in {**headers, "x-api-key": KEY}.items():
        assert got[name] == value
    assert FAMILY_HEADER not in got
    proxy.workspace()  # its writes done, so every file is there to look at
    for path in proxy.home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data, path
            assert b"oauth-token-abcdef" not in data, path


def test_stale_results_are_placeholders_and_their_breakpoints_stay_on_them(
    eager: Proxy,
) -> None:
    messages = history(3)
    messages[2]["content"][0]["cache_control"] = {"type": "ephemeral"}  # on a stale result
    messages[-1] = {
        "role": "user",
        "content": [{"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}}],
    }
    system = [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    eager.upstream.push(answer("ok"))
    post(eager, body(messages, system=system))
    sent = eager.upstream.requests[-1].json
    first = sent["messages"][2]["content"][0]
    assert first["content"].startswith(PLACEHOLDER_MARKER)
    assert first["cache_control"] == {"type": "ephemeral"}
    assert first["tool_use_id"] == "toolu_0"
    # The recent exchanges stay verbatim; every breakpoint is where the client put it.
    assert sent["messages"][-3]["content"][0]["content"] == BIG
    assert count_breakpoints(sent) == 3 == count_breakpoints({"s": system, "m": messages})
    assert check_pairing(sent["messages"]) == []
    # The placeholder names the call that brings the original back, byte for byte.
    call = re.search(r"conversation_read\((.*)\)", first["content"])
    assert call is not None
    ws = eager.workspace()
    (cid,) = ws.conversations()
    assert ws.conversation_read(cid, "m3")["content"] == BIG


def test_signed_thinking_keeps_the_clients_bytes_when_its_message_changes(
    eager: Proxy,
) -> None:
    # An old assistant turn with signed thinking and a long tool input: the input is elided,
    # the thinking block goes upstream as the client's own text (spacing and escapes too).
    long_input = {"content": "x" * 3000}
    thinking = (
        '{"type": "thinking", "thinking": "Plan: write \\u00fcber-file", "signature": "EpcB+/=="}'
    )
    call = f'{{"type":"tool_use","id":"toolu_w","name":"Write","input":{json.dumps(long_input)}}}'
    old = f'{{"role":"assistant","content":[{thinking}, {call}]}}'
    result = (
        '{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_w","content":"ok"}]}'
    )
    rest = [
        {"role": "assistant", "content": "written"},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "yes"},
        {"role": "user", "content": "and next"},
        {"role": "assistant", "content": "yes"},
        {"role": "user", "content": "last"},
    ]
    tail = ",".join(json.dumps(m) for m in rest)
    text = (
        '{"model":"claude-x","max_tokens":64,"messages":['
        f'{{"role":"user","content":"write it"}},{old},{result},{tail}]}}'
    )
    eager.upstream.push(answer("ok"))
    post(eager, text)
    sent = eager.upstream.requests[-1].body.decode()
    assert thinking in sent
    assert "x" * 3000 not in sent  # the input became a placeholder
    assert json.loads(sent)["messages"][1]["content"][1]["id"] == "toolu_w"


def test_one_conversation_across_requests_and_a_rewrite_becomes_its_own(proxy: Proxy) -> None:
    proxy.upstream.default = answer("sure")
    turn1 = [{"role": "user", "content": "first question"}]
    post(proxy, body(turn1))
    turn2 = [*turn1, {"role": "assistant", "content": "sure"}, {"role": "user", "content": "2nd"}]
    post(proxy, body(turn2))
    ws = proxy.workspace()
    (cid,) = ws.conversations()
    assert [m["content"] for m in ws.messages(cid)] == ["first question", "sure", "2nd"]
    assert ws.info(cid).source == "proxy"
    assert ws.info(cid).format == "anthropic"
    # An edit of the second user message: a new conversation with the whole history.
    edited = [*turn2[:2], {"role": "user", "content": "second, edited"}]
    post(proxy, body(edited))
    ws = proxy.workspace()  # settled again: every read after a request waits for its writes
    assert len(ws.conversations()) == 2
    assert [m["content"] for m in ws.messages(cid)] == ["first question", "sure", "2nd"]
    fork = next(c for c in ws.conversations() if c != cid)
    assert fork.startswith(cid + "~")
    assert [m["content"] for m in ws.messages(fork)][-1] == "second, edited"
    # The edited branch goes on in its own conversation.
    post(
        proxy,
        body([*edited, {"role": "assistant", "content": "sure"}, {"role": "user", "content": "3"}]),
    )
    ws = proxy.workspace()
    assert len(ws.conversations()) == 2
    assert len(ws.messages(fork)) == 5


def test_the_client_names_its_conversation(proxy: Proxy) -> None:
    proxy.upstream.default = answer("ok")
    post(proxy, body([{"role": "user", "content": "hi"}]), **{FAMILY_HEADER: "my-chat"})
    user_id = json.dumps({"device_id": "d", "account_uuid": "", "session_id": "0c2e-s1"})
    post(proxy, body([{"role": "user", "content": "hi"}], metadata={"user_id": user_id}))
    legacy = "user_abc_account_def_session_9f8e7d6c-aaaa-bbbb-cccc-0123456789ab"
    post(proxy, body([{"role": "user", "content": "hi"}], metadata={"user_id": legacy}))
    ids = proxy.workspace().conversations()
    assert ids == [
        "claude-code-0c2e-s1",
        "claude-code-9f8e7d6c-aaaa-bbbb-cccc-0123456789ab",
        "my-chat",
    ]
    refused = post(proxy, body([{"role": "user", "content": "hi"}]), **{FAMILY_HEADER: "a\tb"})
    assert refused.status_code == 400
    error = refused.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert FAMILY_HEADER in error["error"]["message"]


def test_the_same_history_gives_the_same_bytes(upstream: FakeUpstream, tmp_path: Path) -> None:
    upstream.script.clear()
    upstream.default = answer("ok")
    sent = []
    for home in ("a", "b"):
        running, close = start_proxy(tmp_path / home, upstream, policy=EAGER)
        try:
            for turns in (1, 2, 3):
                post(running, body(history(turns)))
                sent.append(upstream.requests[-1].body)
        finally:
            close()  # type: ignore[operator]
    assert sent[:3] == sent[3:]
    assert PLACEHOLDER_MARKER.encode() in sent[2]


def test_consecutive_requests_share_their_bytes_up_to_the_first_change(
    proxy: Proxy,
) -> None:
    proxy.upstream.default = answer("ok")
    bodies = []
    for turns in (1, 2):
        post(proxy, body(history(turns)))
        bodies.append(proxy.upstream.requests[-1].body.decode())
    before, after = bodies
    # The cache-aware default elides nothing yet: the second request extends the first.
    head = before[: before.index('{"role": "user", "content": "and now?"}')]
    assert after.startswith(head)
    assert len(after) > len(before)


def test_inline_images_become_cards_with_their_reader(proxy: Proxy) -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
        "cache_control": {"type": "ephemeral"},
    }
    messages = [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}]
    proxy.upstream.push(answer("a picture"))
    post(proxy, body(messages))
    sent = proxy.upstream.requests[-1].json
    card = sent["messages"][0]["content"][1]
    assert card["type"] == "text"
    assert card["text"].startswith("[attachment]")
    assert card["cache_control"] == {"type": "ephemeral"}
    assert PNG not in json.dumps(sent)
    assert [t["name"] for t in sent["tools"]][-1] == "image_view"


def test_count_tokens_and_other_paths_are_forwarded_unchanged(proxy: Proxy) -> None:
    text = body([{"role": "user", "content": "count me"}])
    response = httpx2.post(
        f"{proxy.url}/v1/messages/count_tokens", content=text, headers={"x-api-key": KEY}
    )
    assert response.json() == {"input_tokens": len(text) // 4}
    assert proxy.upstream.requests[-1].body == text.encode()
    listed = httpx2.get(f"{proxy.url}/v1/models?limit=2", headers={"x-api-key": KEY})
    assert listed.json() == {"path": "/v1/models", "ok": True}
    assert not proxy.workspace().conversations()


def test_a_tool_the_client_declares_under_our_name_stays_the_clients(proxy: Proxy) -> None:
    tools = [
        {"name": "conversation_read", "description": "mine", "input_schema": {"type": "object"}}
    ]
    call = Tool("conversation_read", {"anything": 1})
    proxy.upstream.push(answer("using yours", call))
    response = post(proxy, body([{"role": "user", "content": "go"}], tools=tools))
    blocks = response.json()["content"]
    assert blocks[1]["name"] == "conversation_read"  # the client's own tool: its call
    names = [t["name"] for t in proxy.upstream.requests[-1].json["tools"]]
    assert names == ["conversation_read", "conversation_search"]
    assert len(proxy.upstream.requests) == 1


def test_thinking_and_tool_calls_stream_through(proxy: Proxy) -> None:
    proxy.upstream.push(answer(Thinking("hmm", "sig-123"), "Reading.", Tool("Read", {"p": 1})))
    client = proxy.anthropic()
    with client.messages.stream(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "read"}]
    ) as stream:
        final = stream.get_final_message()
    kinds = [b.type for b in final.content]
    assert kinds == ["thinking", "text", "tool_use"]
    assert final.content[0].signature == "sig-123"  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"


def test_a_request_after_the_cache_expired_applies_the_waiting_elisions(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """The proxy times each request by its arrival (``ProxyConfig.clock``) and the store's
    append times: a request more than the cache's TTL after the one before it is written in
    full anyway, so the cache-aware replay applies the elisions it was waiting to pay for."""
    upstream.script.clear()
    upstream.default = answer("ok")
    later = [0.0]  # seconds the clock runs ahead of the store's append times
    sent = {}
    for name, gap in (("warm", 0.0), ("expired", 3600.0)):
        running, close = start_proxy(
            tmp_path / name,
            upstream,
            clock=lambda: time.time() + later[0],
            policy=ReplayPolicy(min_request_chars=0),  # these requests are small
        )
        try:
            later[0] = 0.0
            for turns in (1, 2):
                post(running, body(history(turns)))
                assert running.app.settle()
            later[0] = gap
            post(running, body(history(3)))
            sent[name] = upstream.requests[-1].json["messages"]
        finally:
            close()  # type: ignore[operator]
    # Within the TTL, eliding exchange 0's result would rewrite more than it saves: it waits.
    assert sent["warm"][2]["content"][0]["content"] == BIG
    # An hour later the cache is gone: the stale result goes as its placeholder at once.
    assert sent["expired"][2]["content"][0]["content"].startswith(PLACEHOLDER_MARKER)
    assert sent["expired"][-3]["content"][0]["content"] == BIG  # the recent ones stay
    assert check_pairing(sent["expired"]) == []


def test_a_request_after_the_cache_expired_folds_early_as_workspace_replay_does(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """A conversation past `FoldPolicy.cold_threshold` (60,000 chars) but under the fold
    threshold: its next request within the TTL goes unfolded; an hour later the proxy folds
    the stored prefix first, as `Workspace.replay` does, and sends the summary in its place
    (this request is written in full anyway)."""
    upstream.script.clear()
    upstream.default = answer("ok")

    def turns(n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for k in range(n):
            if k:
                out.append({"role": "assistant", "content": f"answer {k - 1}"})
            out.append({"role": "user", "content": f"question {k}: " + "x" * 9_000})
        return out

    later = [0.0]
    sent, folds = {}, {}
    for name, gap in (("warm", 0.0), ("expired", 3600.0)):
        running, close = start_proxy(
            tmp_path / name, upstream, clock=lambda: time.time() + later[0]
        )
        try:
            later[0] = 0.0
            for n in range(1, 8):
                post(running, body(turns(n)))
            with running.workspace() as ws:
                (cid,) = ws.conversations()  # one conversation, continued by each request
                assert 60_000 < ws.stored_chars(cid) < 120_000
                assert ws.fold_state(cid) is None
            later[0] = gap
            post(running, body(turns(8)))
            sent[name] = upstream.requests[-1].json["messages"]
            with running.workspace() as ws:
                folds[name] = ws.fold_state(cid)
        finally:
            close()  # type: ignore[operator]
    assert folds["warm"] is None
    assert sent["warm"][0]["content"].startswith("question 0: ")
    fold = folds["expired"]
    assert fold is not None
    assert fold["summarized_through_message_id"] == "m4"  # up to the last user turn before
    preamble = sent["expired"][0]["content"]  # the last 8 stored messages: question 2
    assert preamble.startswith('[Summary of the earlier conversation, through message "m4"]')
    assert sent["expired"][2]["content"].startswith("question 2: ")  # the verbatim tail
    assert sent["expired"][-1]["content"].startswith("question 7: ")
    assert check_pairing(sent["expired"]) == []
