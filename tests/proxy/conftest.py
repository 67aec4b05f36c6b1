"""Fixtures of the proxy tests: a scripted upstream over real HTTP (one per module) and a
proxy in front of it over real HTTP, on a fresh home for each test."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from leanreplay.index import Workspace
from leanreplay.index.faces.proxy import ProxyConfig, proxy_app
from leanreplay.placeholders import check_pairing, role_of
from tests.proxy.upstream import FakeUpstream, serve

KEY = "sk-ant-test-0123456789abcdef"  # the client's API key: it must reach the upstream only


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@dataclass
class Proxy:
    url: str
    home: Path
    upstream: FakeUpstream
    clients: list[Any] = field(default_factory=list)
    app: Any = None

    def workspace(self) -> Workspace:
        """The proxy's store, once its deferred writes are done (they run after the answer
        went out: read the store after a request only through this)."""
        assert self.app.settle(), "the proxy's writes did not finish"
        return Workspace(self.home)

    def anthropic(self) -> anthropic.Anthropic:
        """The Anthropic SDK's client, pointed at the proxy (closed with it)."""
        client = anthropic.Anthropic(base_url=self.url, api_key=KEY, max_retries=0)
        self.clients.append(client)
        return client

    def openai(self) -> openai.OpenAI:
        """The OpenAI SDK's client, pointed at the proxy (closed with it)."""
        client = openai.OpenAI(base_url=f"{self.url}/v1", api_key="sk-openai-test", max_retries=0)
        self.clients.append(client)
        return client


def start_proxy(home: Path, upstream: FakeUpstream, **config: object) -> tuple[Proxy, object]:
    ws = Workspace(home)
    app = proxy_app(ws, ProxyConfig(upstream.url, **config))  # type: ignore[arg-type]
    url, stop = serve(app)
    running = Proxy(url, home, upstream, app=app)

    def close() -> None:
        for client in running.clients:
            client.close()
        stop()
        ws.close()

    return running, close


@pytest.fixture
def proxy(upstream: FakeUpstream, tmp_path: Path) -> Iterator[Proxy]:
    upstream.script.clear()
    upstream.requests.clear()
    upstream.default = None
    running, close = start_proxy(tmp_path / "home", upstream)
    try:
        yield running
    finally:
        close()  # type: ignore[operator]
    assert_paired(upstream)


def assert_paired(upstream: FakeUpstream) -> None:
    """Every request the proxy built passes `check_pairing` (a history of malformed messages
    goes upstream as the client sent it, for the upstream to judge)."""
    for recorded in upstream.requests:
        if recorded.path in ("/v1/messages", "/v1/chat/completions", "/v1/responses"):
            body = recorded.json
            history = body.get("messages", body.get("input"))
            if isinstance(history, list) and all(
                isinstance(m, dict) and role_of(m) for m in history
            ):
                assert check_pairing(history) == [], recorded.body[:300]
