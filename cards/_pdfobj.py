"""A small, bounded parser for the PDF object syntax (ISO 32000-1 section 7.3).

It parses one object from a byte window. It raises `Incomplete` when the object runs past the
window, so the caller can read more, and `Broken` when the bytes are not valid PDF. Nothing
here trusts the input: nesting depth and string sizes are capped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias, TypeGuard

MAX_DEPTH = 64  # nesting of arrays and dictionaries

__all__ = [
    "MAX_DEPTH",
    "Broken",
    "Incomplete",
    "Name",
    "NeedsPassword",
    "Parser",
    "PdfObject",
    "PlainArray",
    "Ref",
    "Stream",
    "as_list",
    "is_int",
    "simple_dict",
]


class Broken(Exception):
    """The bytes are not what the PDF structure promises; the message says what and where."""


class NeedsPassword(Broken):
    """The object sits in an encrypted stream; no amount of recovery reads it."""


class Incomplete(Exception):
    """The object continues past the end of the window."""


class Ref(NamedTuple):
    num: int
    gen: int


class Name(str):
    """A PDF name such as ``/Pages``, stored without the slash."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Stream:
    """A stream object: its dictionary and the file offset where its data starts."""

    dict: dict[str, PdfObject]
    data_offset: int


@dataclass(frozen=True, slots=True)
class PlainArray:
    """A long array of numbers and references, kept as text until someone needs its items.

    Page-tree roots often hold thousands of kids; the page count never needs them.
    """

    raw: bytes

    def items(self) -> list[PdfObject]:
        return Parser(self.raw, 0, at_eof=True)._items(0)


PdfObject: TypeAlias = (
    bool
    | int
    | float
    | bytes
    | Name
    | Ref
    | list["PdfObject"]
    | dict[str, "PdfObject"]
    | Stream
    | PlainArray
    | None
)


def as_list(value: PdfObject) -> list[PdfObject] | None:
    """The items of an array, lazy or not; None for anything else."""
    if isinstance(value, PlainArray):
        return value.items()
    return value if isinstance(value, list) else None


def is_int(value: object) -> TypeGuard[int]:
    """True for a PDF integer; Python's bools are ints, but a PDF boolean is not a number."""
    return isinstance(value, int) and not isinstance(value, bool)


