"""The PDF probe's ground floor: hostile-input limits, the file read by offset, the
bounded scan for object headers, and the facts it reports."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from ._pdfobj import Broken

__all__ = [
    "FREE",
    "MAX_OBJECT_BYTES",
    "MAX_OBJECT_STREAMS",
    "MAX_OBJECT_STREAM_DEPTH",
    "MAX_PAGES",
    "MAX_PREDICTOR_BYTES",
    "MAX_RECOVERY_SCAN_BYTES",
    "MAX_REF_CHAIN",
    "MAX_STREAM_BYTES",
    "MAX_TAIL_BYTES",
    "MAX_TREE_NODES",
    "MAX_XREF_SECTIONS",
    "PdfFacts",
    "TAIL_BYTES",
    "scan",
]

# Hostile-input limits. Messages quote the value and the limit.
TAIL_BYTES = 32 * 1024  # startxref, and often the newest xref section and its trailer
MAX_TAIL_BYTES = 64 * 1024  # writers that pad the end still fit
MAX_XREF_SECTIONS = 1_000  # length of a /Prev chain
MAX_OBJECT_BYTES = 4 * 1024 * 1024  # text of one indirect object
MAX_STREAM_BYTES = 32 * 1024 * 1024  # an xref or object stream, raw or decoded
MAX_PREDICTOR_BYTES = 256 * 1024  # bytes a PNG predictor other than Up decodes row by row
MAX_OBJECT_STREAM_DEPTH = 8  # object streams open at once (one's /Length inside another)
MAX_REF_CHAIN = 32  # a reference to a reference to ...
MAX_TREE_NODES = 100_000  # page-tree walk when /Count cannot be trusted
MAX_PAGES = 10_000_000
MAX_RECOVERY_SCAN_BYTES = 64 * 1024 * 1024  # object-header scan of a file with a broken index
MAX_OBJECT_STREAMS = 2_000  # object streams opened during recovery

_WINDOW = 4096
_HEADER = re.compile(rb"%PDF-(\d\.\d)")
_STARTXREF = re.compile(rb"startxref[ \t\r\n\f\x00]+(\d+)")
# With the whitespace after "obj": the parser then starts at the object itself.
_OBJ_HEADER = re.compile(
    rb"[ \t\n\r\f\x00]*(\d+)[ \t\n\r\f\x00]+(\d+)[ \t\n\r\f\x00]+obj[ \t\n\r\f\x00]*"
)
_SUBSECTION = re.compile(rb"[ \t\n\r\f\x00]*(\d+)[ \t]+(\d+)[ \t]*(?:\r\n|\r|\n)")
_ENTRY = re.compile(rb"(\d{10})[ ](\d{5})[ ]([fn])")
_SCAN_OBJ = re.compile(rb"(?<![0-9])(\d{1,10})[ \t\r\n\f\x00]+(\d{1,5})[ \t\r\n\f\x00]+obj\b")
_SCAN_TRAILER = re.compile(rb"trailer[ \t\r\n\f\x00]*<<")
_SCAN_TYPE = re.compile(rb"/Type[ \t\r\n\f\x00]*/(XRef|ObjStm|Page)(?![A-Za-z0-9])")
_SCAN_CHUNK = 4 * 1024 * 1024
_SCAN_OVERLAP = 64 * 1024  # longest match a scan finds across a chunk boundary


def scan(
    fd: int,
    pattern: re.Pattern[bytes],
    start: int,
    stop: int,
    *,
    chunk: int = _SCAN_CHUNK,
    overlap: int = _SCAN_OVERLAP,
) -> Iterator[tuple[int, re.Match[bytes]]]:
    """(offset, match) of ``pattern`` in bytes ``start``..``stop`` of the file, read with
    ``pread`` chunk by chunk. Never a memory map: a file truncated under the scan would turn
    an access past its new end into SIGBUS; here it just ends the scan early."""
    at = start
    while at < stop:
        own_end = min(at + chunk, stop)
        lead = 1 if at > 0 else 0  # one byte before: the patterns look behind one at most
        buf = os.pread(fd, min(own_end + overlap, stop) - (at - lead), at - lead)
        for m in pattern.finditer(buf, lead):
            if at - lead + m.start() >= own_end:
                break
            yield at - lead + m.start(), m
        if len(buf) < own_end - (at - lead):
            return  # the file is shorter than it was
        at = own_end


class _Free:
    """Marks an object number that the newest revision deleted."""


FREE = _Free()


class _InStream(NamedTuple):
    stream_num: int
    position: int


_Location = int | _InStream | _Free | None


@dataclass
class PdfFacts:
    """What the probe learned. ``pages`` is None when it could not be read exactly."""

    pages: int | None
    encrypted: bool
    version: str | None
    title: str | None = None
    warnings: list[str] = field(default_factory=list)


class _File:
    """The PDF open on ``fd``, read by offset.

    Its tail, where startxref, the newest xref section and its trailer usually are, is read
    once (`tail`); reads that start inside it are sliced from it. Each pread is a system call
    made with the caches another library (or the caller) left cold, several microseconds in
    a probe of a few hundred, and a tail of 32 KiB costs one of 1 KiB.
    """

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self._tail = b""
        self._tail_at = size  # where the bytes held in _tail start

    def tail(self, span: int) -> bytes:
        """The last ``span`` bytes (all of a smaller file), kept for later reads."""
        start = max(0, self.size - span)
        if start < self._tail_at:
            self._tail = os.pread(self.fd, self.size - start, start)
            self._tail_at = start
        return self._tail[start - self._tail_at :]

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or offset >= self.size:
            raise Broken(f"offset {offset} is outside the file ({self.size} bytes)")
        if offset >= self._tail_at:
            at = offset - self._tail_at
            return self._tail[at : at + length]
        return os.pread(self.fd, min(length, self.size - offset), offset)
