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
import zlib
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from ._pdfobj import (
    Broken,
    Incomplete,
    Name,
    NeedsPassword,
    Parser,
    PdfObject,
    Ref,
    Stream,
    as_list,
)

__all__ = ["MAX_PAGES", "PdfDocument", "PdfFacts", "probe_pdf", "scan"]

# Hostile-input limits. Messages quote the value and the limit.
TAIL_BYTES = 1024  # where startxref normally is
MAX_TAIL_BYTES = 64 * 1024  # writers that pad the end still fit
MAX_XREF_SECTIONS = 1_000  # length of a /Prev chain
MAX_OBJECT_BYTES = 4 * 1024 * 1024  # text of one indirect object
MAX_STREAM_BYTES = 32 * 1024 * 1024  # an xref or object stream, raw or decoded
MAX_REF_CHAIN = 32  # a reference to a reference to ...
MAX_TREE_NODES = 100_000  # page-tree walk when /Count cannot be trusted
MAX_PAGES = 10_000_000
MAX_RECOVERY_SCAN_BYTES = 64 * 1024 * 1024  # object-header scan of a file with a broken index
MAX_OBJECT_STREAMS = 2_000  # object streams opened during recovery

_WINDOW = 4096
_HEADER = re.compile(rb"%PDF-(\d\.\d)")
_STARTXREF = re.compile(rb"startxref[ \t\r\n\f\x00]+(\d+)")
_OBJ_HEADER = re.compile(rb"[ \t\n\r\f\x00]*(\d+)[ \t\n\r\f\x00]+(\d+)[ \t\n\r\f\x00]+obj")
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
    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or offset >= self.size:
            raise Broken(f"offset {offset} is outside the file ({self.size} bytes)")
        return os.pread(self.fd, min(length, self.size - offset), offset)


# --- cross-reference sections -----------------------------------------------------------


class _TableSection:
    """A classic ``xref`` table: fixed-width entries, looked up by seeking, never scanned."""

    def __init__(self, file: _File, offset: int) -> None:
        self.file = file
        self.subsections: list[tuple[int, int, int, int]] = []  # first, count, start, width
        pos = offset + 4  # past "xref"
        while True:
            head = file.read(pos, 256)
            match = _SUBSECTION.match(head)
            if match is None:
                break
            first, count = int(match.group(1)), int(match.group(2))
            start = pos + match.end()
            width = self._entry_width(start) if count else 20
            self.subsections.append((first, count, start, width))
            pos = start + count * width
            if count and pos > file.size:
                raise Broken(f"xref subsection at {start} runs past the end of the file")
        after = file.read(pos, 64)
        tail = after.lstrip(b" \t\r\n\f\x00")
        if not tail.startswith(b"trailer"):
            raise Broken(f"no trailer after the xref table at offset {offset}")
        trailer_at = pos + len(after) - len(tail) + 7
        value = _parse_at(file, trailer_at)
        if not isinstance(value, dict):
            raise Broken(f"trailer at offset {trailer_at} is not a dictionary")
        self.trailer = value
        self.hybrid: _StreamSection | None = None
        stm = value.get("XRefStm")
        if isinstance(stm, int) and not isinstance(stm, bool):
            try:
                self.hybrid = _StreamSection.at(file, stm)
            except Broken:
                self.hybrid = None  # a reader may ignore /XRefStm; the table still answers

    def _entry_width(self, start: int) -> int:
        entry = self.file.read(start, 21)
        if not _ENTRY.match(entry):
            raise Broken(f"malformed xref entry at offset {start}")
        # Entries are 20 bytes; some writers end them with one byte instead of two.
        if entry[18:20] in (b" \n", b" \r", b"\r\n"):
            return 20
        if entry[18:19] in (b"\n", b"\r"):
            return 19
        raise Broken(f"malformed xref entry ending at offset {start}")

    def lookup(self, num: int) -> _Location:
        for first, count, start, width in self.subsections:
            if first <= num < first + count:
                entry = self.file.read(start + (num - first) * width, 18)
                match = _ENTRY.match(entry)
                if match is None:
                    raise Broken(f"malformed xref entry for object {num}")
                if match.group(3) == b"f":
                    return FREE
                return int(match.group(1))
        if self.hybrid is not None:
            return self.hybrid.lookup(num)
        return None


