"""What the framework integrations share, with no framework imported: the tools they give a
model, one tool call's answer as text and images, and the error an integration raises when
its framework is not installed."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leanreplay.cards import CardError
from leanreplay.index._errors import InvalidArgumentError, WorkspaceError
from leanreplay.index._workspace import META_TOOLS, TOOL_NAMES, Workspace, tool_schemas
from leanreplay.placeholders import PlaceholderError

__all__ = [
    "INTEGRATION_TOOLS",
    "ToolAnswer",
    "answer",
    "as_workspace",
    "missing_framework",
]

# The readers and the conversation tools: what a model needs to read files and bring elided
# originals back. The capability index's tools (tool_search, tool_activate, tool_call) manage
# a tools list the frameworks own, so they are left out.
INTEGRATION_TOOLS = tuple(name for name in TOOL_NAMES if name not in META_TOOLS)


def missing_framework(module: str, extra: str, exc: ImportError) -> ImportError:
    """The one-line error of an integration whose framework is not installed."""
    missing = exc.name or str(exc)
    return ImportError(
        f"{module} needs the {extra} extra ({missing} is not installed): "
        f"pip install 'leanreplay[{extra}]'"
    )


def function_schemas(ws: Workspace, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The function schemas of ``names`` (ours, as the workspace registers them), for
    `lean_tools` of either framework; an unknown name is refused naming the ones there are."""
    unknown = sorted(set(names) - set(INTEGRATION_TOOLS))
    if unknown:
        raise InvalidArgumentError(
            f"unknown tools {', '.join(unknown)}; lean_tools gives {', '.join(INTEGRATION_TOOLS)}"
        )
    return {s["function"]["name"]: s["function"] for s in tool_schemas("openai", workspace=ws)}


def as_workspace(workspace: Workspace | str | os.PathLike[str]) -> Workspace:
    """A `Workspace`, or one opened at the home folder given."""
    if isinstance(workspace, Workspace):
        return workspace
    if isinstance(workspace, (str, os.PathLike)):
        return Workspace(workspace)
    raise InvalidArgumentError(
        f"workspace must be a leanreplay Workspace or its home folder, got "
        f"{type(workspace).__name__}"
    )


@dataclass(frozen=True)
class ToolAnswer:
    """One tool call's answer as a framework hands it to its model."""

    text: str  # the result as JSON (images left out), or the error the model can act on
    images: tuple[tuple[str, str], ...] = ()  # (media type, base64 data), in order
    is_error: bool = False

    def data_urls(self) -> list[str]:
        return [f"data:{mime};base64,{data}" for mime, data in self.images]


def answer(workspace: Workspace, name: str, arguments: str | Mapping[str, Any]) -> ToolAnswer:
    """Run tool ``name`` with ``arguments`` (a JSON object, or its text) as the MCP server
    does: the same validation, the same error texts, images apart from the text."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolAnswer(
                f"the arguments of {name} are not JSON ({exc.msg} at char {exc.pos}); "
                "send one JSON object",
                is_error=True,
            )
    try:
        result = workspace.call(name, arguments)
    except (WorkspaceError, PlaceholderError, CardError) as exc:
        return ToolAnswer(str(exc), is_error=True)
    except Exception as exc:  # noqa: BLE001 - the model gets a sentence, not a trace
        return ToolAnswer(
            f"{name} failed unexpectedly ({type(exc).__name__}: {exc}); "
            "this is a leanreplay bug, please report it",
            is_error=True,
        )
    if name == "image_view":
        meta = {k: v for k, v in result.items() if k != "data"}
        return ToolAnswer(json.dumps(meta, ensure_ascii=False), ((result["mime"], result["data"]),))
    if isinstance(result, dict) and result.get("images"):
        images = tuple(
            (part["source"]["media_type"], part["source"]["data"]) for part in result["images"]
        )
        # The markers in `content` name the images in the order they follow.
        shown = {k: v for k, v in result.items() if k != "images"}
        return ToolAnswer(json.dumps(shown, ensure_ascii=False), images)
    return ToolAnswer(json.dumps(result, ensure_ascii=False))
