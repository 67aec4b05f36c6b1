"""The MCP server: a thin shell that serves the `Workspace` tools over stdio or streamable HTTP.

Each tool is the typed `Workspace` method itself, registered with the SDK's own `add_tool`
(read-only annotations; the SDK derives the advertised schema and description from the
signature). Calls take the library's one path, `Workspace.call`, so the CLI and MCP validate
alike and the model reads our argument errors ("bad arguments for pdf_read: pages: ...")
rather than a pydantic dump. Tools run in a worker thread (indexing a large PDF must not
block the session) and report progress as MCP progress notifications. Failures reach the
model as `ToolError` text it can act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import io
import json
import os
import socket
import stat
import urllib.parse
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskGroup
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    CallToolResult,
    ErrorData,
    ImageContent,
    InputRequiredResult,
    JSONRPCError,
    ListRootsRequest,
    ListRootsResult,
    TextContent,
    ToolAnnotations,
)
from mcp_types.version import is_version_at_least
from starlette.types import ASGIApp

from leanreplay import cards, placeholders

from .._errors import WorkspaceError
from .._tools import ToolSpec, tools_of
from .._workspace import Workspace
from ._net import MIN_TOKEN_CHARS, HostOriginMiddleware, HttpPolicy, TokenGate, bind, is_loopback
from ._wire import request_id

__all__ = [
    "MAX_STDIO_FRAME_BYTES",
    "MIN_TOKEN_CHARS",
    "HostOriginMiddleware",
    "HttpPolicy",
    "TokenGate",
    "WorkspaceServer",
    "bind",
    "build_server",
    "is_loopback",
    "serve_http",
    "serve_stdio",
    "server_instructions",
]


def server_instructions(tools: Iterable[ToolSpec]) -> str:
    """The server's MCP instructions: how placeholders and cards name the tools, with the
    registered tools that cards name, in their order."""
    named = ", ".join(t.name for t in tools if t.name in cards.CARD_TOOLS)
    return (
        "leanreplay keeps the conversation lean: attachments appear as one-line cards and old "
        "tool output as placeholders. Each placeholder names the exact conversation_read call "
        f"that returns the original; cards name the tool that reads the file ({named}); "
        "file_list lists a folder as cards. Read only what you need."
    )


INSTRUCTIONS = server_instructions(tools_of(Workspace).values())

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def _content(name: str, result: Any) -> list[TextContent | ImageContent]:
    if name == "image_view":
        meta = {k: v for k, v in result.items() if k != "data"}
        return [
            ImageContent(type="image", data=result["data"], mime_type=result["mime"]),
            TextContent(type="text", text=json.dumps(meta, ensure_ascii=False)),
        ]
    if isinstance(result, dict) and result.get("images"):
        images = [
            ImageContent(
                type="image",
                data=part["source"]["data"],
                mime_type=part["source"]["media_type"],
            )
            for part in result["images"]
        ]
        # The markers in `content` name the images in the order the image blocks follow.
        shown = {k: v for k, v in result.items() if k != "images"}
        return [TextContent(type="text", text=json.dumps(shown, ensure_ascii=False)), *images]
    return [TextContent(type="text", text=json.dumps(result, ensure_ascii=False))]


# The operator who started the server without roots was told the flag on stderr; the model
# (and a library user's client) gets the rule in MCP terms.
NO_CLIENT_ROOTS = (
    "this server has no folders of its own, so the file tools read only the folders the "
    "client offers as MCP roots, and this client offers none; add a folder to the client's "
    "roots, or restart the server with roots of its own"
)


def _root_paths(result: ListRootsResult) -> list[str]:
    """Local folders of ``file://`` roots (others, such as ``https://``, name no folder)."""
    paths = []
    for root in result.roots:
        uri = urllib.parse.urlparse(str(root.uri))
        if uri.scheme == "file" and uri.netloc in ("", "localhost"):
            paths.append(urllib.parse.unquote(uri.path))
    return paths


