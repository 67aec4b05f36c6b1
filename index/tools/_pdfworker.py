"""Page text extraction, importable on its own and runnable as a worker process.

Run as a script (``python _pdfworker.py PATH DEV INO``), it reads ``START STOP`` lines on
stdin and answers each with one JSON line of page texts. It imports nothing from the
``index`` package, so a worker starts in the time Python and PDFium take to load.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import resource
import sys
import threading
from collections import OrderedDict
from typing import Any, BinaryIO

__all__ = [
    "BACKEND",
    "MAX_LOOSE_OBJECTS",
    "MAX_PAGE_CHARS",
    "PAGE_CUT_NOTE",
    "Identity",
    "PasswordRequired",
    "backend",
    "close_documents",
    "extract_range",
    "page_count",
]

# A page with more text is cut: a content stream can be hostile (a "text bomb" shares one
# 200k-char stream among thousands of pages). A cut page and its note fit in one pdf_read
# call (40,000 chars); a dense page of real text holds about 10,000.
MAX_PAGE_CHARS = 32_000
PAGE_CUT_NOTE = f"\n[... page text cut at {MAX_PAGE_CHARS:,} chars]"

try:
    import pypdfium2 as _pdfium
except ImportError:  # pragma: no cover - a platform without pypdfium2 wheels
    _pdfium = None
# LEANREPLAY_PDF_BACKEND=pypdf forces the pure-Python fallback (tests run both).
if os.environ.get("LEANREPLAY_PDF_BACKEND") == "pypdf":
    _pdfium = None
BACKEND = "pypdfium2" if _pdfium is not None else "pypdf"

MAX_LOOSE_OBJECTS = 200_000  # objects inspected when a broken page tree forces a scan


def backend() -> str:
    """The text backend in use: ``pypdfium2`` (the ``fast`` extra) or ``pypdf``."""
    return "pypdfium2" if _pdfium is not None else "pypdf"


class PasswordRequired(Exception):
    """The PDF cannot be opened without a password."""


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\x00", "")
    # PDFium marks a hyphen at a line break with U+FFFE and drops the break; pypdf passes a
    # soft hyphen (0xAD, drawn as a hyphen glyph) through as U+00AD. People read a hyphen.
    text = _LINE_HYPHEN.sub("-\n", text)
    text = text.replace("\u00ad", "-").replace("\ufffe", "-")
    if len(text) > MAX_PAGE_CHARS:
        return text[:MAX_PAGE_CHARS] + PAGE_CUT_NOTE
    return text


_LINE_HYPHEN = re.compile("\ufffe\n?")


Identity = tuple[int, int]  # (st_dev, st_ino) of the file the caller confined and checked


def _open_checked(path: str, identity: Identity) -> BinaryIO:
    """Open ``path`` without following links and make sure it is still the checked file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != identity:
        os.close(fd)
        raise OSError(f"{path} was replaced while it was being read")
    return os.fdopen(fd, "rb")


class _Document:
    """One open PDF: its pages in order and their text, whatever read it."""

    def __len__(self) -> int:
        raise NotImplementedError

    def text(self, i: int) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _PdfiumDocument(_Document):
    def __init__(self, doc: Any) -> None:
        self.doc = doc

    def __len__(self) -> int:
        return len(self.doc)

    def text(self, i: int) -> str:
        page = self.doc[i]
        try:
            textpage = page.get_textpage()
            try:
                return str(textpage.get_text_range())
            finally:
                textpage.close()
        finally:
            page.close()

    def close(self) -> None:
        self.doc.close()


