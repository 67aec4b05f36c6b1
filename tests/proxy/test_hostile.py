"""Hostile input and failing parts: malformed and oversized bodies, slow clients, upstreams
that hang, break off or refuse, clients that go away; each answered in the API's own error
format within bounded time, nothing stored lost."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from leanreplay.index.faces.proxy import TOKEN_HEADER
from tests.proxy.conftest import Proxy, start_proxy
from tests.proxy.test_anthropic import body, history, post
from tests.proxy.upstream import Cut, Failure, FakeUpstream, Hang, answer
from tests.smallfs import on_small_home


@pytest.fixture
def tight(upstream: FakeUpstream, tmp_path: Path) -> Any:
    """A proxy with short limits, to meet them in a test's time."""
    upstream.script.clear()
    upstream.requests.clear()
    upstream.default = None
    running, close = start_proxy(
        tmp_path / "home",
        upstream,
        body_timeout=0.5,
        upstream_timeout=0.5,
        max_request_bytes=1_000_000,
    )
    yield running
    close()  # type: ignore[operator]


def anthropic_error(response: httpx2.Response, status: int, kind: str) -> str:
    assert response.status_code == status
    error = response.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == kind
    message: str = error["error"]["message"]
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"model": "m", "messages": [', "not a JSON object"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"messages": [{"role": "user", "content": "x"}], "n": NaN}', "not a JSON object"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
    ids=["truncated", "an-array", "nan", "not-utf8"],
)
def test_malformed_bodies_get_a_one_line_error(proxy: Proxy, raw: bytes, words: str) -> None:
    message = anthropic_error(post(proxy, raw), 400, "invalid_request_error")
    assert words in message
    chat = httpx2.post(f"{proxy.url}/v1/chat/completions", content=raw, timeout=30)
    assert chat.status_code == 400
    assert words in chat.json()["error"]["message"]
    assert proxy.upstream.requests == []


@pytest.mark.parametrize(
    "messages",
    ["a string", [1, "two"], [{"content": "no role"}], {"role": "user"}, []],
    ids=["string", "not-objects", "no-role", "an-object", "empty"],
)
def test_wrong_shapes_go_upstream_as_they_came(proxy: Proxy, messages: Any) -> None:
    # Not the proxy's to judge: the upstream says what is wrong, in its own words.
    proxy.upstream.push(
        Failure(
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "bad messages"},
            },
        )
    )
    text = json.dumps({"model": "m", "max_tokens": 5, "messages": messages})
    response = post(proxy, text)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "bad messages"
    assert proxy.upstream.requests[-1].body == text.encode()


def test_a_1_gb_body_is_refused_from_its_length_before_it_is_read(tight: Proxy) -> None:
    host, port = tight.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (
            "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {1024**3}\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"messages": [' + b" " * 65536)
        answer_bytes = b""
        while b"\r\n\r\n" not in answer_bytes or not answer_bytes.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer_bytes += chunk
    status_line, _, rest = answer_bytes.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 413")
    payload = json.loads(rest.split(b"\r\n\r\n", 1)[1])
    assert payload["error"]["type"] == "request_too_large"
    assert "1,073,741,824 bytes" in payload["error"]["message"]
    assert tight.upstream.requests == []


def test_a_body_over_the_limit_without_a_length_is_refused_as_it_arrives(tight: Proxy) -> None:
    def chunks() -> Any:
        for _ in range(40):
            yield b" " * 65536

    response = httpx2.post(f"{tight.url}/v1/messages", content=chunks(), timeout=30)
    message = anthropic_error(response, 413, "request_too_large")
    assert "over this proxy's limit of 1,000,000 bytes" in message


def test_a_slow_client_times_out_and_others_are_served_meanwhile(tight: Proxy) -> None:
    tight.upstream.default = answer("served")
    host, port = tight.url.removeprefix("http://").split(":")
    got: dict[str, bytes] = {}

    def slow() -> None:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            for _ in range(20):
                time.sleep(0.1)
                try:
                    sock.sendall(b" ")
                except OSError:
                    break
            got["slow"] = sock.recv(65536)

    thread = threading.Thread(target=slow)
    thread.start()
    fast = post(tight, body([{"role": "user", "content": "quick"}]))
    thread.join(10)
    assert fast.json()["content"][0]["text"] == "served"
    assert got["slow"].startswith(b"HTTP/1.1 408")
    assert b"did not arrive within 0.5 s" in got["slow"]


def test_an_upstream_that_hangs_gets_a_timeout_error(tight: Proxy) -> None:
    tight.upstream.push(Hang())
    message = anthropic_error(
        post(tight, body([{"role": "user", "content": "hello?"}])), 504, "timeout_error"
    )
    assert "did not answer in time" in message
    tight.upstream.push(Hang())
    chat = httpx2.post(
        f"{tight.url}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hello?"}]},
        timeout=30,
    )
    assert chat.status_code == 504
    assert chat.json()["error"]["type"] == "server_error"


def test_an_unreachable_upstream_is_a_bad_gateway(upstream: FakeUpstream, tmp_path: Path) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    gone = FakeUpstream()
    gone.url = f"http://127.0.0.1:{port}"
    running, close = start_proxy(tmp_path / "home", gone)
    try:
        response = post(running, body([{"role": "user", "content": "anyone?"}]))
    finally:
        close()  # type: ignore[operator]
    message = anthropic_error(response, 502, "api_error")
    assert "could not reach the upstream" in message


