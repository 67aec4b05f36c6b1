"""The function-calling shapes of one tool definition, for our own tools (`_tools`) and for
the capability index's (`search`), so the two never differ.

``openai`` is a Chat Completions tool, ``openai-responses`` a Responses API function tool
(`FunctionToolParam`: flat, with ``strict``), ``anthropic`` a Messages API tool and ``mcp``
an MCP tool definition.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._errors import InvalidArgumentError

__all__ = ["SCHEMA_FORMATS", "check_schema_format", "tool_shape"]

SCHEMA_FORMATS = ("openai", "openai-responses", "anthropic", "mcp")


def check_schema_format(format: object) -> str:
    """``format`` if it is one of `SCHEMA_FORMATS`."""
    if format not in SCHEMA_FORMATS:
        raise InvalidArgumentError(
            f"format must be one of {', '.join(SCHEMA_FORMATS)}, got {format!r}"
        )
    return str(format)


def tool_shape(
    format: str,
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    annotations: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The definition in ``format``, with a detached copy of ``input_schema`` (callers may
    edit it); MCP ``annotations`` go only into the MCP form."""
    schema = json.loads(json.dumps(input_schema))
    check_schema_format(format)
    if format == "openai":
        function = {"name": name, "description": description, "parameters": schema}
        return {"type": "function", "function": function}
    if format == "openai-responses":
        # Strict mode would demand every property be required; optional arguments are not.
        return {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": schema,
            "strict": False,
        }
    if format == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    out: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema}
    if annotations:
        out["annotations"] = dict(annotations)
    return out
