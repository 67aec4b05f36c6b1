"""The conversation list's title and log times, on logs written here."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from leanreplay.index.faces._viewfacts import LOG_WINDOW_BYTES, TITLE_CHARS, log_times, title_of


def unix(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_times_are_the_first_and_last_records_with_one(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    records = [
        {"type": "summary", "snapshot": {"timestamp": "2020-01-01T00:00:00Z"}},  # nested: no
        {"type": "user", "timestamp": "2026-01-17T16:41:53.237Z"},
        {"type": "assistant", "timestamp": "2026-01-17T17:00:00Z", "big": "x" * 2000},
        {"type": "user", "timestamp": "2026-01-17T17:43:11.130Z"},
    ]
    # Past one window of filler between them: the head and the tail are read, not the middle.
    filler = [{"type": "assistant", "timestamp": "2026-01-17T17:10:00", "t": "y" * 1000}] * 300
    lines = [*records[:3], *filler, records[3]]
    log.write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"timestamp": "2030-')
    assert log.stat().st_size > LOG_WINDOW_BYTES
    assert log_times(str(log)) == (unix("2026-01-17T16:41:53.237"), unix("2026-01-17T17:43:11.130"))


def test_no_times_no_file_or_no_regular_file_give_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"role": "user", "content": "hi"}\n')
    assert log_times(str(plain)) is None
    assert log_times(str(tmp_path / "gone.jsonl")) is None
    assert log_times(None) is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert log_times(str(fifo)) is None  # never blocks on it


def test_a_naive_time_is_read_as_utc(tmp_path: Path) -> None:
    log = tmp_path / "n.jsonl"
    log.write_text('{"timestamp": "2026-02-03T04:05:06"}\n')
    assert log_times(str(log)) == (unix("2026-02-03T04:05:06"),) * 2


def test_the_title_is_the_first_genuine_request_on_one_line() -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "<command-name>/clear</command-name>", "meta": True},
        {"role": "user", "content": [{"type": "text", "text": "fix\n\n  the   build"}]},
        {"role": "user", "content": "later"},
    ]
    assert title_of(messages) == "fix the build"
    long = title_of([{"role": "user", "content": "word " * 100}])
    assert long is not None
    assert len(long) == TITLE_CHARS
    assert long.endswith("…")
    assert title_of([{"role": "assistant", "content": "hello"}]) is None
