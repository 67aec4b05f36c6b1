"""The lean-start gateway: one MCP server in front of many.

`leanreplay serve --upstream CONFIG.json` reads the client configuration every MCP client uses
(``{"mcpServers": {name: {command, args, env} | {url, headers}}}``), starts each upstream
server with the SDK's client, and puts every upstream tool into the workspace's capability
index. The gateway lists only leanreplay's tools (``tool_search`` and ``tool_activate``
among them) plus what has been activated, so a request no longer carries every schema of
every server. Calls to an activated upstream tool are forwarded; the upstream's result or
error comes back unchanged and its progress is relayed. An upstream that dies is reported as
a tool error and restarted once. Over stdio, a call to an activated tool of a stdio upstream is
relayed as JSON (`_FastPath`), without the SDK's request handling on either side; what comes
back and every error are as on the SDK path, except that a field the SDK's models do not
know is passed on rather than dropped.

The gateway advertises ``tools.listChanged`` and sends ``notifications/tools/list_changed``
at each activation. A client that keeps its tools list fixed (or ignores the notification)
reads the activated schemas in ``tool_activate``'s result and calls them through the stable
``tool_call(name, arguments)`` meta-tool: its tools list, the first thing in the prompt,
never changes, so activating never rewrites the provider's prompt cache.

The upstreams' prompts, resources and resource templates are forwarded too, listed live on
each request (bounded per server by `MAX_UPSTREAM_ITEMS` and by the call timeout): a prompt
name another server took first is prefixed with its server, as a tool's is; a resource URI
two servers list is read from the first. A read is sent to the server that lists the URI,
else to the first whose template's fixed head the URI starts with. What comes back is the
upstream's, except that every content of a read is labelled with the URI asked for (the SDK's
server answers one URI per read).

Activations made through the gateway belong to the gateway process (every client of one
gateway shares them), like the tools list of a single MCP server.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import math
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server import NotificationOptions
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    PROTOCOL_VERSION_META_KEY,
    REQUEST_TIMEOUT,
    SERVER_INFO_META_KEY,
    BlobResourceContents,
    CallToolResult,
    ErrorData,
    GetPromptResult,
    Prompt,
    Resource,
    ResourceTemplate,
    Tool,
)
from mcp_types.methods import SERVER_RESULTS
from pydantic import TypeAdapter

from leanreplay.cards import quote

from .._errors import InvalidArgumentError
from .._tools import tools_of
from .._workspace import Workspace
from ..search._capabilities import tool_problem
from ._wire import Relay, RelayClosed, dumps, http_upstream, loads, stdio_upstream
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

# The upstreams start side by side; one that has not listed its tools by then is left out
# (desktop clients give a server about a minute to answer initialize).
START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 60.0  # a forwarded call unanswered by then is cancelled, with a tool error
MAX_UPSTREAM_TOOLS = 1_000  # tools taken from one server; the rest are named as left out
MAX_UPSTREAM_ITEMS = 1_000  # prompts, resources or templates listed from one server
MAX_LIST_PAGES = 1_000  # pages of one listing: a server that pages forever is cut off
MAX_CONFIG_BYTES = 1_000_000
MAX_RESTARTS = 1
INDEX_PREAMBLE = (
    "More tools, one line each, grouped by server. Find one by what it does with tool_search; "
    "make it callable with tool_activate(names=[...]) before calling it, by its name or as "
    "tool_call(name=..., arguments={...}) when it does not appear in your tools list:"
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

    def transport(self, relay: Relay | None = None) -> Any:
        """The wire to this upstream: every reply bounded (`MAX_UPSTREAM_MESSAGE_BYTES`);
        a stdio one takes ``relay``'s raw requests too."""
        if self.url is not None:
            return http_upstream(self.url, dict(self.headers))
        assert self.command is not None
        params = StdioServerParameters(
            command=self.command,
            args=list(self.args),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )
        return stdio_upstream(params, relay=relay)


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
    """One upstream server, kept connected by a supervising task; restarted at most once.

    Nothing an upstream does reaches past it: a failure to start, a hang, a listing the
    index cannot take is this upstream's `error` (or its `left_out` tools), and every call
    to it is bounded by ``call_timeout``.
    """

    def __init__(
        self,
        spec: UpstreamSpec,
        *,
        start_timeout: float = START_TIMEOUT_S,
        call_timeout: float = CALL_TIMEOUT_S,
    ) -> None:
        self.spec = spec
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self.client: Client | None = None
        self.relay: Relay | None = None  # raw tools/call beside the client (stdio only)
        self.tools: list[Tool] = []
        self.error: str | None = None
        self.restarts = 0
        self.attempts = 0  # connection attempts finished, successful or not
        self.ready = anyio.Event()  # set once the first attempt has finished
        self._lost = anyio.Event()

    @property
    def name(self) -> str:
        return self.spec.name

    def _failed(self, error: str) -> None:
        self.error = _said(error)
        print(f"leanreplay: upstream {self.name!r} failed: {self.error}", file=sys.stderr)

    async def supervise(self) -> None:
        """Connect, list the tools, hold the connection until a call finds it lost; then
        reconnect while restarts remain. `ready` is set after the first attempt, whether it
        connected or not (a broken upstream must not keep the others from serving)."""
        while True:
            self._lost = anyio.Event()
            counted = False
            try:
                # The whole start (process, handshake, every page of tools/list) is bounded:
                # an upstream that never answers must not hold the gateway. The deadline is
                # lifted once the tools are listed.
                with anyio.CancelScope(deadline=anyio.current_time() + self.start_timeout) as scope:
                    relay = Relay() if self.spec.url is None else None
                    async with Client(self.spec.transport(relay)) as client:
                        _relay_as_is(client)
                        self.tools = await _all_tools(client)
                        scope.deadline = math.inf
                        self.client, self.relay, self.error = client, relay, None
                        self.attempts, counted = self.attempts + 1, True
                        self.ready.set()
                        await self._lost.wait()
                if scope.cancelled_caught:
                    self._failed(
                        f"it did not start and list its tools within {self.start_timeout:g} s"
                    )
            except Exception as exc:  # noqa: BLE001 - an upstream's failure is reported, not raised
                cause = _first_leaf(exc)
                self._failed(f"{type(cause).__name__}: {cause}")
            finally:
                self.client = self.relay = None
            if not counted:
                self.attempts += 1
            self.ready.set()
            if self.restarts >= MAX_RESTARTS:
                return
            await self._lost.wait()  # a call found the connection lost: restart once
            self.restarts += 1

    async def restart(self) -> bool:
        """Ask the supervisor to reconnect once; True when the upstream is back."""
        if self.restarts >= MAX_RESTARTS:
            self.error = f"it stopped again after {MAX_RESTARTS} restart(s)"
            self.client = self.relay = None  # no later call may use the dead connection
            self._lost.set()  # the supervisor lets go of it and ends
            return False
        target = self.attempts + 1
        self._lost.set()
        with anyio.move_on_after(self.start_timeout):
            while self.attempts < target:
                await anyio.sleep(0.02)
        return self.client is not None

    def _not_running(self) -> ToolError:
        return ToolError(
            f"upstream server {self.name!r} is not running ({self.error or 'stopped'}); "
            "its tools cannot be called now"
        )

    async def call(
        self, tool: str, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> CallToolResult:
        """Forward one call; the upstream's result (an error result too) comes back as is.
        A call unanswered after ``call_timeout`` seconds is a tool error naming the upstream."""
        client = self.client
        if client is None:
            raise self._not_running()

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            if context is not None:
                with contextlib.suppress(Exception):
                    await context.report_progress(progress, total, message)

        try:
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=self.call_timeout, progress_callback=relay
            )
        except Exception as exc:  # noqa: BLE001 - every failure becomes a sentence for the model
            raise await self._failure(tool, exc) from None

    async def relay_call(
        self,
        tool: str,
        arguments: dict[str, Any],
        on_progress: Callable[[float, float | None, str | None], Awaitable[None]] | None,
    ) -> dict[str, Any]:
        """`call` without the SDK's models: the upstream's result as the JSON it sent, once
        it is known to be a well-formed tools/call result of the connection's protocol
        version; every failure is the same `ToolError` as `call`'s."""
        client, relay = self.client, self.relay
        if client is None or relay is None:
            raise self._not_running()
        try:
            answer = await relay.call(
                {"name": tool, "arguments": arguments}, on_progress, self.call_timeout
            )
            if "error" in answer:
                raise MCPError.from_error_data(ErrorData.model_validate(answer["error"]))
            result: dict[str, Any] = answer["result"]
            if result.get("resultType", "complete") != "complete":
                raise ValueError(
                    f"its result is of type {result.get('resultType')!r}, which the gateway "
                    "does not relay"
                )
            version = client.protocol_version
            if not _plain_result(result, version):
                _result_shape(version).validate_python(result, by_name=False)
            return result
        except TimeoutError:
            exc: Exception = MCPError(code=REQUEST_TIMEOUT, message="timed out")
        except RelayClosed:
            exc = MCPError(code=CONNECTION_CLOSED, message="Connection closed")
        except Exception as failure:  # noqa: BLE001 - every failure becomes a sentence
            exc = failure
        raise await self._failure(tool, exc)

    async def _failure(self, tool: str, exc: Exception) -> ToolError:
        """The tool error for a forwarded call that failed with ``exc``; a lost connection
        restarts the upstream (once)."""
        if isinstance(exc, MCPError) and exc.error.code == REQUEST_TIMEOUT:
            return ToolError(
                f"upstream server {self.name!r} did not answer {tool} within "
                f"{self.call_timeout:g} s; the call was cancelled"
            )
        if not _connection_lost(exc):
            return ToolError(
                f"upstream server {self.name!r} answered {tool} with an error: {_said(exc)}"
            )
        back = await self.restart()
        return ToolError(
            f"upstream server {self.name!r} stopped during {tool} ({_said(exc)}); "
            + (
                "it was restarted: call the tool again"
                if back
                else "it could not be restarted, so its tools are unavailable"
            )
        )


