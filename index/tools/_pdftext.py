"""Page text of PDFs: simple pages without PDFium, the rest on every core with pypdfium2 (a
dependency), else pypdf.

Pages simple enough to be read word for word as PDFium reads them (`cards.open_simple_text`:
plain fonts, one string per line) are read in this process, in a fraction of PDFium's time;
a page it declines is read by PDFium here, and a document it mostly declines goes to the
workers from there on.

This process and worker processes take chunks of pages in page order (this process starts at
once, so a worker's start-up overlaps useful work), and the texts are handed on in order as
they complete, so a caller can index a document of any length in flat memory and stop at a
time limit with every page before the stop done. Workers are plain
subprocesses running `_pdfworker` by path (PDFium is not thread-safe, and a multiprocessing
spawn would re-import this whole package first).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from leanreplay.cards import decode_text_string, open_simple_text

from . import _pdfworker
from ._pdfworker import (
    BACKEND,
    MAX_PAGE_CHARS,
    PAGE_CUT_NOTE,
    Identity,
    PasswordRequired,
    _clean,
    _open_checked,
    extract_range,
    page_count,
)

__all__ = [
    "BACKEND",
    "CHUNK_PAGES",
    "MAX_PAGE_CHARS",
    "PAGE_CUT_NOTE",
    "Identity",
    "PasswordRequired",
    "ProgressCallback",
    "extract_pages",
    "extract_stream",
    "extract_range",
    "page_count",
    "pdf_date_iso",
    "pdf_metadata",
]

CHUNK_PAGES = 64  # most pages per chunk
FIRST_CHUNK_PAGES = 8  # until a chunk has been timed
CHUNK_SECONDS = 0.25  # chunk sizes follow the measured time per page
SIMPLE_CHUNK_PAGES = 64  # pages the simple reader hands on at a time
SIMPLE_MIN_SHARE = 0.75  # below this share of simple pages, the workers take over
ProgressCallback = Callable[[int, int, str], None]
_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_pdfworker.py")


def _start_worker(path: str, identity: Identity) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-I", _WORKER, path, str(identity[0]), str(identity[1])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        env={**os.environ, "LEANREPLAY_PDF_BACKEND": _pdfworker.backend()},
    )


def extract_stream(
    path: str,
    identity: Identity,
    pages: int,
    sink: Callable[[int, list[str]], None],
    progress: ProgressCallback | None = None,
    *,
    first: int = 0,
    stop: Callable[[], bool] | None = None,
    workers: int | None = None,
) -> int:
    """Extract pages ``first``..``pages - 1`` on all cores and hand them to ``sink(start,
    texts)`` in page order, chunk by chunk (memory holds a few chunks, never the document).

    Chunks are handed out in page order; once ``stop()`` is true no new chunk starts.
    Returns where extraction stopped: every page before it went to the sink, none after it.
    """
    returned: deque[tuple[int, int]] = deque()  # handed back by a worker that failed
    cursor = first  # the next page no chunk has covered yet
    size = FIRST_CHUNK_PAGES
    finished: dict[int, list[str]] = {}  # completed chunks not yet handed on in order
    next_start = first
    done = 0
    lock = threading.Lock()
    order = threading.Lock()  # the sink is called by one thread at a time, in order

    def take() -> tuple[int, int] | None:
        nonlocal cursor
        with lock:
            if stop is not None and stop():
                return None
            if returned:
                return returned.popleft()
            if cursor >= pages:
                return None
            span = (cursor, min(cursor + size, pages))
            cursor = span[1]
            return span

    def record(start: int, texts: list[str], seconds: float) -> None:
        nonlocal done, next_start, size
        with order:
            with lock:
                finished[start] = texts
                done += len(texts)
                # Chunks of about CHUNK_SECONDS: long enough to keep the overhead small, short
                # enough that heavy pages (a text bomb) do not overrun a time limit.
                per_page = seconds / max(1, len(texts))
                size = max(1, min(CHUNK_PAGES, int(CHUNK_SECONDS / max(per_page, 1e-6))))
                if progress is not None:
                    progress(first + done, pages, f"extracted {first + done} of {pages} pages")
            while next_start in finished:
                ready = finished.pop(next_start)
                sink(next_start, ready)
                next_start += len(ready)

    def give_back(start: int, stop: int) -> None:
        with lock:
            returned.appendleft((start, stop))

    def local(span: tuple[int, int]) -> None:
        began = time.monotonic()
        texts = extract_range(path, identity, *span)
        record(span[0], texts, time.monotonic() - began)

    def feed(worker: subprocess.Popen[str]) -> None:
        assert worker.stdin is not None
        assert worker.stdout is not None
        try:
            while (span := take()) is not None:
                start, stop = span
                began = time.monotonic()
                try:
                    worker.stdin.write(f"{start} {stop}\n")
                    worker.stdin.flush()
                    answer = json.loads(worker.stdout.readline() or "null")
                except (OSError, ValueError):
                    answer = None
                if not isinstance(answer, list):  # a failed worker: this process redoes it
                    give_back(start, stop)
                    return
                record(start, answer, time.monotonic() - began)
        finally:
            worker.stdin.close()
            worker.wait()
            worker.stdout.close()

    if _pdfworker.backend() == "pypdfium2":
        first = next_start = cursor = _extract_simple(path, identity, pages, sink, first, stop)
        if progress is not None and first:
            progress(first, pages, f"extracted {first} of {pages} pages")
    count = (os.cpu_count() or 1) - 1 if workers is None else workers
    feeders = []
    if pages - first > 2 * CHUNK_PAGES:
        for _ in range(max(count, 0)):
            thread = threading.Thread(
                target=feed, args=(_start_worker(path, identity),), daemon=True
            )
            thread.start()
            feeders.append(thread)
    while (span := take()) is not None:
        local(span)
    for thread in feeders:
        thread.join()
    while (span := take()) is not None:  # handed back by a worker that failed
        local(span)
    return next_start


def _extract_simple(
    path: str,
    identity: Identity,
    pages: int,
    sink: Callable[[int, list[str]], None],
    first: int,
    stop: Callable[[], bool] | None,
) -> int:
    """Pages ``first``.. through the simple reader, to the sink in order; where it stopped
    (the end, a stop, or a document whose pages are mostly not simple)."""
    with _open_checked(path, identity) as f:
        reader = open_simple_text(f.fileno(), os.fstat(f.fileno()).st_size)
        if reader is None or reader.count != pages:
            return first
        cursor = first
        simple = 0
        while cursor < pages and not (stop is not None and stop()):
            # A small first chunk: a document of pages it declines goes to the workers soon.
            end = min(cursor + (SIMPLE_CHUNK_PAGES if cursor > first else FIRST_CHUNK_PAGES), pages)
            texts = []
            for i in range(cursor, end):
                text = reader.text(i)
                if text is None:  # declined: PDFium reads it, in this process
                    texts.extend(extract_range(path, identity, i, i + 1))
                else:
                    simple += 1
                    texts.append(_clean(text))
            sink(cursor, texts)
            cursor = end
            if simple < SIMPLE_MIN_SHARE * (cursor - first):
                break
        return cursor


def extract_pages(
    path: str,
    identity: Identity,
    pages: int,
    progress: ProgressCallback | None = None,
    *,
    workers: int | None = None,
) -> list[str]:
    """Text of every page, in order, extracted on all cores."""
    texts: list[str] = []
    extract_stream(
        path, identity, pages, lambda _, chunk: texts.extend(chunk), progress, workers=workers
    )
    return texts


def pdf_metadata(path: str, identity: Identity, *, outline_limit: int = 50) -> dict[str, object]:
    """Document info and the top level of the outline, through pypdf."""
    with _open_checked(path, identity) as f:
        return _metadata(f, outline_limit)


def _text_string(value: object) -> str:
    """A metadata string as people read it, from the bytes in the file (pypdf decodes UTF-8
    without a BOM as PDFDocEncoding, which garbles every accented title)."""
    raw = getattr(value, "original_bytes", None)
    if isinstance(raw, bytes):
        return decode_text_string(raw).strip()
    return str(value).rstrip("\x00").strip()


_PDF_DATE = re.compile(
    r"(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?"
    r"(?:([Zz])|([+-])(\d{2})'?(?:(\d{2})'?)?)?\s*$"
)


def pdf_date_iso(text: str) -> str:
    """``D:20100503143917-05'00'`` as ISO 8601 (``2010-05-03T14:39:17-05:00``); a value that
    is not a PDF date is returned as it is."""
    m = _PDF_DATE.match(text.strip())
    if m is None:
        return text
    year, month, day, hour, minute, second, zulu, sign, tz_h, tz_m = m.groups()
    if not (1 <= int(month or 1) <= 12 and 1 <= int(day or 1) <= 31):
        return text
    out = year + (f"-{month}" if month else "") + (f"-{day}" if month and day else "")
    if hour and day:
        out += f"T{hour}:{minute or '00'}:{second or '00'}"
        if zulu:
            out += "Z"
        elif sign:
            out += f"{sign}{tz_h}:{tz_m or '00'}"
    return out


def _metadata(f: BinaryIO, outline_limit: int) -> dict[str, object]:
    import pypdf

    reader = pypdf.PdfReader(f, strict=False)
    meta: dict[str, object] = {}
    if reader.is_encrypted:
        try:
            if not reader.decrypt(""):
                return {"metadata": {}, "outline": [], "notes": ["encrypted: needs a password"]}
        except Exception as exc:  # noqa: BLE001 - e.g. AES without the cryptography package
            return {"metadata": {}, "outline": [], "notes": [f"encrypted: cannot decrypt ({exc})"]}
    info: Mapping[str, Any] = reader.metadata or {}
    for key, name in (
        ("/Title", "title"),
        ("/Author", "author"),
        ("/Subject", "subject"),
        ("/Producer", "producer"),
        ("/Creator", "creator"),
        ("/CreationDate", "created"),
        ("/ModDate", "modified"),
    ):
        value = info.get(key)
        if value is None:
            continue
        text = _text_string(value)
        if name in ("created", "modified"):
            text = pdf_date_iso(text)
        if text:
            meta[name] = text[:500]
    outline: list[dict[str, object]] = []
    try:
        for item in reader.outline:
            if isinstance(item, list):
                continue  # nested levels: only the top is listed
            if len(outline) >= outline_limit:
                break
            try:
                number = reader.get_destination_page_number(item)
                page = None if number is None else number + 1
            except Exception:  # noqa: BLE001 - a dangling destination
                page = None
            outline.append({"title": _text_string(item.title)[:300], "page": page})
    except Exception:  # noqa: BLE001 - a broken outline is not worth failing pdf_info
        outline = []
    return {"metadata": meta, "outline": outline, "notes": []}
