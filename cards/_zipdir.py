"""A zip's central directory walked header by header, and one member's bytes inflated in
bounded steps, without ``zipfile``: its ``ZipFile`` parses every entry of the directory before
the first is used (5M entries behind an end record that claims 1 took 28 s and 2.3 GB), and
trusts a member's recorded compressed size for the bytes it reads.

The directory is the span ``zipfile`` reads (the end record's size, ending at the end record),
so what is counted here is what any reader would find; a walk stops after ``limit`` entries,
so counting costs at most that many headers. A member is inflated from its local header in
`RAW_STEP`-byte reads, each step's output at most `OUT_STEP` bytes, and every step says how
many compressed bytes it consumed, so the caller bounds the ratio on what was really read.
"""

from __future__ import annotations

import bz2
import datetime
import os
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["ZipEntry", "count_zip_entries", "inflate_member", "walk_zip"]

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
_CENTRAL_HEAD = struct.Struct("<4sHHHHHHLLLHHHHHLL")  # 46 bytes
_LOCAL_HEAD = struct.Struct("<4sHHHHHLLLHH")  # 30 bytes
_MAX_COMMENT = 0xFFFF
_READ = 1 << 20  # directory bytes read at a time
RAW_STEP = 64 * 1024  # compressed bytes fed to the decompressor at a time
OUT_STEP = 1 << 20  # inflated bytes one step may produce
_STORED, _DEFLATED, _BZIP2 = 0, 8, 12


class ZipEntry(NamedTuple):
    """One central directory entry (``offset`` is where its local header starts)."""

    name: str
    size: int
    compressed: int
    crc: int
    method: int
    flags: int
    dos_date: int
    dos_time: int
    external_attr: int
    offset: int

    @property
    def is_dir(self) -> bool:
        return self.name.endswith("/")

    def modified(self) -> str | None:
        """The entry's recorded date as ISO 8601, or None when the fields are no date
        (month 0, day 0, hour 25: a crafted archive)."""
        d, t = self.dos_date, self.dos_time
        try:
            return datetime.datetime(
                (d >> 9) + 1980, (d >> 5) & 0xF, d & 0x1F, t >> 11, (t >> 5) & 0x3F, (t & 0x1F) * 2
            ).isoformat()
        except ValueError:
            return None


def _directory(fd: int, size: int) -> tuple[int, int, int, int] | None:
    """(start, length, claimed entries, adjustment of recorded offsets) of the central
    directory, located as ``zipfile`` does; None if there is no end record."""
    span = min(size, 22 + _MAX_COMMENT)
    if span < 22:
        return None
    base = size - span
    tail = os.pread(fd, span, base)
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        return None
    claimed, length, recorded = struct.unpack_from("<HLL", tail, at + 10)
    end = base + at
    if at >= 20 and tail[at - 20 : at - 16] == _EOCD64_LOCATOR:
        (offset64,) = struct.unpack_from("<Q", tail, at - 20 + 8)
        record = os.pread(fd, 56, offset64) if offset64 + 56 <= size else b""
        if record.startswith(_EOCD64):
            claimed, length, recorded = struct.unpack_from("<QQQ", record, 32)
            end = end - 20 - 56
    start = end - length
    if start < 0:
        raise zipfile.BadZipFile("the central directory would start before the file")
    return start, length, int(claimed), start - recorded


def _headers(fd: int, size: int) -> Iterator[tuple[tuple[int, ...], bytes, bytes, int]]:
    """(fixed fields, name, extra, offset adjustment) of every central directory header."""
    found = _directory(fd, size)
    if found is None:
        raise zipfile.BadZipFile("no end of central directory record: not a zip, or truncated")
    start, length, _, adjust = found
    buf = b""
    pos = 0  # of buf[0], from start
    at = 0  # next header, from start
    while at < length:
        need = at - pos + _CENTRAL_HEAD.size
        if need > len(buf):
            buf = buf[at - pos :] + os.pread(fd, min(_READ, length - at), start + pos + len(buf))
            pos = at
            if len(buf) < _CENTRAL_HEAD.size:
                raise zipfile.BadZipFile("the central directory ends inside a header")
        fields = _CENTRAL_HEAD.unpack_from(buf, at - pos)
        if fields[0] != _CENTRAL:
            raise zipfile.BadZipFile("bad magic number in the central directory")
        n, m, k = fields[10], fields[11], fields[12]
        total = _CENTRAL_HEAD.size + n + m + k
        if at - pos + total > len(buf):
            buf = buf[at - pos :] + os.pread(
                fd, max(total, min(_READ, length - at)), start + at + len(buf) - (at - pos)
            )
            pos = at
            if total > len(buf):
                raise zipfile.BadZipFile("the central directory ends inside a header")
        head = at - pos + _CENTRAL_HEAD.size
        yield fields, buf[head : head + n], buf[head + n : head + n + m], adjust
        at += total