@functools.cache
def _result_shape(version: str) -> TypeAdapter[Any]:
    """The tools/call result of protocol ``version`` as the SDK's session checks it (a version
    it has no shape for is not checked, as there)."""
    shape: Any = SERVER_RESULTS.get(("tools/call", version), dict[str, Any])
    return TypeAdapter(shape)


_PLAIN_KEYS = frozenset({"content", "isError", "structuredContent", "resultType"})


def _plain_result(result: dict[str, Any], version: str) -> bool:
    """True for the commonest tool result, text content only, in a shape that the version's
    own model is known to take (`_plain_taken`): checking it with pydantic was the largest
    part of what the gateway did for a forwarded call. Anything else, or a False here, is
    checked by the model."""
    if not _PLAIN_KEYS.issuperset(result):
        return False
    content = result.get("content")
    if type(content) is not list:
        return False
    for item in content:
        if type(item) is not dict or len(item) != 2 or item.get("type") != "text":
            return False
        if type(item.get("text")) is not str:
            return False
    if type(result.get("isError", False)) is not bool:
        return False
    if type(result.get("structuredContent", {})) is not dict:
        return False
    return _plain_taken(version, "resultType" in result)


@functools.cache
def _plain_taken(version: str, result_type: bool) -> bool:
    """Whether ``version``'s tools/call result model takes a plain result (text content,
    ``isError``, ``structuredContent``) with ``resultType: "complete"`` or without it: the
    plain shape is taken for all its values or for none, so one sample decides."""
    sample: dict[str, Any] = {
        "content": [{"type": "text", "text": ""}],
        "isError": False,
        "structuredContent": {},
    }
    if result_type:
        sample["resultType"] = "complete"
    try:
        _result_shape(version).validate_python(sample, by_name=False)
    except ValueError:  # pydantic's ValidationError
        return False
    return True


