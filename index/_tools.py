"""One definition per tool: the typed `Workspace` method. The argument validation, the CLI
``call`` command, the MCP server and the exported function-calling schemas all derive from
its signature and docstring; `call_tool` is the one path a call by name takes (CLI and MCP).

Adding a tool is one typed method on `Workspace` and one line in `TOOL_NAMES`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import pydantic

from ._errors import InvalidArgumentError
from .tools._pdftext import ProgressCallback

if TYPE_CHECKING:
    from ._workspace import Workspace

__all__ = [
    "META_TOOLS",
    "TOOL_NAMES",
    "ToolSpec",
    "call_tool",
    "current_conversation",
    "current_progress",
    "tool_schemas",
    "tool_spec",
]

# The progress hook of the tool call running in this context. A context variable rather than
# a parameter, so the tool signatures stay exactly the model's arguments (the MCP SDK builds
# its schema from them) and concurrent calls in worker threads each see their own hook.
_progress: ContextVar[ProgressCallback | None] = ContextVar("leanreplay_progress", default=None)


# The conversation a tool call serves (whose tools list `tool_activate` extends), likewise.
_conversation: ContextVar[str | None] = ContextVar("leanreplay_conversation", default=None)


def current_progress() -> ProgressCallback | None:
    """The progress hook given to the `call_tool` running in this context, if any."""
    return _progress.get()


def current_conversation() -> str | None:
    """The conversation given to the `call_tool` running in this context, if any."""
    return _conversation.get()


@contextmanager
def reporting_progress(
    progress: ProgressCallback | None, conversation_id: str | None = None
) -> Iterator[None]:
    """Run the enclosed tool work with ``progress`` as its progress hook, for
    ``conversation_id``."""
    token = _progress.set(progress)
    conversation = _conversation.set(conversation_id)
    try:
        yield
    finally:
        _conversation.reset(conversation)
        _progress.reset(token)


MAX_INT = 2**63 - 1  # larger integers in tool arguments are refused before any use

# The model-facing tools, in the order they are listed.
TOOL_NAMES = (
    "pdf_info",
    "pdf_search",
    "pdf_read",
    "file_read",
    "file_search",
    "image_view",
    "table_read",
    "table_query",
    "doc_read",
    "doc_search",
    "archive_list",
    "file_list",
    "conversation_read",
    "conversation_search",
    "tool_search",
    "tool_activate",
)
# The capability index's own tools: always in the request, never in the index.
META_TOOLS = frozenset({"tool_search", "tool_activate"})


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[pydantic.BaseModel]

    def input_schema(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema


def _description(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()


@cache
def tool_spec(name: str) -> ToolSpec:
    """The spec of one tool; raises InvalidArgumentError for an unknown name."""
    if name not in TOOL_NAMES:
        raise InvalidArgumentError(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")
    from ._workspace import Workspace

    fn = getattr(Workspace, name)
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model = pydantic.create_model(
        f"{name}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid", strict=True),
        **fields,
    )
    return ToolSpec(name, _description(fn), model)


def tool_schemas(format: str = "mcp") -> list[dict[str, Any]]:
    """Schemas of every tool for ``openai``, ``anthropic`` or ``mcp`` function calling."""
    out = []
    for name in TOOL_NAMES:
        spec = tool_spec(name)
        schema = spec.input_schema()
        if format == "openai":
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": spec.description,
                        "parameters": schema,
                    },
                }
            )
        elif format == "anthropic":
            out.append({"name": name, "description": spec.description, "input_schema": schema})
        elif format == "mcp":
            out.append(
                {
                    "name": name,
                    "description": spec.description,
                    "inputSchema": schema,
                    "annotations": {"readOnlyHint": True},
                }
            )
        else:
            raise InvalidArgumentError(f"format must be openai, anthropic or mcp, got {format!r}")
    return out


def validate_arguments(name: str, arguments: object) -> dict[str, Any]:
    """Check tool arguments against the signature; errors say which argument and why."""
    spec = tool_spec(name)
    if not isinstance(arguments, Mapping):
        raise InvalidArgumentError(
            f"{name} takes a JSON object of arguments, got {type(arguments).__name__}"
        )
    for key, value in arguments.items():
        if isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
            raise InvalidArgumentError(
                f"bad arguments for {name}: {key}: an integer of about "
                f"{int(value.bit_length() * 0.30103) + 1:,} digits is out of range "
                f"(at most {MAX_INT:,})"
            )
    try:
        model = spec.arguments.model_validate(dict(arguments))
    except pydantic.ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "arguments"
            problems.append(f"{where}: {err['msg']}")
        expected = ", ".join(spec.arguments.model_fields)
        raise InvalidArgumentError(
            f"bad arguments for {name}: {'; '.join(problems)} (it takes: {expected})"
        ) from None
    return model.model_dump()


def call_tool(
    workspace: Workspace,
    name: str,
    arguments: object,
    *,
    progress: ProgressCallback | None = None,
    conversation_id: str | None = None,
) -> Any:
    """Validate ``arguments`` and run the tool on ``workspace``: the one path of a tool call
    by name, for the CLI ``call`` command and the MCP server alike.

    Args:
        progress: called as ``progress(done, total, message)`` while a long call works (the
            first `pdf_search` of a file); tools read it with `current_progress`.
        conversation_id: the conversation the call serves; `tool_activate` reads it with
            `current_conversation` to extend that conversation's tools list.

    Raises:
        InvalidArgumentError: an unknown tool, or arguments that do not fit its signature.
    """
    values = validate_arguments(name, arguments)
    with reporting_progress(progress, conversation_id):
        return getattr(workspace, name)(**values)
