"""The MCP server: a thin shell that serves the `Workspace` tools over stdio or streamable HTTP.

Each MCP tool is generated from the typed `Workspace` method of the same name, so the
argument schema, the validation and the description are the library's own. Tools run in a
worker thread (indexing a large PDF must not block the session) and report progress as MCP
progress notifications. Failures reach the model as `ToolError` text it can act on.
"""

from __future__ import annotations

import contextlib
import hmac
import inspect
import ipaddress
import json
import warnings
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import ImageContent, TextContent, ToolAnnotations
from pydantic.json_schema import PydanticJsonSchemaWarning
from starlette.types import ASGIApp, Receive, Scope, Send

import cards
import placeholders

from .._errors import WorkspaceError
from .._tools import TOOL_NAMES, tool_spec
from .._workspace import Workspace

__all__ = ["BearerTokenMiddleware", "build_server", "is_loopback", "serve_http", "serve_stdio"]

INSTRUCTIONS = (
    "leanreplay keeps the conversation lean: attachments appear as one-line cards and old tool "
    "output as placeholders. Each placeholder names the exact conversation_read call that "
    "returns the original; cards name the tool that reads the file (pdf_info, pdf_search, "
    "pdf_read, file_read, file_search, image_view). Read only what you need."
)


def _content(name: str, result: Any) -> list[TextContent | ImageContent]:
    if name == "image_view":
        meta = {k: v for k, v in result.items() if k != "data"}
        return [
            ImageContent(type="image", data=result["data"], mime_type=result["mime"]),
            TextContent(type="text", text=json.dumps(meta, ensure_ascii=False)),
        ]
    return [TextContent(type="text", text=json.dumps(result, ensure_ascii=False))]


_MISSING: Any = object()  # an argument the client did not send


def _make_tool(workspace: Workspace, name: str) -> Tool:
    """An MCP tool for one `Workspace` method.

    The advertised input schema is the method's own. The SDK's pre-validation is made
    permissive (every argument optional, any type) so that `Workspace.call` validates, and the
    model reads our message ("start_line: Input should be greater than or equal to 1 (it
    takes: path, start_line, end_line)") instead of a pydantic dump.
    """
    method = getattr(Workspace, name)
    params = [
        inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=_MISSING, annotation=Any)
        for p in list(inspect.signature(method).parameters.values())[1:]
        if p.kind is not inspect.Parameter.KEYWORD_ONLY
    ]
    accepts_progress = "progress" in inspect.signature(method).parameters

    async def tool(**kwargs: Any) -> list[TextContent | ImageContent]:
        ctx: Context[Any, Any] = kwargs.pop("ctx")
        arguments = {k: v for k, v in kwargs.items() if v is not _MISSING}
        token = anyio.lowlevel.current_token()

        def progress(done: int, total: int, message: str) -> None:
            # Called from extraction threads; a lost notification must not stop the work.
            with contextlib.suppress(Exception):
                anyio.from_thread.run(ctx.report_progress, done, total, message, token=token)

        def run() -> Any:
            hooks = {"progress": progress} if accepts_progress else {}
            return workspace.call(name, arguments, **hooks)

        try:
            result = await anyio.to_thread.run_sync(run)
        except (WorkspaceError, placeholders.PlaceholderError, cards.CardError) as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the model gets a sentence, not a trace
            raise ToolError(
                f"{name} failed unexpectedly ({type(exc).__name__}: {exc}); "
                "this is a leanreplay bug, please report it"
            ) from None
        return _content(name, result)

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    # Functions accept __signature__ and inspect.signature reads it; typeshed does not know.
    tool.__signature__ = inspect.Signature([*params, ctx_param])  # type: ignore[attr-defined]
    tool.__annotations__ = {
        **{p.name: Any for p in params},
        "ctx": Context,
        "return": list[TextContent | ImageContent],
    }
    tool.__name__ = name
    spec = tool_spec(name)
    with warnings.catch_warnings():
        # The permissive model's schema (with its sentinel defaults) is never advertised.
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        built = Tool.from_function(
            tool,
            name=name,
            description=spec.description,
            annotations=ToolAnnotations(
                read_only_hint=True, destructive_hint=False, open_world_hint=False
            ),
            structured_output=False,
        )
    return built.model_copy(update={"parameters": spec.input_schema()})


def build_server(workspace: Workspace) -> MCPServer:
    """An MCP server exposing every tool of ``workspace``, all read-only."""
    tools = [_make_tool(workspace, name) for name in TOOL_NAMES]
    return MCPServer(name="leanreplay", instructions=INSTRUCTIONS, tools=tools)


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
