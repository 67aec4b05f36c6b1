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
import sys
import threading
from collections import OrderedDict
from typing import Any, BinaryIO

__all__ = [
    "BACKEND",
    "MAX_PAGE_CHARS",
    "Identity",
    "close_documents",
    "extract_range",
    "page_count",
]

MAX_PAGE_CHARS = 200_000  # a page with more text is cut (content streams can be hostile)

try:
    import pypdfium2 as _pdfium

    BACKEND = "pypdfium2"
except ImportError:  # pragma: no cover - the default install
    _pdfium = None
    BACKEND = "pypdf"


def _clean(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\x00", "")[:MAX_PAGE_CHARS]


Identity = tuple[int, int]  # (st_dev, st_ino) of the file the caller confined and checked


def _open_checked(path: str, identity: Identity) -> BinaryIO:
    """Open ``path`` without following links and make sure it is still the checked file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != identity:
        os.close(fd)
        raise OSError(f"{path} was replaced while it was being read")
    return os.fdopen(fd, "rb")


# Open documents, reused across chunks: a fresh PDFium document walks the page tree again to
# reach page i, which made chunked extraction quadratic on flat trees. One lock per process:
# PDFium is not thread-safe.
_open_docs: OrderedDict[tuple[Any, ...], tuple[BinaryIO, Any]] = OrderedDict()
_docs_lock = threading.RLock()
_MAX_OPEN_DOCS = 2


def _document(path: str, identity: Identity) -> Any:
    f = _open_checked(path, identity)
    st = os.fstat(f.fileno())
    key = (path, identity, st.st_size, st.st_mtime_ns, st.st_ctime_ns)  # ctime: see rewrites
    cached = _open_docs.get(key)
    if cached is not None:
        f.close()
        _open_docs.move_to_end(key)
        return cached[1]
    try:
        if _pdfium is not None:
            doc: Any = _pdfium.PdfDocument(f)
        else:
            import pypdf

            logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed pages warn a lot
            doc = pypdf.PdfReader(f, strict=False)
    except BaseException:
        f.close()  # e.g. a password-protected file: nothing keeps it open
        raise
    _open_docs[key] = (f, doc)
    while len(_open_docs) > _MAX_OPEN_DOCS:
        _, (old_file, old_doc) = _open_docs.popitem(last=False)
        if _pdfium is not None:
            old_doc.close()
        old_file.close()
    return doc


def close_documents() -> None:
    """Close every cached document (at exit, and whenever a caller wants files released)."""
    with _docs_lock:
        while _open_docs:
            _, (f, doc) = _open_docs.popitem()
            if _pdfium is not None:
                doc.close()
            f.close()


atexit.register(close_documents)


def page_count(path: str, identity: Identity) -> int:
    with _docs_lock:
        doc = _document(path, identity)
        return len(doc) if _pdfium is not None else len(doc.pages)


def extract_range(path: str, identity: Identity, start: int, stop: int) -> list[str]:
    """Text of pages ``start``..``stop - 1`` (0-based). Runs in worker processes too."""
    with _docs_lock:
        doc = _document(path, identity)
        if _pdfium is not None:
            out = []
            for i in range(start, stop):
                page = doc[i]
                try:
                    textpage = page.get_textpage()
                    try:
                        out.append(_clean(textpage.get_text_range()))
                    finally:
                        textpage.close()
                finally:
                    page.close()
            return out
        texts = []
        for i in range(start, stop):
            try:
                texts.append(_clean(doc.pages[i].extract_text() or ""))
            except Exception as exc:  # noqa: BLE001 - one broken page must not lose the rest
                texts.append(f"[page text unavailable: {type(exc).__name__}: {exc}]")
        return texts


def _serve() -> None:
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
