"""A tool call written as the tools print it: ``conversation_read(conversation_id="c",
message_id="m4")``, the form of every placeholder's call and every ``next``, parsed into the
tool's name and its arguments without evaluating anything."""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["MAX_CALL_CHARS", "looks_like_call", "parse_call"]

MAX_CALL_CHARS = 100_000  # of one pasted call: the printed ones are a few hundred
_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def looks_like_call(text: str) -> bool:
    """Whether ``text`` is meant as a call rather than a tool name (no name holds a "(")."""
    return "(" in text


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("a ** expansion is not an argument value")
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]  # None keys refused above
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(
            f"{ast.unparse(node)[:80]!r} is not a literal value (a quoted string, a number, "
            "true/false/null, a list or an object)"
        ) from None


def parse_call(text: str) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of ``tool(name=value, ...)``; values are literals only.

    Raises:
        ValueError: not one call with keyword arguments of literal values.
    """
    if len(text) > MAX_CALL_CHARS:
        raise ValueError(f"the call is {len(text):,} chars, more than {MAX_CALL_CHARS:,}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ValueError(f"not a call: {reason}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError("not a call of one tool by name, as in tool(name=value, ...)")
    if call.args:
        raise ValueError("arguments are named: tool(name=value, ...)")
    arguments: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ValueError("a ** expansion is not an argument")
        try:
            arguments[keyword.arg] = _value(keyword.value)
        except RecursionError:
            raise ValueError("an argument value nests too deep") from None
    return call.func.id, arguments
