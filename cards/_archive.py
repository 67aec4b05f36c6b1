"""Zip entry counts from the end-of-central-directory record, in constant time."""

from __future__ import annotations

import os
import struct

__all__ = ["zip_entries"]

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_MAX_COMMENT = 0xFFFF


def zip_entries(fd: int, size: int) -> int | None:
    """Entry count recorded in the zip's central directory, or None if there is none."""
    span = min(size, 22 + _MAX_COMMENT)
    if span < 22:
        return None
    tail = os.pread(fd, span, size - span)
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        return None
    (total,) = struct.unpack_from("<H", tail, at + 10)
    if total != 0xFFFF or at < 20:
        return int(total)
    # ZIP64: the locator sits right before the classic record.
    locator = tail[at - 20 : at]
    if not locator.startswith(_EOCD64_LOCATOR):
        return int(total)
    (offset,) = struct.unpack_from("<Q", locator, 8)
    if offset + 56 > size:
        return None
    record = os.pread(fd, 56, offset)
    if not record.startswith(_EOCD64):
        return None
    (total64,) = struct.unpack_from("<Q", record, 32)
    return int(total64)