async def _unchecked(name: str, result: CallToolResult) -> None:
    """No check of a forwarded result against the tool's output schema here: the gateway lists
    the tool with that same schema, so the client that called the gateway checks it."""


def _relay_as_is(client: Client) -> None:
    # Checking every forwarded result here as well cost a fifth of the gateway's time per call.
    client.session.validate_tool_result = _unchecked  # type: ignore[method-assign] # one session


def _said(what: object) -> str:
    """Text that came from an upstream (an error, a reason), as one bounded line with quotes
    and unprintable characters escaped: it goes into the prompt and onto stderr."""
    return quote(str(what), limit=500)[1:-1]


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(1000):  # a server that pages forever is cut off
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor or len(tools) > MAX_UPSTREAM_TOOLS:
            break
    return tools


class Upstreams:
    """The upstream servers of one gateway; ``async with`` starts them all at once and
    waits at most ``start_timeout`` seconds for them together."""

    def __init__(
        self,
        specs: list[UpstreamSpec],
        *,
        start_timeout: float = START_TIMEOUT_S,
        call_timeout: float = CALL_TIMEOUT_S,
    ) -> None:
        self.servers = {
            spec.name: Upstream(spec, start_timeout=start_timeout, call_timeout=call_timeout)
            for spec in specs
        }
        self.start_timeout = start_timeout
        self._group: Any = None

    async def __aenter__(self) -> Upstreams:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        for upstream in self.servers.values():
            self._group.start_soon(upstream.supervise)
        # Each supervisor bounds its own start; this bounds them all, started side by side.
        with anyio.move_on_after(self.start_timeout + 1):
            for upstream in self.servers.values():
                await upstream.ready.wait()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._group.cancel_scope.cancel()
        result: bool | None = await self._group.__aexit__(*exc)
        return result


