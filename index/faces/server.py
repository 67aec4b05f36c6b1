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

import contextlib
import hmac
import ipaddress
import json
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from starlette.types import ASGIApp, Receive, Scope, Send

import cards
import placeholders

from .._errors import WorkspaceError
from .._tools import TOOL_NAMES, tool_spec
from .._workspace import Workspace

__all__ = [
    "BearerTokenMiddleware",
    "WorkspaceServer",
    "build_server",
    "is_loopback",
    "serve_http",
    "serve_stdio",
]

INSTRUCTIONS = (
    "leanreplay keeps the conversation lean: attachments appear as one-line cards and old tool "
    "output as placeholders. Each placeholder names the exact conversation_read call that "
    "returns the original; cards name the tool that reads the file (pdf_info, pdf_search, "
    "pdf_read, file_read, file_search, image_view, table_read, table_query, doc_read, "
    "doc_search). Read only what you need."
)

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


class WorkspaceServer(MCPServer):
    """An MCP server whose tools are the read-only tools of one `Workspace`."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(name="leanreplay", instructions=INSTRUCTIONS)
        self.workspace = workspace
        for name in TOOL_NAMES:
            self.add_tool(
                getattr(workspace, name),
                name=name,
                description=tool_spec(name).description,
                annotations=READ_ONLY,
                structured_output=False,
            )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        """Run a workspace tool through `Workspace.call` (validation, hooks, errors)."""
        if name not in TOOL_NAMES:
            return await super().call_tool(name, arguments, context)
        token = anyio.lowlevel.current_token()

        def progress(done: int, total: int, message: str) -> None:
            if context is None:
                return
            # Called from extraction threads; a lost notification must not stop the work.
            with contextlib.suppress(Exception):
                anyio.from_thread.run(context.report_progress, done, total, message, token=token)

        def run() -> Any:
            return self.workspace.call(name, arguments, progress=progress)

        try:
            result = await anyio.to_thread.run_sync(run)
        except (WorkspaceError, placeholders.PlaceholderError, cards.CardError) as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the model gets a sentence, not a trace
            raise ToolError(
                f"{name} failed unexpectedly ({type(exc).__name__}: {exc}); "
                "this is a leanreplay bug, please report it"
            ) from None
        return CallToolResult(content=list(_content(name, result)))


def build_server(workspace: Workspace) -> MCPServer:
    """An MCP server exposing every tool of ``workspace``, all read-only."""
    return WorkspaceServer(workspace)


def serve_stdio(workspace: Workspace) -> None:
    build_server(workspace).run("stdio")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerTokenMiddleware:
    """Refuse HTTP requests that do not carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = (
                    b'{"error": "missing or wrong bearer token; send Authorization: Bearer TOKEN"}'
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(workspace: Workspace, token: str | None) -> Any:
    """The streamable-HTTP ASGI app at ``/mcp``, behind a bearer token unless None."""
    app = build_server(workspace).streamable_http_app()
    return app if token is None else BearerTokenMiddleware(app, token)


def serve_http(workspace: Workspace, host: str, port: int, token: str | None) -> None:
    import uvicorn

    config = uvicorn.Config(http_app(workspace, token), host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
