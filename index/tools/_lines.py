"""Numbered lines of text files of any size, read through a persisted sparse line index.

The index counts newlines per 256 KiB block. It is built lazily, only as far as a read
needs, in 4 MiB chunks scanned by two threads, and saved under the workspace home so a later
call, or another process, seeks straight to a line. The count is the C counter built with the
package (`_bytecount`, which releases the GIL), or NumPy where it did not compile, or
``bytes.count`` where NumPy has no wheel either. Memory stays flat: each thread reads into one
reused buffer.

The file is read with ``pread``, never mapped: a log truncated under the reader (logrotate's
``copytruncate``) would turn an access to a mapped page past the new end into SIGBUS. A short
read, or a head that changed, raises `FileChangedError` instead, and nothing read from a file
that changed meanwhile is saved or answered.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import threading
import time
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from typing import Any

from .._errors import FileChangedError, InvalidArgumentError
from .._limits import MAX_ANSWER_CHARS
from ._kinds import CacheDirs, text_view
from ._paths import OpenFile

_bytecount: Any
try:  # the SSE2 newline count hatch_build.py compiles (optional: needs a compiler)
    from . import _bytecount
except ImportError:  # pragma: no cover - built without a compiler
    _bytecount = None
_np: Any
try:  # a vectorized newline count that releases the GIL (a dependency; wheels may be missing)
    import numpy as _np
except ImportError:  # pragma: no cover - a platform without a NumPy wheel
    _np = None

__all__ = [
    "BLOCK",
    "MAX_LINE_CHARS",
    "MAX_READ_LINES",
    "LineIndex",
    "find_in_text",
    "read_lines",
    "read_text",
    "search_lines",
    "tail_lines",
]

BLOCK = 256 * 1024  # bytes per counted block: a random read scans at most one
CHUNK = 16 * BLOCK  # bytes per scan task: 4 MiB keeps memory flat and the cores busy
_AHEAD = 4  # scan tasks queued ahead of the one being summed
MAX_READ_LINES = 2000  # lines per file_read call (the convention of coding agents)
MAX_LINE_CHARS = 2000  # a longer line is cut with a note
MAX_SEARCH_LINE_CHARS = 300
MAX_SEARCH_SECONDS = 20.0
INDEX_VERSION = 1
_WINDOW = 64 * 1024
_PIECE = 32 * 1024  # newline_offset reads its block this much at a time
_FIRST_READ = 4096  # read_lines' first read: this, plus _LINE_GUESS bytes a line asked for
_LINE_GUESS = 160
_FINGERPRINT_BYTES = 4096
MEMO_FILES = 64  # line indexes a process keeps loaded, most recently used first to stay
_save_lock = threading.Lock()
# Loading an index from disk (its JSON header, fingerprint and running sums) costs more than a
# random read itself; a process that reads one file again (an MCP server) keeps it here, keyed
# by the file's identity: size, times, inode and its first and last 4 KiB, as `verify` sees it.
_memo: dict[str, tuple[tuple[object, ...], bytes, list[int], int | None]] = {}
_memo_lock = threading.Lock()


def _changed(path: str) -> FileChangedError:
    return FileChangedError(
        f"{path!r} was truncated or rewritten while it was being read (log rotation?); "
        "retry the call"
    )


class _Scratch:
    """One scanning thread's reused buffers, a block each: the bytes and the block's
    newline mask stay in the core's cache between the read and the count."""

    def __init__(self) -> None:
        self.buf = bytearray(BLOCK)
        self.view = memoryview(self.buf)
        if _np is not None:
            self.bytes = _np.frombuffer(self.buf, dtype=_np.uint8)
            self.mask = _np.empty(BLOCK, dtype=_np.bool_)


def _count_block_numpy(scratch: _Scratch) -> int:
    assert _np is not None
    _np.equal(scratch.bytes, 10, out=scratch.mask)
    return int(_np.count_nonzero(scratch.mask))


def _count_block_bytes(scratch: _Scratch) -> int:
    return scratch.buf.count(b"\n")


def _count_block_c(scratch: _Scratch) -> int:
    return int(_bytecount.count(scratch.buf, 10))


# Per 256 KiB block here: C 6 us, NumPy 40 us (it writes a mask and reads it back), bytes.count
# 115 us (and it holds the GIL).
_count_block: Callable[[_Scratch], int] = (
    _count_block_c
    if _bytecount is not None
    else _count_block_numpy
    if _np is not None
    else _count_block_bytes
)


