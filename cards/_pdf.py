"""PDF facts read lazily from the file's own cross-reference index.

The probe reads the tail, follows ``startxref`` to the newest cross-reference section, walks
``/Prev`` only as far as a lookup needs, and reads exactly three objects: the catalog, the page
tree root and the Info dictionary. It never parses the whole xref and never walks the page tree
while ``/Count`` is trustworthy, so its time and memory do not depend on the file's size or page
count. When the index is broken it falls back to a bounded scan for object headers.
"""

from __future__ import annotations

import os
import re

from ._pdfdoc import PdfDocument
from ._pdffile import _HEADER, MAX_PAGES, MAX_TREE_NODES, PdfFacts
from ._pdfobj import (
    Broken,
    Name,
    NeedsPassword,
    PdfObject,
    Ref,
    as_list,
    is_int,
)

__all__ = ["PdfFacts", "decode_text_string", "probe_pdf"]


def probe_pdf(fd: int, size: int) -> PdfFacts:
    """Page count, encryption, version and title of the PDF open on ``fd``.

    Never raises for bad bytes: what it cannot learn becomes ``None`` plus a warning.
    """
    head = os.pread(fd, 1024, 0)
    # The header is nearly always the first bytes: a match there spares the search.
    match = _HEADER.match(head) or _HEADER.search(head)
    facts = PdfFacts(
        pages=None, encrypted=False, version=match.group(1).decode() if match else None
    )
    if match is None:
        facts.warnings.append("no %PDF- header in the first 1024 bytes")
    try:
        doc = PdfDocument.from_xref(fd, size)
        _read_facts(doc, facts)
        return facts
    except NeedsPassword as exc:
        facts.pages = None
        facts.warnings.append(f"page count needs the password: {exc}")
        return facts
    except (Broken, RecursionError, ValueError, OverflowError) as exc:
        reason = str(exc)
    try:
        doc, notes = PdfDocument.recover(fd, size)
        try:
            _read_facts(doc, facts)
        except Broken as exc:
            if not doc.recovered_pages:
                raise
            # The page tree is gone but its pages are not (readers such as poppler list them).
            facts.pages = len(doc.recovered_pages)
            facts.warnings.append(
                f"page tree unreadable ({exc}); counted the {facts.pages} /Type /Page objects "
                "found by scanning"
            )
        facts.warnings.append(
            f"cross-reference index unusable ({reason}); facts recovered by scanning object headers"
        )
        facts.warnings.extend(notes)
    except (Broken, RecursionError, ValueError, OverflowError) as exc:
        facts.pages = None
        facts.warnings.append(f"page count unavailable: {reason}; recovery failed: {exc}")
    return facts


def _read_facts(doc: PdfDocument, facts: PdfFacts) -> None:
    trailer = doc.trailer
    facts.encrypted = doc.resolve(trailer.get("Encrypt")) is not None
    root = doc.resolve(trailer.get("Root"))
    if not isinstance(root, dict):
        raise Broken("the trailer's /Root is not a dictionary")
    version = root.get("Version")
    # The catalog may raise the header's version (7.2.2).
    if (
        isinstance(version, Name)
        and re.fullmatch(r"\d\.\d", version)
        and (facts.version is None or version > facts.version)
    ):
        facts.version = str(version)
    facts.pages = _page_count(doc, trailer, root, facts.warnings)
    if not facts.encrypted:  # strings of encrypted files are ciphertext
        try:
            facts.title = _title(doc, trailer)
        except Broken:
            facts.title = None


def _page_count(
    doc: PdfDocument, trailer: dict[str, PdfObject], root: dict[str, PdfObject], warnings: list[str]
) -> int:
    tree = doc.resolve(root.get("Pages"))
    if not isinstance(tree, dict):
        raise Broken("the catalog has no /Pages dictionary")
    count = doc.resolve(tree.get("Count"))
    size = trailer.get("Size")
    # Every page is an object of its own, so /Count can never exceed the object count.
    limit = min(MAX_PAGES, size) if isinstance(size, int) and size > 0 else MAX_PAGES
    if is_int(count) and 0 <= count <= limit:
        return count
    counted = _walk_pages(doc, tree)
    problem = "missing" if count is None else f"{count!r:.40} is implausible (limit {limit})"
    warnings.append(f"page tree /Count {problem}; counted {counted} pages by walking the tree")
    return counted


def _walk_pages(doc: PdfDocument, tree: dict[str, PdfObject]) -> int:
    pages = 0
    visited: set[int] = set()
    stack: list[PdfObject] = [tree]
    nodes = 0
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            if node.num in visited:
                continue  # a cycle or a shared kid; each page object counts once
            visited.add(node.num)
            node = doc.resolve(node)
        nodes += 1
        if nodes > MAX_TREE_NODES:
            raise Broken(f"page tree has more than {MAX_TREE_NODES} nodes")
        if not isinstance(node, dict):
            continue
        kids = as_list(doc.resolve(node.get("Kids")))
        if node.get("Type") == "Page" or not isinstance(kids, list):
            pages += 1
            continue
        stack.extend(reversed(kids))
    return pages


_PDFDOC_HIGH = (
    "\u2022\u2020\u2021\u2026\u2014\u2013\u0192\u2044\u2039\u203a\u2212\u2030\u201e\u201c\u201d"
    "\u2018\u2019\u201a\u2122\ufb01\ufb02\u0141\u0152\u0160\u0178\u017d\u0131\u0142\u0153\u0161"
    "\u017e\ufffd\u20ac"
)
_PDFDOC_LOW = "\u02d8\u02c7\u02c6\u02d9\u02dd\u02db\u02da\u02dc"  # 0x18-0x1F


def decode_text_string(raw: bytes) -> str:
    """A PDF text string as people read it: UTF-16 with a BOM, UTF-8 with a BOM, UTF-8
    without one (many producers write that; PDFDocEncoding text is almost never valid
    multi-byte UTF-8), else PDFDocEncoding. Trailing NULs (C-string habits) are dropped."""
    return _decode_text_string(raw).rstrip("\x00")


def _decode_text_string(raw: bytes) -> str:
    if raw.startswith(b"\xfe\xff"):
        return raw[2:].decode("utf-16-be", "replace")
    if raw.startswith(b"\xff\xfe"):
        return raw[2:].decode("utf-16-le", "replace")
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", "replace")
    if any(b >= 0x80 for b in raw):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    out = []
    for b in raw:
        if 0x18 <= b <= 0x1F:
            out.append(_PDFDOC_LOW[b - 0x18])
        elif 0x80 <= b <= 0xA0:
            out.append(_PDFDOC_HIGH[b - 0x80])
        else:
            out.append(chr(b))
    return "".join(out)


def _title(doc: PdfDocument, trailer: dict[str, PdfObject]) -> str | None:
    info = doc.resolve(trailer.get("Info"))
    if not isinstance(info, dict):
        return None
    title = doc.resolve(info.get("Title"))
    if not isinstance(title, bytes):
        return None
    text = decode_text_string(title).strip()
    return text or None
