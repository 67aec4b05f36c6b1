"""Archive facts: zip entry counts from the end-of-central-directory record in constant time;
names and sizes from the central directory or the tar headers, bounded; gzip header and trailer."""

from __future__ import annotations

import os
import struct
import tarfile
import zipfile
from typing import Any

__all__ = ["ARCHIVE_TOOLS", "archive_facts", "zip_entries"]

ARCHIVE_TOOLS = ("archive_list",)

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


MAX_LISTED_ENTRIES = 100_000  # a zip's central directory is parsed only up to this many entries
MAX_TAR_HEADERS = 10_000  # tar headers walked for a card (each one a seek)
FIRST_ENTRIES = 10  # names shown on a card
_COMPRESSION = {
    "application/gzip": "gzip",
    "application/x-gzip": "gzip",
    "application/x-bzip2": "bzip2",
    "application/x-xz": "xz",
}


def archive_facts(fd: int, size: int, mime: str, name: str) -> tuple[dict[str, Any], list[str]]:
    """Entries, total uncompressed bytes and the first names of zip and tar archives; the
    compression and, for gzip, the original name and the trailer's size."""
    if mime == "application/zip":
        return _zip_facts(fd, size)
    if mime == "application/x-tar":
        return _tar_facts(fd)
    compression = _COMPRESSION.get(mime)
    if compression is None:
        return {}, []
    facts: dict[str, Any] = {"compression": compression}
    lower = name.lower()
    if lower.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")):
        facts["tar"] = True  # its entries need the whole stream inflated: archive_list does
        return facts, []
    if compression == "gzip" and size >= 18:
        header = os.pread(fd, 512, 0)
        if len(header) > 10 and header[3] & 0x08:  # FNAME: the original file name follows
            end = header.find(b"\x00", 10)
            if end > 10:
                facts["original_name"] = header[10:end].decode("latin-1")[:255]
        (isize,) = struct.unpack("<I", os.pread(fd, 4, size - 4))
        if size < 2**32:
            # ISIZE is the uncompressed size modulo 4 GiB of the last member: exact for the
            # usual single-member file under 4 GiB; a concatenated gzip would differ.
            facts["trailer_size"] = isize
    return facts, []


def _zip_facts(fd: int, size: int) -> tuple[dict[str, Any], list[str]]:
    entries = zip_entries(fd, size)
    if entries is None:
        return {"entries": None}, ["zip central directory not found; the archive may be truncated"]
    facts: dict[str, Any] = {"entries": entries}
    if entries > MAX_LISTED_ENTRIES:
        return facts, [f"over {MAX_LISTED_ENTRIES:,} entries: archive_list pages through them"]
    try:
        with os.fdopen(os.dup(fd), "rb") as stream, zipfile.ZipFile(stream) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        return facts, [f"zip central directory unreadable: {exc}"]
    facts["uncompressed_bytes"] = sum(i.file_size for i in infos)
    facts["first_entries"] = sorted(i.filename for i in infos)[:FIRST_ENTRIES]
    return facts, []


def _tar_facts(fd: int) -> tuple[dict[str, Any], list[str]]:
    names: list[str] = []
    total = 0
    try:
        with os.fdopen(os.dup(fd), "rb") as stream, tarfile.open(fileobj=stream, mode="r:") as t:
            for count, member in enumerate(t, start=1):
                names.append(member.name)
                total += member.size if member.isfile() else 0
                if count >= MAX_TAR_HEADERS:
                    return {}, [f"over {MAX_TAR_HEADERS:,} entries: archive_list lists them"]
    except (tarfile.TarError, OSError, ValueError, EOFError) as exc:
        return {}, [f"tar headers unreadable: {exc}"]
    return {
        "entries": len(names),
        "uncompressed_bytes": total,
        "first_entries": sorted(names)[:FIRST_ENTRIES],
    }, []