def _count_newlines(data: bytes, start: int = 0, end: int | None = None) -> int:
    """Newlines in ``data[start:end]``, by the C counter when it was built."""
    if _bytecount is None:
        return data.count(b"\n", start, end)
    if start or end is not None:
        return int(_bytecount.count(memoryview(data)[start:end], 10))
    return int(_bytecount.count(data, 10))


def _count_span(fd: int, begin: int, end: int, scratch: _Scratch) -> list[int] | None:
    """Newlines in each complete block of ``begin``..``end``; None if the file came up short."""
    counts = []
    for offset in range(begin, end, BLOCK):
        if _preadv is not None:
            got = _preadv(fd, [scratch.view], offset)
        else:  # pragma: no cover - a platform without preadv
            data = os.pread(fd, BLOCK, offset)
            scratch.view[: len(data)] = data
            got = len(data)
        if got < BLOCK:
            return None
        counts.append(_count_block(scratch))
    return counts


_preadv = getattr(os, "preadv", None)


class LineIndex:
    """Newline counts per block of one file, extended on demand and persisted."""

    def __init__(self, file: OpenFile, cache_dir: str, *, shown_path: str | None = None) -> None:
        self.file = file
        self.shown_path = shown_path or file.path  # what results and next calls name
        self.counts = array("I")  # newlines in each complete block, from offset 0
        self.cache_path = os.path.join(
            cache_dir,
            hashlib.sha256(f"{file.dev}:{file.ino}:{file.path}".encode()).hexdigest()[:32]
            + ".lines",
        )
        self._cumulative: list[int] | None = None
        self._tail: int | None = None  # newlines in the last, partial block, once counted
        self._edges = self._read_edges()  # to see a rewrite later
        self._load()

    # persistence

    def _fingerprint(self, end: int) -> str:
        head = os.pread(self.file.fd, _FINGERPRINT_BYTES, 0)
        start = max(0, end - _FINGERPRINT_BYTES)
        tail = os.pread(self.file.fd, end - start, start)
        return hashlib.sha256(head + b"|" + tail).hexdigest()

    def _identity(self) -> tuple[object, ...]:
        f = self.file
        return (f.size, f.mtime_ns, f.ctime_ns, f.dev, f.ino, self._edges)

    def _remember(self) -> None:
        entry = (self._identity(), self.counts.tobytes(), self.cumulative(), self._tail)
        with _memo_lock:
            _memo.pop(self.cache_path, None)
            _memo[self.cache_path] = entry
            while len(_memo) > MEMO_FILES:
                del _memo[next(iter(_memo))]

    def _recall(self) -> bool:
        with _memo_lock:
            entry = _memo.get(self.cache_path)
        if entry is None or entry[0] != self._identity():
            return False
        self.counts.frombytes(entry[1])
        self._cumulative, self._tail = entry[2], entry[3]
        return True

    def _load(self) -> None:
        if self._recall():
            return
        try:
            with open(self.cache_path, "rb") as f:
                header = json.loads(f.readline())
                body = f.read()
        except (OSError, ValueError):
            return
        blocks = int(header.get("blocks", 0)) if header.get("version") == INDEX_VERSION else -1
        old_size = header.get("size", -1)
        if not 0 <= blocks * BLOCK <= self.file.size or len(body) != blocks * 4:
            return
        if old_size > self.file.size or (
            old_size == self.file.size
            and (
                header.get("mtime_ns") != self.file.mtime_ns
                or header.get("ctime_ns") != self.file.ctime_ns
                or header.get("ino") != self.file.ino
            )
        ):
            return  # shrunk, or rewritten in place (ctime moves even when mtime is set back)
        # A log that only grew keeps its index, and the scan resumes where it stopped; the head
        # and the bytes at the end of the scanned part must be what they were.
        if header.get("fingerprint") != self._fingerprint(blocks * BLOCK):
            return
        counts = array("I")
        counts.frombytes(body)
        self.counts = counts
        if old_size == self.file.size and isinstance(header.get("tail_newlines"), int):
            self._tail = header["tail_newlines"]  # same size and mtime: the tail is unchanged
        self._remember()

    def _read_edges(self) -> bytes:
        end = self.file.size
        tail = max(_FINGERPRINT_BYTES, end - _FINGERPRINT_BYTES)
        return os.pread(self.file.fd, min(_FINGERPRINT_BYTES, end), 0) + os.pread(
            self.file.fd, max(0, end - tail), tail
        )

    def verify(self) -> None:
        """Raise `FileChangedError` if the file shrank, or its first or last 4 KiB (below the
        size seen at open) changed since it was opened. A log that only grew passes: all
        that was read lies below that size. (A rewrite that restores both edges byte for
        byte between two checks is not seen; a log's new lines never do.)"""
        if os.fstat(self.file.fd).st_size < self.file.size or self._read_edges() != self._edges:
            raise _changed(self.shown_path)

    def pread(self, size: int, offset: int) -> bytes:
        """Up to ``size`` bytes at ``offset``, never past the size seen at open; a short read
        means the file shrank."""
        size = max(0, min(size, self.file.size - offset))
        data = os.pread(self.file.fd, size, offset)
        if len(data) < size:
            raise _changed(self.shown_path)
        return data

    def save(self) -> None:
        self.verify()  # never persist counts of a file that changed under the scan
        scanned = len(self.counts) * BLOCK
        header = {
            "version": INDEX_VERSION,
            "path": self.file.path,
            "size": self.file.size,
            "mtime_ns": self.file.mtime_ns,
            "ctime_ns": self.file.ctime_ns,
            "ino": self.file.ino,
            "blocks": len(self.counts),
            "fingerprint": self._fingerprint(scanned),
            "tail_newlines": self.tail_newlines()
            if scanned == self.complete_blocks * BLOCK
            else None,
        }
        tmp = f"{self.cache_path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.cache_path), exist_ok=True)
            with _save_lock, open(tmp, "wb") as f:
                f.write(json.dumps(header).encode() + b"\n")
                f.write(self.counts.tobytes())
            os.replace(tmp, self.cache_path)
            self._remember()
        except OSError:  # a full or read-only home: the index is only a cache; reads go on
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    # scanning

    @property
    def complete_blocks(self) -> int:
        return self.file.size // BLOCK

    def scanned_newlines(self) -> int:
        return self.cumulative()[-1]

    def cumulative(self) -> list[int]:
        """cumulative()[b] = newlines before block b (one more entry than blocks)."""
        if self._cumulative is None or len(self._cumulative) != len(self.counts) + 1:
            self._cumulative = [0, *accumulate(self.counts)]
        return self._cumulative

    def extend(self, until_newlines: int | None = None) -> None:
        """Count blocks until ``until_newlines`` are known, or to the end of the file."""
        total = self.complete_blocks
        if len(self.counts) >= total:
            return
        if until_newlines is not None and self.scanned_newlines() >= until_newlines:
            return
        start = len(self.counts) * BLOCK
        limit = total * BLOCK
        known = self.scanned_newlines()
        local = threading.local()

        def count(begin: int) -> list[int]:
            scratch = getattr(local, "scratch", None)
            if scratch is None:
                scratch = local.scratch = _Scratch()
            counts = _count_span(self.file.fd, begin, min(begin + CHUNK, limit), scratch)
            if counts is None:
                raise _changed(self.shown_path)
            return counts

        # A steady queue of chunks for two threads (NumPy and preadv release the GIL), a few
        # ahead of the one being summed, so a read that needs only the head stops early.
        chunks = iter(range(start, limit, CHUNK))
        with ThreadPoolExecutor(2) as pool:
            pending = deque(pool.submit(count, b) for b in itertools.islice(chunks, _AHEAD))
            try:
                while pending:
                    counts = pending.popleft().result()
                    self.counts.extend(counts)
                    known += sum(counts)
                    if until_newlines is not None and known >= until_newlines:
                        break
                    pending.extend(pool.submit(count, b) for b in itertools.islice(chunks, 1))
            finally:
                for future in pending:
                    future.cancel()
        self._cumulative = None
        self.save()

    def tail_newlines(self) -> int:
        """Newlines in the last, partial block (at most BLOCK bytes; kept with the index)."""
        if self._tail is None:
            start = self.complete_blocks * BLOCK
            self._tail = _count_newlines(self.pread(BLOCK, start))
            if len(self.counts) == self.complete_blocks:
                self._remember()
        return self._tail

    def total_newlines(self) -> int | None:
        """Newlines in the whole file, if every block has been counted."""
        if len(self.counts) < self.complete_blocks:
            return None
        return self.scanned_newlines() + self.tail_newlines()

    def total_lines(self) -> int | None:
        """Lines as an editor counts them (a last line without newline counts), if known."""
        newlines = self.total_newlines()
        if newlines is None:
            return None
        size = self.file.size
        return newlines + (1 if size and self.pread(1, size - 1) != b"\n" else 0)

    def newline_offset(self, k: int) -> int | None:
        """Byte offset of the k-th newline (1-based), or None if the file has fewer."""
        if k < 1:
            raise ValueError("k must be >= 1")
        self.extend(until_newlines=k)
        cumulative = self.cumulative()
        if cumulative[-1] >= k:
            block = bisect_left(cumulative, k) - 1  # cumulative[block] < k <= cumulative[block+1]
            base, need = block * BLOCK, k - cumulative[block]
        else:
            base, need = len(self.counts) * BLOCK, k - cumulative[-1]
        # The block in pieces, each counted as it is read: on average half of it is copied.
        end = min(base + BLOCK, self.file.size)
        for at in range(base, end, _PIECE):
            data = self.pread(_PIECE, at)
            found = _count_newlines(data)
            if found >= need:
                return at + _nth(data, need)
            need -= found
        return None