_SKIP = re.compile(rb"(?:[ \t\n\r\f\x00]+|%[^\r\n]*)*")
_GAP = b" \t\n\r\f\x00%"  # what a gap between tokens starts with
_NUMBER = re.compile(rb"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_REF_TAIL = re.compile(rb"[ \t\n\r\f\x00]+(\d+)[ \t\n\r\f\x00]+R(?![^ \t\n\r\f\x00()<>\[\]{}/%])")
_NAME = re.compile(rb"/([^ \t\n\r\f\x00()<>\[\]{}/%]*)")
_KEYWORD = re.compile(rb"[A-Za-z]+")
_PLAIN = b"0123456789 \t\n\r\f\x00R.+-"  # the bytes of an array of numbers and references
_LAZY_ARRAY_BYTES = 256
_HEX = re.compile(rb"<([0-9A-Fa-f \t\n\r\f\x00]*)>")
_NAME_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")
_STRING_SPECIAL = re.compile(rb"[()\\]")
_ESCAPES = {
    ord("n"): b"\n",
    ord("r"): b"\r",
    ord("t"): b"\t",
    ord("b"): b"\b",
    ord("f"): b"\f",
    ord("("): b"(",
    ord(")"): b")",
    ord("\\"): b"\\",
}
_DELIM = rb"[ \t\n\r\f\x00()<>\[\]{}/%]"
_WS = rb"[ \t\n\r\f\x00]"
# The common tokens in one match (the parser's hot path): a name without escapes, a
# reference, a number, or the start of a dictionary or array. Anything else, and any token
# too close to the window's end to be sure of, takes the careful path.
_FAST = re.compile(
    rb"(?:" + _WS + rb"++|%[^\r\n]*+)*+"
    rb"(?:/([^ \t\n\r\f\x00()<>\[\]{}/%#]*+)(?!#)"
    rb"|(\d++)" + _WS + rb"++(\d++)" + _WS + rb"++R(?!" + _DELIM.replace(b"[", b"[^", 1) + rb")"
    rb"|([+-]?(?:\d++(?:\.\d*+)?|\.\d++))(?![0-9.])"
    rb"|(<<)|(\[))"
)
_KEY = re.compile(
    rb"(?:" + _WS + rb"++|%[^\r\n]*+)*+(?:(>>)|/([^ \t\n\r\f\x00()<>\[\]{}/%#]*+)(?!#))"
)
# A reference like "12 0 R" needs this many bytes after the first number to be told apart
# from a plain integer; closer to the window's end we ask for more bytes.
_REF_LOOKAHEAD = 24

# Simple dictionaries, read one entry to a match (`simple_dict`). A token is taken only when a
# delimiter follows it inside the window, so nothing is decided at the window's edge.
_ENDS = rb"(?=[ \t\n\r\f\x00()<>\[\]{}/%])"
_SIMPLE_VALUE = (
    rb"(\d++)"
    + _WS
    + rb"++(\d++)"
    + _WS
    + rb"++R"
    + _ENDS  # a reference
    + rb"|([+-]?+(?:\d++(?:\.\d*+)?+|\.\d++))"
    + _ENDS  # a number
    + rb"|/([^ \t\n\r\f\x00()<>\[\]{}/%#]*+)"
    + _ENDS  # a name without escapes
    + rb"|(true|false|null)"
    + _ENDS
    + rb"|<([0-9A-Fa-f]*+)>"  # a hex string without spaces
    + rb"|\(([^()\\]*+)\)"  # a literal string without escapes or parentheses
)
# Groups: 1 the key; 2-3 a reference, 4 a number, 5 a name, 6 a keyword, 7 a hex string,
# 8 a literal string, 9 an array's "[", 10 a dictionary's "<<".
_SIMPLE_ENTRY = re.compile(
    _WS + rb"*+/([^ \t\n\r\f\x00()<>\[\]{}/%#]*+)" + _ENDS + _WS + rb"*+"
    rb"(?:" + _SIMPLE_VALUE + rb"|(\[)|(<<))"
)
# The same values without the key, groups one lower; no arrays or dictionaries inside.
_SIMPLE_ITEM = re.compile(_WS + rb"*+(?:" + _SIMPLE_VALUE + rb")")
_SIMPLE_CLOSE = re.compile(_WS + rb"*+>>")
_SIMPLE_DEPTH = 3  # dictionaries inside dictionaries (a page's /Resources /Font is 3)
_KEYWORDS: dict[bytes, PdfObject] = {b"true": True, b"false": False, b"null": None}


def simple_dict(buf: bytes, pos: int) -> tuple[dict[str, PdfObject], int] | None:
    """The dictionary at ``buf[pos]`` ("<<") and the offset after it, when its syntax is
    simple (see `_simple_dict`); None declines. Read in C (``cards/_simpledict.c``) where it
    was compiled, else in Python: the same answers, tested side by side."""
    if _simpledict is not None and type(buf) is bytes:
        return _simpledict.simple_dict(buf, pos, Name, Ref, PlainArray)  # type: ignore[no-any-return]
    return _simple_dict(buf, pos)


def _simple_dict(buf: bytes, pos: int, depth: int = 0) -> tuple[dict[str, PdfObject], int] | None:
    """`simple_dict` in Python, one regex match an entry, when the dictionary's syntax is
    simple: keys without # escapes, values that are references,
    numbers, names, booleans, null, hex strings without spaces, literal strings without
    escapes, arrays of those, and dictionaries of all that two levels down. Anything else,
    a comment, or a dictionary that does not end inside ``buf``, returns None (decline): the
    general parser reads it. What it returns equals the general parser's answer."""
    if not 0 <= pos <= len(buf) - 2:
        return None  # no "<<" there (and re would take a negative pos as 0)
    entries: dict[str, PdfObject] = {}
    at = pos + 2
    match_entry = _SIMPLE_ENTRY.match
    while (m := match_entry(buf, at)) is not None:
        kind = m.lastindex
        at = m.end()
        value: PdfObject
        if kind == 3:
            value = Ref(int(m.group(2)), int(m.group(3)))
        elif kind == 4:
            text = m.group(4)
            value = float(text) if b"." in text else int(text)
        elif kind == 5:
            value = Name(m.group(5).decode("latin-1"))
        elif kind == 9:
            array = _simple_array(buf, at - 1)
            if array is None:
                return None
            value, at = array
        elif kind == 10:
            if depth == _SIMPLE_DEPTH - 1:
                return None
            inner = _simple_dict(buf, at - 2, depth + 1)
            if inner is None:
                return None
            value, at = inner
        else:
            value = _simple_scalar(m, kind)
        entries[Name(m.group(1).decode("latin-1"))] = value
    close = _SIMPLE_CLOSE.match(buf, at)
    if close is None:
        return None
    return entries, close.end()


def _simple_scalar(m: re.Match[bytes], kind: int | None, keyword: int = 6) -> PdfObject:
    """A keyword, hex string or literal string; their groups start at ``keyword`` (6 in an
    entry, 5 in an array item, whose groups are one lower)."""
    if kind == keyword:
        return _KEYWORDS[m.group(keyword)]
    if kind == keyword + 1:
        digits = m.group(keyword + 1)
        return bytes.fromhex((digits + b"0" if len(digits) % 2 else digits).decode("ascii"))
    return m.group(keyword + 2)  # a literal string


def _simple_array(buf: bytes, start: int) -> tuple[list[PdfObject] | PlainArray, int] | None:
    # Where the general parser's _array ends it: at the first "]".
    end = buf.find(b"]", start)
    if end < 0:
        return None
    if end - start > _LAZY_ARRAY_BYTES and not buf[start + 1 : end].translate(None, _PLAIN):
        return PlainArray(buf[start : end + 1]), end + 1
    items: list[PdfObject] = []
    at = start + 1
    match_item = _SIMPLE_ITEM.match
    while (m := match_item(buf, at, end + 1)) is not None:
        kind = m.lastindex
        at = m.end()
        if kind == 2:
            items.append(Ref(int(m.group(1)), int(m.group(2))))
        elif kind == 3:
            text = m.group(3)
            items.append(float(text) if b"." in text else int(text))
        elif kind == 4:
            items.append(Name(m.group(4).decode("latin-1")))
        else:
            items.append(_simple_scalar(m, kind, keyword=5))
    if buf[at:end].strip(b" \t\n\r\f\x00"):
        return None  # a token the simple syntax does not know
    return items, end + 1


class Parser:
    """Parses PDF objects from ``buf`` starting at ``pos``.

    ``at_eof`` says that ``buf`` ends where the file ends, so running out of bytes is a
    truncated file (`Broken`) rather than a short window (`Incomplete`).
    """

    def __init__(self, buf: bytes, pos: int = 0, *, at_eof: bool = False) -> None:
        self.buf = buf
        self.pos = pos
        self.at_eof = at_eof

    def _short(self, what: str) -> Exception:
        if self.at_eof:
            return Broken(f"file ends inside {what}")
        return Incomplete(what)

    def skip_space(self) -> None:
        buf, pos = self.buf, self.pos
        # No gap, or one whitespace byte before a token (the usual cases), without the regex.
        if pos + 1 < len(buf) and buf[pos + 1] not in _GAP:
            if buf[pos] not in _GAP:
                return
            if buf[pos] != 0x25:  # %
                self.pos = pos + 1
                return
        match = _SKIP.match(buf, pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def parse(self, depth: int = 0) -> PdfObject:
        if depth > MAX_DEPTH:
            raise Broken(f"objects nested deeper than {MAX_DEPTH} levels")
        if self.buf.startswith(b"<<", self.pos):  # an object's own dictionary, read at once
            return self._dict(depth)
        fast = _FAST.match(self.buf, self.pos)
        if fast is not None and (self.at_eof or len(self.buf) - fast.end() >= _REF_LOOKAHEAD):
            kind = fast.lastindex
            if kind == 1:
                self.pos = fast.end()
                return Name(fast.group(1).decode("latin-1"))
            if kind == 3:
                self.pos = fast.end()
                return Ref(int(fast.group(2)), int(fast.group(3)))
            if kind == 4:
                text = fast.group(4)
                if text[0] not in b"+-" and _REF_TAIL.match(self.buf, fast.end()):
                    pass  # "12 0 R" split oddly: the careful path decides
                else:
                    self.pos = fast.end()
                    return float(text) if b"." in text else int(text)
            elif kind == 5:
                self.pos = fast.start(5)
                return self._dict(depth)
            elif kind == 6:
                self.pos = fast.start(6)
                return self._array(depth)
        self.skip_space()
        buf, pos = self.buf, self.pos
        if pos >= len(buf):
            raise self._short("an object")
        c = buf[pos]
        if c == 0x2F:  # /
            return self._name()
        if c == 0x3C:  # <
            if buf.startswith(b"<<", pos):
                return self._dict(depth)
            if pos + 1 >= len(buf):
                raise self._short("a string or dictionary")
            return self._hex_string()
        if c == 0x5B:  # [
            return self._array(depth)
        if c == 0x28:  # (
            return self._literal_string()
        if c in b"+-.0123456789":
            return self._number()
        match = _KEYWORD.match(buf, pos)
        if match:
            if match.end() == len(buf) and not self.at_eof:
                raise Incomplete("a keyword")
            word = match.group()
            self.pos = match.end()
            if word == b"true":
                return True
            if word == b"false":
                return False
            if word == b"null":
                return None
            raise Broken(f"unexpected keyword {word[:20]!r} at byte {pos} of the window")
        raise Broken(f"unexpected byte {bytes([c])!r} at byte {pos} of the window")

    def _name(self) -> Name:
        match = _NAME.match(self.buf, self.pos)
        assert match is not None
        if match.end() == len(self.buf) and not self.at_eof:
            raise Incomplete("a name")
        self.pos = match.end()
        raw = match.group(1)
        if b"#" in raw:
            raw = _NAME_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), raw)
        return Name(raw.decode("latin-1"))

    def _number(self) -> int | float | Ref:
        buf = self.buf
        match = _NUMBER.match(buf, self.pos)
        if match is None:
            raise Broken(f"malformed number at byte {self.pos} of the window")
        end = match.end()
        if end == len(buf) and not self.at_eof:
            raise Incomplete("a number")
        text = match.group()
        if b"." in text:
            self.pos = end
            try:
                return float(text)
            except ValueError:
                raise Broken(f"malformed number {text[:20]!r}") from None
        value = int(text)
        if text[0] not in b"+-":
            if len(buf) - end < _REF_LOOKAHEAD and not self.at_eof:
                raise Incomplete("a number or reference")
            ref = _REF_TAIL.match(buf, end)
            if ref:
                self.pos = ref.end()
                return Ref(value, int(ref.group(1)))
        self.pos = end
        return value

    def _hex_string(self) -> bytes:
        match = _HEX.match(self.buf, self.pos)
        if match is None:
            if self.buf.find(b">", self.pos) == -1:
                raise self._short("a hex string")
            raise Broken(f"malformed hex string at byte {self.pos} of the window")
        self.pos = match.end()
        digits = re.sub(rb"[^0-9A-Fa-f]", b"", match.group(1))
        if len(digits) % 2:
            digits += b"0"
        return bytes.fromhex(digits.decode("ascii"))

    def _literal_string(self) -> bytes:
        buf = self.buf
        pos = self.pos + 1
        nesting = 1
        out = bytearray()
        while True:
            match = _STRING_SPECIAL.search(buf, pos)
            if match is None:
                raise self._short("a string")
            start = match.start()
            out += buf[pos:start]
            c = buf[start]
            if c == 0x5C:  # backslash
                if start + 1 >= len(buf):
                    raise self._short("a string")
                nxt = buf[start + 1]
                if nxt in _ESCAPES:
                    out += _ESCAPES[nxt]
                    pos = start + 2
                elif 0x30 <= nxt <= 0x37:
                    digits = re.match(rb"[0-7]{1,3}", buf[start + 1 : start + 4])
                    assert digits is not None
                    out.append(int(digits.group(), 8) & 0xFF)
                    pos = start + 1 + len(digits.group())
                elif nxt == 0x0D:  # line continuation, CR or CRLF
                    pos = start + 3 if buf.startswith(b"\n", start + 2) else start + 2
                elif nxt == 0x0A:
                    pos = start + 2
                else:
                    out.append(nxt)
                    pos = start + 2
            elif c == 0x28:
                nesting += 1
                out.append(c)
                pos = start + 1
            else:
                nesting -= 1
                if nesting == 0:
                    self.pos = start + 1
                    return bytes(out)
                out.append(c)
                pos = start + 1

    def _array(self, depth: int) -> list[PdfObject] | PlainArray:
        buf, start = self.buf, self.pos
        # memchr for the end and a translate for the check: a regex walks a 30 KiB /Kids
        # array several times slower.
        end = buf.find(b"]", start)
        stop = len(buf) if end < 0 else end
        if stop - start > _LAZY_ARRAY_BYTES and not buf[start + 1 : stop].translate(None, _PLAIN):
            if end < 0:
                raise self._short("an array")
            self.pos = end + 1
            return PlainArray(buf[start : end + 1])
        return self._items(depth)

    def _items(self, depth: int) -> list[PdfObject]:
        self.pos += 1
        items: list[PdfObject] = []
        while True:
            self.skip_space()
            if self.pos >= len(self.buf):
                raise self._short("an array")
            if self.buf[self.pos] == 0x5D:  # ]
                self.pos += 1
                return items
            items.append(self.parse(depth + 1))

    simple = True  # try `simple_dict` first (a test turns it off to compare the two)

    def _dict(self, depth: int) -> dict[str, PdfObject]:
        # simple_dict does not count its levels, so near MAX_DEPTH the counting path reads.
        if self.simple and depth + _SIMPLE_DEPTH + 1 <= MAX_DEPTH:
            found = simple_dict(self.buf, self.pos)
            if found is not None:
                self.pos = found[1]
                return found[0]
        self.pos += 2
        entries: dict[str, PdfObject] = {}
        buf = self.buf
        while True:
            fast = _KEY.match(buf, self.pos)
            if fast is not None and (self.at_eof or len(buf) - fast.end() >= _REF_LOOKAHEAD):
                self.pos = fast.end()
                if fast.lastindex == 1:
                    return entries
                entries[Name(fast.group(2).decode("latin-1"))] = self.parse(depth + 1)
                continue
            self.skip_space()
            if self.pos >= len(self.buf):
                raise self._short("a dictionary")
            if self.buf.startswith(b">>", self.pos):
                self.pos += 2
                return entries
            if self.buf[self.pos] != 0x2F:
                raise Broken(f"dictionary key is not a name at byte {self.pos} of the window")
            key = self._name()
            entries[key] = self.parse(depth + 1)


_simpledict: Any
try:  # compiled at install time (hatch_build.py) when a C compiler is present
    from . import _simpledict
except ImportError:  # the Python version reads instead (same answers, slower)
    _simpledict = None