def count_zip_entries(fd: int, size: int, limit: int) -> tuple[int | None, int]:
    """(entries the end record claims, entries the central directory holds, counted up to
    ``limit + 1``: more than ``limit`` is "over the limit"); raises ``zipfile.BadZipFile``
    for a damaged directory."""
    found = _directory(fd, size)
    if found is None:
        return None, 0
    count = 0
    for _ in _headers(fd, size):
        count += 1
        if count > limit:
            break
    return found[2], count


def _zip64(extra: bytes, size: int, compressed: int, offset: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, at)
        if tag == 1:
            values = list(struct.unpack_from(f"<{min(length, 24) // 8}Q", extra, at + 4))
            if size == 0xFFFFFFFF and values:
                size = values.pop(0)
            if compressed == 0xFFFFFFFF and values:
                compressed = values.pop(0)
            if offset == 0xFFFFFFFF and values:
                offset = values.pop(0)
            break
        at += 4 + length
    return size, compressed, offset


def walk_zip(fd: int, size: int) -> Iterator[ZipEntry]:
    """Every entry of the central directory, in its order, one header at a time."""
    for fields, raw, extra, adjust in _headers(fd, size):
        flags, method, time, date, crc = fields[3], fields[4], fields[5], fields[6], fields[7]
        usize, csize, offset = _zip64(extra, fields[9], fields[8], fields[16])
        name = raw.decode("utf-8" if flags & 0x800 else "cp437", "replace")
        yield ZipEntry(
            name, usize, csize, crc, method, flags, date, time, fields[15], offset + adjust
        )


def inflate_member(fd: int, size: int, entry: ZipEntry) -> Iterator[tuple[bytes, int]]:
    """(inflated bytes, compressed bytes consumed so far) of one member, step by step; the
    compressed bytes are read from its local header on, never past the end of the file
    whatever its header claims. Raises ``zipfile.BadZipFile`` on damage (or an unsupported
    method, or encryption)."""
    if entry.flags & 0x1:
        raise zipfile.BadZipFile("the member is encrypted; it cannot be read")
    if entry.method not in (_STORED, _DEFLATED, _BZIP2):
        raise zipfile.BadZipFile(f"compression method {entry.method} is not supported")
    local = os.pread(fd, _LOCAL_HEAD.size, entry.offset) if entry.offset >= 0 else b""
    if len(local) < _LOCAL_HEAD.size or not local.startswith(_LOCAL):
        raise zipfile.BadZipFile("bad local header: the archive is damaged")
    fields = _LOCAL_HEAD.unpack(local)
    at = entry.offset + _LOCAL_HEAD.size + fields[9] + fields[10]
    end = min(size, at + entry.compressed)
    decoder: zlib._Decompress | bz2.BZ2Decompressor | None = (
        None
        if entry.method == _STORED
        else zlib.decompressobj(-15)
        if entry.method == _DEFLATED
        else bz2.BZ2Decompressor()
    )
    crc = 0
    consumed = 0
    pending = b""
    while decoder is None or not decoder.eof:
        if decoder is None or (
            decoder.needs_input if isinstance(decoder, bz2.BZ2Decompressor) else not pending
        ):
            if at >= end:
                break
            chunk = os.pread(fd, min(RAW_STEP, end - at), at)
            if not chunk:
                break
            at += len(chunk)
            consumed += len(chunk)
            pending += chunk
        if decoder is None:
            out, pending = pending, b""
        else:
            out = decoder.decompress(pending, OUT_STEP)
            pending = b"" if isinstance(decoder, bz2.BZ2Decompressor) else decoder.unconsumed_tail
        if out:
            crc = zlib.crc32(out, crc)
            yield out, consumed
    if decoder is not None and not decoder.eof:
        raise zipfile.BadZipFile("the member's data ends early: the archive is truncated")
    if crc != entry.crc:
        raise zipfile.BadZipFile("the member's CRC does not match: the archive is damaged")
