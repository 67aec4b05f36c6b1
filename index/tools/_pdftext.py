"""Page text of PDFs on every core: pypdfium2 when installed (the ``fast`` extra), else pypdf.

This process takes chunks of pages from the front while worker processes take chunks from the
back, so a worker's start-up overlaps useful work instead of delaying it. Workers are plain
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
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from cards import decode_text_string

from . import _pdfworker
from ._pdfworker import (
    BACKEND,
    Identity,
    PasswordRequired,
    _open_checked,
    extract_range,
    page_count,
)

__all__ = [
    "BACKEND",
    "CHUNK_PAGES",
    "Identity",
    "PasswordRequired",
    "ProgressCallback",
    "extract_pages",
    "extract_range",
    "page_count",
    "pdf_date_iso",
    "pdf_metadata",
]

CHUNK_PAGES = 64
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


def extract_pages(
    path: str,
    identity: Identity,
    pages: int,
    progress: ProgressCallback | None = None,
    *,
    workers: int | None = None,
) -> list[str]:
    """Text of every page, in order, extracted on all cores."""
    chunks = deque((s, min(s + CHUNK_PAGES, pages)) for s in range(0, pages, CHUNK_PAGES))
    results: dict[int, list[str]] = {}
    done = 0
    lock = threading.Lock()

    def record(start: int, texts: list[str]) -> None:
        nonlocal done
        with lock:
            results[start] = texts
            done += len(texts)
            if progress is not None:
                progress(done, pages, f"extracted {done} of {pages} pages")

    def feed(worker: subprocess.Popen[str]) -> None:
        assert worker.stdin is not None
        assert worker.stdout is not None
        try:
            while True:
                with lock:
                    if not chunks:
                        return
                    start, stop = chunks.pop()
                try:
                    worker.stdin.write(f"{start} {stop}\n")
                    worker.stdin.flush()
                    answer = json.loads(worker.stdout.readline() or "null")
                except (OSError, ValueError):
                    answer = None
                if not isinstance(answer, list):  # a failed worker: this process redoes it
                    with lock:
                        chunks.append((start, stop))
                    return
                record(start, answer)
        finally:
            worker.stdin.close()
            worker.wait()
            worker.stdout.close()

    count = (os.cpu_count() or 1) - 1 if workers is None else workers
    feeders = []
    if len(chunks) > 2:
        for _ in range(max(count, 0)):
            thread = threading.Thread(
                target=feed, args=(_start_worker(path, identity),), daemon=True
            )
            thread.start()
            feeders.append(thread)
    while True:
        with lock:
            if not chunks:
                break
            start, stop = chunks.popleft()
        record(start, extract_range(path, identity, start, stop))
    for thread in feeders:
        thread.join()
    while chunks:  # handed back by a worker that failed
        start, stop = chunks.popleft()
        record(start, extract_range(path, identity, start, stop))
    return [text for start in sorted(results) for text in results[start]]


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
