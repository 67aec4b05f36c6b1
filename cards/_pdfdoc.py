"""The document: the newest xref section, /Prev chains, lookups by object number, and the
recovery scan when the index is broken."""

from __future__ import annotations

import re
from bisect import bisect_right

from ._pdffile import (
    _SCAN_OBJ,
    _SCAN_TRAILER,
    _SCAN_TYPE,
    _STARTXREF,
    _WINDOW,
    MAX_OBJECT_BYTES,
    MAX_OBJECT_STREAM_DEPTH,
    MAX_OBJECT_STREAMS,
    MAX_RECOVERY_SCAN_BYTES,
    MAX_REF_CHAIN,
    MAX_TAIL_BYTES,
    MAX_TREE_NODES,
    MAX_XREF_SECTIONS,
    TAIL_BYTES,
    _File,
    _Free,
    _InStream,
    _Location,
    scan,
)
from ._pdfobj import (
    Broken,
    Incomplete,
    NeedsPassword,
    Parser,
    PdfObject,
    Ref,
    Stream,
    is_int,
    simple_dict,
)
from ._pdfstream import _Decoded, _object_at, _parse_at, _stream_source
from ._pdfxref import _StreamSection, _TableSection

__all__ = ["PdfDocument"]

_DIGITS = b"0123456789 \t\n\r\x0b\f"  # digits, and what bytes.split() splits on


class _Header:
    """An object stream's header: (object number, offset) pairs, as byte tokens.

    Tokens of plain digits become numbers only when a lookup needs them: the probe reads two
    of a hundred pairs. Otherwise ``numbers`` holds them all, converted by int() up front.
    """

    __slots__ = ("numbers", "tokens")

    def __init__(self, tokens: list[bytes], numbers: list[int] | None) -> None:
        self.tokens = tokens
        self.numbers = numbers

    def __len__(self) -> int:
        return len(self.tokens) // 2

    def number(self, index: int) -> int:
        if self.numbers is not None:
            return self.numbers[2 * index]
        return int(self.tokens[2 * index])

    def offset(self, index: int) -> int:
        if self.numbers is not None:
            return self.numbers[2 * index + 1]
        return int(self.tokens[2 * index + 1])

    def index_of(self, num: int) -> int:
        """The first pair for object ``num``, or -1."""
        if self.numbers is None:
            self.numbers = list(map(int, self.tokens))
        return next((i for i in range(len(self)) if self.numbers[2 * i] == num), -1)


