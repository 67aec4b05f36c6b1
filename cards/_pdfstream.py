"""Objects and streams: an indirect object parsed at an offset, stream data decoded within
the limits (with PNG predictors), and objects inside object streams."""

from __future__ import annotations

import zlib
from types import ModuleType

from ._pdffile import (
    _OBJ_HEADER,
    _WINDOW,
    MAX_OBJECT_BYTES,
    MAX_PREDICTOR_BYTES,
    MAX_STREAM_BYTES,
    _File,
)
from ._pdfobj import (
    Broken,
    Incomplete,
    Parser,
    PdfObject,
    Stream,
    is_int,
)


def _zlib_ng() -> ModuleType | None:
    """zlib-ng (a dependency) when its wheel is installed: it inflates the same bytes 1.2-1.7x
    faster than the zlib Python links, and object and xref streams are most of the probe's
    time. Without it the standard zlib inflates, with the same results (tests run both)."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:  # pragma: no cover - installed with the package
        return None
    return zlib_ng


INFLATE: ModuleType = _zlib_ng() or zlib
INFLATE_ERRORS: tuple[type[Exception], ...] = tuple({zlib.error, INFLATE.error})


def _byte_sum(data: bytes) -> int:
    # Adler-32's low half is 1 + the byte sum, exact while the sum stays under 65521:
    # 256 bytes at most, so the sum runs in C.
    total = 0
    for i in range(0, len(data), 256):
        total += (zlib.adler32(data[i : i + 256]) & 0xFFFF) - 1
    return total


def _png_decode(data: bytes, columns: int, rows: int) -> bytes:
    """``rows`` rows of PNG-predicted ``data``, decoded one byte at a time in Python: the
    bytes it decodes are bounded, since a small inflated stream can hold millions of rows."""
    if rows * columns > MAX_PREDICTOR_BYTES:
        raise Broken(
            f"PNG predictor rows hold {rows * columns} bytes, more than the probe decodes "
            f"({MAX_PREDICTOR_BYTES})"
        )
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
        self._inflater = INFLATE.decompressobj() if compressed else None
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
            # What was asked for, and at least as much again as is held: the data grows
            # geometrically (no quadratic copying for many small asks) without inflating
            # 16 KiB for a header of a few hundred bytes.
            want = min(room, max(n - len(self.data), len(self.data), 1024))
            try:
                chunk = self._inflater.decompress(self._pending, want)
                self._pending = self._inflater.unconsumed_tail
                if not self._pending:
                    chunk += self._inflater.flush()
                    self.done = True
            except INFLATE_ERRORS as exc:
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
        length = raw_length if is_int(raw_length) else -1
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
        predictor = value if is_int(value) else 1
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
