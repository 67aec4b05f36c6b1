"""Documents as numbered parts: paragraphs and tables (docx, odt, html, markdown), slides (pptx,
odp) and chapters (epub), with headings marked ``#`` and tables as ``|``-separated rows.

Everything streams: a zip member is inflated in bounded steps (it may expand at most
`MAX_RATIO` times the compressed bytes really read, past a `MIN_MEMBER_BUDGET` floor, so a zip
bomb, or a member lying about its compressed size, stops early) and parsed by ElementTree's C
parser with any document type declaration refused (so no entity is ever declared), clearing
each part once it is yielded, so memory stays flat on a 200 MB document. A part's text is cut
at `MAX_PART_CHARS` as it streams in (a docx paragraph's runs are dropped once read), and the
answer's notes name the cut parts.
"""

from __future__ import annotations

import codecs
import contextlib
import html
import html.parser
import io
import json
import os
import posixpath
import re
from collections.abc import Generator, Iterator
from typing import IO, Any
from xml.etree.ElementTree import XMLPullParser

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from .._errors import InvalidArgumentError, WrongFileTypeError
from .._limits import MAX_ANSWER_CHARS
from ._archives import MemberStream, first_zip_entries
from ._kinds import card_fact
from ._paths import OpenFile
from ._pdfworker import MAX_PAGE_CHARS
from ._tables import parse_rows

__all__ = [
    "MAX_RATIO",
    "MIN_MEMBER_BUDGET",
    "document_format",
    "iter_parts",
    "read_parts",
]

MAX_RATIO = 200  # decompressed / compressed bytes allowed per zip member
MIN_MEMBER_BUDGET = 64 * 1024 * 1024  # a small member may always expand this far
MAX_ZIP_ENTRIES = 100_000
_TEXT_CHUNK = 256 * 1024
# A part with more text is cut, as PDF pages are: the text is dropped as it streams in, so a
# 230 MB paragraph costs its parse time, never its size in memory; the cut is named in notes.
MAX_PART_CHARS = MAX_PAGE_CHARS
PART_CUT_NOTE = f"\n[... part text cut at {MAX_PART_CHARS:,} chars]"

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PKG = "{http://schemas.openxmlformats.org/package/2006/relationships}"
OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
PRESENTATION = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
OPF = "{http://www.idpf.org/2007/opf}"
_HEADING_STYLE = re.compile(r"^(?:heading|Heading|berschrift|titre)\s*([1-9])$", re.IGNORECASE)


_DECLARATIONS = (b"<!DOCTYPE", b"<!ENTITY")
_WIDE_HEADS = (b"\xff\xfe", b"\xfe\xff", b"\x00", b"\x4c\x6f\xa7\x94")  # UTF-16/32, EBCDIC
_XML_CHUNK = 256 * 1024


def _declares(data: bytes) -> bool:
    return any(d in data for d in _DECLARATIONS)


def _pull(stream: IO[bytes], events: tuple[str, ...]) -> Iterator[Any]:
    """(event, element) pairs from ElementTree's C parser, refusing any document type
    declaration, which is where entities are declared (what defusedxml refuses, at the C
    parser's speed: defusedxml's own parser is ElementTree's pure-Python one, 3x slower). The
    bytes are searched for the declaration as they stream (with an overlap across chunks); a
    document not in an ASCII-compatible encoding is parsed by defusedxml instead."""
    head = stream.read(_XML_CHUNK)
    if head.startswith(_WIDE_HEADS) or b"\x00" in head[:4]:
        yield from iterparse(io.BytesIO(head + stream.read()), events=events)
        return
    parser: Any = XMLPullParser(events=events)  # type: ignore[arg-type]
    tail = b""
    chunk = head
    while chunk:
        if _declares(tail + chunk[:16]) or _declares(chunk):
            raise DefusedXmlException("a document type declaration")
        tail = chunk[-16:]
        parser.feed(chunk)
        yield from parser.read_events()
        chunk = stream.read(_XML_CHUNK)
    parser.close()
    yield from parser.read_events()


