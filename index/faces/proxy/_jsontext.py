"""JSON text with its spans: where each member and element of a request body sits, so that
the proxy changes only the bytes it means to change.

A request body is parsed once into values, with the span of every top-level member and of
every element of the arrays the proxy rewrites (``messages`` or ``input``). A value the
transform left equal is copied from the client's text, byte for byte; a changed one is
`splice`d: its unchanged members and elements are copied, only what changed is serialised
(compact, deterministic: `dumps`). The parsing is the standard library's C scanner
(``raw_decode``, ``scanstring``), one call per element, so a 200k-char body costs about what
``json.loads`` does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._errors import RequestBodyError as JsonTextError

__all__ = [
    "JsonTextError",
    "Member",
    "ObjectText",
    "array_elements",
    "dumps",
    "object_members",
    "parse_object",
    "replace_spans",
    "splice",
    "without_key",
]

_WS = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]  # C-accelerated, untyped


def dumps(value: Any) -> str:
    """The compact, deterministic JSON text of a value the proxy writes itself. A lone
    surrogate (legal in JSON text as an escape) stays escaped, so the text encodes as UTF-8."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if _SURROGATE.search(text):
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]  # the pattern always matches


def _value(text: str, i: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, i)
    except json.JSONDecodeError as exc:
        raise JsonTextError(f"{exc.msg} at char {exc.pos}") from None
    except (ValueError, RecursionError) as exc:
        raise JsonTextError(f"{exc} at char {i}") from None


@dataclass(frozen=True, slots=True)
class Member:
    """One ``"key": value`` of an object: where the key starts, where its value starts and
    ends (the member's text is ``text[key_start:end]``)."""

    key: str
    key_start: int
    start: int
    end: int


def object_members(text: str, start: int) -> tuple[list[Member], int]:
    """The members of the object whose ``{`` is at ``start``, in order, and its end; values
    are scanned, not kept (see `parse_object`)."""
    members: list[Member] = []
    end = _walk_object(text, start, members, None, (), {})
    return members, end


@dataclass(frozen=True)
class ObjectText:
    """A parsed JSON object and the spans of its members (the last one of a repeated key,
    whose value is the one kept, as ``json.loads`` does)."""

    text: str
    value: dict[str, Any]
    members: dict[str, Member]
    start: int
    end: int
    elements: dict[str, list[tuple[int, int]]]  # element spans of the arrays asked for

    def span(self, key: str) -> tuple[int, int] | None:
        member = self.members.get(key)
        return (member.start, member.end) if member is not None else None


def parse_object(
    text: str, start: int = 0, *, whole: bool = True, arrays: Sequence[str] = ()
) -> ObjectText:
    """Parse the JSON object at ``text[start:]`` with the span of each member, and of each
    element of the members named in ``arrays`` that hold an array (parsed once either way).

    Raises:
        JsonTextError: not a JSON object (or, with ``whole``, more than one value).
    """
    i = _skip(text, start)
    members: list[Member] = []
    value: dict[str, Any] = {}
    elements: dict[str, list[tuple[int, int]]] = {}
    end = _walk_object(text, i, members, value, arrays, elements)
    if whole and _skip(text, end) != len(text):
        raise JsonTextError(f"extra data after the JSON object at char {end}")
    return ObjectText(text, value, {m.key: m for m in members}, i, end, elements)


def _walk_object(
    text: str,
    i: int,
    members: list[Member],
    values: dict[str, Any] | None,
    arrays: Sequence[str],
    elements: dict[str, list[tuple[int, int]]],
) -> int:
    if text[i : i + 1] != "{":
        raise JsonTextError(f"expected a JSON object at char {i}")
    i = _skip(text, i + 1)
    if text[i : i + 1] == "}":
        return i + 1
    while True:
        if text[i : i + 1] != '"':
            raise JsonTextError(f"expected a member name in double quotes at char {i}")
        key_start = i
        try:
            key, i = _scanstring(text, i + 1)
        except json.JSONDecodeError as exc:
            raise JsonTextError(f"{exc.msg} at char {exc.pos}") from None
        i = _skip(text, i)
        if text[i : i + 1] != ":":
            raise JsonTextError(f"expected ':' after a member name at char {i}")
        start = _skip(text, i + 1)
        if key in arrays and text[start : start + 1] == "[":
            found, end = array_elements(text, start)
            value = [v for v, _, _ in found]
            elements[key] = [(s, e) for _, s, e in found]
        else:
            value, end = _value(text, start)
        members.append(Member(key, key_start, start, end))
        if values is not None:
            values[key] = value
        i = _skip(text, end)
        char = text[i : i + 1]
        if char == "}":
            return i + 1
        if char != ",":
            raise JsonTextError(f"expected ',' or '}}' at char {i}")
        i = _skip(text, i + 1)


