"""Zip members streamed into defusedxml's ``iterparse`` under a decompression budget, and
what the document and workbook cards share about opening a zip of XML parts."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from ._zipdir import count_zip_entries

__all__ = [
    "MAX_ZIP_ENTRIES",
    "ODF_TABLE",
    "ODF_TEXT",
    "OOXML_PKG",
    "OOXML_REL",
    "UNREADABLE",
    "Budget",
    "events",
    "open_zip",
    "unreadable",
]

# XML namespaces that both the document and the workbook cards read.
OOXML_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
OOXML_PKG = "{http://schemas.openxmlformats.org/package/2006/relationships}"
ODF_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
ODF_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"

MAX_ZIP_ENTRIES = 10_000  # a document or workbook with more entries is not opened
# What reading a damaged or hostile zip of XML raises: refused or malformed XML first
# (DefusedXmlException is a ValueError), then the zip's own damage.
_XML_ERRORS = (DefusedXmlException, SyntaxError)
UNREADABLE = (
    *_XML_ERRORS,
    zipfile.BadZipFile,
    KeyError,
    OSError,
    EOFError,
    RuntimeError,
    ValueError,
)


@contextmanager
def open_zip(fd: int) -> Iterator[zipfile.ZipFile]:
    """The zip archive in an open file, read through a duplicate of ``fd`` (left open). Its
    central directory is counted first: ``zipfile`` parses all of it, whatever the end record
    claims, so one holding over `MAX_ZIP_ENTRIES` is refused (``zipfile.BadZipFile``)."""
    _, held = count_zip_entries(fd, os.fstat(fd).st_size, MAX_ZIP_ENTRIES)
    if held > MAX_ZIP_ENTRIES:
        raise zipfile.BadZipFile(f"over {MAX_ZIP_ENTRIES:,} zip entries; not opened")
    with os.fdopen(os.dup(fd), "rb") as stream, zipfile.ZipFile(stream) as z:
        yield z


def unreadable(what: str, exc: BaseException) -> str:
    """The note for one of `UNREADABLE` met while reading ``what`` (a document, a workbook)."""
    if isinstance(exc, _XML_ERRORS):
        return f"{what} XML refused or unreadable: {type(exc).__name__}: {exc}"
    return f"{what} unreadable: {exc}"


class Budget:
    """Decompressed bytes a card may read from a zip, across all its parts."""

    class Spent(Exception):
        """The budget ran out before the part ended."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit


class _Bounded(io.RawIOBase):
    def __init__(self, stream: IO[bytes], budget: Budget) -> None:
        self.stream = stream
        self.budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.budget.left <= 0:
            raise Budget.Spent
        data = self.stream.read(min(len(buffer), self.budget.left))
        buffer[: len(data)] = data
        self.budget.left -= len(data)
        return len(data)


def events(z: zipfile.ZipFile, member: str, budget: Budget) -> Iterator[tuple[str, Any]]:
    """(event, element) pairs of one member; raises `Budget.Spent` past the budget."""
    with z.open(member) as raw:
        yield from iterparse(io.BufferedReader(_Bounded(raw, budget)), events=("start", "end"))