class _StreamSection:
    """A cross-reference stream (PDF 1.5): binary rows, decoded one row at a time."""

    def __init__(self, file: _File, stream: Stream, offset: int) -> None:
        d = stream.dict
        widths = as_list(d.get("W"))
        if (
            not isinstance(widths, list)
            or len(widths) != 3
            or not all(
                isinstance(w, int) and not isinstance(w, bool) and 0 <= w <= 8 for w in widths
            )
        ):
            raise Broken(f"xref stream at offset {offset} has an invalid /W {widths!r:.60}")
        self.widths = cast(list[int], widths)  # each checked to be an int in 0..8 above
        self.row = sum(self.widths)
        if self.row == 0:
            raise Broken(f"xref stream at offset {offset} has empty rows")
        size = d.get("Size")
        raw_index = as_list(d.get("Index", [0, size]))
        if (
            raw_index is None
            or len(raw_index) % 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in raw_index)
        ):
            raise Broken(f"xref stream at offset {offset} has an invalid /Index")
        index = cast(list[int], raw_index)  # checked to be non-negative ints just above
        self.ranges: list[tuple[int, int, int]] = []  # first, count, first row
        rows = 0
        for first, count in zip(index[::2], index[1::2], strict=True):
            self.ranges.append((first, count, rows))
            rows += count
        self.trailer = d
        self.offset = offset
        self.source = _stream_source(file, stream, keep_predictor=True)
        self.stride = self.row + (1 if self.source.predictor >= 10 else 0)

    @classmethod
    def at(cls, file: _File, offset: int) -> _StreamSection:
        value = _object_at(file, offset)
        if not isinstance(value, Stream) or value.dict.get("Type") != "XRef":
            raise Broken(f"offset {offset} holds no xref stream")
        return cls(file, value, offset)

    def lookup(self, num: int) -> _Location:
        for first, count, row0 in self.ranges:
            if first <= num < first + count:
                fields = self._fields(row0 + num - first)
                kind = fields[0] if self.widths[0] else 1
                if kind == 0:
                    return FREE
                if kind == 1:
                    return fields[1]
                if kind == 2:
                    return _InStream(fields[1], fields[2])
                return None  # unknown entry types are null objects (7.5.8.3)
        return None

    def _fields(self, k: int) -> list[int]:
        row = self._row(k)
        out, pos = [], 0
        for width in self.widths:
            out.append(int.from_bytes(row[pos : pos + width], "big"))
            pos += width
        return out

    def _row(self, k: int) -> bytes:
        stride = self.stride
        data = self.source.ensure((k + 1) * stride)
        if len(data) < (k + 1) * stride:
            raise Broken(f"xref stream at offset {self.offset} ends before row {k}")
        if self.source.predictor < 10:
            return data[k * stride : k * stride + self.row]
        # PNG predictors: each row starts with its filter type. Writers almost always use Up
        # (2), where a row is the column-wise sum of all rows since the last unfiltered one;
        # sum just those columns instead of decoding every row.
        filters = data[0 : (k + 1) * stride : stride]
        base_row = len(filters.rstrip(b"\x02")) - 1
        if base_row >= 0 and filters[base_row] not in (0, 1):
            return _png_decode(data, self.row, k + 1)[k * self.row : (k + 1) * self.row]
        if base_row >= 0:
            base = bytearray(data[base_row * stride + 1 : base_row * stride + stride])
            if filters[base_row] == 1:  # Sub, with one byte per pixel
                for i in range(1, len(base)):
                    base[i] = (base[i] + base[i - 1]) & 0xFF
        else:
            base = bytearray(self.row)
        first = (base_row + 1) * stride
        stop = (k + 1) * stride
        for j in range(self.row):
            base[j] = (base[j] + _byte_sum(data[first + 1 + j : stop : stride])) & 0xFF
        return bytes(base)


def _byte_sum(data: bytes) -> int:
    # Adler-32's low half is 1 + the byte sum, exact while the sum stays under 65521:
    # 256 bytes at most, so the sum runs in C.
    total = 0
    for i in range(0, len(data), 256):
        total += (zlib.adler32(data[i : i + 256]) & 0xFFFF) - 1
    return total


