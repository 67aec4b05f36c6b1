"""The lean-start gateway: one MCP server in front of many.

`leanreplay serve --upstream CONFIG.json` reads the client configuration every MCP client uses
(``{"mcpServers": {name: {command, args, env} | {url, headers}}}``), starts each upstream
server with the SDK's client, and puts every upstream tool into the workspace's capability
index. The gateway lists only leanreplay's tools (``tool_search`` and ``tool_activate``
among them) plus what has been activated, so a request no longer carries every schema of
every server. Calls to an activated upstream tool are forwarded; the upstream's result or
error comes back unchanged and its progress is relayed. An upstream that dies is reported as
a tool error and restarted once.

Activations made through the gateway belong to the gateway process (every client of one
gateway shares them), like the tools list of a single MCP server.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, Tool

from .._errors import InvalidArgumentError
from .._tools import tools_of
from .._workspace import Workspace
from .server import HttpPolicy, WorkspaceServer, http_app, server_instructions

__all__ = [
    "GatewayServer",
    "UpstreamSpec",
    "Upstream",
    "Upstreams",
    "gateway",
    "read_config",
    "serve_gateway_http",
    "serve_gateway_stdio",
]

START_TIMEOUT_S = 60.0  # an upstream that has not listed its tools by then is left out
MAX_CONFIG_BYTES = 1_000_000
MAX_RESTARTS = 1
INDEX_PREAMBLE = (
    "More tools, one line each, grouped by server. Find one by what it does with tool_search; "
    "make it callable with tool_activate(names=[...]) before calling it:"
)


@dataclass(frozen=True)
class UpstreamSpec:
    """One entry of ``mcpServers``: a command to run over stdio, or a streamable-HTTP URL."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def transport(self) -> Any:
        if self.url is not None:
            return _http_transport(self.url, dict(self.headers))
        assert self.command is not None
        return StdioServerParameters(
            command=self.command,
            args=list(self.args),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    # The SDK leaves a client it was given open; this one closes with the connection.
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30.0) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _strings(value: object, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArgumentError(f"{what} must be a list of strings")
    return list(value)


def _string_map(value: object, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidArgumentError(f"{what} must be an object of strings")
    return dict(value)


def read_config(path: str | os.PathLike[str]) -> list[UpstreamSpec]:
    """The upstream servers of an ``mcpServers`` configuration file, in file order.

    Raises:
        InvalidArgumentError: the file is missing, not JSON, or an entry is malformed; the
            message names the entry and what it needs.
    """
    where = os.fspath(path)
    try:
        with open(where, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise InvalidArgumentError(
            f"cannot read upstream config {where!r}: {exc.strerror}"
        ) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise InvalidArgumentError(f"upstream config {where!r} is over {MAX_CONFIG_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"upstream config {where!r} is not JSON: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise InvalidArgumentError(
            f'upstream config {where!r} needs a non-empty "mcpServers" object, as Claude '
            'Desktop, Claude Code and Cursor write it: {"mcpServers": {"name": {"command": ...}}}'
        )
    specs = []
    for name, entry in servers.items():
        what = f'mcpServers["{name}"]'
        if not isinstance(entry, dict):
            raise InvalidArgumentError(f"{what} must be an object")
        kind = entry.get("type", "http" if "url" in entry else "stdio")
        if kind in ("http", "streamable-http", "streamableHttp"):
            url = entry.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise InvalidArgumentError(f"{what} needs a http(s) url")
            headers = _string_map(entry.get("headers", {}), f"{what}.headers")
            specs.append(UpstreamSpec(name, url=url, headers=headers))
        elif kind == "stdio":
            command = entry.get("command")
            if not isinstance(command, str) or not command:
                raise InvalidArgumentError(f"{what} needs a command (or a url)")
            args = _strings(entry.get("args", []), f"{what}.args")
            env = _string_map(entry["env"], f"{what}.env") if "env" in entry else None
            cwd = entry.get("cwd")
            if cwd is not None and not isinstance(cwd, str):
                raise InvalidArgumentError(f"{what}.cwd must be a string")
            specs.append(UpstreamSpec(name, command, tuple(args), env, cwd))
        else:
            raise InvalidArgumentError(
                f"{what} has type {kind!r}; the gateway speaks stdio and streamable http"
            )
    return specs


def _first_leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, which say nothing themselves."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _connection_lost(exc: BaseException) -> bool:
    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(
        exc, anyio.ClosedResourceError | anyio.BrokenResourceError | ConnectionError | EOFError
    )


class Upstream:
    """One upstream server, kept connected by a supervising task; restarted at most once."""

    def __init__(self, spec: UpstreamSpec) -> None:
        self.spec = spec
        self.client: Client | None = None
        self.tools: list[Tool] = []
        self.error: str | None = None
        self.restarts = 0
        self.attempts = 0  # connection attempts finished, successful or not
        self._lost = anyio.Event()

    @property
    def name(self) -> str:
        return self.spec.name

    async def supervise(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, list the tools, hold the connection until a call finds it lost; then
        reconnect while restarts remain. Reports started after the first attempt, whether it
        connected or not (a broken upstream must not keep the others from serving)."""
        started = False
        while True:
            self._lost = anyio.Event()
            counted = False
            try:
                async with Client(self.spec.transport()) as client:
                    with anyio.fail_after(START_TIMEOUT_S):
                        self.tools = await _all_tools(client)
                    self.client, self.error = client, None
                    self.attempts, counted = self.attempts + 1, True
                    if not started:
                        task_status.started()
                        started = True
                    await self._lost.wait()
            except Exception as exc:  # noqa: BLE001 - an upstream's failure is reported, not raised
                cause = _first_leaf(exc)
                self.error = f"{type(cause).__name__}: {cause}"[:300]
                print(f"leanreplay: upstream {self.name!r} failed: {self.error}", file=sys.stderr)
            finally:
                self.client = None
            if not counted:
                self.attempts += 1
            if not started:
                task_status.started()
                started = True
            if self.restarts >= MAX_RESTARTS:
                return
            await self._lost.wait()  # a call found the connection lost: restart once
            self.restarts += 1

    async def restart(self) -> bool:
        """Ask the supervisor to reconnect once; True when the upstream is back."""
        if self.restarts >= MAX_RESTARTS:
            self.error = f"it stopped again after {MAX_RESTARTS} restart(s)"
            self.client = None  # no later call may use the dead connection
            self._lost.set()  # the supervisor lets go of it and ends
            return False
        target = self.attempts + 1
        self._lost.set()
        with anyio.move_on_after(START_TIMEOUT_S):
            while self.attempts < target:
                await anyio.sleep(0.02)
        return self.client is not None

    async def call(
        self, tool: str, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> CallToolResult:
        """Forward one call; the upstream's result (an error result too) comes back as is."""
        client = self.client
        if client is None:
            raise ToolError(
                f"upstream server {self.name!r} is not running ({self.error or 'stopped'}); "
                "its tools cannot be called now"
            )

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            if context is not None:
                with contextlib.suppress(Exception):
                    await context.report_progress(progress, total, message)

        try:
            return await client.call_tool(tool, arguments, progress_callback=relay)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a sentence for the model
            if not _connection_lost(exc):
                raise ToolError(f"upstream {self.name!r} refused {tool}: {exc}") from None
            back = await self.restart()
            raise ToolError(
                f"upstream server {self.name!r} stopped during {tool} ({exc}); "
                + (
                    "it was restarted: call the tool again"
                    if back
                    else "it could not be restarted, so its tools are unavailable"
                )
            ) from None


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(1000):  # a server that pages forever is cut off
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


class Upstreams:
    """The upstream servers of one gateway; ``async with`` starts and stops them all."""

    def __init__(self, specs: list[UpstreamSpec]) -> None:
        self.servers = {spec.name: Upstream(spec) for spec in specs}
        self._group: Any = None

    async def __aenter__(self) -> Upstreams:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        for upstream in self.servers.values():
            await self._group.start(upstream.supervise)
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._group.cancel_scope.cancel()
        result: bool | None = await self._group.__aexit__(*exc)
        return result


class GatewayServer(WorkspaceServer):
    """The workspace's tools, plus the upstream tools the model has activated."""

    def __init__(self, workspace: Workspace, upstreams: Upstreams) -> None:
        # exposed name -> (upstream, the upstream's own tool)
        routes: dict[str, tuple[Upstream, Tool]] = {}
        for upstream in upstreams.servers.values():
            exposed = workspace.register_tools(upstream.name, upstream.tools)
            by_name = {t.name: t for t in upstream.tools}
            for name, tool in zip(exposed, sorted(by_name), strict=True):
                routes[name] = (upstream, by_name[tool])
        # Clients put a server's instructions in the system prompt: the index goes there, and
        # the servers that did not start, so the model does not look for their tools.
        down = [
            f"- {u.name}: {u.error or 'not started'}"
            for u in upstreams.servers.values()
            if u.client is None
        ]
        notes = f"{INDEX_PREAMBLE}\n{workspace.capabilities.render()}"
        if down:
            notes += "\n\nServers that failed to start (their tools are missing):\n" + "\n".join(
                down
            )
        ours = server_instructions(tools_of(type(workspace)).values())
        super().__init__(workspace, instructions=f"{ours}\n\n{notes}")
        self.upstreams = upstreams
        self.routes = routes

    def _active_upstream(self) -> list[str]:
        return [name for name in self.workspace.active_tools() if name in self.routes]

    async def list_tools(self) -> list[Tool]:
        """Ours, then every activated upstream tool under its exposed name."""
        tools: list[Tool] = list(await super().list_tools())
        for name in self._active_upstream():
            tools.append(self.routes[name][1].model_copy(update={"name": name}))
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if name in self.routes:
            if name not in self._active_upstream():
                raise ToolError(
                    f"{name} is not active yet; call tool_activate with names=[{name!r}] first"
                )
            upstream, tool = self.routes[name]
            return await upstream.call(tool.name, arguments, context)
        before = self._active_upstream()
        result = await super().call_tool(name, arguments, context)
        if name == "tool_activate" and context is not None and self._active_upstream() != before:
            # Clients refetch tools/list on this notification (and drop cached listings).
            with contextlib.suppress(Exception):
                await context.session.send_tool_list_changed()
            with contextlib.suppress(Exception):
                await context.notify_tools_changed()
        return result


@contextlib.asynccontextmanager
async def gateway(workspace: Workspace, specs: list[UpstreamSpec]) -> AsyncIterator[GatewayServer]:
    """Start the upstreams and yield the gateway server in front of them."""
    async with Upstreams(specs) as upstreams:
        yield GatewayServer(workspace, upstreams)


def serve_gateway_stdio(workspace: Workspace, specs: list[UpstreamSpec]) -> None:
    async def main() -> None:
        async with gateway(workspace, specs) as server:
            await server.run_stdio_async()

    anyio.run(main)


def serve_gateway_http(
    workspace: Workspace,
    specs: list[UpstreamSpec],
    host: str,
    port: int,
    token: str | None,
    policy: HttpPolicy,
) -> None:
    """The gateway over streamable HTTP, with the same Host, Origin and token checks as the
    plain server."""
    import uvicorn

    async def main() -> None:
        async with gateway(workspace, specs) as server:
            app = http_app(workspace, token, policy, server=server)
            config = uvicorn.Config(app, host=host, port=port, log_level="warning")
            await uvicorn.Server(config).serve()

    anyio.run(main)