_W_NS = W[1:-1].encode()
_BODY_OPEN = re.compile(rb"<w:body[\s/>]")
_TAG = re.compile(rb"<([A-Za-z_][\w.:-]*)")
_TABLE_ROW = re.compile(rb"<w:tr[\s/>]")
# What the scan does not model, after the body opens: it then hands the part to the parser.
_UNSCANNED = (b"<!", b"<?", b"xmlns")  # comments, CDATA, declarations, PIs, namespaces


def _unscanned(data: bytes) -> bool:
    return any(u in data for u in _UNSCANNED)


MAX_SKIP_HELD = 8 * 1024 * 1024  # bytes of one block the scan may hold; past it, parse
_OPENINGS: dict[bytes, re.Pattern[bytes]] = {}


class _Chained(io.RawIOBase):
    """Bytes already read, then the rest of a stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self.head, self.rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Rewind(Exception):
    """The scan met what it does not model: the part is parsed from its start instead."""


_TAG_ENDS = frozenset(b" \t\r\n/>")
_TAG_END_BYTES = frozenset(bytes([b]) for b in _TAG_ENDS)


def _find_tag(buf: bytes, opening: bytes, start: int, end: int) -> int:
    """Where ``opening`` (``<w:t``) starts a tag of exactly that name in buf[start:end], or
    -1 (``bytes.find``: a regex search is 20x slower here)."""
    at = buf.find(opening, start, end)
    while at >= 0 and buf[at + len(opening)] not in _TAG_ENDS:
        at = buf.find(opening, at + 1, end)
    return at


def _has_text(buf: bytes, start: int, end: int) -> bool:
    """Whether a paragraph's ``w:t`` elements hold more than spaces (its text, stripped)."""
    at = start
    while (tag := _find_tag(buf, b"<w:t", at, end)) >= 0:
        gt = buf.find(b">", tag, end)
        if gt < 0:
            return False
        at = gt
        if buf[gt - 1] == 0x2F:
            continue  # <w:t/>
        close = buf.find(b"</w:t>", gt, end)
        if close < 0:
            return False
        raw = buf[gt + 1 : close]
        at = close
        if not raw.strip():
            continue
        text = raw.decode("utf-8", "replace")
        if not (html.unescape(text) if b"&" in raw else text).isspace():
            return True
    return False


def _block_end(buf: bytes, start: int, name: bytes) -> int:
    """Where the element whose tag opens at ``start`` ends (past its closing ``>``), found
    by counting its own name's opening and closing tags; -1 if that is not in ``buf`` yet."""
    close = buf.find(b">", start)
    if close < 0:
        return -1
    if buf[close - 1] == 0x2F:  # "/>": an empty element
        return close + 1
    opening = _OPENINGS.get(name)
    if opening is None:
        opening = _OPENINGS.setdefault(name, re.compile(rb"<(/?)" + re.escape(name) + rb"[\s/>]"))
    depth = 1
    for match in opening.finditer(buf, close + 1):
        gt = buf.find(b">", match.start())
        if gt < 0:
            return -1
        if match.group(1):
            depth -= 1
            if depth == 0:
                return gt + 1
        elif buf[gt - 1] != 0x2F:
            depth += 1
    return -1