def test_an_upstream_that_breaks_off_mid_stream_ends_with_an_error_event(proxy: Proxy) -> None:
    proxy.upstream.push(Cut(answer("a long answer that never ends"), after=4))
    client = proxy.anthropic()
    with (
        pytest.raises(anthropic.APIError, match="broke off"),
        client.messages.stream(
            model="m", max_tokens=9, messages=[{"role": "user", "content": "go"}]
        ) as stream,
    ):
        for _ in stream:
            pass


def test_a_client_that_goes_away_cancels_the_upstream_call(proxy: Proxy) -> None:
    proxy.upstream.push(Hang(after=3))
    text = json.dumps(
        {
            "model": "m",
            "max_tokens": 9,
            "stream": True,
            "messages": [{"role": "user", "content": "go"}],
        }
    )
    with httpx2.stream("POST", f"{proxy.url}/v1/messages", content=text, timeout=30) as response:
        lines = response.iter_lines()
        assert next(lines).startswith("event: message_start")
    deadline = time.monotonic() + 10
    while proxy.upstream.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proxy.upstream.disconnects == 1


def test_upstream_errors_pass_through_unchanged(proxy: Proxy) -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    proxy.upstream.push(Failure(429, error, {"retry-after": "7", "request-id": "req_1"}))
    response = post(proxy, body([{"role": "user", "content": "hi"}]))
    assert response.status_code == 429
    assert response.json() == error
    assert response.headers["retry-after"] == "7"
    assert response.headers["request-id"] == "req_1"
    client = proxy.openai()
    proxy.upstream.push(
        Failure(
            401,
            {
                "error": {
                    "message": "bad key",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
        )
    )
    with pytest.raises(openai.AuthenticationError, match="bad key"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])


OVERFLOW = Failure(
    400,
    {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 250000 tokens > 20000 maximum",
        },
    },
)


def test_a_context_overflow_is_compacted_and_retried_exactly_once(proxy: Proxy) -> None:
    proxy.upstream.push(OVERFLOW, answer("fits now"))
    # Results just under the 20,000-char fresh cap reach the upstream whole: the overflow's
    # compaction is what truncates them.
    big = "word " * 3999
    messages = history(4, big=big)
    response = post(proxy, body(messages))
    assert response.json()["content"][0]["text"] == "fits now"
    first, second = proxy.upstream.requests
    assert len(second.body) < len(first.body) * 0.75
    assert "[TRUNCATED" in second.body.decode()
    assert "[TRUNCATED" not in first.body.decode()
    # A second overflow goes to the client as it came: one retry only.
    proxy.upstream.push(OVERFLOW, OVERFLOW)
    response = post(
        proxy,
        body(
            [
                *messages,
                {"role": "assistant", "content": "fits now"},
                {"role": "user", "content": "more"},
            ]
        ),
    )
    assert response.status_code == 400
    assert "prompt is too long" in response.json()["error"]["message"]
    assert len(proxy.upstream.requests) == 4
    (cid,) = proxy.workspace().conversations()
    assert proxy.workspace().messages(cid)[2]["content"][0]["content"] == big


def test_off_loopback_every_request_needs_the_proxys_token(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.script.clear()
    upstream.requests.clear()
    upstream.default = answer("ok")
    token = "t" * 40
    running, close = start_proxy(tmp_path / "home", upstream, token=token)
    try:
        refused = post(running, body([{"role": "user", "content": "hi"}]))
        passed = post(running, body([{"role": "user", "content": "hi"}]), **{TOKEN_HEADER: token})
    finally:
        close()  # type: ignore[operator]
    message = anthropic_error(refused, 401, "authentication_error")
    assert TOKEN_HEADER in message
    assert passed.json()["content"][0]["text"] == "ok"
    assert len(upstream.requests) == 1
    assert TOKEN_HEADER not in upstream.requests[0].headers


_FULL_DISK = """
import json, sys
import httpx2
from leanreplay.index import Workspace
from leanreplay.index.faces.proxy import ProxyConfig, proxy_app
from tests.proxy.upstream import FakeUpstream, answer, serve

home, step = sys.argv[1], sys.argv[-1]
if step == "setup":
    Workspace(home).append("old", {"role": "user", "content": "stored before the disk filled"})
    print("{}")
    sys.exit()
fill_disk(home)
with FakeUpstream() as up:
    up.default = answer("ok")
    ws = Workspace(home)
    url, stop = serve(proxy_app(ws, ProxyConfig(up.url)))
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "a new one"}]}
    response = httpx2.post(url + "/v1/messages", json=body, timeout=60)
    stop()
    old = ws.messages("old")[0]["content"]
    print(json.dumps({"status": response.status_code, "body": response.json(),
                      "upstream": len(up.requests), "old": old}))
"""


def test_a_full_disk_is_the_proxys_failure_in_the_apis_format(tmp_path: Path) -> None:
    out = on_small_home(tmp_path, _FULL_DISK, size="4m", setup=True, mode="full")
    assert out["status"] == 500
    assert out["body"]["type"] == "error"
    message = out["body"]["error"]["message"]
    assert message.startswith("the proxy could not store the conversation")
    assert "\n" not in message
    assert out["upstream"] == 0
    assert out["old"] == "stored before the disk filled"
