"""One definition per tool: the typed `Workspace` method. The argument validation, the CLI
``call`` command, the MCP server and the exported function-calling schemas all derive from
its signature and docstring."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import pydantic

from ._errors import InvalidArgumentError

if TYPE_CHECKING:
    from ._workspace import Workspace

__all__ = ["TOOL_NAMES", "ToolSpec", "call_tool", "tool_schemas", "tool_spec"]

# The model-facing tools, in the order they are listed.
TOOL_NAMES = (
    "pdf_info",
    "pdf_search",
    "pdf_read",
    "file_read",
    "file_search",
    "image_view",
    "conversation_read",
    "conversation_search",
)


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
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            continue  # runtime hooks such as progress callbacks are not model arguments
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


def call_tool(workspace: Workspace, name: str, arguments: object, **hooks: Any) -> Any:
    """Validate ``arguments`` and run the tool on ``workspace``; ``hooks`` (such as
    ``progress``) go to tools that accept them."""
    values = validate_arguments(name, arguments)
    fn = getattr(workspace, name)
    accepted = {k: v for k, v in hooks.items() if k in inspect.signature(fn).parameters}
    return fn(**values, **accepted)
