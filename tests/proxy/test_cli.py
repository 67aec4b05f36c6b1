"""`leanreplay proxy`: the line it prints once it accepts connections, and the bind rules
it shares with the other HTTP faces."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx2
from click.testing import CliRunner

from leanreplay.index.faces.cli import cli
from tests.proxy.upstream import FakeUpstream, answer


def test_the_command_prints_its_address_and_serves(upstream: FakeUpstream, tmp_path: Path) -> None:
    upstream.script.clear()
    upstream.push(answer("through the command"))
    command = [sys.executable, "-m", "leanreplay.index.cli", "--home", str(tmp_path), "proxy"]
    command += ["--upstream", upstream.url, "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            found = re.fullmatch(r"leanreplay proxy on (http://127\.0\.0\.1:\d+) -> (.+)", line)
            assert found, line
            assert found.group(2) == upstream.url
            response = httpx2.post(
                found.group(1) + "/v1/messages",
                json={
                    "model": "m",
                    "max_tokens": 9,
                    "messages": [{"role": "user", "content": "hi"}],
                },
                headers={"x-api-key": "k"},
                timeout=30,
            )
            assert response.json()["content"][0]["text"] == "through the command"
        finally:
            process.terminate()
            process.wait(10)


def test_a_non_loopback_address_needs_allow_remote(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--home", str(tmp_path), "proxy", "--upstream", "http://x", "--host", "0.0.0.0"]
    )
    assert result.exit_code != 0
    assert "not a loopback address; bind 127.0.0.1, or pass --allow-remote" in result.output


def test_a_short_token_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--home", str(tmp_path), "proxy", "--upstream", "http://x", "--token", "short"]
    )
    assert result.exit_code != 0
    assert "fewer than 32" in result.output


def test_an_upstream_that_is_no_url_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "proxy", "--upstream", "api.x"])
    assert result.exit_code != 0
    assert "the upstream must be an http(s) URL" in result.output


def test_the_faces_listen_on_tcp_sockets_asyncio_sets_no_delay_on() -> None:
    # asyncio sets TCP_NODELAY only on a socket whose proto is TCP; on a socket made with
    # proto 0 every answer on a kept-alive connection waits 40 ms for a delayed ACK.
    import socket

    from leanreplay.index.faces._net import bind

    with bind("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
        with socket.create_connection(sock.getsockname()):
            accepted, _ = sock.accept()
            with accepted:
                assert accepted.proto == socket.IPPROTO_TCP
