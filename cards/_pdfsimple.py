"""Page text of simple PDF pages without PDFium: inflate the content stream, pull the strings
out, decode them with a font encoding it can prove.

It answers only for pages it can read exactly as PDFium does, word for word: strings in
simple fonts with a plain encoding (the standard Latin fonts' built-in StandardEncoding, or
WinAnsiEncoding without /Differences), no ToUnicode map, each shown string on a line of its
own below the previous one, unrotated, unskewed. Anything else (Type 3 and composite fonts,
ToUnicode maps, form XObjects, marked content with properties, inline images, character
spacing, several strings on one line, an operator it does not know) declines the page: the
caller reads that page with PDFium. A test checks its words against PDFium's, page by page,
on generated and sample PDFs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import groupby
from operator import itemgetter

from ._pdfdoc import PdfDocument
from ._pdffile import MAX_TREE_NODES
from ._pdfobj import Broken, Name, PdfObject, Ref, Stream, as_list, is_int

__all__ = ["MAX_CONTENT_BYTES", "SimplePdfText", "open_simple_text"]

# Inflated content of one page; more declines it (the tokens of a page are listed at once, so
# this bounds that list too: a simple page of text holds a few KiB).
MAX_CONTENT_BYTES = 512 * 1024
MIN_FONT_SIZE = 6.0  # PDFium's line test needs glyph boxes over 5 units high
# PDFium decides a page's text flow from where its text lies (FindTextlineFlowOrientation):
# text narrower than two line heights, or covering less of its width than of its height, is
# read as vertical, and its lines run together. One left-aligned column with a line this long
# of one size is horizontal to it for the fonts this reader takes: 16 of even the narrowest
# Latin glyphs (about 0.18 em; spaces are not counted) span 2.9 em, over two line heights, and
# the lines' boxes, all starting at one x, cover the column's width. Not proven for fonts
# whose /Widths are far narrower, or text running off the page.
MIN_LONGEST_LINE = 16

# A content-stream token: a literal string without unescaped parentheses, a hex string, a
# number, a name, an operator or bracket; comments and white space before it are skipped.
# A comment is group 6 (skipped); anything else (a nested parenthesis, a stray byte) is group 7
# and declines the page. Possessive quantifiers: no match is ever retried from its middle.
_TOKEN = re.compile(
    rb"[ \t\r\n\f\x00]*+"
    rb"(?:(\((?:[^()\\]++|\\.)*+\))"
    rb"|(<[0-9A-Fa-f \t\r\n\f\x00]*>)"
    rb"|([+-]?(?:\d+\.?\d*|\.\d+))"
    rb"|(/[^ \t\r\n\f\x00()<>\[\]{}/%]*)"
    rb"|([A-Za-z'\"*]+[01]?|\[|\])"
    rb"|(%[^\r\n]*+)|(.)|\Z)",
    re.S,
)
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|.)", re.S)
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}

# Operators that draw no text and change nothing the text test depends on.
_INERT = frozenset(
    b"g G rg RG k K cs CS sc SC scn SCN w J j M d ri i "
    b"m l c v y h re S s f F f* B B* b b* n W W* BMC EMC MP sh Tw".split()
)

# StandardEncoding (the built-in encoding of the standard Latin fonts) agrees with ASCII on
# printable bytes except two quotes; other bytes decline.
_STANDARD = {i: chr(i) for i in range(0x20, 0x7F)} | {0x27: "\u2019", 0x60: "\u2018"}
# WinAnsiEncoding is cp1252 on every byte it defines.
_WINANSI = {
    i: bytes([i]).decode("cp1252")
    for i in [*range(0x20, 0x7F), *range(0x80, 0x100)]
    if i not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
}
_STANDARD_FONTS = re.compile(r"(Helvetica|Times|Courier)(-[A-Za-z]+)?")
_SYMBOLIC = 4  # FontDescriptor /Flags bit 3

Decoder = Callable[[bytes], "str | None"]


def _decoder(table: dict[int, str], codec: str) -> Decoder:
    allowed = re.compile(  # and the newline that joins lines
        b"[\n" + b"".join(re.escape(bytes([k])) for k in sorted(table)) + b"]*+", re.S
    )
    changed = {k: v for k, v in table.items() if bytes([k]).decode(codec) != v}
    special = re.compile(b"|".join(re.escape(bytes([k])) for k in changed) or b"(?!)")

    def decode(raw: bytes) -> str | None:
        if allowed.fullmatch(raw) is None:
            return None
        text = raw.decode(codec)
        return text.translate(changed) if changed and special.search(raw) else text

    return decode


_DECODE_STANDARD = _decoder(_STANDARD, "latin-1")
_DECODE_WINANSI = _decoder(_WINANSI, "cp1252")


class _Decline(Exception):
    """This page is not simple enough to be read without PDFium."""


class SimplePdfText:
    """The pages of one PDF, read in order: `text(i)` is page i's text, or None when it
    declines. The page tree is walked as the pages are asked for (a document of 100,000
    pages it declines costs the first few, not a walk of all of them first)."""

    def __init__(self, doc: PdfDocument, count: int, walk: Iterator[dict[str, PdfObject]]):
        self._doc = doc
        self.count = count  # the page tree's /Count
        self._walk = walk
        self._next = 0  # the index of the page the walk yields next
        self._fonts: dict[Ref, Decoder | None] = {}

    def text(self, i: int) -> str | None:
        """Page ``i``'s text (0-based), lines joined by newlines, or None: read it with PDFium.

        Pages are asked for in order (pages skipped are walked past, not read); a page
        before one already asked for, or past the end of the tree, is None.
        """
        try:
            page = self._page(i)
            return None if page is None else self._page_text(page)
        except (_Decline, Broken, RecursionError, ValueError, OverflowError, IndexError):
            return None
        finally:
            # Page objects are read once; the document's cache would otherwise hold them all.
            if len(self._doc._cache) > 4096:
                self._doc._cache.clear()

    def _page(self, i: int) -> dict[str, PdfObject] | None:
        if i < self._next:
            return None
        while self._next < i:
            next(self._walk, None)
            self._next += 1
        self._next += 1
        return next(self._walk, None)

    def _page_text(self, page: dict[str, PdfObject]) -> str:
        resolve = self._doc.resolve
        if page.get("Rotate", 0) not in (0, None):
            raise _Decline
        resources = resolve(page.get("Resources"))
        if not isinstance(resources, dict):
            raise _Decline
        fonts = resolve(resources.get("Font"))
        xobjects = resolve(resources.get("XObject"))
        contents = resolve(page.get("Contents"))
        parts = as_list(contents) if not isinstance(contents, Stream) else [contents]
        if parts is None:
            raise _Decline
        data = b""
        for part in parts:
            stream = resolve(part)
            if not isinstance(stream, Stream):
                raise _Decline
            if stream.dict.get("DecodeParms") is not None:
                raise _Decline
            if resolve(stream.dict.get("Filter")) not in (None, "FlateDecode"):
                raise _Decline
            data += self._doc._source(stream).ensure(MAX_CONTENT_BYTES + 1) + b"\n"
            if len(data) > MAX_CONTENT_BYTES:
                raise _Decline
        return self._interpret(data, fonts if isinstance(fonts, dict) else {}, xobjects)

    def _font(self, fonts: dict[str, PdfObject], name: object) -> Decoder:
        ref = fonts.get(name) if isinstance(name, str) else None
        if isinstance(ref, Ref):
            if ref not in self._fonts:
                self._fonts[ref] = self._font_decoder(self._doc.resolve(ref))
            found = self._fonts[ref]
        else:  # a direct dictionary: nothing to key it by
            found = self._font_decoder(ref)
        if found is None:
            raise _Decline
        return found

    def _font_decoder(self, font: PdfObject) -> Decoder | None:
        resolve = self._doc.resolve
        if not isinstance(font, dict) or "ToUnicode" in font:
            return None
        subtype = font.get("Subtype")
        encoding = resolve(font.get("Encoding"))
        if isinstance(encoding, dict):
            if "Differences" in encoding:
                return None
            encoding = resolve(encoding.get("BaseEncoding"))
        descriptor = resolve(font.get("FontDescriptor"))
        flags = resolve(descriptor.get("Flags")) if isinstance(descriptor, dict) else 0
        if not is_int(flags) or flags & _SYMBOLIC:
            return None
        base = font.get("BaseFont")
        standard = (
            isinstance(base, Name)
            and _STANDARD_FONTS.fullmatch(base) is not None
            and descriptor is None
        )
        if subtype == "Type1" and encoding is None and standard:
            return _DECODE_STANDARD
        if subtype in ("Type1", "TrueType") and encoding == "WinAnsiEncoding":
            return _DECODE_WINANSI
        return None

    def _interpret(self, data: bytes, fonts: dict[str, PdfObject], xobjects: PdfObject) -> str:
        shown: list[tuple[Decoder, bytes]] = []
        args: list[object] = []
        arrays: list[list[object]] = []
        ctm = (1.0, 1.0, 0.0, 0.0)  # x scale, y scale, x shift, y shift (no rotation, no skew)
        saved: list[tuple[float, float, float, float]] = []
        tm = tlm = (1.0, 1.0, 0.0, 0.0)
        in_text = False
        decode: Decoder | None = None
        size = 0.0
        leading = 0.0
        prev_y: float | None = None
        prev_height = 0.0
        starts: set[float] = set()  # where each string starts, across the page
        heights: set[float] = set()  # PDFium's line height is the first string's
        longest = 0

        def number(value: object) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _Decline
            return float(value)

        def numbers(n: int) -> list[float]:
            if len(args) != n:
                raise _Decline
            return [number(a) for a in args]

        def move(tx: float, ty: float) -> None:
            nonlocal tm, tlm
            a, d, e, f = tlm
            tlm = tm = (a, d, e + tx * a, f + ty * d)

        def show(raw: object) -> None:
            nonlocal prev_y, prev_height, longest
            if not in_text or decode is None or not isinstance(raw, bytes):
                raise _Decline
            if not raw:
                return
            if b"\n" in raw:
                raise _Decline  # a control character (and the joiner below)
            y = ctm[1] * tm[3] + ctm[3]
            height = size * tm[1] * ctm[1]
            if height < MIN_FONT_SIZE:
                raise _Decline
            # Each string on a line of its own, at least a line's height below the last one:
            # PDFium then breaks the line between them, as this does.
            if prev_y is not None and prev_y - y < max(height, prev_height):
                raise _Decline
            prev_y, prev_height = y, height
            starts.add(round(ctm[0] * tm[2] + ctm[2], 1))
            heights.add(round(height, 2))
            longest = max(longest, len(raw) - raw.count(b" "))  # spaces draw no box
            shown.append((decode, raw))

        for string, hexa, num, name, op, _, bad in _TOKEN.findall(data):
            if string:
                args.append(_literal(string))
                continue
            if num:
                args.append(float(num) if b"." in num else int(num))
                continue
            if name:
                args.append(Name(name[1:].decode("latin-1")))
                continue
            if hexa:
                digits = re.sub(rb"[^0-9A-Fa-f]", b"", hexa)
                args.append(bytes.fromhex((digits + b"0" * (len(digits) % 2)).decode()))
                continue
            if bad:
                raise _Decline
            if not op:
                continue  # the end
            if op == b"[":
                arrays.append(args)
                args = []
                continue
            if op == b"]":
                if not arrays:
                    raise _Decline
                items, args = args, arrays.pop()
                args.append(items)
                continue
            if arrays:
                raise _Decline  # an operator inside an array
            if op in (b"Tj", b"'"):
                if len(args) != 1:
                    raise _Decline
                if op == b"'":
                    move(0.0, -leading)
                show(args[0])
            elif op == b"TJ":
                if len(args) != 1 or not isinstance(args[0], list):
                    raise _Decline
                parts = []
                for item in args[0]:
                    if isinstance(item, bytes):
                        parts.append(item)
                    elif abs(number(item)) > 50:  # a gap PDFium may read as a space
                        raise _Decline
                show(b"".join(parts))
            elif op == b"Td":
                tx, ty = numbers(2)
                move(tx, ty)
            elif op == b"TD":
                tx, ty = numbers(2)
                leading = -ty
                move(tx, ty)
            elif op == b"T*":
                numbers(0)
                move(0.0, -leading)
            elif op == b"Tf":
                if len(args) != 2:
                    raise _Decline
                decode = self._font(fonts, args[0])
                size = number(args[1])
            elif op == b"TL":
                (leading,) = numbers(1)
            elif op == b"Tm":
                a, b, c, d, e, f = numbers(6)
                if b or c or a <= 0 or d <= 0:
                    raise _Decline
                tm = tlm = (a, d, e, f)
            elif op == b"BT":
                if in_text:
                    raise _Decline
                in_text = True
                tm = tlm = (1.0, 1.0, 0.0, 0.0)
            elif op == b"ET":
                if not in_text:
                    raise _Decline
                in_text = False
            elif op == b'"':
                if len(args) != 3:
                    raise _Decline
                if number(args[1]) != 0:
                    raise _Decline  # character spacing
                move(0.0, -leading)
                show(args[2])
            elif op in (b"Tc", b"Ts", b"Tr"):
                if numbers(1) != [0.0]:
                    raise _Decline
            elif op == b"Tz":
                if numbers(1) != [100.0]:
                    raise _Decline
            elif op == b"q":
                if in_text or len(saved) > 64:
                    raise _Decline
                saved.append(ctm)
            elif op == b"Q":
                if in_text or not saved:
                    raise _Decline
                ctm = saved.pop()
            elif op == b"cm":
                a, b, c, d, e, f = numbers(6)
                if in_text or b or c or a <= 0 or d <= 0:
                    raise _Decline
                sx, sy, ex, ey = ctm
                ctm = (a * sx, d * sy, e * sx + ex, f * sy + ey)
            elif op == b"Do":
                if len(args) != 1 or not self._is_image(xobjects, args[0]):
                    raise _Decline
            elif op not in _INERT:
                raise _Decline
            args = []
        if in_text or arrays:
            raise _Decline
        if len(shown) > 1 and (
            max(starts) - min(starts) > 1.0 or len(heights) > 1 or longest < MIN_LONGEST_LINE
        ):
            raise _Decline  # not provably a horizontal page to PDFium (MIN_LONGEST_LINE)
        lines = []
        for decoder, group in groupby(shown, key=itemgetter(0)):  # a font's lines at once
            text = decoder(b"\n".join(raw for _, raw in group))
            if text is None:
                raise _Decline
            lines.append(text)
        return "\n".join(lines)

    def _is_image(self, xobjects: PdfObject, name: object) -> bool:
        if not isinstance(xobjects, dict) or not isinstance(name, str):
            return False
        xobject = self._doc.resolve(xobjects.get(name))
        return isinstance(xobject, Stream) and xobject.dict.get("Subtype") == "Image"


def _literal(token: bytes) -> bytes:
    body = token[1:-1]
    if b"\\" not in body:
        return body
    return _ESCAPE.sub(_unescape, body)


def _unescape(m: re.Match[bytes]) -> bytes:
    c = m.group(1)
    if c[0] in b"01234567":
        return bytes([int(c, 8) & 0xFF])
    if c in (b"\n", b"\r"):
        return b""  # a line continuation
    return _ESCAPES.get(c, c)


def open_simple_text(fd: int, size: int) -> SimplePdfText | None:
    """The simple-text reader of the PDF open on ``fd`` (which must stay open while it is
    used), or None when its structure is not simple (encrypted, a broken cross-reference, no
    page tree with a /Count): read it with PDFium.
    """
    try:
        doc = PdfDocument.from_xref(fd, size)
        if "Encrypt" in doc.trailer:
            return None
        root = doc.resolve(doc.trailer.get("Root"))
        tree = root.get("Pages") if isinstance(root, dict) else None
        node = doc.resolve(tree)
        count = doc.resolve(node.get("Count")) if isinstance(node, dict) else None
    except (Broken, RecursionError, ValueError, OverflowError):
        return None
    if not is_int(count) or count < 0:
        return None
    return SimplePdfText(doc, count, _pages(doc, tree))


_INHERITED = ("Resources", "Rotate")


def _pages(doc: PdfDocument, tree: PdfObject) -> Iterator[dict[str, PdfObject]]:
    """The page dictionaries in order, with inherited /Resources and /Rotate filled in; it
    stops at anything that is not a plain tree (a cycle, a shared kid, a broken node)."""
    seen: set[int] = set()
    stack: list[tuple[PdfObject, dict[str, PdfObject]]] = [(tree, {})]
    nodes = 0
    while stack:
        ref, inherited = stack.pop()
        try:
            if isinstance(ref, Ref):
                if ref.num in seen:
                    return
                seen.add(ref.num)
            node = doc.resolve(ref)
            nodes += 1
            if nodes > MAX_TREE_NODES or not isinstance(node, dict):
                return
            here = {**inherited, **{k: node[k] for k in _INHERITED if k in node}}
            if node.get("Type") == "Page":
                yield {**node, **here}
                continue
            kids = as_list(doc.resolve(node.get("Kids")))
        except (Broken, RecursionError, ValueError, OverflowError):
            return
        if node.get("Type") != "Pages" or kids is None:
            return
        stack.extend([(kid, here) for kid in reversed(kids)])