def _nth(data: bytes, n: int) -> int:
    """Index of the n-th newline in ``data`` (1-based), or -1."""
    pos = 0
    # Counted in 16 KiB steps to the one that holds it, then in 1 KiB steps within that:
    # the newlines left to find one by one are a few, not the hundreds of 16 KiB of log.
    for step in (16 * 1024, 1024):
        while pos < len(data):
            c = _count_newlines(data, pos, pos + step)
            if c >= n:
                break
            n -= c
            pos += step
        else:
            return -1
    at = pos - 1
    for _ in range(n):
        at = data.find(b"\n", at + 1)
    return at


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def read_lines(index: LineIndex, start_line: int, end_line: int | None) -> dict[str, Any]:
    """Numbered lines ``start_line``..``end_line`` (bounded), each ``"N\\ttext"``."""
    size = index.file.size
    last = (
        start_line + MAX_READ_LINES - 1
        if end_line is None
        else min(end_line, start_line + MAX_READ_LINES - 1)
    )
    if start_line == 1:
        pos = 0
    else:
        offset = index.newline_offset(start_line - 1)
        if offset is None or offset + 1 > size or (offset + 1 == size):
            lines = index.total_lines() or 0
            raise InvalidArgumentError(
                f"start_line {start_line} is past the end: the file has {lines:,} lines"
            )
        pos = offset + 1
    out: list[str] = []
    notes: list[str] = []
    chars = 0
    line_no = start_line
    buf, buf_at = b"", pos
    stopped_by = None
    while line_no <= last and pos < size:
        rel = pos - buf_at
        nl = buf.find(b"\n", rel)
        if nl < 0 and (len(buf) - rel < _WINDOW or rel > 0):
            # The first read is sized to the lines asked for (a 50-line read copies 12 KiB,
            # not 128); when that guess holds no newline, the whole window is read.
            want = _WINDOW * 2
            if not out and not buf:
                want = min(want, _FIRST_READ + _LINE_GUESS * (last - line_no + 1))
            buf, buf_at = index.pread(want, pos), pos
            rel = 0
            nl = buf.find(b"\n")
            if nl < 0 and len(buf) == want < _WINDOW * 2:
                buf = index.pread(_WINDOW * 2, pos)
                nl = buf.find(b"\n")
        if nl < 0 and len(buf) - rel >= _WINDOW * 2 - 1:
            # A very long line: show its head, find its end through the index.
            text = _decode(buf[rel : rel + 4 * MAX_LINE_CHARS])[:MAX_LINE_CHARS]
            end = index.newline_offset(line_no)
            length = (end if end is not None else size) - pos
            notes.append(f"line {line_no} is {length:,} bytes; cut after {MAX_LINE_CHARS:,} chars")
            out.append(f"{line_no}\t{text} [... line cut]")
            chars += len(text)
            line_no += 1
            pos = size if end is None else end + 1
            buf, buf_at = b"", pos
            continue
        raw = buf[rel:] if nl < 0 else buf[rel:nl]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        text = _decode(raw)
        if len(text) > MAX_LINE_CHARS:
            notes.append(f"line {line_no} is {len(text):,} chars; cut after {MAX_LINE_CHARS:,}")
            text = text[:MAX_LINE_CHARS] + " [... line cut]"
        if chars + len(text) > MAX_ANSWER_CHARS and out:
            stopped_by = "chars"
            break
        out.append(f"{line_no}\t{text}")
        chars += len(text)
        line_no += 1
        pos = buf_at + (nl + 1 if nl >= 0 else len(buf))
    total_lines = index.total_lines()
    index.verify()  # lines read from a file that changed meanwhile are not an answer
    more = pos < size and (end_line is None or line_no <= end_line)
    if stopped_by == "chars":
        notes.append(f"stopped at {MAX_ANSWER_CHARS:,} chars")
    result: dict[str, Any] = {
        "path": index.shown_path,
        "start_line": start_line,
        "end_line": line_no - 1,
        "total_lines": total_lines,
        "content": "\n".join(out),
        "notes": notes,
        "next": None,
    }
    if more:
        result["next"] = f"file_read(path={json.dumps(index.shown_path)}, start_line={line_no})"
    return result


