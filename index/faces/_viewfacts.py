"""What the conversation list of `leanreplay view` shows beside the numbers: each
conversation's first request (its title) and the times of its first and last message as the
log recorded them.

The store keeps messages, not the records around them, so the times are read from the log
the conversation was imported from, bounded: the first record with a top-level
``"timestamp"`` in the first `LOG_WINDOW_BYTES` of the file and the last in its last
`LOG_WINDOW_BYTES` (Claude Code and Codex write one on every record). A log that is gone,
changed into something else or carries no times gives None, and the page says so.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from typing import Any

from leanreplay.placeholders import is_genuine_user

__all__ = ["LOG_WINDOW_BYTES", "TITLE_CHARS", "TITLE_MESSAGES", "log_times", "title_of"]

LOG_WINDOW_BYTES = 256 * 1024  # read from each end of a log for its first and last time
TITLE_CHARS = 120  # of a conversation's first request shown as its title
TITLE_MESSAGES = 20  # messages from the start looked at for the first request
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") in ("text", "input_text")
            if isinstance(b.get("text"), str)
        )
    return ""


def title_of(messages: list[dict[str, Any]]) -> str | None:
    """The first genuine user request among ``messages``, as one line of at most
    `TITLE_CHARS` characters; None when there is none."""
    for message in messages:
        if not is_genuine_user(message):
            continue
        line = " ".join(_text(message.get("content")).split())
        if line:
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return None


def _time(line: bytes) -> float | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    value = record.get("timestamp") if isinstance(record, dict) else None
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def log_times(path: str | None) -> tuple[float, float] | None:
    """(first, last) unix times the JSONL log at ``path`` records, or None (no such regular
    file, or no record with a ``timestamp`` within the windows read)."""
    if not path:
        return None
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        head = os.pread(fd, LOG_WINDOW_BYTES, 0)
        tail_at = max(0, info.st_size - LOG_WINDOW_BYTES)
        tail = head if tail_at == 0 else os.pread(fd, LOG_WINDOW_BYTES, tail_at)
    except OSError:
        return None
    finally:
        os.close(fd)
    # Whole lines only: the first of the tail window, and the last of either, may be cut.
    head_lines = head.split(b"\n")
    tail_lines = tail.split(b"\n")[1:] if tail_at else tail.split(b"\n")
    first = next((t for t in map(_time, head_lines) if t is not None), None)
    last = next((t for t in map(_time, reversed(tail_lines)) if t is not None), None)
    if first is None or last is None:
        return None
    return first, last