class WorkspaceServer(MCPServer):
    """An MCP server whose tools are the read-only tools of one `Workspace`.

    With ``client_roots``, the file tools read the folders the client offers through the MCP
    roots protocol instead of the workspace's: asked for on every file tool call (a
    ``roots/list`` request, or on 2026-07-28 sessions an ``input_required`` round), so a
    change the client announces with ``notifications/roots/list_changed`` holds from the next
    call on. A client that offers no roots gets an error that says how to give the server
    folders.
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        instructions: str | None = None,
        client_roots: bool = False,
    ) -> None:
        self.workspace_tools = tools_of(type(workspace))
        if instructions is None:
            instructions = server_instructions(self.workspace_tools.values())
        super().__init__(name="leanreplay", instructions=instructions, version=_version())
        self.workspace = workspace
        self.client_roots = client_roots
        for spec in self.workspace_tools.values():
            self.add_tool(
                getattr(workspace, spec.name),
                name=spec.name,
                description=spec.description,
                annotations=READ_ONLY,
                structured_output=False,
            )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        """Run a workspace tool through `Workspace.call` (validation, hooks, errors)."""
        spec = self.workspace_tools.get(name)
        if spec is None:
            return await super().call_tool(name, arguments, context)
        roots: list[str] | None = None
        # tool_call of a file tool reads files too: the client's roots bound it the same way.
        target = (
            self.workspace_tools.get(str(arguments.get("name"))) if name == "tool_call" else spec
        )
        if self.client_roots and target is not None and target.reads_files:
            asked = await self._roots_of_client(context)
            if isinstance(asked, InputRequiredResult):
                return asked
            roots = asked
        token = anyio.lowlevel.current_token()

        def progress(done: int, total: int, message: str) -> None:
            if context is None:
                return
            # Called from extraction threads; a lost notification must not stop the work.
            with contextlib.suppress(Exception):
                anyio.from_thread.run(context.report_progress, done, total, message, token=token)

        def run() -> Any:
            return self.workspace.call(name, arguments, progress=progress, roots=roots)

        try:
            result = await anyio.to_thread.run_sync(run)
        except (WorkspaceError, placeholders.PlaceholderError, cards.CardError) as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the model gets a sentence, not a trace
            raise ToolError(
                f"{name} failed unexpectedly ({type(exc).__name__}: {exc}); "
                "this is a leanreplay bug, please report it"
            ) from None
        # tool_call returns the called tool's own result, shaped as that tool's is.
        called = arguments.get("name") if name == "tool_call" else name
        return CallToolResult(content=list(_content(str(called), result)))

    async def _roots_of_client(
        self, context: Context[Any, Any] | None
    ) -> list[str] | InputRequiredResult:
        capabilities = context.client_capabilities if context is not None else None
        if context is None or capabilities is None or capabilities.roots is None:
            raise ToolError(NO_CLIENT_ROOTS)
        version = context.protocol_version
        if version is not None and is_version_at_least(version, "2026-07-28"):
            # No server-to-client requests on these sessions: ask in an input_required round.
            answer = (context.input_responses or {}).get("roots")
            if not isinstance(answer, ListRootsResult):
                return InputRequiredResult(input_requests={"roots": ListRootsRequest()})
            result = answer
        else:
            # Roots are deprecated by the 2026-07-28 revision, but they are how today's
            # desktop clients (Claude Desktop, Claude Code, Cursor) say which folders are theirs.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await context.session.list_roots()
        paths = _root_paths(result)
        if not paths:
            raise ToolError(NO_CLIENT_ROOTS.replace("offers none", "offers no local folder"))
        return paths

    def _line_taker(
        self, write: Callable[[bytes], Awaitable[None]], tasks: TaskGroup
    ) -> Callable[[str], bool] | None:
        """A hook for a server that answers some stdin lines itself (the gateway's forwarded
        calls): ``take(line)`` returns True for a line it took, which the SDK never sees;
        it answers in ``tasks`` with ``write(line)`` (whole lines, newline included). This
        server takes none."""
        return None

    async def run_stdio_async(self) -> None:
        """Serve MCP over stdin and stdout, with frames capped at `MAX_STDIO_FRAME_BYTES`.

        The SDK's own transport reads a whole line however long (a 500 MB frame costs
        gigabytes); here an oversized frame is skipped in pieces and answered with a JSON-RPC
        error for its id, and the session goes on.

        Raises:
            RuntimeError: not run on asyncio (anyio's default backend): the pipes are waited
                on by asyncio's event loop.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "the stdio server runs on asyncio only (its pipes are waited on by asyncio's "
                "event loop); run it with anyio.run(server.run_stdio_async), whose default "
                "backend is asyncio, not on trio"
            ) from None
        wire = os.dup(0)
        # Like the SDK: fd 0 reads nothing, so no child process or handler eats the wire.
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        writer: list[Any] = []

        async def refuse(size: int, head: bytes) -> None:
            error = JSONRPCError(
                jsonrpc="2.0",
                id=request_id(head),
                error=ErrorData(
                    code=INVALID_REQUEST,
                    message=f"a message of {size:,} bytes is over this server's limit of "
                    f"{MAX_STDIO_FRAME_BYTES:,} bytes per message; send a smaller request",
                ),
            )
            await writer[0].send(SessionMessage(error))

        # Pipes and sockets are waited on by the event loop, not read and written by a
        # worker thread: a forwarded call crosses stdin and stdout once each, and each hand-off
        # to a thread and back cost more than the gateway's own work for the call.
        polled = _pollable(wire) and _pollable(1)
        out: _PolledWriter | None = None
        if polled:
            out = _PolledWriter(os.dup(1))
            os.dup2(2, 1)  # like the SDK: stray prints go to stderr, not into the wire
        try:
            with os.fdopen(wire, "rb", buffering=0) as stdin:
                async with anyio.create_task_group() as taken:
                    take = self._line_taker(out.send, taken) if out is not None else None
                    lines = _CappedLines(
                        stdin, MAX_STDIO_FRAME_BYTES, refuse, polled=polled, take=take
                    )
                    async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, out)) as (
                        read_stream,
                        write_stream,
                    ):
                        writer.append(write_stream)
                        await self._lowlevel_server.run(
                            read_stream,
                            write_stream,
                            self._lowlevel_server.create_initialization_options(),
                        )
                    taken.cancel_scope.cancel()  # the client is gone: so are its calls
        finally:
            if out is not None:
                os.dup2(out.fd, 1)
                os.close(out.fd)


