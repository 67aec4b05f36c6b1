"""File type from libmagic, read from a bounded head of the file."""

from __future__ import annotations

import hashlib
import threading
from typing import Literal

import magic

__all__ = ["HEAD_BYTES", "READABLE_ARCHIVES", "Kind", "kind_of", "named_text", "sniff"]

HEAD_BYTES = 16 * 1024  # enough for libmagic to see OOXML part names; constant per card
SNIFF_MEMO_ENTRIES = 1024  # verdicts remembered by the digest of the head they were given

Kind = Literal["pdf", "image", "text", "archive", "document", "audio", "video", "binary"]

_lock = threading.Lock()
_magic: magic.Magic | None = None
# libmagic's text tests cost milliseconds on a 16 KiB head of text, more than a whole file_read;
# its verdict depends on the head alone, so a head seen before (a file read again, a log that
# only grew) is answered from here. Insertion order is recency order (a hit moves to the end).
_memo: dict[bytes, tuple[str, str | None]] = {}

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
# Archives archive_list reads; the others below are still archives, described by size only.
READABLE_ARCHIVES = frozenset(
    {
        "application/zip",
        "application/x-tar",
        "application/gzip",
        "application/x-gzip",
        "application/x-bzip2",
        "application/x-xz",
    }
)
_ARCHIVES = READABLE_ARCHIVES | {
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
    key = hashlib.sha256(head).digest()
    with _lock:
        verdict = _memo.pop(key, None)
        if verdict is not None:
            _memo[key] = verdict
            return verdict
    verdict = _ask_libmagic(head)
    with _lock:
        _memo[key] = verdict
        while len(_memo) > SNIFF_MEMO_ENTRIES:
            del _memo[next(iter(_memo))]
    return verdict


def _ask_libmagic(head: bytes) -> tuple[str, str | None]:
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


# Names that promise text. libmagic guesses from a few leading bytes, and a short text file can
# look like a binary format to it ("P1\t0" is a PBM image header); such a name, with bytes
# that really are text, wins.
_TEXT_NAMES = {
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".txt": "text/plain",
    ".log": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".ndjson": "application/x-ndjson",
    ".yaml": "text/plain",
    ".yml": "text/plain",
    ".toml": "text/plain",
    ".ini": "text/plain",
    ".sql": "text/plain",
}
_CONTROL = frozenset(range(32)) - {9, 10, 12, 13}


def named_text(name: str, head: bytes, mime: str) -> str | None:
    """The text type a file's name promises, when libmagic said otherwise and the head is
    clean UTF-8 text (no control characters but tab, newlines and form feed); else None."""
    if kind_of(mime) in ("text", "pdf") or not head:  # an all-ASCII PDF is still a PDF
        return None
    dot = name.rfind(".")
    promised = _TEXT_NAMES.get(name[dot:].lower()) if dot > 0 else None
    if promised is None or _CONTROL.intersection(head):
        return None
    for cut in range(4):  # the head may end inside a multi-byte character
        try:
            head[: len(head) - cut].decode("utf-8")
            return promised
        except UnicodeDecodeError:
            continue
    return None