class _PypdfDocument(_Document):
    """pypdf's page list; or, when the page tree is broken, the ``/Type /Page`` objects
    found in the (rebuilt) cross-reference, in object order, as poppler and others do."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        try:
            self.pages: Any = reader.pages
            len(self.pages)
        except Exception:  # pypdf raises several types for a broken tree; re-raised below
            self.pages = _loose_pages(reader)
            if not self.pages:
                raise

    def __len__(self) -> int:
        return len(self.pages)

    def text(self, i: int) -> str:
        try:
            return str(self.pages[i].extract_text() or "")
        except Exception as exc:  # noqa: BLE001 - one broken page must not lose the rest
            return f"[page text unavailable: {type(exc).__name__}: {exc}]"


def _loose_pages(reader: Any) -> list[Any]:
    from pypdf import PageObject
    from pypdf.generic import DictionaryObject, IndirectObject, NameObject

    found = []
    numbers = sorted({(num, gen) for gen, table in reader.xref.items() for num in table})
    for num, gen in numbers[:MAX_LOOSE_OBJECTS]:
        try:
            obj = reader.get_object(IndirectObject(num, gen, reader))
        except Exception:  # noqa: BLE001 - a damaged object is skipped like any non-page
            continue
        if isinstance(obj, DictionaryObject) and obj.get("/Type") == NameObject("/Page"):
            page = PageObject(reader, IndirectObject(num, gen, reader))
            page.update(obj)
            found.append(page)
    return found


def _open_document(f: BinaryIO) -> _Document:
    if _pdfium is not None:
        try:
            return _PdfiumDocument(_pdfium.PdfDocument(f))
        except _pdfium.PdfiumError as exc:
            if exc.err_code == _pdfium.raw.FPDF_ERR_PASSWORD:
                raise PasswordRequired(str(exc)) from None
            f.seek(0)  # a structure PDFium cannot repair: pypdf's recovery may still read it
    import pypdf

    reader = pypdf.PdfReader(f, strict=False)
    if reader.is_encrypted and reader.decrypt("") == pypdf.PasswordType.NOT_DECRYPTED:
        raise PasswordRequired("the empty user password does not open it")
    return _PypdfDocument(reader)


# Open documents, reused across chunks: a fresh PDFium document walks the page tree again to
# reach page i, which made chunked extraction quadratic on flat trees. One lock per process:
# PDFium is not thread-safe.
# A document is reopened once the process grew by REOPEN_GROWTH while it was open: PDFium keeps
# every object it parsed, so a document read to its end held all its content streams (300 MB
# for a 300 MB file). Not by page count: a reopen walks a flat page tree again to reach page i.
_open_docs: OrderedDict[tuple[Any, ...], tuple[BinaryIO, _Document]] = OrderedDict()
_opened_at: dict[tuple[Any, ...], int] = {}  # resident bytes when the document was opened
_docs_lock = threading.RLock()
_MAX_OPEN_DOCS = 2
REOPEN_GROWTH = 64 * 1024 * 1024


def _resident() -> int:
    """Resident bytes of this process (Linux); elsewhere the peak, which only grows."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _document(path: str, identity: Identity) -> _Document:
    f = _open_checked(path, identity)
    st = os.fstat(f.fileno())
    # The stat fields of _paths.fingerprint (this module imports nothing of index, and a
    # document is cached open, so its content is not hashed again); ctime: see rewrites.
    key = (path, identity, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    cached = _open_docs.get(key)
    if cached is not None and _resident() - _opened_at.get(key, 0) > REOPEN_GROWTH:
        _close(key)
        cached = None
    if cached is not None:
        f.close()
        _open_docs.move_to_end(key)
        return cached[1]
    _opened_at[key] = _resident()
    try:
        doc = _open_document(f)
    except BaseException:
        f.close()  # e.g. a password-protected file: nothing keeps it open
        raise
    _open_docs[key] = (f, doc)
    while len(_open_docs) > _MAX_OPEN_DOCS:
        _close(next(iter(_open_docs)))
    return doc


def _close(key: tuple[Any, ...]) -> None:
    old_file, old_doc = _open_docs.pop(key)
    _opened_at.pop(key, None)
    old_doc.close()
    old_file.close()


def close_documents() -> None:
    """Close every cached document (at exit, and whenever a caller wants files released)."""
    with _docs_lock:
        while _open_docs:
            _close(next(iter(_open_docs)))


atexit.register(close_documents)


def page_count(path: str, identity: Identity) -> int:
    """Pages the text backend finds; raises `PasswordRequired` for a locked file."""
    with _docs_lock:
        return len(_document(path, identity))


def extract_range(path: str, identity: Identity, start: int, stop: int) -> list[str]:
    """Text of pages ``start``..``stop - 1`` (0-based). Runs in worker processes too. Pages
    past the end of what the backend finds come back as a note (the counts may differ)."""
    with _docs_lock:
        doc = _document(path, identity)
        found = len(doc)
        return [
            _clean(doc.text(i)) if i < found else f"[page {i + 1} not found by the text backend]"
            for i in range(start, stop)
        ]


def _serve() -> None:
    # This process is ours (the library never changes a host application's loggers): malformed
    # pages make pypdf warn a lot, and nobody reads a worker's stderr.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    path, dev, ino = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for line in sys.stdin:
        start, stop = (int(v) for v in line.split())
        try:
            answer: Any = extract_range(path, (dev, ino), start, stop)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which redoes the chunk
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
