"""Check a value against the official SDKs' request TypedDicts at every depth.

pydantic's TypeAdapter validates the SDK types, but it ignores unknown keys inside nested
TypedDicts and validates ``Iterable[...]`` fields lazily (their items only when iterated), so
a block with a key the provider rejects would pass. `problems` walks the type instead:
required keys present, no key the type does not define, every list item checked, and
literals, unions and scalars as the annotations say.
"""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from typing import Any

import typing_extensions
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter
from typing_extensions import ReadOnly, is_typeddict

from leanreplay.placeholders import check_pairing

#: The request type of one message for each `for_provider` provider name.
TYPES: dict[str, Any] = {
    "anthropic": MessageParam,
    "openai": ChatCompletionMessageParam,
    "openai-responses": ResponseInputItemParam,
}
_ADAPTERS = {name: TypeAdapter(list[tp]) for name, tp in TYPES.items()}

_WRAPPERS = (
    typing.Annotated,
    typing.Required,
    typing.NotRequired,
    typing_extensions.Required,
    typing_extensions.NotRequired,
    ReadOnly,
)
_SEQUENCES = (list, tuple, collections.abc.Iterable, collections.abc.Sequence)
_MAPPINGS = (dict, collections.abc.Mapping)


def problems(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Every way ``value`` departs from the type ``tp``; an empty list means it conforms."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object:
        return []
    if origin in _WRAPPERS:
        return problems(value, args[0], path)
    if origin is typing.Union or origin is types.UnionType:
        found = [problems(value, arg, path) for arg in args if _may_match(value, arg)]
        if not found:
            return [f"{path}: no alternative of {tp!r:.80} has this type/role"]
        if any(not f for f in found):
            return []
        # Report the alternative the value came closest to: fewest problems, found deepest.
        return min(found, key=lambda f: (len(f), -max(len(p.split(": ")[0]) for p in f)))
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {args}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null, got {value!r:.60}"]
    if tp in (str, bool):
        return [] if isinstance(value, tp) else [f"{path}: expected {tp.__name__}"]
    if tp in (int, float):
        ok = isinstance(value, (int, float) if tp is float else int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected {tp.__name__}"]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object ({tp.__name__}), got {type(value).__name__}"]
        hints = _hints(tp)
        out = [f"{path}: key {k!r} is not in {tp.__name__}" for k in value if k not in hints]
        out += [f"{path}: {tp.__name__} needs {k!r}" for k in _required(tp) - set(value)]
        for key in value.keys() & hints.keys():
            out += problems(value[key], hints[key], f"{path}.{key}")
        return out
    if origin in _SEQUENCES or tp in (list, tuple):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        item = args[0] if args else Any
        return [p for i, v in enumerate(value) for p in problems(v, item, f"{path}[{i}]")]
    if origin in _MAPPINGS or tp in (dict,):
        return [] if isinstance(value, dict) else [f"{path}: expected an object"]
    if isinstance(tp, type):
        return [] if isinstance(value, tp) else [f"{path}: expected {tp.__name__}"]
    raise TypeError(f"{path}: no rule for the annotation {tp!r} ({origin!r})")


@functools.cache
def _hints(tp: Any) -> dict[str, Any]:
    return typing.get_type_hints(tp, include_extras=True)


def _literal(tp: Any) -> tuple[Any, ...] | None:
    while typing.get_origin(tp) in _WRAPPERS:
        tp = typing.get_args(tp)[0]
    return typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else None


def _may_match(value: Any, tp: Any) -> bool:
    """False when a TypedDict's literal ``type`` or ``role`` rules the value out (fast path
    for the providers' big unions)."""
    if not (isinstance(value, dict) and is_typeddict(tp)):
        return True
    hints = _hints(tp)
    for key in ("type", "role"):
        allowed = _literal(hints[key]) if key in hints else None
        if allowed is not None and key in value and value[key] not in allowed:
            return False
    return True


@functools.cache
def _required(tp: Any) -> frozenset[str]:
    """Required keys, read from the annotations: the SDKs write ``Required[...]`` in postponed
    annotations, which ``__required_keys__`` cannot see."""
    required = set()
    for key, hint in _hints(tp).items():
        marks = set()
        while typing.get_origin(hint) in _WRAPPERS:
            marks.add(typing.get_origin(hint))
            hint = typing.get_args(hint)[0]
        marked = bool(marks & {typing.Required, typing_extensions.Required})
        unmarked = not marks & {typing.NotRequired, typing_extensions.NotRequired}
        if marked or (unmarked and tp.__total__):
            required.add(key)
    return frozenset(required)


def assert_valid(payload: list[dict[str, Any]], provider: str) -> None:
    """The payload validates with pydantic, conforms at every depth and keeps pairing."""
    _ADAPTERS[provider].validate_python(payload)
    found = [p for i, m in enumerate(payload) for p in problems(m, TYPES[provider], f"$[{i}]")]
    assert found == [], found[:5]
    assert check_pairing(payload) == []