MAX_STDIO_FRAME_BYTES = 32 * 1024 * 1024  # one JSON-RPC message from the client, at most


class _CappedLines:
    """The lines of a binary stream as text, none longer than ``cap`` bytes: a longer one is
    read and dropped in bounded pieces, and ``refuse(size, head)`` is awaited instead."""

    _PIECE = 1024 * 1024

    def __init__(
        self,
        stream: Any,
        cap: int,
        refuse: Callable[[int, bytes], Awaitable[None]],
        *,
        polled: bool = False,
        take: Callable[[str], bool] | None = None,
    ) -> None:
        self.stream, self.cap, self.refuse, self.polled = stream, cap, refuse, polled
        self.take = take

    def __aiter__(self) -> AsyncIterator[str]:
        return self._polled_lines() if self.polled else self._lines()

    async def _polled_lines(self) -> AsyncIterator[str]:
        """The same lines, read without blocking as the event loop says the pipe is ready."""
        fd = self.stream.fileno()
        os.set_blocking(fd, False)
        pending = bytearray()
        skipped: list[Any] | None = None  # [bytes so far, head] of a line over the cap
        with _PipeReader(fd) as pipe:
            while True:
                chunk = await pipe.read()
                if not chunk:  # the end; a last line may have no newline
                    if skipped is not None:
                        await self.refuse(skipped[0], skipped[1])
                    elif pending:
                        yield pending.decode("utf-8", "replace")
                    return
                start = 0
                while start < len(chunk):
                    end = chunk.find(b"\n", start)
                    whole = end >= 0
                    stop = end + 1 if whole else len(chunk)
                    if skipped is not None:
                        skipped[0] += stop - start
                    else:
                        pending += chunk[start:stop]
                        if len(pending) - whole > self.cap:
                            skipped = [len(pending), bytes(pending[:4096])]
                            pending.clear()
                    start = stop
                    if not whole:
                        break
                    if skipped is not None:
                        size, head = skipped
                        skipped = None
                        await self.refuse(size, head)
                    else:
                        line = pending.decode("utf-8", "replace")
                        pending.clear()
                        if self.take is None or not self.take(line):
                            yield line

    async def _lines(self) -> AsyncIterator[str]:
        buffered = io.BufferedReader(self.stream, self._PIECE)
        while True:
            line = await anyio.to_thread.run_sync(buffered.readline, self.cap + 1)
            if not line:
                return
            if len(line) > self.cap and not line.endswith(b"\n"):
                size, head = len(line), line[:4096]
                del line
                while True:
                    piece = await anyio.to_thread.run_sync(buffered.readline, self._PIECE)
                    size += len(piece)
                    if not piece or piece.endswith(b"\n"):
                        break
                await self.refuse(size, head)
                continue
            yield line.decode("utf-8", "replace")


