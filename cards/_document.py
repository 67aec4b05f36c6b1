"""Document facts (docx, pptx, odt, odp, epub, html, markdown) from the container, bounded.

Zip parts are streamed through the same decompression budget as the table facts and parsed by
defusedxml; a part too large for the budget leaves its counts out with a warning, so a card
never costs more on a 200 MB document than on a small one.
"""

from __future__ import annotations

import html
import os
import posixpath
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from ._zipxml import (
    ODF_TABLE,
    ODF_TEXT,
    OOXML_PKG,
    OOXML_REL,
    UNREADABLE,
    Budget,
    events,
    open_zip,
    unreadable,
)

__all__ = ["DOC_TOOLS", "MAX_DOC_BYTES", "MAX_TITLES", "doc_kind", "document_facts"]

DOC_TOOLS = ("doc_read", "doc_search")
MAX_TITLES = 10  # slide titles shown on a card
HEAD_BYTES = 64 * 1024
MAX_TITLE_CHARS = 200
MAX_DOC_BYTES = 2 * 1024 * 1024  # decompressed XML a document card reads, all parts together

_MIMES = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/epub+zip": "epub",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
}
_EXTENSIONS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
DC = "{http://purl.org/dc/elements/1.1/}"
META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
PRESENTATION = "{urn:oasis:names:tc:opendocument:xmlns:presentation:1.0}"
CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
OPF = "{http://www.idpf.org/2007/opf}"
_SLIDE = re.compile(r"^ppt/slides/slide\d+\.xml$")
_HEADING = re.compile(r"^(?:heading|titre|berschrift)\s*[1-9]$|^title$", re.IGNORECASE)
_TAG_END = frozenset(b" \t\r\n\f/>")


def doc_kind(name: str, mime: str) -> str | None:
    """``docx``, ``pptx``, ``odt``, ``odp``, ``epub``, ``html`` or ``markdown``, else None."""
    if mime in _MIMES:
        return _MIMES[mime]
    ext = os.path.splitext(name.lower())[1]
    if ext in _EXTENSIONS and mime.startswith("text/"):
        return _EXTENSIONS[ext]
    return None


