"""File type from libmagic, read from a bounded head of the file."""

from __future__ import annotations

import threading
from typing import Literal

import magic

__all__ = ["HEAD_BYTES", "Kind", "kind_of", "sniff"]

HEAD_BYTES = 16 * 1024  # enough for libmagic to see OOXML part names; constant per card

Kind = Literal["pdf", "image", "text", "archive", "document", "audio", "video", "binary"]

_lock = threading.Lock()
_magic: magic.Magic | None = None

_TEXT_APPLICATIONS = {
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-ndjson",
    "application/x-empty",
    "inode/x-empty",
    "application/csv",
    "application/x-subrip",
    "application/x-wine-extension-ini",
    "image/svg+xml",
}
_ARCHIVES = {
    "application/zip",
    "application/x-tar",
    "application/gzip",
    "application/x-gzip",
    "application/x-bzip2",
    "application/x-xz",
    "application/x-7z-compressed",
    "application/x-rar",
    "application/vnd.rar",
    "application/zstd",
    "application/x-lzma",
    "application/java-archive",
}
_DOCUMENT_PREFIXES = (
    "application/vnd.openxmlformats-officedocument.",
    "application/vnd.oasis.opendocument.",
    "application/vnd.ms-",
    "application/msword",
    "application/rtf",
    "text/rtf",
    "application/epub+zip",
)


def _instance() -> magic.Magic:
    global _magic
    with _lock:
        if _magic is None:
            # One reused handle: loading the magic database costs far more than a lookup.
            _magic = magic.Magic(mime=True, mime_encoding=True)
        return _magic


def sniff(head: bytes) -> tuple[str, str | None]:
    """MIME type and charset (None for binary) of a file that starts with ``head``."""
    try:
        answer = _instance().from_buffer(head)
    except magic.MagicException:
        return "application/octet-stream", None
    mime, _, rest = answer.partition(";")
    charset = rest.strip().removeprefix("charset=") or None
    if charset in ("binary", "unknown-8bit"):
        charset = None
    return mime.strip() or "application/octet-stream", charset


def kind_of(mime: str) -> Kind:
    """Coarse kind used to pick facts and tools."""
    if mime == "application/pdf":
        return "pdf"
    if mime.startswith(_DOCUMENT_PREFIXES):
        return "document"
    if mime == "image/svg+xml" or mime in _TEXT_APPLICATIONS or mime.startswith("text/"):
        return "text"
    if mime.startswith("image/"):
        return "image"
    if mime in _ARCHIVES:
        return "archive"
    if mime.startswith("audio/"):
        return "audio"
    if mime.startswith("video/"):
        return "video"
    return "binary"
