"""Text facts whose cost is bounded whatever the file size."""

from __future__ import annotations

import codecs
import os
from typing import Any

__all__ = ["MAX_LINE_COUNT_BYTES", "text_codec", "text_facts"]

# Lines are counted only up to this size, so a card stays cheap on a multi-GB log.
MAX_LINE_COUNT_BYTES = 8 * 1024 * 1024


def text_facts(fd: int, size: int, charset: str | None) -> dict[str, Any]:
    """``encoding`` (libmagic's verdict on the head) and ``lines`` for small files.

    A line is what file_read and table_read number: it ends at a LF (a CRLF is one line end,
    a lone CR ends none), and a last line without one counts."""
    facts: dict[str, Any] = {"encoding": charset}
    if size > MAX_LINE_COUNT_BYTES:
        return facts
    data = os.pread(fd, size, 0)
    codec = _codec(charset)
    if codec is None or codec in ("utf-8", "ascii", "latin-1", "iso8859-1", "cp1252"):
        newlines = data.count(b"\n")
        ends_open = bool(data) and not data.endswith(b"\n")
    else:
        text = data.decode(codec, "replace")
        newlines = text.count("\n")
        ends_open = bool(text) and not text.endswith("\n")
    # Lines as an editor shows them: a last line without a newline still counts.
    facts["lines"] = newlines + (1 if ends_open else 0)
    return facts


def _codec(charset: str | None) -> str | None:
    if charset is None:
        return None
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None


def text_codec(charset: str | None) -> str:
    """A Python codec for libmagic's charset; UTF-8 when it names none Python knows."""
    codec = _codec(charset)
    return "utf-8" if codec is None or codec == "ascii" else codec