def _skip_blocks(stream: IO[bytes], skip: int) -> tuple[int, IO[bytes]]:
    """Pass over up to ``skip`` parts of a docx body without parsing them: the bytes are
    scanned for body-level elements (each one's end found by counting its own name's tags; no
    ``<`` can stand in text or attribute values), a paragraph counting as a part when a
    ``w:t`` holds more than spaces and a table when it has a row, as `_docx` counts them.
    Returns (parts passed over, the document's head up to its body's opening tag followed by
    the rest from the next part on). Raises `_Rewind` on what it does not model: another
    prefix for the WordprocessingML namespace, a default namespace, comments, CDATA,
    processing instructions, a block over `MAX_SKIP_HELD` bytes."""
    buf = stream.read(_XML_CHUNK)

    def more() -> None:
        nonlocal buf
        chunk = stream.read(_XML_CHUNK)
        if not chunk or len(buf) > MAX_SKIP_HELD:
            raise _Rewind
        if _unscanned(chunk) or _unscanned(buf[-16:] + chunk[:16]):
            raise _Rewind
        buf += chunk

    opened = _BODY_OPEN.search(buf)
    while opened is None:
        if len(buf) > 1024 * 1024:
            raise _Rewind
        more()
        opened = _BODY_OPEN.search(buf)
    head_end = buf.find(b">", opened.start())
    while head_end < 0:
        more()
        head_end = buf.find(b">", opened.start())
    declared = buf[: opened.start()]
    if (
        declared.count(b"xmlns:w=") != 1
        or b'xmlns:w="' + _W_NS + b'"' not in declared
        or b'xmlns="' + _W_NS in declared
        or buf[head_end - 1] == 0x2F
        or _unscanned(buf[opened.start() :])
    ):
        raise _Rewind
    head = buf[: head_end + 1]
    buf = buf[head_end + 1 :]
    at = count = 0
    while count < skip:
        start = buf.find(b"<", at)
        while start < 0:
            at = len(buf)
            more()
            start = buf.find(b"<", at)
        if buf.startswith(b"</", start):
            at = start
            break  # the body's end: no more parts
        if buf.startswith(b"<w:p", start) and buf[start + 4 : start + 5] in _TAG_END_BYTES:
            name = b"w:p"
        else:
            tag = _TAG.match(buf, start)
            while tag is None or tag.end() == len(buf):
                more()
                tag = _TAG.match(buf, start)
            name = tag.group(1)
        if name == b"w:p":  # the usual block: its end is the next </w:p> unless one nests
            close = buf.find(b">", start)
            stop = buf.find(b"</w:p>", close) if close >= 0 else -1
            if close >= 0 and buf[close - 1] == 0x2F:
                at = close + 1  # an empty paragraph
                continue
            nested = buf.find(b"<w:p", close, stop) if stop >= 0 else -1
            if stop >= 0 and (nested < 0 or _find_tag(buf, b"<w:p", nested, stop) < 0):
                # The usual run: its first w:t holds plain ASCII text; else look closer.
                t = buf.find(b"<w:t", close, stop)
                gt = buf.find(b">", t, stop) if t >= 0 and buf[t + 4] in (0x3E, 0x20) else -1
                raw = buf[gt + 1 : buf.find(b"<", gt, stop)] if gt >= 0 else b""
                if raw.strip() and raw.isascii() and b"&" not in raw and buf[gt - 1] != 0x2F:
                    count += 1
                else:
                    count += _has_text(buf, close, stop)
                at = stop + 6
                if at > _XML_CHUNK:
                    buf = buf[at:]
                    at = 0
                continue
        end = _block_end(buf, start, name)
        while end < 0:
            more()
            end = _block_end(buf, start, name)
        if name == b"w:p":
            count += buf[end - 2] != 0x2F and _has_text(buf, start, end)
        elif name == b"w:tbl":
            count += _TABLE_ROW.search(buf, start, end) is not None
        at = end
        if at > _XML_CHUNK:
            buf = buf[at:]
            at = 0
    return count, io.BufferedReader(_Chained(head + buf[at:], stream), _XML_CHUNK)