class _PipeReader:
    """The bytes of a non-blocking pipe, read by an event-loop callback as they arrive.

    The pipe is registered with the loop once for the whole session, not once per wait
    (`anyio.wait_readable` adds and removes its reader each time: two epoll_ctl calls and a
    loop turn for every line a client sends). The callback reads what is there, so the pipe
    never stays readable behind the loop's back (epoll is level-triggered); it stops reading
    while `PIECE` bytes wait unread, and starts again when they are taken.
    """

    PIECE = 1024 * 1024

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._loop = asyncio.get_running_loop()
        self._held: list[bytes] = []
        self._size = 0
        self._end = False
        self._error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._registered = False

    def __enter__(self) -> _PipeReader:
        return self

    def __exit__(self, *_: object) -> None:
        self._pause()

    async def read(self) -> bytes:
        """The bytes that arrived since the last read (at least one), or b"" at the end."""
        while not self._held and not self._end:
            self._resume()
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        data = b"".join(self._held) if len(self._held) > 1 else self._held[0] if self._held else b""
        self._held.clear()
        self._size = 0
        return data

    def _resume(self) -> None:
        if not self._registered and not self._end:
            self._loop.add_reader(self.fd, self._ready)
            self._registered = True

    def _pause(self) -> None:
        if self._registered:
            self._loop.remove_reader(self.fd)
            self._registered = False

    def _ready(self) -> None:
        try:
            chunk = os.read(self.fd, self.PIECE)
        except BlockingIOError:
            return
        except OSError as exc:  # raised by the next read, as a read would have raised it
            self._error, chunk = exc, b""
        if chunk:
            self._held.append(chunk)
            self._size += len(chunk)
            if self._size >= self.PIECE:
                self._pause()  # a consumer that does not keep up: the pipe holds the rest
        else:
            self._end = True
            self._pause()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def _pollable(fd: int) -> bool:
    """A pipe or socket, which the event loop can wait on (a regular file it cannot)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _PolledWriter:
    """stdout for the SDK's stdio transport: written without blocking as the pipe drains."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self._lock = anyio.Lock()  # one message at a time: two writers never interleave

    async def write(self, text: str) -> None:
        await self.send(text.encode("utf-8"))

    async def send(self, line: bytes) -> None:
        """Write ``line`` whole: no other line starts before it ends."""
        data = memoryview(line)
        if self._lock.locked():
            await self._lock.acquire()
        else:
            with contextlib.suppress(BlockingIOError):  # mostly the pipe takes it all at once
                data = data[os.write(self.fd, data) :]
            if not data:
                return
            self._lock.acquire_nowait()  # held from here on: no one writes between
        try:
            while data:
                try:
                    data = data[os.write(self.fd, data) :]
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
        finally:
            self._lock.release()

    async def flush(self) -> None:
        await anyio.lowlevel.checkpoint()


def _version() -> str:
    try:
        return importlib.metadata.version("leanreplay")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "0+unknown"


def build_server(workspace: Workspace, *, client_roots: bool = False) -> MCPServer:
    """An MCP server exposing every tool of ``workspace``, all read-only; with
    ``client_roots`` the file tools read the roots the client offers (see `WorkspaceServer`)."""
    return WorkspaceServer(workspace, client_roots=client_roots)


def serve_stdio(workspace: Workspace, *, client_roots: bool = False) -> None:
    build_server(workspace, client_roots=client_roots).run("stdio")


def http_app(
    workspace: Workspace,
    token: str | None,
    policy: HttpPolicy,
    server: MCPServer | None = None,
    *,
    client_roots: bool = False,
) -> Any:
    """The streamable-HTTP ASGI app at ``/mcp`` of ``server`` (the workspace's own by
    default): Host and Origin checked by ``policy``, then a bearer token unless None."""
    # The SDK's own Host check knows only fixed loopback names; ours replaces it.
    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    mcp = server if server is not None else build_server(workspace, client_roots=client_roots)
    app: ASGIApp = mcp.streamable_http_app(transport_security=unchecked)
    if token is not None:
        app = TokenGate(app, token)
    return HostOriginMiddleware(app, policy)


def serve_http(
    workspace: Workspace,
    host: str,
    port: int,
    token: str | None,
    policy: HttpPolicy,
    *,
    client_roots: bool = False,
    sock: socket.socket | None = None,
) -> None:
    import uvicorn

    app = http_app(workspace, token, policy, client_roots=client_roots)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    server = uvicorn.Server(config)
    anyio.run(server.serve, None if sock is None else [sock])