def _short(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text[:MAX_TITLE_CHARS] or None


def _core(z: zipfile.ZipFile, budget: Budget, facts: dict[str, Any]) -> None:
    if "docProps/core.xml" not in z.NameToInfo:
        return
    for event, el in events(z, "docProps/core.xml", budget):
        if event != "end":
            continue
        if el.tag == DC + "title" and _short(el.text):
            facts["title"] = _short(el.text)
        elif el.tag == DC + "creator" and _short(el.text):
            facts["author"] = _short(el.text)


def _ends(z: zipfile.ZipFile, member: str, body: str, budget: Budget) -> Iterator[tuple[Any, bool]]:
    """Every element of ``member`` as it ends, with True for the blocks directly inside the
    ``body`` element (cells and runs are inside them); a block is cleared once read."""
    depth = 0
    in_body = False
    for event, el in events(z, member, budget):
        if event == "start":
            if el.tag == body:
                in_body = True
            elif in_body:
                depth += 1
            continue
        top = False
        if in_body and el.tag != body:
            depth -= 1
            top = depth == 0
        yield el, top
        if top:
            el.clear()


def _docx(z: zipfile.ZipFile, budget: Budget, facts: dict[str, Any]) -> None:
    paragraphs = headings = tables = 0
    for el, top in _ends(z, "word/document.xml", W + "body", budget):
        if not top:
            continue
        if el.tag == W + "p" and any(t.text for t in el.iter(W + "t")):
            paragraphs += 1
            style = el.find(f"{W}pPr/{W}pStyle")
            if style is not None and _HEADING.match(style.get(W + "val", "")):
                headings += 1
        elif el.tag == W + "tbl":
            tables += 1
    facts.update(paragraphs=paragraphs, headings=headings, tables=tables)
    facts["images"] = sum(1 for n in z.NameToInfo if n.startswith("word/media/"))


def _pptx(z: zipfile.ZipFile, budget: Budget, facts: dict[str, Any]) -> None:
    facts["slides"] = sum(1 for n in z.NameToInfo if _SLIDE.match(n))
    rels: dict[str, str] = {}
    if "ppt/_rels/presentation.xml.rels" in z.NameToInfo:
        for event, el in events(z, "ppt/_rels/presentation.xml.rels", budget):
            if event == "end" and el.tag == OOXML_PKG + "Relationship":
                rels[el.get("Id", "")] = posixpath.normpath("ppt/" + el.get("Target", ""))
    order: list[str] = []
    for event, el in events(z, "ppt/presentation.xml", budget):
        if event == "end" and el.tag == P + "sldId":
            order.append(rels.get(el.get(OOXML_REL + "id", ""), ""))
            if len(order) >= MAX_TITLES:
                break
    titles: list[str] = []
    for name in order:
        title = ""
        if name in z.NameToInfo:
            for event, el in events(z, name, budget):
                if event != "end" or el.tag != P + "sp":
                    continue
                ph = el.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
                if ph is not None and ph.get("type") in ("title", "ctrTitle"):
                    title = " ".join("".join(t.text or "" for t in el.iter(A + "t")).split())
                    break
                el.clear()
        titles.append(title[:MAX_TITLE_CHARS])
    facts["titles"] = titles


def _odf_meta(z: zipfile.ZipFile, budget: Budget, facts: dict[str, Any], fmt: str) -> None:
    if "meta.xml" in z.NameToInfo:
        for event, el in events(z, "meta.xml", budget):
            if event != "end":
                continue
            if el.tag == DC + "title" and _short(el.text):
                facts["title"] = _short(el.text)
            elif el.tag in (DC + "creator", META + "initial-creator") and _short(el.text):
                facts.setdefault("author", _short(el.text))
    if fmt == "odp":
        slides = 0
        titles: list[str] = []
        for event, el in events(z, "content.xml", budget):
            if event == "end" and el.tag == DRAW + "page":
                slides += 1
                if len(titles) < MAX_TITLES:
                    title = ""
                    for frame in el.iter(DRAW + "frame"):
                        if frame.get(PRESENTATION + "class") == "title":
                            title = " ".join("".join(frame.itertext()).split())
                            break
                    titles.append(title[:MAX_TITLE_CHARS])
                el.clear()
        facts["slides"] = slides
        facts["titles"] = titles
    else:
        paragraphs = headings = tables = images = 0
        for el, top in _ends(z, "content.xml", OFFICE + "text", budget):
            if el.tag == DRAW + "image":
                images += 1
            if not top:
                continue
            # Body-level blocks only, as doc_read numbers them (cells are inside tables).
            if el.tag == ODF_TEXT + "h":
                headings += 1
                paragraphs += 1
            elif el.tag == ODF_TEXT + "p" and "".join(el.itertext()).strip():
                paragraphs += 1
            elif el.tag == ODF_TABLE + "table":
                tables += 1
        facts.update(paragraphs=paragraphs, headings=headings, tables=tables, images=images)


def _epub(z: zipfile.ZipFile, budget: Budget, facts: dict[str, Any]) -> None:
    opf = None
    for event, el in events(z, "META-INF/container.xml", budget):
        if event == "end" and el.tag == CONTAINER + "rootfile":
            opf = el.get("full-path")
            break
    if not opf or opf not in z.NameToInfo:
        raise KeyError("no package document (OPF)")
    chapters = 0
    for event, el in events(z, opf, budget):
        if event != "end":
            continue
        if el.tag == DC + "title" and "title" not in facts and _short(el.text):
            facts["title"] = _short(el.text)
        elif el.tag == DC + "creator" and "author" not in facts and _short(el.text):
            facts["author"] = _short(el.text)
        elif el.tag == OPF + "itemref":
            chapters += 1
    facts["chapters"] = chapters


def _html_title(head: bytes) -> bytes | None:
    """The text of the first ``<title>`` element, by searches that each move forward: a
    regex with a lazy group retried from every ``<title`` took seconds on 63 KB of them."""
    lower = head.lower()
    start = lower.find(b"<title")
    while start >= 0 and start + 6 < len(lower) and lower[start + 6] not in _TAG_END:
        start = lower.find(b"<title", start + 6)  # <titles>, <titlebar>: not the element
    if start < 0:
        return None
    opened = lower.find(b">", start)
    end = lower.find(b"</title", opened) if opened >= 0 else -1
    return head[opened + 1 : end] if end >= 0 else None


def _text_title(fd: int, size: int, fmt: str) -> dict[str, Any]:
    head = os.pread(fd, min(size, HEAD_BYTES), 0)
    if fmt == "html":
        raw = _html_title(head)
        title = _short(html.unescape(raw.decode("utf-8", "replace"))) if raw is not None else None
    else:
        title = None
        for line in head.decode("utf-8", "replace").splitlines():
            if line.startswith("# "):
                title = _short(line[2:])
                break
    return {"title": title} if title else {}


def document_facts(fd: int, size: int, fmt: str) -> tuple[dict[str, Any], list[str]]:
    """Facts of a document read from its container; problems become warnings."""
    if fmt in ("html", "markdown"):
        return _text_title(fd, size, fmt), []
    facts: dict[str, Any] = {}
    budget = Budget(MAX_DOC_BYTES)
    try:
        with open_zip(fd) as z:
            if fmt in ("docx", "pptx"):
                _core(z, budget, facts)
            if fmt == "docx":
                _docx(z, budget, facts)
            elif fmt == "pptx":
                _pptx(z, budget, facts)
            elif fmt in ("odt", "odp"):
                _odf_meta(z, budget, facts, fmt)
            elif fmt == "epub":
                _epub(z, budget, facts)
    except Budget.Spent:
        for key in ("paragraphs", "headings", "tables", "images", "slides", "titles", "chapters"):
            facts.pop(key, None)
        return facts, [
            f"the {fmt} is larger than the card's {budget.limit:,}-byte reading budget: counts "
            "left out; doc_read and doc_search read all of it"
        ]
    except UNREADABLE as exc:
        return {}, [unreadable("document", exc)]
    return facts, []
