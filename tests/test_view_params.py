"""`leanreplay view` under hostile URLs, in process: every bad parameter is a 400 or 404 page
(never a 500), and the token hand-off redirects only to this server's own paths."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Message

from leanreplay.index import Workspace
from leanreplay.index.faces._net import HttpPolicy, own_path
from leanreplay.index.faces.view import MAX_PARAM, build_app

PORT = 8000
TOKEN = "t" * 32


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ASGIApp]:
    home = tmp_path_factory.mktemp("view-params") / "home"
    with Workspace(home) as ws:
        for cid in ("c1", "c2"):
            ws.append(cid, {"role": "user", "content": "hello"})
            ws.append(cid, {"role": "assistant", "content": "x" * 3000})
            ws.append(cid, {"role": "user", "content": "again"})
        yield build_app(ws, token=TOKEN, port=PORT, policy=HttpPolicy.for_bind("127.0.0.1", PORT))


@pytest.fixture(scope="module")
def client(app: ASGIApp) -> TestClient:
    client = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", raise_server_exceptions=False)
    client.cookies.set(f"leanreplay_view_{PORT}", TOKEN)
    return client


def _raw_get(app: ASGIApp, path: str, query: str) -> tuple[int, dict[bytes, bytes]]:
    """One GET with the path exactly as a client sent it (an HTTP client would normalize
    ``//evil.example/`` into a host)."""
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [(b"host", f"127.0.0.1:{PORT}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", PORT),
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], dict(sent[0].get("headers", []))


@pytest.mark.parametrize(
    "path",
    ["//evil.example/", "/\\evil.example/", "/\\/evil.example/x", "///evil.example", "/\t/evil"],
    ids=repr,
)
def test_the_token_hand_off_never_redirects_off_the_server(app: ASGIApp, path: str) -> None:
    status, headers = _raw_get(app, path, f"token={TOKEN}&id=c1")
    assert status == 303
    location = headers[b"location"].decode()
    assert location.startswith("/")
    assert not location.startswith(("//", "/\\"))
    assert "\\" not in location
    assert "\t" not in location


def test_own_path_keeps_a_plain_path() -> None:
    assert own_path("/c") == "/c"
    assert own_path("/c/raw") == "/c/raw"
    assert own_path("/é x") == "/%C3%A9%20x"


@pytest.mark.parametrize(
    ("url", "status", "words"),
    [
        ("/c?id=conv\"'><img src=x onerror=alert(1)>", 404, "no conversation"),
        ("/api/replay_stats?id=conv\"'><img>", 404, "no conversation"),
        ("/c?id=c1&before=99999999999999999999999", 400, "before must be a whole number"),
        ("/c?id=c1&before=-5", 400, "before must be a whole number"),
        ("/c?id=c1&before=abc", 400, "before must be a whole number"),
        ("/c?id=c1&tab=replay&turn=1e9", 400, "turn must be a whole number"),
        ("/c?id=c1&tab=replay&end=0", 400, "end must be a whole number"),
        ("/?page=99999999999999999999999", 400, "page must be a whole number"),
        (
            "/api/conversation_read?conversation_id=c1&message_id=x&offset=-1",
            400,
            "offset must be a whole number",
        ),
        ("/c?id=c1&tab=replay&turn=5000", 404, "turn"),
        ("/c?id=c1&at=nope", 404, "nope"),
    ],
    ids=str,
)
def test_bad_parameters_are_400_or_404(
    client: TestClient, url: str, status: int, words: str
) -> None:
    response = client.get(url)
    assert response.status_code == status, response.text[:300]
    assert words in response.text
    assert "<img src=x" not in response.text  # escaped, never markup


def test_big_but_valid_positions_are_the_last_page(client: TestClient) -> None:
    assert client.get(f"/c?id=c1&before={MAX_PARAM}").status_code == 200
    assert client.get(f"/?page={MAX_PARAM}").status_code == 200


ROUTES = ["/", "/c", "/c/raw", "/api/conversation_read", "/api/replay_stats", "/snapshots"]
NAMES = [
    "id",
    "mid",
    "tab",
    "before",
    "turn",
    "end",
    "page",
    "offset",
    "sort",
    "dir",
    "q",
    "at",
    "provider",
    "age",
    "conversation_id",
    "message_id",
    "tool_call_id",
]
VALUES = st.one_of(
    st.text(max_size=30),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["c1", "c2", "replay", "size", "summary", "history", "asc", "1e3", ""]),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    route=st.sampled_from(ROUTES),
    params=st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=5),
)
def test_no_parameter_makes_a_500(client: TestClient, route: str, params: dict[str, str]) -> None:
    response = client.get(route, params=params)
    assert response.status_code in (200, 400, 404), (route, params, response.text[:300])
