"""The HTTP face over real sockets on loopback: it answers exactly the Hosts it is reached
by, refuses a spoofed loopback Host on another address (127.0.0.2 stands for the network),
refuses Origins of other local servers, and never runs with a short or missing token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.builders import MCP_INITIALIZE
from tests.conftest import REPO

TOKEN = "t" * 16 + "0123456789abcdef"  # 32 chars


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, proc: subprocess.Popen[str], address: str, port: int) -> None:
        self.proc, self.address, self.port = proc, address, port
        self.url = f"http://{address}:{port}/mcp"

    def post(
        self, *, host: str | None = None, origin: str | None = None, token: str = TOKEN
    ) -> int:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}",
        }
        if host is not None:
            headers["Host"] = host
        if origin is not None:
            headers["Origin"] = origin
        response = httpx2.post(self.url, json=MCP_INITIALIZE, headers=headers, timeout=30)
        return int(response.status_code)


def _start(tmp_path: Path, address: str, *args: str, token: str | None = TOKEN) -> Server:
    port = _free_port(address)
    env = {k: v for k, v in os.environ.items() if k != "LEANREPLAY_TOKEN"}
    if token is not None:
        env["LEANREPLAY_TOKEN"] = token
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leanreplay.index.cli",
            "--home",
            str(tmp_path / "home"),
            "--root",
            str(tmp_path),
            "serve",
            "--http",
            f"{address}:{port}",
            *args,
        ],
        env=env,
        cwd=str(REPO),
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection((address, port), timeout=0.2):
                return Server(proc, address, port)
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the server did not start: {proc.communicate()[1]}")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.proc.terminate()
        server.proc.wait(10)
        assert server.proc.stderr is not None
        server.proc.stderr.close()


def test_a_server_answers_the_host_it_is_reached_by(tmp_path: Path, serve: list[Server]) -> None:
    server = _start(tmp_path, "127.0.0.2", "--allowed-host", "lean.example")
    serve.append(server)
    assert server.post() == 200  # Host: 127.0.0.2:PORT, the address it serves
    assert server.post(host=f"lean.example:{server.port}") == 200
    assert server.post(host="lean.example") == 421  # another port: not this server
    assert server.post(host=f"evil.example:{server.port}") == 421


def test_a_spoofed_loopback_host_from_another_address_is_refused(
    tmp_path: Path, serve: list[Server]
) -> None:
    server = _start(tmp_path, "127.0.0.2")
    serve.append(server)
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}"):
        assert server.post(host=host) == 421, host


def test_only_the_servers_own_origin_is_accepted(tmp_path: Path, serve: list[Server]) -> None:
    server = _start(tmp_path, "127.0.0.1", "--allowed-origin", "https://app.example")
    serve.append(server)
    assert server.post(origin=f"http://127.0.0.1:{server.port}") == 200
    assert server.post(origin="https://app.example") == 200
    assert server.post(origin=f"http://127.0.0.1:{server.port + 1}") == 403
    assert server.post(origin=f"http://localhost:{server.port + 1}") == 403
    assert server.post(origin="http://127.0.0.1") == 403
    assert server.post(token="wrong" * 8) == 401


def test_without_a_token_one_is_generated_and_printed_once(
    tmp_path: Path, serve: list[Server]
) -> None:
    server = _start(tmp_path, "127.0.0.1", token=None)
    serve.append(server)
    assert server.proc.stderr is not None
    line = server.proc.stderr.readline()
    while "bearer token" not in line:
        line = server.proc.stderr.readline()
        assert line, "no token was printed"
    token = line.rsplit(" ", 1)[1].strip()
    assert len(token) >= 32
    assert server.post(token=token) == 200
    assert server.post(token=TOKEN) == 401


def _scope(
    host: str, server: str, origin: str | None = None, *more: tuple[bytes, bytes]
) -> dict[str, object]:
    headers = [(b"host", host.encode()), *more]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {"type": "http", "headers": headers, "server": (server, 8765)}


def test_a_wildcard_bind_answers_loopback_names_only_on_loopback_connections() -> None:
    # A wildcard bind cannot be opened in a test (it listens beyond loopback): the policy
    # it gets is checked on the request scopes uvicorn would pass.
    from leanreplay.index.faces.server import HttpPolicy

    policy = HttpPolicy.for_bind("0.0.0.0", 8765, ["lean.example", "[fd00::1]:9000"])
    assert policy.refusal(_scope("localhost:8765", "127.0.0.1")) is None
    assert policy.refusal(_scope("lean.example:8765", "192.0.2.10")) is None
    assert policy.refusal(_scope("[fd00::1]:9000", "fd00::1")) is None
    refused = policy.refusal(_scope("127.0.0.1:8765", "192.0.2.10"))
    assert refused is not None
    assert refused[0] == 421
    assert policy.refusal(_scope("other.example:8765", "192.0.2.10")) == (
        421,
        "this server does not answer for that Host; use the address it serves",
    )
    origin = policy.refusal(_scope("lean.example:8765", "192.0.2.10", "http://localhost:3000"))
    assert origin is not None
    assert origin[0] == 403


def test_one_host_and_origin_rule_serves_both_http_faces() -> None:
    # The MCP face and the view share faces/_net.HttpPolicy: what one refuses, so does the
    # other (the view had its own copy, without the loopback-from-network rule, and the MCP
    # face did not look at Sec-Fetch-Site).
    from leanreplay.index.faces import server, view
    from leanreplay.index.faces._net import HttpPolicy

    assert server.HttpPolicy is HttpPolicy
    assert "HttpPolicy" in view.__dict__
    policy = HttpPolicy.for_bind("127.0.0.1", 8765)
    assert policy.refusal(_scope("127.0.0.1:8765", "127.0.0.1")) is None
    assert policy.refusal(_scope("localhost:8765", "127.0.0.1", "http://localhost:8765/")) is None
    cross = policy.refusal(
        _scope("127.0.0.1:8765", "127.0.0.1", None, (b"sec-fetch-site", b"cross-site"))
    )
    assert cross == (403, "cross-site requests are refused")
    same = (b"sec-fetch-site", b"same-origin")
    assert policy.refusal(_scope("127.0.0.1:8765", "127.0.0.1", None, same)) is None
    # Any Host (the view with --allow-remote, token required): Origin is still checked.
    anywhere = HttpPolicy(None)
    assert anywhere.refusal(_scope("view.example:8765", "192.0.2.10")) is None
    refused = anywhere.refusal(_scope("view.example:8765", "192.0.2.10", "http://evil.example"))
    assert refused is not None
    assert refused[0] == 403
