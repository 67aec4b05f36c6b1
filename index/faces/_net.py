"""The HTTP policy shared by the faces that serve HTTP (the MCP server, the gateway and the
web view): loopback names, the listening socket, the token length and the token gate, and
which ``Host`` and ``Origin`` headers a face answers."""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlencode

if TYPE_CHECKING:  # the web stack is the mcp extra; the CLI imports this module without it
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "MIN_TOKEN_CHARS",
    "HostOriginMiddleware",
    "HttpPolicy",
    "TokenGate",
    "bind",
    "is_loopback",
    "json_refusal",
    "own_path",
]

MIN_TOKEN_CHARS = 32  # a bearer token is the only lock on the HTTP face: no short ones

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_WILDCARDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1, ``[::1]``)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything says "serving" (a taken port fails here;
    port 0 picks a free one, read it back from the socket).

    Raises:
        OSError: the address is taken or cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0 (as socket.create_server makes it): asyncio sets TCP_NODELAY only on
    # sockets that say they are TCP, and without it every answer on a kept-alive connection
    # waits 40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)  # connections wait in the backlog until the server serves them
    except BaseException:
        sock.close()
        raise
    return sock


def _host_port(host: str, port: int) -> str:
    host = host.lower()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address, as a Host header spells it
    return f"{host}:{port}"


@dataclass(frozen=True)
class HttpPolicy:
    """Which ``Host`` and ``Origin`` headers an HTTP face answers.

    ``hosts`` are ``name:port`` values: the bind address itself, ``localhost`` and its
    addresses when the bind is loopback or a wildcard, and every ``--allowed-host``; None
    answers any Host (the view with ``--allow-remote``, where the token is required). A
    loopback name is honoured only on a loopback connection, so a remote client cannot
    borrow it. An ``Origin`` must be the server's own (``http://`` + the request's Host) or
    one of ``origins``, and a browser's ``Sec-Fetch-Site: cross-site`` is refused.
    """

    hosts: frozenset[str] | None
    origins: frozenset[str] = frozenset()

    @classmethod
    def for_bind(
        cls, host: str, port: int, allowed_hosts: Iterable[str] = (), origins: Iterable[str] = ()
    ) -> HttpPolicy:
        bound = host.strip("[]").lower()
        names = set()
        if bound not in _WILDCARDS:
            names.add(_host_port(bound, port))
        if bound in _WILDCARDS or bound in ("localhost", "127.0.0.1", "::1"):
            names.update(_host_port(n.strip("[]"), port) for n in _LOOPBACK_NAMES)
        for extra in allowed_hosts:
            extra = extra.strip().lower()
            if not extra:
                continue
            name, sep, given = extra.rpartition(":")
            if sep and given.isdigit() and (name.endswith("]") or ":" not in name):
                names.add(extra)  # name:port, or [v6]:port
            else:
                names.add(_host_port(extra.strip("[]"), port))
        if port == 80:  # clients leave the default port out of the Host header
            names.update(n.rsplit(":", 1)[0] for n in list(names))
        return cls(frozenset(names), frozenset(o.strip().lower().rstrip("/") for o in origins))

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        if self.hosts is not None:
            if host not in self.hosts:
                return 421, "this server does not answer for that Host; use the address it serves"
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            server = scope.get("server") or ("", 0)
            if is_loopback(name) and not is_loopback(str(server[0])):
                return 421, "a loopback Host arrived from the network; use the address it serves"
        origin = headers.get(b"origin")
        if origin is not None:
            given = origin.decode("latin-1").strip().lower().rstrip("/")
            if given != f"http://{host}" and given not in self.origins:
                return 403, "cross-origin requests are refused; allow an origin explicitly"
        if headers.get(b"sec-fetch-site", b"").strip().lower() == b"cross-site":
            return 403, "cross-site requests are refused"
        return None


Refuse = Callable[["Send", int, str], Awaitable[None]]


async def json_refusal(send: Send, status: int, reason: str) -> None:
    """A refusal as ``{"error": reason}`` (the MCP face's answer)."""
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps({"error": reason}).encode()})


class HostOriginMiddleware:
    """Answer only requests whose ``Host`` and ``Origin`` the `HttpPolicy` allows (DNS
    rebinding, spoofed hosts, pages of other local servers); ``refuse`` writes the answer
    to the others in the face's own form."""

    def __init__(self, app: ASGIApp, policy: HttpPolicy, refuse: Refuse = json_refusal) -> None:
        self.app = app
        self.policy = policy
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.policy.refusal(scope)
            if refused is not None:
                await self.refuse(send, *refused)
                return
        await self.app(scope, receive, send)


def own_path(path: str) -> str:
    """``path`` as a path of this server: one leading slash, percent-encoded, so that a
    redirect to it never leaves the server (``//evil.example/`` and ``/\\evil.example/`` are
    protocol-relative addresses of another host to a browser)."""
    return quote("/" + path.lstrip("/\\"), safe="/-._~!$&'()*+,;=:@")


class TokenGate:
    """Answer only requests that carry the token: an ``Authorization: Bearer`` header, or,
    with ``cookie`` (a browser face), the token given once in the URL (``?token=``), traded
    for an HttpOnly SameSite=Strict cookie of that name and dropped from the address bar.
    ``refuse`` writes the 401, with ``message`` (how to get in), in the face's own form."""

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        *,
        cookie: str | None = None,
        refuse: Refuse = json_refusal,
        message: str = "missing or wrong bearer token; send Authorization: Bearer TOKEN",
    ) -> None:
        self.app = app
        self.token = token.encode()
        self.bearer = b"Bearer " + self.token
        self.cookie = cookie
        self.refuse = refuse
        self.message = message

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        if hmac.compare_digest(headers.get(b"authorization", b""), self.bearer):
            await self.app(scope, receive, send)
            return
        if self.cookie is not None:
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
            given = dict(query).get("token")
            if given is not None and hmac.compare_digest(given.encode(), self.token):
                rest = urlencode([(k, v) for k, v in query if k != "token"])
                location = own_path(scope["path"]) + ("?" + rest if rest else "")
                cookie = f"{self.cookie}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"
                await send(
                    {
                        "type": "http.response.start",
                        "status": 303,
                        "headers": [
                            (b"location", location.encode()),
                            (b"set-cookie", cookie.encode()),
                            (b"cache-control", b"no-store"),
                            (b"referrer-policy", b"no-referrer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(headers.get(b"cookie", b"").decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed cookie header is just no cookie
                jar = SimpleCookie()
            kept = jar[self.cookie].value if self.cookie in jar else ""
            if hmac.compare_digest(kept.encode(), self.token):
                await self.app(scope, receive, send)
                return
        await self.refuse(send, 401, self.message)
