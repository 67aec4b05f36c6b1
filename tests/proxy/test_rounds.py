"""The proxy's own retrieval rounds: the model calls conversation_read (naming a placeholder
of the request it got) or conversation_search, the proxy answers and calls upstream again,
and the client gets one answer in which those rounds do not appear."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from leanreplay.index.faces.proxy import PROXY_KEY
from leanreplay.placeholders import check_pairing, is_placeholder, parse_read_call
from tests.conftest import SAMPLES
from tests.proxy.conftest import Proxy, assert_paired, start_proxy
from tests.proxy.test_anthropic import BIG, EAGER, PNG, body, history, post
from tests.proxy.upstream import Answer, FakeUpstream, Recorded, Tool, answer


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def read_a_placeholder(recorded: Recorded) -> Answer:
    """The model asks for the original that the first placeholder of its request names."""
    history = recorded.json.get("messages", recorded.json.get("input"))
    text = next(s for s in strings(history) if is_placeholder(s))
    call = parse_read_call(text)
    assert call is not None
    return answer("Let me read the original.", Tool("conversation_read", call))


def result_of(message: dict[str, Any]) -> dict[str, Any]:
    block = message["content"][0]
    assert block["type"] == "tool_result"
    parsed: dict[str, Any] = json.loads(block["content"][0]["text"])
    return parsed


@pytest.fixture
def eager(upstream: FakeUpstream, tmp_path: Path) -> Any:
    upstream.script.clear()
    upstream.requests.clear()
    upstream.default = None
    running, close = start_proxy(tmp_path / "home", upstream, policy=EAGER)
    yield running
    close()  # type: ignore[operator]
    assert_paired(upstream)


def test_the_model_reads_an_elided_original_in_a_round_the_client_never_sees(
    eager: Proxy,
) -> None:
    up = eager.upstream
    up.push(read_a_placeholder, answer("The log says nothing of interest."))
    messages = history(3)
    reply = eager.anthropic().messages.create(model="claude-x", max_tokens=99, messages=messages)
    # The client: one message, no block for a tool it did not declare, usage of both rounds.
    assert [b.type for b in reply.content] == ["text", "text"]
    assert reply.content[1].text == "The log says nothing of interest."  # type: ignore[union-attr]
    assert reply.stop_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (200, 20)
    # The upstream: the second round carries the original, byte for byte.
    assert len(up.requests) == 2
    second = up.requests[1].json["messages"]
    assert second[-2]["content"][1]["name"] == "conversation_read"
    assert result_of(second[-1])["content"] == BIG
    assert check_pairing(second) == []
    # Stored in place: the next request replays the round where it happened.
    ws = eager.workspace()
    (cid,) = ws.conversations()
    stored = ws.messages(cid)
    assert [m[PROXY_KEY]["part"] for m in stored[-3:]] == ["round", "results", "round"]
    up.push(answer("You are welcome."))
    follow = [
        *messages,
        {"role": "assistant", "content": reply.content},
        {"role": "user", "content": "thanks"},
    ]
    eager.anthropic().messages.create(model="claude-x", max_tokens=99, messages=follow)
    third = up.requests[2].json["messages"]
    assert third[-5]["content"] == "and now?"
    assert third[-4]["content"][1]["name"] == "conversation_read"
    assert result_of(third[-3])["content"] == BIG
    assert third[-2]["content"] == [{"type": "text", "text": "The log says nothing of interest."}]
    assert third[-1]["content"] == "thanks"
    ws = eager.workspace()
    assert ws.conversations() == [cid]
    assert ws.messages(cid)[-1]["content"] == "thanks"  # stored, after the round


def test_a_streamed_round_is_one_message_to_the_sdk(eager: Proxy) -> None:
    up = eager.upstream
    up.push(read_a_placeholder, answer("Nothing there."))
    with eager.anthropic().messages.stream(
        model="claude-x", max_tokens=99, messages=history(3)
    ) as s:
        events = list(s)
        final = s.get_final_message()
    assert [b.type for b in final.content] == ["text", "text"]
    assert final.usage.input_tokens == 200
    starts = [e.index for e in events if e.type == "content_block_start"]
    assert starts == [0, 1]
    assert all(
        getattr(e, "content_block", None) is None or e.content_block.type == "text" for e in events
    )
    assert [e.type for e in events].count("message_start") == 1
    assert [e.type for e in events].count("message_stop") == 1
    assert len(up.requests) == 2


def test_the_cached_prefix_holds_across_a_round(proxy: Proxy) -> None:
    # With the default (cache-aware) policy nothing is elided yet: each upstream request
    # extends the one before it, the proxy's round included.
    up = proxy.upstream
    up.push(
        answer("Searching.", Tool("conversation_search", {"query": "build log"})), answer("Found.")
    )
    messages = history(2)
    reply = proxy.anthropic().messages.create(model="claude-x", max_tokens=99, messages=messages)
    up.push(answer("ok"))
    follow = [
        *messages,
        {"role": "assistant", "content": reply.content},
        {"role": "user", "content": "go on"},
    ]
    proxy.anthropic().messages.create(model="claude-x", max_tokens=99, messages=follow)
    first, second, third = (r.body.decode() for r in up.requests)
    assert second.startswith(first[: first.rindex("]", 0, first.index('"model"'))])
    history_of_second = second[: second.index('],"model"')]
    assert third.startswith(history_of_second)


def test_our_call_beside_the_clients_goes_to_the_client_without_ours(eager: Proxy) -> None:
    up = eager.upstream
    read = Tool("Read", {"file_path": "notes.txt"}, id="toolu_read")
    search = Tool("conversation_search", {"query": "log"}, id="toolu_search")
    up.push(answer("Both at once.", read, search))
    messages = history(1)
    reply = eager.anthropic().messages.create(model="claude-x", max_tokens=99, messages=messages)
    assert [b.type for b in reply.content] == ["text", "tool_use"]
    assert reply.content[1].name == "Read"  # type: ignore[union-attr]
    assert reply.stop_reason == "tool_use"
    assert len(up.requests) == 1
    # The client answers its call (with a note after it, as Claude Code does).
    results = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_read", "content": "file text"},
            {"type": "text", "text": "<system-reminder>keep going</system-reminder>"},
        ],
    }
    up.push(answer("Done."))
    follow = [*messages, {"role": "assistant", "content": reply.content}, results]
    eager.anthropic().messages.create(model="claude-x", max_tokens=99, messages=follow)
    sent = up.requests[1].json["messages"]
    assert [b.get("id") for b in sent[-2]["content"]] == [None, "toolu_read", "toolu_search"]
    kinds = [(b["type"], b.get("tool_use_id")) for b in sent[-1]["content"]]
    assert kinds == [
        ("tool_result", "toolu_read"),
        ("tool_result", "toolu_search"),
        ("text", None),
    ]
    assert check_pairing(sent) == []


def test_rounds_stop_at_the_limit_with_a_note(eager: Proxy) -> None:
    up = eager.upstream
    up.default = lambda recorded: answer("Again.", Tool("conversation_search", {"query": "x"}))
    reply = eager.anthropic().messages.create(model="claude-x", max_tokens=99, messages=history(1))
    assert len(up.requests) == 5  # the first call and 4 rounds
    assert reply.stop_reason == "end_turn"
    assert reply.content[-1].text.startswith("[leanreplay] Stopped after 4 rounds")  # type: ignore[union-attr]
    assert all(b.type == "text" for b in reply.content)
    up.default = None
    up.push(answer("Fine."))
    follow = [
        *history(1),
        {"role": "assistant", "content": reply.content},
        {"role": "user", "content": "ok"},
    ]
    eager.anthropic().messages.create(model="claude-x", max_tokens=99, messages=follow)
    assert check_pairing(up.requests[-1].json["messages"]) == []


def test_the_reader_a_card_names_reads_only_this_conversations_attachments(
    proxy: Proxy,
) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "look"}, image]}]

    def view(recorded: Recorded) -> Answer:
        card = recorded.json["messages"][0]["content"][1]["text"]
        path = card.split('path="', 1)[1].split('"', 1)[0]
        outside = str(SAMPLES / "blue_120x80.jpg")  # a real image, but not this conversation's
        return answer(Tool("image_view", {"path": path}), Tool("image_view", {"path": outside}))

    proxy.upstream.push(view, answer("A red rectangle."))
    reply = proxy.anthropic().messages.create(model="claude-x", max_tokens=99, messages=messages)
    assert reply.content[-1].text == "A red rectangle."  # type: ignore[union-attr]
    results = proxy.upstream.requests[1].json["messages"][-1]["content"]
    shown, refused = results
    assert [b["type"] for b in shown["content"]] == ["text", "image"]
    assert refused["is_error"] is True
    assert "blue_120x80.jpg" in refused["content"][0]["text"]
    assert [b["type"] for b in refused["content"]] == ["text"]


def test_every_upstream_request_passes_check_pairing(eager: Proxy) -> None:
    eager.upstream.default = answer("ok")
    broken = [*history(1)[:2], {"role": "user", "content": "never answered the call"}]
    post(eager, body(broken))
    assert check_pairing(eager.upstream.requests[-1].json["messages"]) == []
    httpx2.post  # noqa: B018 - the module is used by the helpers imported above


def test_leanreplay_view_shows_a_proxied_conversation_and_its_round(eager: Proxy) -> None:
    from leanreplay.index.faces._net import HttpPolicy
    from leanreplay.index.faces.view import build_app
    from tests.proxy.upstream import serve

    eager.upstream.push(read_a_placeholder, answer("The log says nothing of interest."))
    eager.anthropic().messages.create(model="claude-x", max_tokens=99, messages=history(3))
    ws = eager.workspace()
    (cid,) = ws.conversations()
    url, stop = serve(build_app(ws, token=None, port=0, policy=HttpPolicy(None)))
    try:
        listed = httpx2.get(url + "/", timeout=30).text
        page = httpx2.get(url + "/c", params={"id": cid}, timeout=30).text
    finally:
        stop()
    assert cid in listed
    assert "format anthropic" in page
    assert "conversation_read" in page  # the proxy's round, stored in place
    assert "The log says nothing of interest." in page
