"""Archive facts: zip entry counts from the central directory, counted header by header up to
`MAX_LISTED_ENTRIES` (the end record's claim is checked, never trusted); names and sizes from
the central directory or the tar headers, bounded; gzip header and trailer."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import struct
import tarfile
import zipfile
from typing import IO, Any

from ._zipdir import count_zip_entries, walk_zip

__all__ = ["ARCHIVE_TOOLS", "archive_facts", "zip_entries"]

ARCHIVE_TOOLS = ("archive_list",)

MAX_LISTED_ENTRIES = 100_000  # a zip's central directory is parsed only up to this many entries
MAX_TAR_HEADERS = 10_000  # tar headers walked for a card (each one a seek)
FIRST_ENTRIES = 10  # names shown on a card
# A compressed tar's entries need its whole stream inflated, so a card reads only its head:
# at most this much of the file, inflated to at most that much. A small archive is read whole
# (exact entries and size); a larger one gives its first names and leaves the count to
# archive_list. Both bounds keep card time flat in the file's size, bombs included.
HEAD_INPUT_BYTES = 1 << 20
HEAD_OUTPUT_BYTES = 16 << 20
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
        facts["tar"] = True
        head, warnings = _compressed_tar_head(fd, compression)
        facts.update(head)
        return facts, warnings
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


def zip_entries(fd: int, size: int) -> tuple[int | None, list[str]]:
    """The zip's entry count, and warnings: the end record's claim when it is over
    `MAX_LISTED_ENTRIES`, else the entries its central directory really holds (counted, at
    most that many headers read), with a warning when the two differ."""
    try:
        claimed, held = count_zip_entries(fd, size, MAX_LISTED_ENTRIES)
    except (zipfile.BadZipFile, OSError, struct.error) as exc:
        return None, [f"zip central directory unreadable: {exc}"]
    if claimed is None:
        return None, ["zip central directory not found; the archive may be truncated"]
    if claimed > MAX_LISTED_ENTRIES:
        return claimed, [f"over {MAX_LISTED_ENTRIES:,} entries: archive_list pages through them"]
    if held > MAX_LISTED_ENTRIES:
        return None, [
            f"the end record claims {claimed:,} entries but the central directory holds over "
            f"{MAX_LISTED_ENTRIES:,}: archive_list pages through them"
        ]
    if held != claimed:
        return held, [
            f"the end record claims {claimed:,} entries; the central directory holds {held:,}"
        ]
    return held, []


def _zip_facts(fd: int, size: int) -> tuple[dict[str, Any], list[str]]:
    entries, warnings = zip_entries(fd, size)
    facts: dict[str, Any] = {"entries": entries}
    if entries is None or entries > MAX_LISTED_ENTRIES:
        return facts, warnings
    total = 0
    names: list[str] = []
    try:
        for entry in walk_zip(fd, size):
            total += entry.size
            names.append(entry.name)
    except (zipfile.BadZipFile, OSError, struct.error) as exc:
        return facts, [*warnings, f"zip central directory unreadable: {exc}"]
    facts["uncompressed_bytes"] = total
    facts["first_entries"] = sorted(names)[:FIRST_ENTRIES]
    return facts, warnings


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


class _Capped(io.RawIOBase):
    """Reads ``source`` (a descriptor read with pread, or a stream) up to ``limit`` bytes,
    then reports the end; ``capped`` says whether the limit, not the data, ended it."""

    def __init__(self, source: int | IO[bytes], limit: int) -> None:
        self.source, self.limit, self.pos, self.capped = source, limit, 0, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self.limit - self.pos)
        if want <= 0:
            self.capped = True
            return 0
        if isinstance(self.source, int):
            data = os.pread(self.source, want, self.pos)
        else:
            data = self.source.read(want)
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


_DECOMPRESSORS: dict[str, Any] = {
    "gzip": lambda f: gzip.GzipFile(fileobj=f),
    "bzip2": bz2.BZ2File,
    "xz": lzma.LZMAFile,
}


def _compressed_tar_head(fd: int, compression: str) -> tuple[dict[str, Any], list[str]]:
    raw = _Capped(fd, HEAD_INPUT_BYTES)
    inflated = _Capped(_DECOMPRESSORS[compression](io.BufferedReader(raw)), HEAD_OUTPUT_BYTES)
    names: list[str] = []
    total = 0
    complete = False
    try:
        with tarfile.open(fileobj=io.BufferedReader(inflated), mode="r|") as t:
            for member in t:
                names.append(member.name)
                total += member.size if member.isfile() else 0
                if len(names) >= MAX_TAR_HEADERS:
                    break
            else:
                complete = not (raw.capped or inflated.capped)
    except (tarfile.TarError, OSError, EOFError, ValueError, lzma.LZMAError) as exc:
        if not (raw.capped or inflated.capped):
            return {}, [f"tar stream unreadable: {exc}"]
    if complete:
        return {
            "entries": len(names),
            "uncompressed_bytes": total,
            "first_entries": sorted(names)[:FIRST_ENTRIES],
        }, []
    return {"first_entries": names[:FIRST_ENTRIES]}, [
        f"entries counted from the archive's head only ({len(names):,} seen); "
        "archive_list lists them all"
    ]