class _Zip:
    """A document's zip: its central directory walked once (the first entry of a repeated
    name, as the archive tools read), each part inflated under the members' bound (`MAX_RATIO`
    times the compressed bytes really read, past `MIN_MEMBER_BUDGET`)."""

    def __init__(self, f: OpenFile) -> None:
        self.path = f.path
        self.file = f
        try:
            self.entries = first_zip_entries(f, MAX_ZIP_ENTRIES)
        except WrongFileTypeError as exc:
            raise WrongFileTypeError(f"{f.path!r} is not a readable zip container: {exc}") from None

    def close(self) -> None:
        pass

    def has(self, name: str) -> bool:
        return name in self.entries

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        entry = self.entries.get(name)
        if entry is None:
            raise WrongFileTypeError(f"{self.path!r} has no part {name!r}; it may be damaged")
        shown = f"part {name!r} of {self.path!r}"
        yield io.BufferedReader(
            MemberStream(self.file, entry, shown, floor=MIN_MEMBER_BUDGET, ratio=MAX_RATIO),
            _XML_CHUNK,
        )

    def events(
        self, name: str, events: tuple[str, ...] = ("start", "end"), skip: int = 0
    ) -> Iterator[Any]:
        """The part's (event, element) pairs; with ``skip``, a docx body's first ``skip``
        parts are passed over by `_skip_blocks` where it can, and the first pair is
        ``("skipped", count)``."""
        if skip:
            with self.open(name) as stream:
                try:
                    skipped, rest = _skip_blocks(stream, skip)
                except _Rewind:
                    skipped = -1
                if skipped >= 0:
                    yield "skipped", skipped
                    yield from self._parse(name, rest, events)
                    return
            yield "skipped", 0
        with self.open(name) as stream:
            yield from self._parse(name, stream, events)

    def _parse(self, name: str, stream: IO[bytes], events: tuple[str, ...]) -> Iterator[Any]:
        try:
            yield from _pull(stream, events)
        except DefusedXmlException as exc:
            raise WrongFileTypeError(
                f"part {name!r} of {self.path!r} declares XML entities or a DTD "
                f"({type(exc).__name__}); refused"
            ) from None
        except SyntaxError as exc:
            raise WrongFileTypeError(
                f"part {name!r} of {self.path!r} is not well-formed XML: {exc}"
            ) from None

    def read_text(self, name: str, limit: int = 4 * 1024 * 1024) -> str:
        with self.open(name) as stream:
            return stream.read(limit).decode("utf-8", "replace")

    def rels(self, name: str) -> dict[str, str]:
        """Relationship id -> member name, for the part ``name``."""
        folder, base = posixpath.split(name)
        rels_name = posixpath.join(folder, "_rels", base + ".rels")
        out: dict[str, str] = {}
        if not self.has(rels_name):
            return out
        for _event, el in self.events(rels_name, ("end",)):
            if el.tag == PKG + "Relationship":
                target = el.get("Target", "")
                full = (
                    target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
                )
                out[el.get("Id", "")] = posixpath.normpath(full)
        return out


def _cut(text: str) -> str:
    """A part's text cut at `MAX_PART_CHARS`, with `PART_CUT_NOTE`."""
    return text if len(text) <= MAX_PART_CHARS else text[:MAX_PART_CHARS] + PART_CUT_NOTE


def _joined(parts: Iterator[str]) -> str:
    """Parts joined into one, read only until it is longer than `MAX_PART_CHARS`."""
    kept: list[str] = []
    size = 0
    with contextlib.closing(parts) if isinstance(parts, Generator) else contextlib.nullcontext():
        for text in parts:
            kept.append(text)
            size += len(text) + 1
            if size > MAX_PART_CHARS:
                break
    return _cut("\n".join(kept))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("\n", " ").strip() for c in cells) + " |"


# docx


class _Text:
    """A part's text as it streams in, kept up to `MAX_PART_CHARS` (the rest is dropped as
    it arrives: one 230 MB paragraph no longer holds 230 MB)."""

    __slots__ = ("cut", "pieces", "size")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.size = 0
        self.cut = False

    def add(self, text: str) -> None:
        if self.cut:
            return
        room = MAX_PART_CHARS - self.size
        if len(text) > room:
            text = text[:room]
            self.cut = True
        self.pieces.append(text)
        self.size += len(text)

    def text(self) -> str:
        return "".join(self.pieces)


def _finish(text: str, cut: bool) -> str:
    return text + PART_CUT_NOTE if cut and text else text


_W_T, _W_TAB, _W_BR, _W_CR = W + "t", W + "tab", W + "br", W + "cr"
_W_P, _W_TBL, _W_TR, _W_TC, _W_PPR = W + "p", W + "tbl", W + "tr", W + "tc", W + "pPr"
_W_BODY = W + "body"


def _docx_style(block: Any, text: str) -> str:
    style = block.find(f"{W}pPr/{W}pStyle")
    if text and style is not None:
        value = style.get(W + "val", "")
        match = _HEADING_STYLE.match(value)
        if match:
            return "#" * int(match.group(1)) + " " + text
        if value.lower() == "title":
            return "# " + text
    return text


