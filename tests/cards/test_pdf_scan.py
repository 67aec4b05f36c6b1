"""The recovery scan (`_pdffile.scan`): chunk by chunk, it finds exactly what one regex pass
over the same bytes finds, at any chunk size, and stops early at a file shorter than asked."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.cards._pdffile import _SCAN_OBJ, _SCAN_TRAILER, scan

# Tokens that make object headers, near misses ("x12 0 obj": the lookbehind refuses a digit
# only) and trailers, joined by one byte of white space: no match is longer than OVERLAP.
TOKENS = [b"1", b"12", b"007", b"0", b"65535", b"obj", b"objx", b"x", b"trailer", b"<<", b"%"]
OVERLAP = 24


def oracle(
    data: bytes, pattern: re.Pattern[bytes], start: int, stop: int
) -> list[tuple[int, bytes]]:
    # One pass over the bytes up to stop, from start (the lookbehind sees the byte before).
    return [(m.start(), m.group()) for m in pattern.finditer(data[:stop], start)]


def scanned(
    path: Path, pattern: re.Pattern[bytes], start: int, stop: int, chunk: int
) -> list[tuple[int, bytes]]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return [
            (at, m.group())
            for at, m in scan(fd, pattern, start, stop, chunk=chunk, overlap=OVERLAP)
        ]
    finally:
        os.close(fd)


@settings(max_examples=150, deadline=None)
@given(
    tokens=st.lists(st.sampled_from(TOKENS), max_size=80),
    seps=st.lists(st.sampled_from([b" ", b"\n", b"\r", b"\t"]), min_size=80, max_size=80),
    chunk=st.integers(min_value=1, max_value=64),
    bounds=st.tuples(
        st.integers(min_value=0, max_value=400), st.integers(min_value=0, max_value=400)
    ),
    trailer=st.booleans(),
)
def test_the_scan_finds_what_one_pass_finds(
    tmp_path_factory: pytest.TempPathFactory,
    tokens: list[bytes],
    seps: list[bytes],
    chunk: int,
    bounds: tuple[int, int],
    trailer: bool,
) -> None:
    data = b"".join(t + s for t, s in zip(tokens, seps, strict=False))
    start, stop = sorted(bounds)
    pattern = _SCAN_TRAILER if trailer else _SCAN_OBJ
    path = tmp_path_factory.getbasetemp() / "scan.bin"
    path.write_bytes(data)
    # stop may lie past the end: the file is shorter than asked, the scan ends there.
    assert scanned(path, pattern, start, stop, chunk) == oracle(data, pattern, start, stop)


def test_a_header_across_a_chunk_boundary_is_found_once(tmp_path: Path) -> None:
    data = b"xx 12 0 obj << >> endobj 13 0 obj"
    path = tmp_path / "f.pdf"
    path.write_bytes(data)
    expected = [(3, b"12 0 obj"), (25, b"13 0 obj")]
    for chunk in range(1, len(data) + 2):
        assert scanned(path, _SCAN_OBJ, 0, len(data), chunk) == expected, chunk
    # A chunk starting at byte 1, after the first digit: "2 0 obj" there is no header.
    path.write_bytes(b"12 0 obj")
    for chunk in (1, 2):
        assert scanned(path, _SCAN_OBJ, 0, 8, chunk) == [(0, b"12 0 obj")], chunk
    assert scanned(path, _SCAN_OBJ, 1, 8, 4) == []
    path.write_bytes(data)
    # From inside the first header's number: "2 0 obj" follows a digit, so it is no header.
    assert scanned(path, _SCAN_OBJ, 4, len(data), 5) == [(25, b"13 0 obj")]