def _admitted(upstream: Upstream) -> tuple[list[Tool], list[str]]:
    """The tools of ``upstream`` the index can take, and a line for each left out: a name
    no provider accepts, a name listed twice (the first is kept), past `MAX_UPSTREAM_TOOLS`."""
    kept: dict[str, Tool] = {}
    left_out: list[str] = []
    for tool in upstream.tools:
        problem = tool_problem(tool)
        if problem is not None:
            left_out.append(problem)
        elif tool.name in kept:
            left_out.append(f"tool name {tool.name!r} is listed twice; the first is kept")
        elif len(kept) >= MAX_UPSTREAM_TOOLS:
            left_out.append(
                f"every tool past the first {MAX_UPSTREAM_TOOLS} (the gateway's limit per server)"
            )
            break
        else:
            kept[tool.name] = tool
    return list(kept.values()), left_out


class GatewayServer(WorkspaceServer):
    """The workspace's tools, plus the upstream tools the model has activated."""

    def __init__(self, workspace: Workspace, upstreams: Upstreams) -> None:
        # exposed name -> (upstream, the upstream's own tool)
        routes: dict[str, tuple[Upstream, Tool]] = {}
        down: list[str] = []
        left: list[str] = []
        for upstream in upstreams.servers.values():
            if upstream.client is None:
                if upstream.error is None:
                    upstream.error = f"it did not start within {upstreams.start_timeout:g} s"
                down.append(f"- {upstream.name}: {upstream.error}")
                continue
            tools, left_out = _admitted(upstream)
            for line in left_out:
                print(f"leanreplay: upstream {upstream.name!r}: {line}", file=sys.stderr)
            if left_out:
                shown = "; ".join(_said(line) for line in left_out[:5])
                more = f" (+{len(left_out) - 5} more)" if len(left_out) > 5 else ""
                left.append(f"- {upstream.name}: {shown}{more}")
            exposed = workspace.register_tools(upstream.name, tools)
            by_name = {t.name: t for t in tools}
            for name, tool in zip(exposed, sorted(by_name), strict=True):
                routes[name] = (upstream, by_name[tool])
        # Clients put a server's instructions in the system prompt: the index goes there, and
        # the servers that did not start, so the model does not look for their tools.
        notes = f"{INDEX_PREAMBLE}\n{workspace.capabilities.render()}"
        if down:
            notes += "\n\nServers that failed to start (their tools are missing):\n"
            notes += "\n".join(down)
        if left:
            notes += "\n\nTools the index could not take (they are missing):\n" + "\n".join(left)
        ours = server_instructions(tools_of(type(workspace)).values())
        super().__init__(workspace, instructions=f"{ours}\n\n{notes}")
        self.upstreams = upstreams
        self.routes = routes
        # The tools list grows at each activation: the initialize result says so
        # (tools.listChanged), or clients such as the TypeScript SDK ignore the notification.
        lowlevel = self._lowlevel_server
        plain = lowlevel.create_initialization_options

        def options(
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            return plain(
                notification_options or NotificationOptions(tools_changed=True),
                experimental_capabilities,
                extensions,
            )

        lowlevel.create_initialization_options = options  # type: ignore[method-assign]

    # Prompts and resources: forwarded, listed live from every running upstream.

    def _running(self) -> list[Upstream]:
        return [u for u in self.upstreams.servers.values() if u.client is not None]

    async def _prompt_routes(self) -> dict[str, tuple[Upstream, Prompt]]:
        taken = {p.name for p in await super().list_prompts()}
        routes: dict[str, tuple[Upstream, Prompt]] = {}
        for upstream in self._running():
            for prompt in await _listed(upstream, "prompts"):
                name = prompt.name if prompt.name not in taken else f"{upstream.name}_{prompt.name}"
                if name not in taken:
                    taken.add(name)
                    routes[name] = (upstream, prompt)
        return routes

    async def list_prompts(self) -> list[Prompt]:
        """Ours, then every running upstream's, a name taken before prefixed with its server."""
        ours = list(await super().list_prompts())
        routes = await self._prompt_routes()
        return ours + [p.model_copy(update={"name": n}) for n, (_, p) in routes.items()]

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> Any:
        routes = await self._prompt_routes()
        if name not in routes:
            ours = [p.name for p in await super().list_prompts()]
            if name not in ours:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"no prompt {name!r}; the prompts are: "
                    + (", ".join([*ours, *routes]) or "none"),
                )
            return await super().get_prompt(name, arguments, context)
        upstream, prompt = routes[name]
        result: GetPromptResult = await _forwarded(
            upstream, f"prompt {prompt.name}", lambda c: c.get_prompt(prompt.name, arguments)
        )
        return result

    async def _resources(self) -> dict[str, tuple[Upstream, Resource]]:
        found: dict[str, tuple[Upstream, Resource]] = {}
        for upstream in self._running():
            for resource in await _listed(upstream, "resources"):
                found.setdefault(str(resource.uri), (upstream, resource))
        return found

    async def _templates(self) -> list[tuple[Upstream, ResourceTemplate]]:
        return [
            (upstream, template)
            for upstream in self._running()
            for template in await _listed(upstream, "resource_templates")
        ]

    async def list_resources(self) -> list[Resource]:
        """Ours, then every running upstream's (a URI listed twice: the first)."""
        ours = list(await super().list_resources())
        known = {str(r.uri) for r in ours}
        found = await self._resources()
        return ours + [r for uri, (_, r) in found.items() if uri not in known]

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        ours = list(await super().list_resource_templates())
        return ours + [t for _, t in await self._templates()]

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        text = str(uri)
        ours = {str(r.uri) for r in await super().list_resources()}
        if text in ours:
            return await super().read_resource(uri, context)
        found = await self._resources()
        upstream = found[text][0] if text in found else None
        if upstream is None:
            for candidate, template in await self._templates():
                head = template.uri_template.split("{", 1)[0]
                if head and text.startswith(head):
                    upstream = candidate
                    break
        if upstream is None:
            return await super().read_resource(uri, context)  # ours, or not found
        result = await _forwarded(upstream, f"resource {text}", lambda c: c.read_resource(text))
        return [
            ReadResourceContents(
                content=(
                    base64.b64decode(item.blob)
                    if isinstance(item, BlobResourceContents)
                    else item.text
                ),
                mime_type=item.mime_type,
                meta=item.meta,
            )
            for item in result.contents
        ]

    def _active_upstream(self) -> list[str]:
        return [name for name in self.workspace.active_tools() if name in self.routes]

    async def list_tools(self) -> list[Tool]:
        """Ours, then every activated upstream tool under its exposed name. ``tool_call``
        forwards to upstream tools that may write, so here it carries no read-only hint."""
        tools: list[Tool] = [
            t.model_copy(update={"annotations": None}) if t.name == "tool_call" else t
            for t in await super().list_tools()
        ]
        for name in self._active_upstream():
            tools.append(self.routes[name][1].model_copy(update={"name": name}))
        return tools

    def _line_taker(
        self, write: Callable[[bytes], Awaitable[None]], tasks: TaskGroup
    ) -> Callable[[str], bool]:
        return _FastPath(self, write, tasks).take

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if name == "tool_call" and arguments.get("name") in self.routes:
            inner = arguments.get("arguments")
            if not isinstance(inner, dict) or set(arguments) - {"name", "arguments"}:
                raise ToolError(
                    "bad arguments for tool_call: it takes name (a tool's exact name) and "
                    "arguments (an object of that tool's arguments)"
                )
            name, arguments = str(arguments["name"]), inner
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