def search_lines(
    index: LineIndex, query: str, limit: int, *, ignore_case: bool, start_line: int = 1
) -> dict[str, Any]:
    """Lines containing ``query`` (literal), with their numbers; streaming and bounded."""
    needle = query.encode("utf-8")
    if ignore_case:
        needle = needle.lower()
    size = index.file.size
    if start_line == 1:
        pos = 0
    else:
        offset = index.newline_offset(start_line - 1)  # 0 is a newline at the very start
        pos = size if offset is None else offset + 1
    line_no = start_line
    hits: list[dict[str, Any]] = []
    deadline = time.monotonic() + MAX_SEARCH_SECONDS
    stopped = None
    more = False
    while pos < size and not more:
        if time.monotonic() > deadline:
            stopped = line_no
            break
        chunk = index.pread(CHUNK, pos)
        # Work on whole lines: cut the chunk after its last newline (unless none).
        cut = chunk.rfind(b"\n")
        if cut >= 0 and pos + len(chunk) < size:
            chunk = chunk[: cut + 1]
        hay = chunk.lower() if ignore_case else chunk
        at = hay.find(needle)
        counted_to, counted = 0, 0
        while at >= 0:
            if len(hits) >= limit:
                more = True  # a match beyond the limit: there is a next page
                break
            counted += chunk.count(b"\n", counted_to, at)
            counted_to = at
            begin = chunk.rfind(b"\n", 0, at) + 1
            end = chunk.find(b"\n", at)
            end = len(chunk) if end < 0 else end
            text = _decode(chunk[begin : min(end, begin + 4 * MAX_SEARCH_LINE_CHARS)]).rstrip("\r")
            hits.append({"line": line_no + counted, "text": text[:MAX_SEARCH_LINE_CHARS]})
            at = hay.find(needle, end + 1) if end < len(chunk) else -1
        line_no += _count_newlines(chunk)
        pos += len(chunk)
    index.verify()
    result: dict[str, Any] = {"path": index.shown_path, "query": query, "hits": hits, "next": None}
    if more:
        last = hits[-1]["line"]
        result["next"] = (
            f"file_search(path={json.dumps(index.shown_path)}, query={json.dumps(query)}, "
            f"start_line={last + 1})"
        )
    if stopped is not None:
        result["notes"] = [f"stopped after {MAX_SEARCH_SECONDS:.0f}s at line {stopped:,}"]
        result["next"] = (
            f"file_search(path={json.dumps(index.shown_path)}, query={json.dumps(query)}, "
            f"start_line={stopped})"
        )
    return result