def _docx(z: _Zip, first: int = 1) -> Iterator[str]:
    """Body-level paragraphs and tables, their text gathered as the XML streams: each text
    element is read as it ends and removed from the tree, so memory stays flat inside one
    huge paragraph, and a part is cut at `MAX_PART_CHARS` (`PART_CUT_NOTE` says so). Parts
    before ``first`` only count (empty strings)."""
    body = None
    stack: list[Any] = []  # open elements inside the current body-level block
    number = 0
    text = _Text()
    cells: list[_Text] = []  # the open table cells, innermost last
    row: list[str] = []
    has_text = False
    for event, el in z.events("word/document.xml", skip=max(first - 1, 0)):
        if event == "skipped":
            number = el
            yield from [""] * el
            continue
        if event == "start":
            if body is None:
                if el.tag == _W_BODY:
                    body = el
                continue
            stack.append(el)
            tag = el.tag
            if tag == _W_TC:
                cells.append(_Text())
            elif tag == _W_TR and len(stack) > 1:
                row = []
            continue
        if body is None:
            continue
        if el is body:
            break
        stack.pop()
        tag = el.tag
        skipping = number + 1 < first
        if tag == _W_T:
            value = el.text
            if value:
                if skipping:
                    has_text = has_text or not value.isspace()
                else:
                    (cells[-1] if cells else text).add(value)
        elif skipping:
            pass
        elif tag == _W_TAB:
            (cells[-1] if cells else text).add("\t")
        elif tag in (_W_BR, _W_CR):
            (cells[-1] if cells else text).add("\n")
        elif tag == _W_TC and cells:
            cell = cells.pop()
            row.append(cell.text().replace("\n", " ").strip())
            if cell.cut:
                text.cut = True
        elif tag == _W_TR and stack:
            text.add(("\n" if text.size else "") + "| " + " | ".join(row) + " |")
            row = []
        if tag == _W_TC and skipping and cells:
            cells.pop()
        if tag == _W_TR and skipping:
            has_text = True  # a table with a row is a part
        if stack:
            if tag != _W_PPR and stack[-1].tag != _W_PPR:
                stack[-1].remove(el)  # read: dropped (a paragraph's properties stay)
            continue
        # A body-level block ended.
        if tag == _W_P:
            if skipping:
                out = "" if has_text else None
            else:
                out = _finish(_docx_style(el, text.text().strip()), text.cut) or None
        elif tag == _W_TBL:
            out = ("" if has_text else None) if skipping else _finish(text.text(), text.cut) or None
        else:
            out = None
        body.clear()  # processed blocks: memory stays flat
        text = _Text()
        cells = []
        row = []
        has_text = False
        if out is not None:
            number += 1
            yield out


# pptx


def _slide_names(z: _Zip) -> list[str]:
    rels = z.rels("ppt/presentation.xml")
    names = []
    for _event, el in z.events("ppt/presentation.xml", ("end",)):
        if el.tag == P + "sldId":
            target = rels.get(el.get(R + "id", ""))
            if target:
                names.append(target)
        elif el.tag == P + "sldIdLst":
            break
    return names


def _a_paragraphs(el: Any) -> list[str]:
    out = []
    for para in el.iter(A + "p"):
        text = "".join(t.text or "" for t in para.iter(A + "t")).strip()
        if text:
            out.append(text)
    return out


def _slide(z: _Zip, name: str) -> str:
    title: list[str] = []
    lines: list[str] = []
    for _event, el in z.events(name, ("end",)):
        if el.tag == P + "sp":
            ph = el.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
            texts = _a_paragraphs(el)
            if ph is not None and ph.get("type") in ("title", "ctrTitle"):
                title += texts
            else:
                lines += texts
            el.clear()
        elif el.tag == A + "tbl":
            for tr in el.iter(A + "tr"):
                lines.append(_row([" ".join(_a_paragraphs(tc)) for tc in tr.iter(A + "tc")]))
            el.clear()
    head = ["# " + " ".join(title)] if title else []
    return _cut("\n".join(head + lines))