def _png_decode(data: bytes, columns: int, rows: int) -> bytes:
    stride = columns + 1
    out = bytearray()
    prev = bytearray(columns)
    for r in range(rows):
        kind = data[r * stride]
        cur = bytearray(data[r * stride + 1 : r * stride + stride])
        for i in range(columns):
            left = cur[i - 1] if i else 0
            up = prev[i]
            if kind == 1:
                cur[i] = (cur[i] + left) & 0xFF
            elif kind == 2:
                cur[i] = (cur[i] + up) & 0xFF
            elif kind == 3:
                cur[i] = (cur[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                upleft = prev[i - 1] if i else 0
                p = left + up - upleft
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else upleft)
                cur[i] = (cur[i] + pred) & 0xFF
            elif kind != 0:
                raise Broken(f"unknown PNG predictor row type {kind}")
        out += cur
        prev = cur
    return bytes(out)


# --- objects and streams -----------------------------------------------------------------


def _parse_at(file: _File, offset: int, *, header: int | None = None) -> PdfObject:
    """Parse the object at ``offset``; ``header`` asks for an ``N G obj`` header first."""
    window = _WINDOW
    while True:
        buf = file.read(offset, window)
        at_eof = offset + len(buf) >= file.size
        pos = 0
        if header is not None:
            match = _OBJ_HEADER.match(buf)
            if match is None:
                raise Broken(f"no object header at offset {offset}")
            if header >= 0 and int(match.group(1)) != header:
                raise Broken(
                    f"xref says object {header} is at offset {offset}, "
                    f"found object {int(match.group(1))}"
                )
            pos = match.end()
        parser = Parser(buf, pos, at_eof=at_eof)
        try:
            value = parser.parse()
            if isinstance(value, dict):
                parser.skip_space()
                if len(buf) - parser.pos < 8 and not at_eof:
                    raise Incomplete("stream keyword")
                if buf.startswith(b"stream", parser.pos):
                    start = parser.pos + 6
                    if buf.startswith(b"\r\n", start):
                        start += 2
                    elif buf.startswith((b"\n", b"\r"), start):
                        start += 1
                    return Stream(value, offset + start)
            return value
        except Incomplete:
            if at_eof:
                raise Broken(f"file ends inside the object at offset {offset}") from None
            if window >= MAX_OBJECT_BYTES:
                raise Broken(
                    f"object at offset {offset} is larger than {MAX_OBJECT_BYTES} bytes"
                ) from None
            window *= 4


def _find_forward(file: _File, start: int, needle: bytes, limit: int) -> int:
    """Offset of ``needle`` within ``limit`` bytes after ``start``, read in chunks, or -1."""
    chunk = 64 * 1024
    pos = start
    while pos < min(file.size, start + limit):
        data = file.read(pos, chunk + len(needle))
        found = data.find(needle)
        if found >= 0:
            return pos + found
        pos += chunk
    return -1


def _object_at(file: _File, offset: int, num: int = -1) -> PdfObject:
    return _parse_at(file, offset, header=num)


class _Decoded:
    """Stream data, inflated only as far as a reader has asked (bounded)."""

    def __init__(self, raw: bytes, *, compressed: bool, where: int, predictor: int) -> None:
        self.where = where
        self.predictor = predictor
        self._inflater = zlib.decompressobj() if compressed else None
        self._pending = raw
        self.data = b"" if compressed else raw
        self.done = not compressed

    def ensure(self, n: int) -> bytes:
        """The data, at least ``n`` bytes of it when the stream has that many."""
        while not self.done and len(self.data) < n:
            assert self._inflater is not None
            room = MAX_STREAM_BYTES - len(self.data)
            if room <= 0:
                raise Broken(
                    f"stream at offset {self.where} inflates past {MAX_STREAM_BYTES} bytes"
                )
            want = min(room, max(n - len(self.data), len(self.data), 16 * 1024))
            try:
                chunk = self._inflater.decompress(self._pending, want)
                self._pending = self._inflater.unconsumed_tail
                if not self._pending:
                    chunk += self._inflater.flush()
                    self.done = True
            except zlib.error as exc:
                raise Broken(f"stream at offset {self.where} does not inflate: {exc}") from None
            self.data += chunk
        return self.data

    def all(self) -> bytes:
        return self.ensure(MAX_STREAM_BYTES + 1)


def _stream_source(
    file: _File, stream: Stream, *, keep_predictor: bool = False, length: int | None = None
) -> _Decoded:
    """Decoded stream data; a PNG predictor is left undone when ``keep_predictor``."""
    where = stream.data_offset
    if length is None:
        raw_length = stream.dict.get("Length")
        length = (
            raw_length if isinstance(raw_length, int) and not isinstance(raw_length, bool) else -1
        )
    if not 0 <= length <= MAX_STREAM_BYTES:
        # A missing or indirect /Length: find endstream instead, within the limit.
        end = _find_forward(file, where, b"endstream", MAX_STREAM_BYTES)
        if end < 0:
            raise Broken(f"stream at offset {where} has no endstream within the limit")
        raw = file.read(where, end - where).rstrip(b"\r\n")
    else:
        raw = file.read(where, length)
    filters = stream.dict.get("Filter")
    params = stream.dict.get("DecodeParms")
    if isinstance(filters, list):
        if len(filters) > 1:
            raise Broken(f"stream at offset {where} has chained filters")
        filters = filters[0] if filters else None
        params = params[0] if isinstance(params, list) and params else params
    if filters is not None and filters not in ("FlateDecode", "Fl"):
        raise Broken(f"stream filter /{filters!s:.30} is not supported by the probe")
    predictor = 1
    if isinstance(params, dict):
        value = params.get("Predictor", 1)
        predictor = value if isinstance(value, int) and not isinstance(value, bool) else 1
    if 1 < predictor < 10:
        raise Broken(f"TIFF predictor {predictor} is not supported by the probe")
    source = _Decoded(raw, compressed=filters is not None, where=where, predictor=predictor)
    if predictor >= 10 and not keep_predictor:
        columns = params.get("Columns", 1) if isinstance(params, dict) else 1
        if not isinstance(columns, int) or not 1 <= columns <= 4096:
            raise Broken(f"stream at offset {where} has invalid /Columns")
        data = source.all()
        source = _Decoded(
            _png_decode(data, columns, len(data) // (columns + 1)),
            compressed=False,
            where=where,
            predictor=1,
        )
    return source


# --- the document ------------------------------------------------------------------------


class PdfDocument:
    """Objects of one PDF, located through its xref chain or a recovered offset table."""

    def __init__(self, file: _File) -> None:
        self.file = file
        self._cache: dict[int, PdfObject] = {}
        self._streams: dict[int, tuple[_Decoded, list[tuple[int, int]], int]] = {}
        self._sections: list[_TableSection | _StreamSection] = []
        self._next_section: int | None = None
        self._seen_sections: set[int] = set()
        self._recovered: dict[int, int] | None = None
        self._recovered_members: dict[int, _InStream] | None = None
        self._recovered_streams: list[int] = []
        self.recovered_pages: set[int] = set()  # /Type /Page objects seen by the recovery scan
        self.trailer: dict[str, PdfObject] = {}

    # construction

    @classmethod
    def from_xref(cls, fd: int, size: int) -> PdfDocument:
        doc = cls(_File(fd, size))
        doc._next_section = doc._find_startxref()
        doc._load_next_section()
        doc.trailer = dict(doc._sections[0].trailer)
        return doc

    @classmethod
    def recover(cls, fd: int, size: int) -> tuple[PdfDocument, list[str]]:
        """Rebuild an offset table by scanning for ``N G obj`` headers (bounded)."""
        doc = cls(_File(fd, size))
        notes: list[str] = []
        if size > MAX_RECOVERY_SCAN_BYTES:
            half = MAX_RECOVERY_SCAN_BYTES // 2
            regions = [(0, half), (size - half, size)]
            notes.append(
                f"recovery scanned the first and last {half // (1024 * 1024)} MiB only "
                f"(file is {size} bytes, scan limit {MAX_RECOVERY_SCAN_BYTES})"
            )
        else:
            regions = [(0, size)]
        if not size:
            raise Broken("no objects found in the file")  # and nothing to map
        table: dict[int, int] = {}
        trailers: list[int] = []
        typed: list[tuple[int, bytes]] = []
        for start, stop in regions:
            for at, m in scan(fd, _SCAN_OBJ, start, stop):
                table[int(m.group(1))] = at
            trailers += [at + len(m.group(0)) - 2 for at, m in scan(fd, _SCAN_TRAILER, start, stop)]
            typed += [(at, m.group(1)) for at, m in scan(fd, _SCAN_TYPE, start, stop)]
        if not table:
            raise Broken("no objects found in the file")
        doc._recovered = table
        offsets = sorted(table.values())
        by_offset = {off: num for num, off in table.items()}
        xref_streams = []
        for pos, kind in typed:
            i = bisect_right(offsets, pos) - 1
            if i < 0:
                continue
            num = by_offset[offsets[i]]
            if table.get(num) != offsets[i]:
                continue
            if kind == b"ObjStm":
                doc._recovered_streams.append(num)
            elif kind == b"Page":
                doc.recovered_pages.add(num)
            else:
                xref_streams.append(num)
        for pos in trailers:
            try:
                value = _parse_at(doc.file, pos)
            except Broken:
                continue
            if isinstance(value, dict) and "Root" in value:
                doc.trailer = value
        if "Root" not in doc.trailer:
            for num in xref_streams:
                try:
                    value = doc.get(num)
                except Broken:
                    continue
                if isinstance(value, Stream) and "Root" in value.dict:
                    doc.trailer = dict(value.dict)
        if "Root" not in doc.trailer:
            catalog = doc._find_catalog(offsets, by_offset)
            if catalog is None:
                raise Broken("no trailer and no /Type /Catalog object found")
            doc.trailer = {"Root": Ref(catalog, 0)}
        return doc, notes

    def _find_catalog(self, offsets: list[int], by_offset: dict[int, int]) -> int | None:
        for off in reversed(offsets[-MAX_TREE_NODES:]):
            head = self.file.read(off, 512)
            if re.search(rb"/Type[ \t\r\n\f\x00]*/Catalog\b", head):
                return by_offset[off]
        return None

    def _find_startxref(self) -> int:
        size = self.file.size
        for span in (TAIL_BYTES, MAX_TAIL_BYTES):
            start = max(0, size - span)
            tail = self.file.read(start, size - start) if size else b""
            matches = list(_STARTXREF.finditer(tail))
            if matches:
                offset = int(matches[-1].group(1))
                if not 0 < offset < size:
                    raise Broken(f"startxref {offset} points outside the file ({size} bytes)")
                return offset
            if start == 0:
                break
        raise Broken(f"no startxref in the last {MAX_TAIL_BYTES} bytes")

    def _load_next_section(self) -> bool:
        offset = self._next_section
        if offset is None:
            return False
        if offset in self._seen_sections:
            raise Broken(f"/Prev chain loops back to offset {offset}")
        if len(self._seen_sections) >= MAX_XREF_SECTIONS:
            raise Broken(f"/Prev chain is longer than {MAX_XREF_SECTIONS} sections")
        self._seen_sections.add(offset)
        raw = self.file.read(offset, 16)
        head = raw.lstrip(b" \t\r\n\f\x00")
        skipped = len(raw) - len(head)
        section: _TableSection | _StreamSection
        if head.startswith(b"xref"):
            section = _TableSection(self.file, offset + skipped)
        else:
            section = _StreamSection.at(self.file, offset)
        self._sections.append(section)
        prev = section.trailer.get("Prev")
        self._next_section = prev if isinstance(prev, int) and not isinstance(prev, bool) else None
        if self._next_section is not None and not 0 <= self._next_section < self.file.size:
            raise Broken(f"/Prev {self._next_section} points outside the file")
        return True

    # lookups

    def locate(self, num: int) -> _Location:
        if self._recovered is not None:
            if num in self._recovered:
                return self._recovered[num]
            return self._recovered_member(num)
        for section in self._sections:
            found = section.lookup(num)
            if found is not None:
                return found
        while self._load_next_section():
            found = self._sections[-1].lookup(num)
            if found is not None:
                return found
        return None

    def _recovered_member(self, num: int) -> _Location:
        if self._recovered_members is None:
            members: dict[int, _InStream] = {}
            for stream_num in self._recovered_streams[:MAX_OBJECT_STREAMS]:
                try:
                    _, pairs, _ = self._object_stream(stream_num)
                except Broken:
                    continue
                for index, (member, _) in enumerate(pairs):
                    members[member] = _InStream(stream_num, index)
            self._recovered_members = members
        return self._recovered_members.get(num)

    def get(self, num: int) -> PdfObject:
        if num in self._cache:
            return self._cache[num]
        where = self.locate(num)
        value: PdfObject
        if where is None or isinstance(where, _Free):
            value = None  # a missing object is the null object (7.3.10)
        elif isinstance(where, _InStream):
            value = self._member(num, where)
        else:
            if not 0 <= where < self.file.size:
                raise Broken(f"xref offset {where} of object {num} is outside the file")
            value = _object_at(self.file, where, num)
        self._cache[num] = value
        return value

    def resolve(self, value: PdfObject) -> PdfObject:
        for _ in range(MAX_REF_CHAIN):
            if not isinstance(value, Ref):
                return value
            value = self.get(value.num)
        raise Broken(f"reference chain longer than {MAX_REF_CHAIN}")

    def _source(self, stream: Stream) -> _Decoded:
        length = self.resolve(stream.dict.get("Length"))
        known = length if isinstance(length, int) and not isinstance(length, bool) else None
        return _stream_source(self.file, stream, length=known)

    def _object_stream(self, stream_num: int) -> tuple[_Decoded, list[tuple[int, int]], int]:
        if stream_num in self._streams:
            return self._streams[stream_num]
        stream = self.get(stream_num)
        if not isinstance(stream, Stream) or stream.dict.get("Type") != "ObjStm":
            raise Broken(f"object {stream_num} is not an object stream")
        n, first = stream.dict.get("N"), stream.dict.get("First")
        if not isinstance(n, int) or not isinstance(first, int) or n < 0 or first < 0:
            raise Broken(f"object stream {stream_num} has invalid /N or /First")
        try:
            source = self._source(stream)
            header = source.ensure(first)[:first].split()
        except Broken:
            if "Encrypt" in self.trailer:
                raise NeedsPassword(
                    f"object stream {stream_num} is encrypted; its objects need the password"
                ) from None
            raise
        if len(header) < 2 * n:
            raise Broken(f"object stream {stream_num} header lists fewer than {n} objects")
        try:
            pairs = [(int(header[2 * i]), int(header[2 * i + 1])) for i in range(n)]
        except ValueError:
            raise Broken(f"object stream {stream_num} has a malformed header") from None
        self._streams[stream_num] = (source, pairs, first)
        return self._streams[stream_num]

    def _member(self, num: int, where: _InStream) -> PdfObject:
        source, pairs, first = self._object_stream(where.stream_num)
        index = where.position
        if not 0 <= index < len(pairs) or pairs[index][0] != num:
            # The index is a hint; find the object by number when it is wrong.
            index = next((i for i, (member, _) in enumerate(pairs) if member == num), -1)
            if index < 0:
                raise Broken(f"object {num} is not in object stream {where.stream_num}")
        start = first + pairs[index][1]
        window = _WINDOW
        while True:
            data = source.ensure(start + window)
            try:
                return Parser(data, start, at_eof=source.done).parse()
            except Incomplete:
                if window >= MAX_OBJECT_BYTES:
                    raise Broken(f"object {num} is larger than {MAX_OBJECT_BYTES} bytes") from None
                window *= 4


# --- facts -------------------------------------------------------------------------------


def probe_pdf(fd: int, size: int) -> PdfFacts:
    """Page count, encryption, version and title of the PDF open on ``fd``.

    Never raises for bad bytes: what it cannot learn becomes ``None`` plus a warning.
    """
    head = os.pread(fd, 1024, 0)
    match = _HEADER.search(head)
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
    if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= limit:
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