def array_elements(text: str, start: int) -> tuple[list[tuple[Any, int, int]], int]:
    """``(value, start, end)`` of each element of the array whose ``[`` is at ``start``, and
    the array's end."""
    i = _skip(text, start)
    if text[i : i + 1] != "[":
        raise JsonTextError(f"expected a JSON array at char {i}")
    out: list[tuple[Any, int, int]] = []
    i = _skip(text, i + 1)
    if text[i : i + 1] == "]":
        return out, i + 1
    while True:
        value, end = _value(text, i)
        out.append((value, i, end))
        i = _skip(text, end)
        char = text[i : i + 1]
        if char == "]":
            return out, i + 1
        if char != ",":
            raise JsonTextError(f"expected ',' or ']' at char {i}")
        i = _skip(text, i + 1)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: Python says True == 1 and 1 == 1.0; JSON does not, nor do the bytes."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def splice(text: str, start: int, end: int, old: Any, new: Any) -> str:
    """The JSON text of ``new``, copying from ``text[start:end]`` (the text of ``old``) every
    part that ``new`` keeps equal: the whole text when nothing changed, else each unchanged
    member or element, with only the changed parts serialised by `dumps`.

    Members keep the client's order; members ``new`` adds come last. Elements of arrays of
    equal length pair by position; otherwise each new element reuses the text of the next
    equal old one.
    """
    if _same(old, new):
        return text[start:end]
    if isinstance(old, dict) and isinstance(new, dict):
        members, _ = object_members(text, start)
        last = {m.key: m for m in members}
        parts: list[str] = []
        for member in members:
            if last.get(member.key) is not member or member.key not in new:
                continue
            head = text[member.key_start : member.start]
            parts.append(
                head + splice(text, member.start, member.end, old[member.key], new[member.key])
            )
        parts += [f"{dumps(k)}:{dumps(v)}" for k, v in new.items() if k not in last]
        return "{" + ",".join(parts) + "}"
    if isinstance(old, list) and isinstance(new, list):
        elements, _ = array_elements(text, start)
        if len(old) == len(new):
            return (
                "["
                + ",".join(
                    splice(text, s, e, o, n) for (o, s, e), n in zip(elements, new, strict=True)
                )
                + "]"
            )
        out: list[str] = []
        at = 0
        for item in new:
            k = next((k for k in range(at, len(elements)) if _same(elements[k][0], item)), None)
            if k is None:
                out.append(dumps(item))
            else:
                out.append(text[elements[k][1] : elements[k][2]])
                at = k + 1
        return "[" + ",".join(out) + "]"
    return dumps(new)


def without_key(text: str, start: int, end: int, value: Any, key: str) -> str:
    """The text of ``value`` (at ``text[start:end]``) with every member named ``key`` left
    out, at any depth, and every other byte kept: what a client that did not send those
    members would have sent (the proxy's conversation digests ignore ``cache_control``)."""
    if f'"{key}"' not in text[start:end]:
        return text[start:end]
    if isinstance(value, dict):
        members, _ = object_members(text, start)
        if not members:
            return text[start:end]
        out = [text[start : members[0].key_start]]
        kept = 0
        for n, member in enumerate(members):
            if member.key == key:
                continue
            if kept:
                out.append(text[members[n - 1].end : member.key_start])
            out.append(text[member.key_start : member.start])
            out.append(without_key(text, member.start, member.end, value.get(member.key), key))
            kept += 1
        out.append(text[members[-1].end : end])
        return "".join(out)
    if isinstance(value, list):
        elements, _ = array_elements(text, start)
        if not elements:
            return text[start:end]
        out = [text[start : elements[0][1]]]
        for n, (item, s, e) in enumerate(elements):
            if n:
                out.append(text[elements[n - 1][2] : s])
            out.append(without_key(text, s, e, item, key))
        out.append(text[elements[-1][2] : end])
        return "".join(out)
    return text[start:end]


def replace_spans(text: str, edits: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, replacement)`` applied; the spans must not overlap."""
    out: list[str] = []
    at = 0
    for start, end, replacement in sorted(edits, key=lambda e: e[0]):
        if start < at:
            raise ValueError("overlapping edits")
        out.append(text[at:start])
        out.append(replacement)
        at = end
    out.append(text[at:])
    return "".join(out)