def _pptx(z: _Zip, first: int) -> Iterator[str]:
    for number, name in enumerate(_slide_names(z), start=1):
        if z.has(name):
            yield _slide(z, name) if number >= first else ""  # earlier slides: not parsed


# odt / odp


def _odf_text(el: Any) -> str:
    """The text of an ODF element, walked with a stack of its own (spans nested 1,200 deep
    overflowed Python's), stopping once it is longer than a part is kept."""
    out: list[str] = [el.text] if el.text else []
    size = len(el.text or "")
    stack: list[tuple[Any, Any]] = [(iter(el), None)]
    while stack and size <= MAX_PART_CHARS:
        children, node = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if node is not None and node.tail:
                out.append(node.tail)
                size += len(node.tail)
            continue
        if child.tag == TEXT + "s":
            count = child.get(TEXT + "c", "1") or "1"
            piece = " " * min(int(count) if count.isdigit() else 1, MAX_PART_CHARS)
        elif child.tag == TEXT + "tab":
            piece = "\t"
        elif child.tag == TEXT + "line-break":
            piece = "\n"
        else:
            if child.text:
                out.append(child.text)
                size += len(child.text)
            stack.append((iter(child), child))
            continue
        out.append(piece + (child.tail or ""))
        size += len(out[-1])
    return "".join(out)


def _odf_block(el: Any) -> str:
    if el.tag == TEXT + "h":
        level = int(el.get(TEXT + "outline-level", "1") or 1)
        text = _odf_text(el).strip()
        return "#" * max(1, min(level, 9)) + " " + text if text else ""
    if el.tag == TEXT + "p":
        return _odf_text(el).strip()
    if el.tag == TABLE + "table":
        return "\n".join(
            _row([_odf_text(c) for c in row.iter(TABLE + "table-cell")])
            for row in el.iter(TABLE + "table-row")
        )
    if el.tag == TEXT + "list":
        return "\n".join(
            "- " + " ".join(_odf_text(p).strip() for p in item.iter(TEXT + "p"))
            for item in el.iter(TEXT + "list-item")
        )
    return ""


def _odf(z: _Zip, container: str, part: str) -> Iterator[str]:
    root = None
    depth = 0
    for event, el in z.events("content.xml"):
        if event == "start":
            if el.tag == OFFICE + container:
                root = el
            elif root is not None:
                depth += 1
            continue
        if el.tag == OFFICE + container:
            break
        if root is None:
            continue
        depth -= 1
        if depth == 0:
            if part == "page":
                text = _odp_page(el) if el.tag == DRAW + "page" else ""
            else:
                text = _odf_block(el)
            root.clear()
            if text or (part == "page" and el.tag == DRAW + "page"):
                yield _cut(text)


def _odp_page(el: Any) -> str:
    title: list[str] = []
    lines: list[str] = []
    for frame in el.iter(DRAW + "frame"):
        texts = [t for t in (_odf_text(p).strip() for p in frame.iter(TEXT + "p")) if t]
        if frame.get(PRESENTATION + "class") == "title":
            title += texts
        elif frame.get(PRESENTATION + "class") not in ("notes",):
            lines += texts
    head = ["# " + " ".join(title)] if title else []
    return "\n".join(head + lines)


# html and markdown

_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "aside",
    "nav",
    "li",
    "tr",
    "pre",
    "blockquote",
    "br",
    "table",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "body",
}
_SKIP = {"script", "style", "head", "template", "noscript", "svg"}
_HTML_HELD = 4 * MAX_PART_CHARS  # raw text held for one part before its whitespace collapses
_HTML_PENDING = 4 * 1024 * 1024  # unparsed markup HTMLParser may hold across chunks


