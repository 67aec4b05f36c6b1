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
from dataclasses import dataclass, field
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
    # Per array asked for: the earlier parse whose leading elements it took, and how many.
    reused: dict[str, tuple[ObjectText, int]] = field(default_factory=dict)

    def span(self, key: str) -> tuple[int, int] | None:
        member = self.members.get(key)
        return (member.start, member.end) if member is not None else None


# Values whose text ends where it closes: text that starts with such a value's whole text
# holds that very value there (a number could go on: "1" starts "12").
_CLOSED = frozenset('{["')


def parse_object(
    text: str,
    start: int = 0,
    *,
    whole: bool = True,
    arrays: Sequence[str] = (),
    like: Sequence[ObjectText] = (),
) -> ObjectText:
    """Parse the JSON object at ``text[start:]`` with the span of each member, and of each
    element of the members named in ``arrays`` that hold an array (parsed once either way).

    ``like``: earlier parses (of a client's previous requests) whose values are taken, not
    parsed again, where this text holds the same text: a member whose value text is the
    same, and the leading elements of an array asked for that are the same text as those of
    one earlier parse. A value taken is the earlier parse's own object: callers never change
    parsed values in place.

    Raises:
        JsonTextError: not a JSON object (or, with ``whole``, more than one value).
    """
    i = _skip(text, start)
    members: list[Member] = []
    value: dict[str, Any] = {}
    elements: dict[str, list[tuple[int, int]]] = {}
    reused: dict[str, tuple[ObjectText, int]] = {}
    end = _walk_object(text, i, members, value, arrays, elements, like, reused)
    if whole and _skip(text, end) != len(text):
        raise JsonTextError(f"extra data after the JSON object at char {end}")
    return ObjectText(text, value, {m.key: m for m in members}, i, end, elements, reused)


def _same_member(text: str, start: int, key: str, like: Sequence[ObjectText]) -> Any:
    """The value an earlier parse had for ``key`` when this text holds its text at
    ``start`` (and its end), else None."""
    for earlier in like:
        member = earlier.members.get(key)
        if member is None or earlier.text[member.start : member.start + 1] not in _CLOSED:
            continue
        length = member.end - member.start
        if text.startswith(earlier.text[member.start : member.end], start):
            return earlier, start + length
    return None


def _same_elements(
    text: str, i: int, key: str, like: Sequence[ObjectText]
) -> tuple[ObjectText, list[tuple[int, int]], list[Any]] | None:
    """The earlier parse whose array ``key`` starts with the element at ``i``."""
    for earlier in like:
        spans = earlier.elements.get(key)
        if not spans:
            continue
        s, e = spans[0]
        if earlier.text[s : s + 1] in _CLOSED and text.startswith(earlier.text[s:e], i):
            return earlier, spans, earlier.value[key]
    return None


def _walk_object(
    text: str,
    i: int,
    members: list[Member],
    values: dict[str, Any] | None,
    arrays: Sequence[str],
    elements: dict[str, list[tuple[int, int]]],
    like: Sequence[ObjectText] = (),
    reused: dict[str, tuple[ObjectText, int]] | None = None,
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
        same = _same_member(text, start, key, like) if like and key not in arrays else None
        if same is not None:
            earlier, end = same
            value = earlier.value[key]
        elif key in arrays and text[start : start + 1] == "[":
            found, end, taken = _elements(text, start, key, like)
            value = [v for v, _, _ in found]
            elements[key] = [(s, e) for _, s, e in found]
            if taken is not None and reused is not None:
                reused[key] = taken
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
    found, end, _ = _elements(text, start, "", ())
    return found, end


def _elements(
    text: str, start: int, key: str, like: Sequence[ObjectText]
) -> tuple[list[tuple[Any, int, int]], int, tuple[ObjectText, int] | None]:
    """`array_elements`, and the earlier parse (of ``like``, array ``key``) whose leading
    elements it took, with how many (see `parse_object`)."""
    i = _skip(text, start)
    if text[i : i + 1] != "[":
        raise JsonTextError(f"expected a JSON array at char {i}")
    out: list[tuple[Any, int, int]] = []
    i = _skip(text, i + 1)
    if text[i : i + 1] == "]":
        return out, i + 1, None
    same = _same_elements(text, i, key, like) if like else None
    taken = 0
    if same is not None:
        earlier, spans, earlier_values = same
        taken = _leading(text, i, earlier.text, spans)
        shift = i - spans[0][0]
        out = [(earlier_values[n], s + shift, e + shift) for n, (s, e) in enumerate(spans[:taken])]
        i = _skip(text, spans[taken - 1][1] + shift)
        char = text[i : i + 1]
        if char == "]":
            return out, i + 1, (earlier, taken)
        if char != ",":
            raise JsonTextError(f"expected ',' or ']' at char {i}")
        i = _skip(text, i + 1)
    while True:
        value, end = _value(text, i)
        out.append((value, i, end))
        i = _skip(text, end)
        char = text[i : i + 1]
        if char == "]":
            return out, i + 1, (same[0], taken) if same is not None else None
        if char != ",":
            raise JsonTextError(f"expected ',' or ']' at char {i}")
        i = _skip(text, i + 1)


def _leading(text: str, i: int, earlier: str, spans: Sequence[tuple[int, int]]) -> int:
    """How many leading elements of an earlier array (its ``spans`` in ``earlier``) ``text``
    holds from ``i`` on, separators included, the first one known to match. Found with a few
    comparisons of whole prefixes (the standard library's, in C), not element by element."""
    first = spans[0][0]

    def holds(k: int) -> bool:
        return earlier[spans[k - 1][0] : spans[k - 1][0] + 1] in _CLOSED and text.startswith(
            earlier[first : spans[k - 1][1]], i
        )

    n = len(spans)
    for k in (n, n - 1, n - 2):  # a client's next request: all, or all but the last ones
        if k > 1 and holds(k):
            return k
    lo, hi = 1, max(1, n - 3)  # holds(lo); the answer is at most hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


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
