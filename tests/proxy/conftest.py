"""Fixtures of the proxy tests: a scripted upstream over real HTTP (one per module) and a
proxy in front of it over real HTTP, on a fresh home for each test."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from leanreplay.index import Workspace
from leanreplay.index.faces.proxy import ProxyConfig, proxy_app
from leanreplay.placeholders import check_pairing
from tests.proxy.upstream import FakeUpstream, serve


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@dataclass
class Proxy:
    url: str
    home: Path
    upstream: FakeUpstream

    def workspace(self) -> Workspace:
        return Workspace(self.home)


def start_proxy(home: Path, upstream: FakeUpstream, **config: object) -> tuple[Proxy, object]:
    ws = Workspace(home)
    url, stop = serve(proxy_app(ws, ProxyConfig(upstream.url, **config)))  # type: ignore[arg-type]

    def close() -> None:
        stop()
        ws.close()

    return Proxy(url, home, upstream), close


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
    """Every request the proxy sent upstream passes `check_pairing`."""
    for recorded in upstream.requests:
        if recorded.path in ("/v1/messages", "/v1/chat/completions", "/v1/responses"):
            body = recorded.json
            history = body.get("messages", body.get("input"))
            if isinstance(history, list):
                assert check_pairing(history) == [], recorded.body[:300]
