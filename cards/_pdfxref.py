"""Cross-reference sections: classic tables (fixed 20-byte entries, sought by offset) and
xref streams (decoded only as far as the rows looked up)."""

from __future__ import annotations

import functools
from typing import Any, cast

from ._pdffile import _ENTRY, _SUBSECTION, FREE, _File, _InStream, _Location
from ._pdfobj import (
    Broken,
    PdfObject,
    Stream,
    as_list,
    is_int,
)
from ._pdfstream import _byte_sum, _object_at, _parse_at, _png_decode, _stream_source

_predictor: Any
try:  # compiled at install time (hatch_build.py) when a C compiler is present
    from . import _predictor
except ImportError:  # the rows are summed in Python instead (same answers, slower)
    _predictor = None


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
        if is_int(stm):
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


_EAGER_BYTES = 64 * 1024  # xref streams up to this size (decoded) are inflated whole
_NUMPY_ROWS = 1024  # Up-predicted rows summed by NumPy past this many (4x faster there)


@functools.cache
def _numpy() -> Any:
    """NumPy (a dependency), imported the first time a long xref stream needs it: a card of
    a small file does not wait for the import."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - installed with the package
        return None
    return numpy


def _ints_in(values: list[PdfObject], most: int | None = None) -> bool:
    """True when every value is a PDF integer from 0 to ``most`` (no bound when None).

    A loop, not all() over a generator: the probe runs with caches PDFium or the caller left
    cold, where a generator's setup costs more than the three checks."""
    for value in values:
        if type(value) is not int or value < 0 or (most is not None and value > most):
            return False  # type() is int: a PDF boolean (Python's bool) is not a number
    return True


class _StreamSection:
    """A cross-reference stream (PDF 1.5): binary rows, decoded one row at a time."""

    def __init__(self, file: _File, stream: Stream, offset: int) -> None:
        d = stream.dict
        widths = as_list(d.get("W"))
        if not isinstance(widths, list) or len(widths) != 3 or not _ints_in(widths, 8):
            raise Broken(f"xref stream at offset {offset} has an invalid /W {widths!r:.60}")
        self.widths = cast(list[int], widths)  # each checked to be an int in 0..8 above
        self.row = sum(self.widths)
        if self.row == 0:
            raise Broken(f"xref stream at offset {offset} has empty rows")
        size = d.get("Size")
        raw_index = as_list(d.get("Index", [0, size]))
        if raw_index is None or len(raw_index) % 2 or not _ints_in(raw_index):
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
        # A small stream is inflated whole at the first lookup: one inflate and one predictor
        # pass instead of one per lookup that reaches further (with their copies).
        self.eager = rows * self.stride if rows * self.stride <= _EAGER_BYTES else 0
        # Rows whose PNG predictors C has undone, from the first; None once C met a filter type
        # it does not know (Python's decoding, which starts later, then answers alone).
        self._undone: bytes | None = b"" if _predictor is not None else None

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
        data = self.source.ensure(max((k + 1) * stride, self.eager))
        if len(data) < (k + 1) * stride:
            raise Broken(f"xref stream at offset {self.offset} ends before row {k}")
        if self.source.predictor < 10:
            return data[k * stride : k * stride + self.row]
        if self._undone is not None:
            undone = self._undone_row(k, data)
            if undone is not None:
                return undone
        return self._summed_row(k, data)

    def _summed_row(self, k: int, data: bytes) -> bytes:
        stride = self.stride
        # PNG predictors: each row starts with its filter type. Writers almost always use Up
        # (2), where a row is the column-wise sum of all rows since the last unfiltered one;
        # sum just those columns instead of decoding every row.
        stop = (k + 1) * stride
        filters = data[0:stop:stride]
        # Usually every row is Up: a translate says so faster than rstrip finds the last other.
        base_row = len(filters.rstrip(b"\x02")) - 1 if filters.translate(None, b"\x02") else -1
        if base_row >= 0 and filters[base_row] not in (0, 1):
            # Up, Average and Paeth rows build on the row above: decode from the last None or
            # Sub row, which does not.
            start = max(filters.rfind(b"\x00"), filters.rfind(b"\x01"), 0)
            return _png_decode(data[start * stride : stop], self.row, k + 1 - start)[-self.row :]
        if base_row >= 0:
            base = bytearray(data[base_row * stride + 1 : base_row * stride + stride])
            if filters[base_row] == 1:  # Sub, with one byte per pixel
                for i in range(1, len(base)):
                    base[i] = (base[i] + base[i - 1]) & 0xFF
        else:
            base = bytearray(self.row)
        first = (base_row + 1) * stride
        rows = k - base_row
        np = _numpy() if rows > _NUMPY_ROWS else None
        if np is not None:  # the columns made contiguous, then summed modulo 256 in one pass
            block = np.frombuffer(data, np.uint8, rows * stride, first).reshape(rows, stride)
            sums = np.ascontiguousarray(block[:, 1:].T).sum(axis=1, dtype=np.uint8).tolist()
        else:
            sums = [_byte_sum(data[first + 1 + j : stop : stride]) for j in range(self.row)]
        return bytes((b + total) & 0xFF for b, total in zip(base, sums, strict=True))

    def _undone_row(self, k: int, data: bytes) -> bytes | None:
        """Row ``k``, with C undoing the predictors of every inflated row not yet undone: the
        probe's next lookups are then slices. None when a row has an unknown filter type.

        C decodes every filter type at this speed, so the byte bound on Python's row-by-row
        decoding (MAX_PREDICTOR_BYTES) does not apply here; a hostile stream costs at most
        its inflated size (MAX_STREAM_BYTES)."""
        assert self._undone is not None
        row, done = self.row, len(self._undone) // self.row
        if k >= done:
            above = self._undone[-row:] if done else bytes(row)
            rows = len(data) // self.stride
            try:
                fresh = _predictor.undo(
                    memoryview(data)[done * self.stride : rows * self.stride], row, above
                )
            except ValueError:
                self._undone = None
                return None
            self._undone += fresh
        return self._undone[k * row : (k + 1) * row]