MAX_TAIL_SCAN_BYTES = 16 * 1024 * 1024  # bytes read backwards for one tail read


def tail_lines(index: LineIndex, count: int) -> dict[str, Any]:
    """The last ``count`` lines (bounded), read backwards from the end without indexing.

    Lines are numbered exactly when the line index already knows the file's total; otherwise
    they are numbered from the end (-1 is the last line) and a note says so.
    """
    fd, size = index.file.fd, index.file.size
    count = min(count, MAX_READ_LINES)
    end = size
    if size and os.pread(fd, 1, size - 1) == b"\n":
        end -= 1  # the final newline ends the last line; it does not start another
    pos = end
    pieces: list[bytes] = []
    newlines = 0
    scanned = 0
    # The first read sized to the lines asked for (as read_lines sizes its first), then
    # growing to whole windows: the last 100 log lines are a few KiB, not 64.
    want = min(_WINDOW, count * _LINE_GUESS + _FIRST_READ)
    while pos > 0 and newlines < count and scanned < MAX_TAIL_SCAN_BYTES:
        step = min(want, pos, MAX_TAIL_SCAN_BYTES - scanned)  # never past the cap
        want = min(_WINDOW, want * 4)
        pos -= step
        chunk = os.pread(fd, step, pos)
        scanned += step
        found = _count_newlines(chunk)
        if newlines + found >= count:
            cut = len(chunk)
            for _ in range(count - newlines):
                cut = chunk.rfind(b"\n", 0, cut)
            pieces.append(chunk[cut + 1 :])
            pos += cut + 1
            newlines = count
            break
        pieces.append(chunk)
        newlines += found
    data = b"".join(reversed(pieces))
    notes: list[str] = []
    if pos > 0 and newlines < count:
        notes.append(
            f"read the last {MAX_TAIL_SCAN_BYTES:,} bytes only; the first line shown is cut"
        )
    # One decode for all the lines: a newline always ends a UTF-8 sequence, so each line
    # decodes as it would alone.
    texts = (
        [
            t if len(t) <= MAX_LINE_CHARS else t[:MAX_LINE_CHARS] + " [... line cut]"
            for t in (line.removesuffix("\r") for line in _decode(data).split("\n"))
        ]
        if size > 0
        else []  # "\n" alone is one empty line
    )
    # Keep the last lines that fit in the char budget.
    if sum(map(len, texts)) <= MAX_ANSWER_CHARS:
        kept = texts
    else:
        kept = []
        chars = 0
        for text in reversed(texts):
            if kept and chars + len(text) > MAX_ANSWER_CHARS:
                notes.append(f"stopped at {MAX_ANSWER_CHARS:,} chars: {len(kept)} lines shown")
                break
            kept.append(text)
            chars += len(text)
        kept.reverse()
    total = index.total_lines()
    if total is not None:
        first = total - len(kept) + 1
        numbers = range(first, total + 1)
    else:
        numbers = range(-len(kept), 0)
        notes.append(
            f"last {len(kept)} lines; numbered from the end (-1 is the last line) because the "
            "file's total is not indexed yet"
        )
    result: dict[str, Any] = {
        "path": index.shown_path,
        "start_line": numbers[0] if kept else None,
        "end_line": numbers[-1] if kept else None,
        "total_lines": total,
        "content": "\n".join(map("{}\t{}".format, numbers, kept)),
        "notes": notes,
        "next": None,
    }
    return result