_CALL_PARAMS = frozenset({"name", "arguments", "_meta"})


def _tool_error(text: str) -> dict[str, Any]:
    """A tool error result as the SDK's server writes one for a `ToolError`."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


_TOOL_CALL_ARGUMENTS = frozenset({"name", "arguments"})


class _FastPath:
    """Forwarded calls on the gateway's stdio, answered without the SDK's request handling.

    A ``tools/call`` line for an activated upstream tool (by its name or through
    ``tool_call``), on a session the SDK has opened, goes to the upstream's `Relay` as is
    (its id the relay's own); the upstream's result comes back as the JSON it sent once it is
    known well-formed, under the client's id, with the fields a 2026-07-28 result must carry
    filled as the SDK fills them when absent (``resultType``, the ``serverInfo`` stamp). Every
    failure is the tool error the SDK path gives. Anything else (another method, a tool not
    active, arguments not an object, extra parameters, an HTTP upstream) is left to the SDK,
    which answers it as before.
    """

    def __init__(
        self, server: GatewayServer, write: Callable[[bytes], Awaitable[None]], tasks: TaskGroup
    ) -> None:
        self.server, self.write = server, write
        self.era: str | None = None  # "modern" or "legacy", as the client's first request says
        self.open = False  # legacy: once the client has sent notifications/initialized
        self.calls: dict[str | int, Callable[[], object]] = {}  # the client's id -> its cancel
        self._stamp = server._lowlevel_server.server_info_stamp
        # Each call is a plain asyncio task (`run_stdio_async` runs on asyncio only), ended
        # with the session by `_end_with_session`: an anyio task and its cancel scope cost a
        # fifth of the gateway's time per call.
        self._loop = asyncio.get_running_loop()
        self._running: set[asyncio.Task[None]] = set()
        tasks.start_soon(self._end_with_session)

    def take(self, line: str) -> bool:
        try:
            return self._take(line)
        except Exception as exc:  # noqa: BLE001 - a fault here leaves the line to the SDK
            print(f"leanreplay: the gateway's fast path failed ({_said(exc)})", file=sys.stderr)
            return False

    def _take(self, line: str) -> bool:
        if not self.open:
            self._watch(line)
            return False
        if '"notifications/cancelled"' in line:
            return self._cancelled(line)
        if '"tools/call"' not in line:
            return False
        try:
            message = loads(line)
        except (ValueError, RecursionError):
            return False
        plan = self._plan(message)
        if plan is None:
            return False
        rid = plan[0]
        task = self._loop.create_task(self._forward(*plan))
        self.calls[rid] = task.cancel  # now: a cancel that comes before the task runs finds it
        self._running.add(task)
        task.add_done_callback(functools.partial(self._done, rid))
        return True

    def _done(self, rid: str | int, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if self.calls.get(rid) == task.cancel:
            del self.calls[rid]
        if not task.cancelled() and task.exception() is not None:
            print(
                f"leanreplay: a forwarded call failed in the gateway ({_said(task.exception())})",
                file=sys.stderr,
            )

    async def _end_with_session(self) -> None:
        """Wait until the session ends (the task group is cancelled), then end its calls."""
        try:
            await anyio.sleep_forever()
        finally:
            running = list(self._running)
            for task in running:
                task.cancel()
            if running:
                # Each tells its upstream it was cancelled, within CANCEL_WRITE_S.
                with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
                    await asyncio.wait(running)

    def _watch(self, line: str) -> None:
        """Follow the SDK's era decision: the first request opens a 2026-07-28 session when it
        carries that envelope (and is not initialize); a handshake session is open once the
        client says initialized."""
        try:
            message = loads(line)
        except (ValueError, RecursionError):
            return
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return
        if self.era is None and message.get("id") is not None:
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            modern = (
                message["method"] != "initialize"
                and isinstance(meta, dict)
                and PROTOCOL_VERSION_META_KEY in meta
            )
            self.era = "modern" if modern else "legacy"
            self.open = modern
        elif self.era == "legacy" and message["method"] == "notifications/initialized":
            self.open = True

    def _plan(self, message: object) -> tuple[Any, ...] | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        rid, params = message.get("id"), message.get("params")
        if isinstance(rid, bool) or not isinstance(rid, str | int) or rid in self.calls:
            return None
        if message.get("method") != "tools/call" or not isinstance(params, dict):
            return None
        if not _CALL_PARAMS.issuperset(params):
            return None
        meta = params.get("_meta", {})
        if not isinstance(meta, dict):
            return None
        version: str | None = None
        if self.era == "modern":
            route = classify_inbound_request({"method": "tools/call", "params": params})
            if isinstance(route, InboundLadderRejection):
                return None
            version = route.protocol_version
        elif PROTOCOL_VERSION_META_KEY in meta:
            return None  # the SDK refuses an enveloped request on a handshake session
        token = meta.get("progressToken")
        if token is not None and (isinstance(token, bool) or not isinstance(token, str | int)):
            return None
        name, arguments = params.get("name"), params.get("arguments")
        routes = self.server.routes
        if name == "tool_call" and isinstance(arguments, dict):
            if not _TOOL_CALL_ARGUMENTS.issuperset(arguments):
                return None
            name, arguments = arguments.get("name"), arguments.get("arguments")
        if not isinstance(name, str) or name not in routes or not isinstance(arguments, dict):
            return None
        if name not in self.server.workspace.active_tools():
            return None
        upstream, tool = routes[name]
        if upstream.relay is None:
            return None
        return rid, version, token, upstream, tool.name, arguments

    def _cancelled(self, line: str) -> bool:
        try:
            message = loads(line)
        except (ValueError, RecursionError):
            return False
        params = message.get("params") if isinstance(message, dict) else None
        rid = params.get("requestId") if isinstance(params, dict) else None
        cancel = self.calls.get(rid) if isinstance(rid, str | int) else None
        if cancel is None:
            return False
        cancel()  # the upstream is told; the client gets no answer, as from the SDK
        return True

    async def _forward(
        self,
        rid: str | int,
        version: str | None,
        token: str | int | None,
        upstream: Upstream,
        tool: str,
        arguments: dict[str, Any],
    ) -> None:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": done}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
            await self.write(dumps(note))

        try:
            result = await upstream.relay_call(
                tool, arguments, progress if token is not None else None
            )
        except ToolError as exc:
            result = _tool_error(str(exc))
        except Exception as exc:  # noqa: BLE001 - the model gets a sentence, not a trace
            result = _tool_error(
                f"{tool} failed unexpectedly in the gateway ({type(exc).__name__}: "
                f"{_said(exc)}); this is a leanreplay bug, please report it"
            )
        if version is not None:
            result = self._modern(result)
        answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        with contextlib.suppress(OSError, anyio.BrokenResourceError):
            await self.write(dumps(answer))

    def _modern(self, result: dict[str, Any]) -> dict[str, Any]:
        """What the SDK adds to a 2026-07-28 result that lacks it: ``resultType`` and the
        ``serverInfo`` stamp (an upstream's own stamp is kept, as the SDK keeps it)."""
        meta = result.get("_meta")
        if result.get("resultType") is None:
            result = {**result, "resultType": "complete"}
        if meta is None or (isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None):
            result = {**result, "_meta": {**(meta or {}), SERVER_INFO_META_KEY: self._stamp}}
        return result


async def _listed(upstream: Upstream, kind: str) -> list[Any]:
    """The ``kind`` (prompts, resources, resource_templates) ``upstream`` lists now, bounded
    in pages, items and time; none when it does not offer them or fails to answer."""
    client = upstream.client
    if client is None:
        return []
    offered = client.server_capabilities
    if (offered.prompts if kind == "prompts" else offered.resources) is None:
        return []
    list_page = getattr(client, f"list_{kind}")
    items: list[Any] = []
    cursor: str | None = None
    with anyio.move_on_after(upstream.call_timeout):
        try:
            for _ in range(MAX_LIST_PAGES):
                page = await list_page(cursor=cursor)
                items += getattr(page, kind)
                cursor = page.next_cursor
                if not cursor or len(items) >= MAX_UPSTREAM_ITEMS:
                    break
        except Exception as exc:  # noqa: BLE001 - an upstream's failure leaves out its items
            cause = _first_leaf(exc)
            print(
                f"leanreplay: upstream {upstream.name!r} failed to list {kind}: "
                f"{_said(f'{type(cause).__name__}: {cause}')}",
                file=sys.stderr,
            )
            return []
    return items[:MAX_UPSTREAM_ITEMS]


async def _forwarded(upstream: Upstream, what: str, send: Any) -> Any:
    """``send(client)``'s answer, bounded by the call timeout; an upstream's own protocol
    error comes back unchanged, any other failure as an error naming the upstream."""
    client = upstream.client
    if client is None:
        raise MCPError(
            code=INTERNAL_ERROR,
            message=f"upstream server {upstream.name!r} is not running; {what} cannot be read now",
        )
    try:
        with anyio.fail_after(upstream.call_timeout):
            return await send(client)
    except TimeoutError:
        raise MCPError(
            code=REQUEST_TIMEOUT,
            message=f"upstream server {upstream.name!r} did not answer {what} within "
            f"{upstream.call_timeout:g} s",
        ) from None
    except MCPError as exc:
        if exc.error.code == CONNECTION_CLOSED:
            raise MCPError(
                code=INTERNAL_ERROR,
                message=f"upstream server {upstream.name!r} stopped during {what}",
            ) from None
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes one sentence
        raise MCPError(
            code=INVALID_PARAMS if isinstance(exc, ValueError) else INTERNAL_ERROR,
            message=f"upstream server {upstream.name!r} answered {what} with an error: "
            f"{_said(exc)}",
        ) from None


@contextlib.asynccontextmanager
async def gateway(
    workspace: Workspace,
    specs: list[UpstreamSpec],
    *,
    start_timeout: float = START_TIMEOUT_S,
    call_timeout: float = CALL_TIMEOUT_S,
) -> AsyncIterator[GatewayServer]:
    """Start the upstreams and yield the gateway server in front of them.

    Args:
        start_timeout: seconds the upstreams get, together, to start and list their tools;
            one that has not is left out and named in the instructions.
        call_timeout: seconds a forwarded call may take before it is cancelled and answered
            with a tool error that names the upstream.
    """
    async with Upstreams(specs, start_timeout=start_timeout, call_timeout=call_timeout) as ups:
        yield GatewayServer(workspace, ups)


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