class PdfDocument:
    """Objects of one PDF, located through its xref chain or a recovered offset table."""

    def __init__(self, file: _File) -> None:
        self.file = file
        self._cache: dict[int, PdfObject] = {}
        self._streams: dict[int, tuple[_Decoded, _Header, int]] = {}
        self._opening: list[int] = []  # object streams being opened, outermost first
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
            tail = self.file.tail(span)
            # The last "startxref" is nearly always the one: one rfind and one match, where
            # finditer over the tail took three times as long (the probe is cold-cache work).
            at = tail.rfind(b"startxref")
            last = _STARTXREF.match(tail, at) if at >= 0 else None
            if last is None and at > 0:  # that one has no offset; an earlier one may
                matches = list(_STARTXREF.finditer(tail))
                last = matches[-1] if matches else None
            if last is not None:
                offset = int(last.group(1))
                if not 0 < offset < size:
                    raise Broken(f"startxref {offset} points outside the file ({size} bytes)")
                return offset
            if len(tail) >= size:
                break
        raise Broken(f"no startxref in the last {MAX_TAIL_BYTES} bytes")

    def _load_next_section(self) -> bool:
        offset = self._next_section
        if offset is None:
            return False
        if offset in self._seen_sections:
            raise Broken(f"/Prev chain loops back to offset {offset}")
        # Count the sections loaded, not the distinct offsets: a loop that slipped past the
        # check above must still end here.
        if len(self._sections) >= MAX_XREF_SECTIONS:
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
        self._next_section = prev if is_int(prev) else None
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
                    _, header, _ = self._object_stream(stream_num)
                except Broken:
                    continue
                for index in range(len(header)):
                    members[header.number(index)] = _InStream(stream_num, index)
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
        followed = 0
        while isinstance(value, Ref):
            if followed == MAX_REF_CHAIN:
                raise Broken(f"reference chain longer than {MAX_REF_CHAIN}")
            value = self.get(value.num)
            followed += 1
        return value

    def _source(self, stream: Stream) -> _Decoded:
        length = self.resolve(stream.dict.get("Length"))
        known = length if is_int(length) else None
        return _stream_source(self.file, stream, length=known)

    def _object_stream(self, stream_num: int) -> tuple[_Decoded, _Header, int]:
        if stream_num in self._streams:
            return self._streams[stream_num]
        chain = " -> ".join(map(str, [*self._opening, stream_num]))
        if stream_num in self._opening:
            raise Broken(f"object stream {stream_num} is needed to open itself ({chain})")
        # Count the streams being opened, not the distinct ones: a loop that slipped past the
        # check above must still end here.
        if len(self._opening) >= MAX_OBJECT_STREAM_DEPTH:
            raise Broken(f"object streams nested deeper than {MAX_OBJECT_STREAM_DEPTH} ({chain})")
        self._opening.append(stream_num)
        try:
            return self._open_object_stream(stream_num)
        finally:
            self._opening.pop()

    def _open_object_stream(self, stream_num: int) -> tuple[_Decoded, _Header, int]:
        stream = self.get(stream_num)
        if not isinstance(stream, Stream) or stream.dict.get("Type") != "ObjStm":
            raise Broken(f"object {stream_num} is not an object stream")
        n, first = stream.dict.get("N"), stream.dict.get("First")
        if not isinstance(n, int) or not isinstance(first, int) or n < 0 or first < 0:
            raise Broken(f"object stream {stream_num} has invalid /N or /First")
        try:
            source = self._source(stream)
            head = source.ensure(first)[:first]
        except Broken:
            if "Encrypt" in self.trailer:
                raise NeedsPassword(
                    f"object stream {stream_num} is encrypted; its objects need the password"
                ) from None
            raise
        tokens = head.split()
        if len(tokens) < 2 * n:
            raise Broken(f"object stream {stream_num} header lists fewer than {n} objects")
        del tokens[2 * n :]
        if head.translate(None, _DIGITS):
            # Signs, underscores or worse: convert every number now, as int() takes them.
            try:
                numbers: list[int] | None = list(map(int, tokens))
            except ValueError:
                raise Broken(f"object stream {stream_num} has a malformed header") from None
        else:
            numbers = None  # plain digits: each number converted when it is needed
        self._streams[stream_num] = (source, _Header(tokens, numbers), first)
        return self._streams[stream_num]

    def _member(self, num: int, where: _InStream) -> PdfObject:
        source, header, first = self._object_stream(where.stream_num)
        index = where.position
        if not 0 <= index < len(header) or header.number(index) != num:
            # The index is a hint; find the object by number when it is wrong.
            index = header.index_of(num)
            if index < 0:
                raise Broken(f"object {num} is not in object stream {where.stream_num}")
        offset = header.offset(index)
        if offset < 0:
            raise Broken(f"object stream {where.stream_num} gives object {num} offset {offset}")
        start = first + offset
        window = _WINDOW
        following = header.offset(index + 1) if index + 1 < len(header) else offset
        if following > offset:
            # The header says where the next object starts: one window that holds this one
            # (a long /Kids array is tens of KiB), not a parse retried in growing windows.
            window = min(max(window, following - offset + 64), MAX_OBJECT_BYTES)
        while True:
            data = source.ensure(start + window)
            if Parser.simple and data.startswith(b"<<", start):
                # A dictionary read in place, no window copied (a /Kids array is tens of KiB):
                # the answer the window's parse gives, when it ends inside the window.
                found = simple_dict(data, start)
                if found is not None and found[1] <= start + window:
                    return found[0]
            # Parse within the window only: the inflated stream may hold far more (and the
            # objects before this one are not copied).
            at_eof = source.done and len(data) <= start + window
            try:
                return Parser(data[start : start + window], 0, at_eof=at_eof).parse()
            except Incomplete:
                if window >= MAX_OBJECT_BYTES:
                    raise Broken(f"object {num} is larger than {MAX_OBJECT_BYTES} bytes") from None
                window *= 4