def read_text(
    f: OpenFile, start_line: int, end_line: int | None, dirs: CacheDirs
) -> dict[str, Any]:
    """`file_read`: lines ``start_line``..``end_line`` of the text file ``f`` (a negative
    ``start_line``: the last lines, read backwards without indexing)."""
    if start_line == 0:
        raise InvalidArgumentError(
            "start_line is 1-based: use 1 for the first line or -N for the last N lines"
        )
    if start_line < 0 and end_line is not None:
        raise InvalidArgumentError(
            "end_line goes with a positive start_line; start_line=-N alone reads the last N lines"
        )
    if end_line is not None and end_line < start_line:
        raise InvalidArgumentError(f"end_line {end_line} is before start_line {start_line}")
    with text_view(f, dirs.transcoded) as (text, shown):
        index = LineIndex(text, dirs.lines, shown_path=shown)
        if start_line < 0:
            return tail_lines(index, -start_line)
        return read_lines(index, start_line, end_line)


def find_in_text(
    f: OpenFile,
    query: str,
    limit: int,
    dirs: CacheDirs,
    *,
    ignore_case: bool,
    start_line: int,
) -> dict[str, Any]:
    """`file_search`: lines of the text file ``f`` holding ``query``, from ``start_line``."""
    with text_view(f, dirs.transcoded) as (text, shown):
        index = LineIndex(text, dirs.lines, shown_path=shown)
        return search_lines(index, query, limit, ignore_case=ignore_case, start_line=start_line)
