"""Documents as numbered parts: paragraphs and tables (docx, odt, html, markdown), slides (pptx,
odp) and chapters (epub), with headings marked ``#`` and tables as ``|``-separated rows.

Everything streams: the XML of a zip member is read through a bounded decompressor (a member may
expand at most `MAX_RATIO` times its compressed size, past a `MIN_MEMBER_BUDGET` floor, so a
zip bomb stops early) and parsed with defusedxml's ``iterparse`` (entity declarations refused),
clearing each part once it is yielded, so memory stays flat on a 200 MB document.
"""

from __future__ import annotations

import codecs
import contextlib
import html.parser
import io
import json
import os
import posixpath
import re
import zipfile
from collections.abc import Generator, Iterator
from typing import IO, Any

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from .._errors import InvalidArgumentError, WrongFileTypeError
from .._limits import MAX_ANSWER_CHARS
from ._kinds import card_fact
from ._paths import OpenFile
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


class _Bounded(io.RawIOBase):
    """A zip member that refuses to expand past its budget (a zip bomb)."""

    def __init__(self, stream: IO[bytes], limit: int, shown: str) -> None:
        self.stream = stream
        self.left = limit
        self.limit = limit
        self.shown = shown

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(min(len(buffer), self.left + 1))
        if len(data) > self.left:
            raise WrongFileTypeError(
                f"{self.shown} expands past {self.limit:,} bytes ({MAX_RATIO}x its compressed "
                "size); refused as a decompression bomb"
            )
        self.left -= len(data)
        buffer[: len(data)] = data
        return len(data)


class _Zip:
    def __init__(self, f: OpenFile) -> None:
        self.path = f.path
        self._stream = os.fdopen(os.dup(f.fd), "rb")
        try:
            self.zip = zipfile.ZipFile(self._stream)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            self._stream.close()
            raise WrongFileTypeError(f"{f.path!r} is not a readable zip container: {exc}") from None
        if len(self.zip.infolist()) > MAX_ZIP_ENTRIES:
            self.close()
            raise WrongFileTypeError(f"{f.path!r} has over {MAX_ZIP_ENTRIES:,} zip entries")

    def close(self) -> None:
        self.zip.close()
        self._stream.close()

    def has(self, name: str) -> bool:
        return name in self.zip.NameToInfo

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        info = self.zip.NameToInfo.get(name)
        if info is None:
            raise WrongFileTypeError(f"{self.path!r} has no part {name!r}; it may be damaged")
        budget = max(MIN_MEMBER_BUDGET, MAX_RATIO * info.compress_size)
        try:
            with self.zip.open(info) as raw:
                yield io.BufferedReader(_Bounded(raw, budget, f"part {name!r} of {self.path!r}"))
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError) as exc:
            raise WrongFileTypeError(
                f"part {name!r} of {self.path!r} is unreadable: {exc}"
            ) from None

    def events(self, name: str, events: tuple[str, ...] = ("start", "end")) -> Iterator[Any]:
        with self.open(name) as stream:
            try:
                yield from iterparse(stream, events=events)
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
    return text if len(text) <= MAX_ANSWER_CHARS else text[:MAX_ANSWER_CHARS] + " [... part cut]"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("\n", " ").strip() for c in cells) + " |"


# docx


def _w_text(el: Any) -> str:
    out = []
    for node in el.iter():
        if node.tag == W + "t" and node.text:
            out.append(node.text)
        elif node.tag == W + "tab":
            out.append("\t")
        elif node.tag in (W + "br", W + "cr"):
            out.append("\n")
    return "".join(out)


def _w_paragraph(el: Any) -> str:
    text = _w_text(el).strip()
    style = el.find(f"{W}pPr/{W}pStyle")
    if text and style is not None:
        value = style.get(W + "val", "")
        match = _HEADING_STYLE.match(value)
        if match:
            return "#" * int(match.group(1)) + " " + text
        if value.lower() == "title":
            return "# " + text
    return text


def _w_table(el: Any) -> str:
    rows = []
    for tr in el.iter(W + "tr"):
        rows.append(_row([_w_text(tc) for tc in tr.iter(W + "tc")]))
    return "\n".join(rows)


def _docx(z: _Zip) -> Iterator[str]:
    body = None
    depth = 0  # nesting of body-level blocks
    for event, el in z.events("word/document.xml"):
        if event == "start":
            if el.tag == W + "body":
                body = el
            elif body is not None:
                depth += 1
            continue
        if el.tag == W + "body":
            break
        if body is None:
            continue
        depth -= 1
        if depth == 0:
            if el.tag == W + "p":
                text = _w_paragraph(el)
            elif el.tag == W + "tbl":
                text = _w_table(el)
            else:
                text = ""
            body.clear()  # processed blocks: memory stays flat
            if text:
                yield _cut(text)


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
    out = []

    def walk(node: Any) -> None:
        if node.text:
            out.append(node.text)
        for child in node:
            if child.tag == TEXT + "s":
                out.append(" " * int(child.get(TEXT + "c", "1") or 1))
            elif child.tag == TEXT + "tab":
                out.append("\t")
            elif child.tag == TEXT + "line-break":
                out.append("\n")
            else:
                walk(child)
            if child.tail:
                out.append(child.tail)

    walk(el)
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


class _HtmlParts(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._buf: list[str] = []
        self._skip = 0
        self._heading = 0
        self._in_title = False
        self._cells: list[str] | None = None

    def _flush(self) -> None:
        text = re.sub(r"[ \t\r\n]+", " ", "".join(self._buf)).strip()
        self._buf = []
        if text:
            self.parts.append(("#" * self._heading + " " if self._heading else "") + text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
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
        if tag == "title":
            self._in_title = False
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag == "tr" and self._cells is not None:
            cells, self._cells = self._cells, None
            self._buf = []
            if any(c.strip() for c in cells):
                self.parts.append(_row([re.sub(r"\s+", " ", c) for c in cells]))
            return
        if tag in _BLOCKS:
            self._flush()
            self._heading = 0

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skip:
            return
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
        yield from (_cut(p) for p in parser.parts)
        parser.parts = []
    parser.close()
    yield from (_cut(p) for p in parser.parts)


def _markdown_stream(stream: IO[bytes]) -> Iterator[str]:
    block: list[str] = []
    fence = False
    for raw in stream:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and line.lstrip().startswith("#") and block and not line.startswith("#!"):
            yield _cut("\n".join(block))
            block = []
        if not fence and not line.strip():
            if block:
                yield _cut("\n".join(block))
                block = []
            continue
        block.append(line)
        if not fence and line.startswith("#") and not line.startswith("#!"):
            yield _cut("\n".join(block))  # a heading is a part of its own
            block = []
            continue
        if len(block) > 2000:  # a huge paragraph: cut it into parts
            yield _cut("\n".join(block))
            block = []
    if block:
        yield _cut("\n".join(block))


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
            yield _cut("\n".join(_html_stream(stream)))


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
            yield from _docx(z)
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
