"""One definition per tool: a `Workspace` method marked with `@tool`. The argument validation,
the CLI ``call`` command, the MCP server (its tools and instructions) and the exported
function-calling schemas all derive from its signature and docstring; `call_tool` is the one
path a call by name takes (CLI and MCP).

Adding a tool is one decorated method: `tools_of` collects a class's tools in definition
order, a subclass's after its bases'. This module knows nothing of `Workspace` itself (it
imports this one), so the two cannot import each other.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cached_property
from types import MappingProxyType
from typing import Any, TypeVar, overload

import pydantic

from ._errors import InvalidArgumentError
from ._shapes import SCHEMA_FORMATS, check_schema_format, tool_shape
from .tools._pdftext import ProgressCallback

__all__ = [
    "SCHEMA_FORMATS",
    "ToolSpec",
    "call_tool",
    "current_conversation",
    "current_progress",
    "schemas",
    "tool",
    "tools_of",
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

_MARK = "__leanreplay_tool__"
F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class _Marks:
    meta: bool


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(*, meta: bool = False) -> Callable[[F], F]: ...
def tool(fn: F | None = None, /, *, meta: bool = False) -> F | Callable[[F], F]:
    """Mark a method as a model-facing tool: its name, typed signature (``Annotated[...,
    Field(description=...)]`` per argument) and the first paragraph of its docstring are the
    tool's definition everywhere.

    Args:
        meta: a tool of the capability index (`tool_search`, `tool_activate`): always in the
            request's tools list, never in the index itself.
    """

    def mark(f: F) -> F:
        setattr(f, _MARK, _Marks(meta=meta))
        return f

    return mark if fn is None else mark(fn)


@dataclasses.dataclass(frozen=True)
class ToolSpec:
    """One registered tool: its name, the method that defines it and what derives from it."""

    name: str
    function: Callable[..., Any]
    meta: bool = False

    @property
    def description(self) -> str:
        """The model-facing description: the first paragraph of the docstring, one line."""
        doc = inspect.getdoc(self.function) or ""
        return doc.split("\n\n")[0].replace("\n", " ").strip()

    @cached_property
    def arguments(self) -> type[pydantic.BaseModel]:
        """The arguments as a strict pydantic model built from the signature."""
        hints = typing.get_type_hints(self.function, include_extras=True)
        fields: dict[str, Any] = {}
        for param in list(inspect.signature(self.function).parameters.values())[1:]:
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (hints[param.name], default)
        return pydantic.create_model(
            f"{self.name}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid", strict=True),
            **fields,
        )

    @property
    def reads_files(self) -> bool:
        """Whether the tool takes a ``path`` (a file or folder inside the roots)."""
        return "path" in inspect.signature(self.function).parameters

    def input_schema(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema


_registries: weakref.WeakKeyDictionary[type, Mapping[str, ToolSpec]] = weakref.WeakKeyDictionary()


def tools_of(cls: type) -> Mapping[str, ToolSpec]:
    """The tools of a class, by name, in definition order (a base's first; a subclass that
    redefines a tool keeps its place)."""
    known = _registries.get(cls)
    if known is not None:
        return known
    found: dict[str, ToolSpec] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            marks = getattr(value, _MARK, None)
            if isinstance(marks, _Marks):
                found[name] = ToolSpec(name, value, marks.meta)
    registry = _registries[cls] = MappingProxyType(found)
    return registry


def _spec(tools: Mapping[str, ToolSpec], name: str) -> ToolSpec:
    if not isinstance(name, str) or name not in tools:
        raise InvalidArgumentError(f"unknown tool {name!r}; the tools are {', '.join(tools)}")
    return tools[name]


def schemas(tools: Iterable[ToolSpec], format: str = "mcp") -> list[dict[str, Any]]:
    """Schemas of ``tools`` in one of `SCHEMA_FORMATS`."""
    check_schema_format(format)
    return [
        tool_shape(format, t.name, t.description, t.input_schema(), {"readOnlyHint": True})
        for t in tools
    ]


def validate_arguments(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """Check tool arguments against the signature; errors say which argument and why."""
    name = spec.name
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
    workspace: object,
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
    spec = _spec(tools_of(type(workspace)), name)
    values = validate_arguments(spec, arguments)
    with reporting_progress(progress, conversation_id):
        return getattr(workspace, spec.name)(**values)