class _HtmlParts(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._buf: list[str] = []
        self._held = 0  # chars in _buf (or in the open row's cells)
        self._cut = False
        self._skip = 0
        self._heading = 0
        self._cells: list[str] | None = None

    def _flush(self) -> None:
        text = re.sub(r"[ \t\r\n]+", " ", "".join(self._buf)).strip()
        cut, self._buf, self._held, self._cut = self._cut, [], 0, False
        if text:
            text = ("#" * self._heading + " " if self._heading else "") + text
            self.parts.append(_finish(text[:MAX_PART_CHARS], cut or len(text) > MAX_PART_CHARS))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
            return
        if tag in ("td", "th") and self._cells is not None:
            self._cells.append("")
            return
        if tag in _BLOCKS:
            self._flush()
            if tag == "tr":
                self._cells = []
            if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
                self._heading = int(tag[1])

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag == "tr" and self._cells is not None:
            cells, self._cells = self._cells, None
            cut, self._buf, self._held, self._cut = self._cut, [], 0, False
            if any(c.strip() for c in cells):
                text = _row([re.sub(r"\s+", " ", c) for c in cells])
                self.parts.append(_finish(text[:MAX_PART_CHARS], cut or len(text) > MAX_PART_CHARS))
            return
        if tag in _BLOCKS:
            self._flush()
            self._heading = 0

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        room = _HTML_HELD - self._held  # whitespace is collapsed later: keep some over
        if len(data) > room:
            data = data[: max(room, 0)]
            self._cut = True
            if not data:
                return
        self._held += len(data)
        if self._cells is not None and self._cells:
            self._cells[-1] += data
        else:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _html_stream(stream: IO[bytes]) -> Iterator[str]:
    parser = _HtmlParts()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while chunk := stream.read(_TEXT_CHUNK):
        parser.feed(decoder.decode(chunk))
        if len(parser.rawdata) > _HTML_PENDING:
            # An unfinished tag, comment or declaration this long is no markup: HTMLParser
            # would rescan it at every chunk (quadratic); its text is dropped, as a cut.
            parser.rawdata = ""
            parser._cut = True
        yield from (_cut(p) for p in parser.parts)
        parser.parts = []
    parser.close()
    yield from (_cut(p) for p in parser.parts)


def _lines(stream: IO[bytes]) -> Iterator[tuple[str, bool]]:
    """Each line (without its end) and whether it was cut: a line longer than
    `MAX_PART_CHARS` keeps its start, the rest is read and dropped (a 300 MB line once sat
    in memory whole)."""
    while raw := stream.readline(MAX_PART_CHARS * 4):
        cut = False
        if not raw.endswith(b"\n") and len(raw) == MAX_PART_CHARS * 4:
            cut = True
            while (more := stream.readline(_TEXT_CHUNK)) and not more.endswith(b"\n"):
                pass
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        yield (line[:MAX_PART_CHARS], True) if cut or len(line) > MAX_PART_CHARS else (line, False)


def _markdown_stream(stream: IO[bytes]) -> Iterator[str]:
    block: list[str] = []
    held = 0
    cut = False
    fence = False

    def part() -> str:
        nonlocal held, cut
        text = _finish("\n".join(block), cut)
        block.clear()
        held, cut = 0, False
        return _cut(text)

    for line, long in _lines(stream):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and line.lstrip().startswith("#") and block and not line.startswith("#!"):
            yield part()
        if not fence and not line.strip():
            if block:
                yield part()
            continue
        if block and not fence and held + len(line) > MAX_PART_CHARS:
            yield part()  # a huge paragraph: cut into parts at line ends
        block.append(line)
        held += len(line)
        cut = cut or long
        if not fence and line.startswith("#") and not line.startswith("#!"):
            yield part()  # a heading is a part of its own
            continue
        if len(block) > 2000:  # a huge paragraph: cut it into parts
            yield part()
    if block:
        yield part()


# epub


def _epub_chapters(z: _Zip) -> list[str]:
    opf = None
    for _event, el in z.events("META-INF/container.xml", ("end",)):
        if el.tag == CONTAINER + "rootfile":
            opf = el.get("full-path")
            break
    if not opf or not z.has(opf):
        raise WrongFileTypeError(f"{z.path!r} has no readable package document (OPF)")
    folder = posixpath.dirname(opf)
    items: dict[str, str] = {}
    spine: list[str] = []
    for _event, el in z.events(opf, ("end",)):
        if el.tag == OPF + "item":
            items[el.get("id", "")] = posixpath.normpath(posixpath.join(folder, el.get("href", "")))
        elif el.tag == OPF + "itemref":
            spine.append(el.get("idref", ""))
    return [items[i] for i in spine if i in items]


def _epub(z: _Zip, first: int) -> Iterator[str]:
    for number, name in enumerate(_epub_chapters(z), start=1):
        if not z.has(name):
            continue
        if number < first:
            yield ""  # an earlier chapter: not parsed
            continue
        with z.open(name) as stream:
            yield _joined(_html_stream(stream))


@contextlib.contextmanager
def _raw(f: OpenFile) -> Iterator[IO[bytes]]:
    with os.fdopen(os.dup(f.fd), "rb") as stream:
        yield stream


def iter_parts(f: OpenFile, fmt: str, first: int = 1) -> Generator[str, None, None]:
    """The text of each part of a document, in order; parts before ``first`` may come back
    empty when skipping them is cheaper than reading them (slides, chapters)."""
    if fmt in ("html", "markdown"):
        with _raw(f) as stream:
            yield from (_html_stream(stream) if fmt == "html" else _markdown_stream(stream))
        return
    z = _Zip(f)
    try:
        if fmt == "docx":
            yield from _docx(z, first)
        elif fmt == "pptx":
            yield from _pptx(z, first)
        elif fmt == "odt":
            yield from _odf(z, "text", "block")
        elif fmt == "odp":
            yield from _odf(z, "presentation", "page")
        elif fmt == "epub":
            yield from _epub(z, first)
        else:
            raise WrongFileTypeError(f"{f.path!r}: no reader for {fmt!r}")
    finally:
        z.close()


def document_format(f: OpenFile) -> str:
    """The document format of ``f`` as its card found it; any other file is refused with the
    tools that read it."""
    kinds = "docx, pptx, odt, odp, epub, html, markdown"
    return card_fact(f, "document", f"a document ({kinds})")[0]


def read_parts(f: OpenFile, part: str) -> dict[str, Any]:
    """`doc_read`: parts ``"N"`` or ``"A-B"`` of the document ``f``, at most
    `MAX_ANSWER_CHARS` of text (a first part longer than that comes cut to it), with the
    `next` call; a part that cannot be read ends the answer with a
    note."""
    first, last = parse_rows(part)
    fmt = document_format(f)
    parts: list[dict[str, Any]] = []
    chars = 0
    number = 0
    more: bool | None = False
    notes: list[str] = []
    reader = contextlib.closing(iter_parts(f, fmt, first))
    try:
        with reader as produced:
            for number, text in enumerate(produced, start=1):
                if number < first:
                    continue
                if number > last or (parts and chars + len(text) > MAX_ANSWER_CHARS):
                    more = True
                    break
                parts.append({"part": number, "text": text})
                chars += len(text)
    except WrongFileTypeError as exc:
        if not parts:
            raise
        notes.append(f"stopped after part {parts[-1]['part']}: {exc}")
        more = None  # unknown: the rest cannot be read
    if not parts and first > 1:
        raise InvalidArgumentError(f"part {first} is past the end: the document has {number} parts")
    cut = [p["part"] for p in parts if p["text"].endswith(PART_CUT_NOTE)]
    if cut:
        shown = ", ".join(map(str, cut[:10])) + (
            f" (+{len(cut) - 10} more)" if len(cut) > 10 else ""
        )
        notes.append(
            f"part {shown} had more than {MAX_PART_CHARS:,} chars of text and "
            f"{'was' if len(cut) == 1 else 'were'} cut there"
        )
    nxt = None
    if more and parts:
        start = parts[-1]["part"] + 1
        width = max(last - first + 1, 1)
        nxt = f'doc_read(path={json.dumps(f.path)}, part="{start}-{start + width - 1}")'
    return {
        "path": f.path,
        "format": fmt,
        "parts": parts,
        "total_parts": number if more is False else None,
        "notes": notes,
        "next": nxt,
    }
