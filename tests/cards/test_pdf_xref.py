"""Cross-reference sections read back entry by entry, against the entries they were written
from: xref streams with any field widths, /Index subsections and PNG predictor row types,
and classic tables with every end-of-line style, subsections and a hybrid /XRefStm."""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanreplay.cards._pdffile import FREE, _File, _InStream
from leanreplay.cards._pdfobj import Broken
from leanreplay.cards._pdfxref import _StreamSection, _TableSection
from tests.pdfgen import png_encode

# Every test here runs with the C row decoder and with Python's (tests/cards/conftest.py).
pytestmark = pytest.mark.usefixtures("row_decoder")

Entry = tuple[int, int, int]  # type, field 2, field 3 (as in an xref stream row)


def _expected(entry: Entry, widths: tuple[int, int, int]) -> object:
    kind = entry[0] if widths[0] else 1
    if kind == 0:
        return FREE
    if kind == 1:
        return entry[1]
    if kind == 2:
        return _InStream(entry[1], entry[2])
    return None


@st.composite
def _xref_streams(draw: st.DrawFn) -> tuple[bytes, dict[int, object], list[int]]:
    widths = (draw(st.integers(0, 2)), draw(st.integers(1, 3)), draw(st.integers(0, 2)))
    ranges: list[tuple[int, int]] = []
    at = 0
    for _ in range(draw(st.integers(1, 3))):
        at += draw(st.integers(0, 5))
        count = draw(st.integers(0, 6))
        ranges.append((at, count))
        at += count
    expected: dict[int, object] = {}
    rows = []
    for first, count in ranges:
        for num in range(first, first + count):
            entry = (
                draw(st.integers(0, 3) if widths[0] else st.just(1)),
                draw(st.integers(0, 256 ** widths[1] - 1)),
                draw(st.integers(0, 256 ** widths[2] - 1)),
            )
            expected[num] = _expected(entry, widths)
            # A field of width 0 is absent: the type defaults to 1, the others to 0.
            fields = zip(entry, widths, strict=True)
            rows.append(b"".join(v.to_bytes(w, "big") for v, w in fields if w))
    predictor = draw(st.booleans())
    if predictor:
        kinds = draw(st.lists(st.integers(0, 4), min_size=len(rows), max_size=len(rows)))
        data = png_encode(rows, kinds)
        parms = b"/DecodeParms << /Predictor %d /Columns %d >> " % (
            draw(st.sampled_from([10, 12, 15])),  # every PNG predictor: a type byte per row
            sum(widths),
        )
    else:
        data, parms = b"".join(rows), b""
    compress = draw(st.booleans())
    if compress:
        data = zlib.compress(data)
    index = b" ".join(b"%d %d" % r for r in ranges)
    default_index = len(ranges) == 1 and ranges[0][0] == 0
    body = (
        b"%%PDF-1.7\n1 0 obj\n<< /Type /XRef /Size %d /W [%d %d %d] %s%s%s/Length %d >>\n"
        b"stream\n"
        % (
            at,
            *widths,
            b"" if default_index else b"/Index [%s] " % index,
            parms,
            b"/Filter /FlateDecode " if compress else b"",
            len(data),
        )
        + data
        + b"\nendstream\nendobj\n"
    )
    outside = [n for n in range(at + 3) if n not in expected]
    return body, expected, outside


# The row decoder fixture is the same for every example.
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(_xref_streams())
def test_xref_stream_rows_read_back_as_written(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[bytes, dict[int, object], list[int]]
) -> None:
    body, expected, outside = case
    path = tmp_path_factory.mktemp("xref") / "x.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        section = _StreamSection.at(_File(fd, len(body)), body.index(b"1 0 obj"))
        assert {num: section.lookup(num) for num in expected} == expected
        assert [section.lookup(num) for num in outside] == [None] * len(outside)
    finally:
        os.close(fd)


def _table(entries: dict[int, tuple[int, int, str]], eol: bytes, trailer: bytes) -> bytes:
    """A classic table of the given entries (offset, generation, "n" or "f"), in
    subsections of consecutive numbers, each 20-byte entry ending in ``eol``."""
    nums = sorted(entries)
    groups: list[list[int]] = []
    for num in nums:
        if groups and groups[-1][-1] == num - 1:
            groups[-1].append(num)
        else:
            groups.append([num])
    out = b"xref\n"
    for group in groups:
        out += b"%d %d\n" % (group[0], len(group))
        for num in group:
            offset, gen, kind = entries[num]
            out += b"%010d %05d %s" % (offset, gen, kind.encode()) + eol
    return out + b"trailer\n<< /Size %d %s>>\n" % (nums[-1] + 1 if nums else 0, trailer)


@settings(max_examples=100, deadline=None)
@given(
    entries=st.dictionaries(
        st.integers(0, 40),
        st.tuples(st.integers(0, 10**9), st.integers(0, 65535), st.sampled_from("nf")),
        max_size=15,
    ),
    eol=st.sampled_from([b" \n", b" \r", b"\r\n", b"\n", b"\r"]),
    pad=st.sampled_from([b"", b"\n", b"  \r\n\t", b"\x00\f "]),
    tight=st.booleans(),
)
def test_classic_table_entries_read_back_as_written(
    tmp_path_factory: pytest.TempPathFactory,
    entries: dict[int, tuple[int, int, str]],
    eol: bytes,
    pad: bytes,
    tight: bool,
) -> None:
    lead = b"%PDF-1.4\n"
    table = _table(entries, eol, b"").replace(b"trailer", pad + b"trailer")
    if tight:
        table = table.replace(b"trailer\n<<", b"trailer<<")
    body = lead + table
    path = tmp_path_factory.mktemp("table") / "t.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        section = _TableSection(_File(fd, len(body)), len(lead))
        for num in range(45):
            if num not in entries:
                assert section.lookup(num) is None
            elif entries[num][2] == "f":
                assert section.lookup(num) is FREE
            else:
                assert section.lookup(num) == entries[num][0]
        assert section.trailer["Size"] == (max(entries) + 1 if entries else 0)
    finally:
        os.close(fd)


def test_a_hybrid_table_answers_from_its_xref_stream_what_it_does_not_list(
    tmp_path: Path,
) -> None:
    # Objects 3 and 4 live in object stream 9: only the /XRefStm stream says so.
    free, in_nine = bytes([0, 0, 0, 0, 255]), [bytes([2, 0, 0, 9, i]) for i in (0, 1)]
    data = free * 3 + b"".join(in_nine)
    lead = b"%PDF-1.5\n"
    stm_at = len(lead)
    stream = (
        b"7 0 obj\n<< /Type /XRef /Size 5 /W [1 3 1] /Length %d >>\nstream\n" % len(data)
        + data
        + b"\nendstream\nendobj\n"
    )
    table_at = stm_at + len(stream)
    table = _table({0: (0, 65535, "f"), 1: (123, 0, "n")}, b" \n", b"/XRefStm %d " % stm_at)
    body = lead + stream + table
    path = tmp_path / "hybrid.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        section = _TableSection(_File(fd, len(body)), table_at)
        assert section.lookup(1) == 123
        assert section.lookup(0) is FREE
        assert section.lookup(3) == _InStream(9, 0)
        assert section.lookup(4) == _InStream(9, 1)
        assert section.lookup(2) is FREE
        assert section.lookup(5) is None
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("table", "reason"),
    [
        (b"xref\n0 2\n0000000000 65535 f \n", "runs past the end of the file"),
        (b"xref\n0 1\n0000000000 65535 f \nnot a trailer", "no trailer after the xref table"),
        (b"xref\n0 1\n0000000000 65535 f \ntrailer\n[1 2]", "is not a dictionary"),
        (b"xref\n0 1\n000000000x 65535 f \ntrailer\n<<>>", "malformed xref entry at offset"),
        (b"xref\n0 1\n0000000000 65535 f  \ntrailer\n<<>>", "malformed xref entry ending"),
    ],
    ids=["past-the-end", "no-trailer", "trailer-not-a-dict", "bad-entry", "bad-eol"],
)
def test_a_broken_table_says_what_is_wrong(tmp_path: Path, table: bytes, reason: str) -> None:
    lead = b"%PDF-1.4\n"
    body = lead + table
    path = tmp_path / "t.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(Broken, match=reason):
            _TableSection(_File(fd, len(body)), len(lead))
    finally:
        os.close(fd)


def _section(tmp_path: Path, table: bytes, lead: bytes = b"%PDF-1.4\n") -> _TableSection:
    body = lead + table
    path = tmp_path / "t.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    return _TableSection(_File(fd, len(body)), len(lead))


def test_an_empty_subsection_is_skipped(tmp_path: Path) -> None:
    table = b"xref\n0 0\n1 1\n0000000123 00000 n \ntrailer\n<< /Size 2 >>\n"
    section = _section(tmp_path, table)
    try:
        assert (section.lookup(0), section.lookup(1)) == (None, 123)
    finally:
        os.close(section.file.fd)


def test_a_broken_xrefstm_leaves_the_table_answering(tmp_path: Path) -> None:
    table = b"xref\n0 2\n0000000000 65535 f \n0000000077 00000 n \n"
    table += b"trailer\n<< /Size 2 /XRefStm 9 >>\n"
    section = _section(tmp_path, table)
    try:
        assert section.hybrid is None
        assert (section.lookup(0), section.lookup(1), section.lookup(2)) == (FREE, 77, None)
    finally:
        os.close(section.file.fd)


def test_a_malformed_entry_after_good_ones_is_named(tmp_path: Path) -> None:
    table = b"xref\n0 3\n0000000000 65535 f \n0000000077 00000 n \nnot an entry here!! \n"
    table += b"trailer\n<< /Size 3 >>\n"
    section = _section(tmp_path, table)
    try:
        assert section.lookup(1) == 77
        with pytest.raises(Broken, match="malformed xref entry for object 2"):
            section.lookup(2)
    finally:
        os.close(section.file.fd)


def _xref_stream(tmp_path: Path, entries: bytes, rows: bytes) -> _StreamSection:
    body = b"%%PDF-1.7\n1 0 obj\n<< /Type /XRef %s /Length %d >>\nstream\n" % (
        entries,
        len(rows),
    )
    body += rows + b"\nendstream\nendobj\n"
    path = tmp_path / "x.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        return _StreamSection.at(_File(fd, len(body)), body.index(b"1 0 obj"))
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("entries", "reason"),
    [
        (b"/Size 1 /W [1 2]", "has an invalid /W [1, 2]"),
        (b"/Size 1 /W 3", "has an invalid /W"),
        (b"/Size 1 /W [1 (2) 1]", "has an invalid /W"),
        (b"/Size 1 /W [1 true 1]", "has an invalid /W"),
        (b"/Size 1 /W [0 0 0]", "has empty rows"),
        (b"/Size 1 /W [1 2 1] /Index [0]", "has an invalid /Index"),
        (b"/Size 1 /W [1 2 1] /Index [0 -1]", "has an invalid /Index"),
        (b"/Size 1 /W [1 2 1] /Index [0 1.5]", "has an invalid /Index"),
        (b"/Size 1 /W [1 2 1] /Index [true 1]", "has an invalid /Index"),
        (b"/Size 1 /W [1 2 1] /Index 7", "has an invalid /Index"),
    ],
)
def test_a_broken_xref_stream_says_what_is_wrong(
    tmp_path: Path, entries: bytes, reason: str
) -> None:
    with pytest.raises(Broken, match=re.escape(reason)):
        _xref_stream(tmp_path, entries, b"\x01\x00\x09\x00")


def test_an_xref_stream_shorter_than_its_rows_says_where_it_ends(tmp_path: Path) -> None:
    rows = b"\x01\x00\x09\x00" * 3 + b"\x01\x00"  # three rows and half of a fourth
    section = _xref_stream(tmp_path, b"/Size 5 /W [1 2 1]", rows)
    assert section.lookup(2) == 9
    with pytest.raises(Broken, match="xref stream at offset 9 ends before row 3"):
        section.lookup(3)


@pytest.mark.parametrize("first_kind", [2, 0, 1], ids=["all-up", "none-then-up", "sub-then-up"])
def test_a_long_xref_stream_reads_back_as_written(tmp_path: Path, first_kind: int) -> None:
    # Past _NUMPY_ROWS the Up rows are summed by NumPy: every row, near and far, must still
    # read back as written.
    import random

    from leanreplay.cards import _pdfxref

    rng = random.Random(first_kind)
    count = 3 * _pdfxref._NUMPY_ROWS
    entries = [
        (rng.choice([1, 2]), rng.randrange(256**4), rng.randrange(256**2)) for _ in range(count)
    ]
    rows = [bytes([k]) + a.to_bytes(4, "big") + b.to_bytes(2, "big") for k, a, b in entries]
    kinds = [first_kind if i == 40 else 2 for i in range(count)]
    data = zlib.compress(png_encode(rows, kinds))
    body = (
        b"%%PDF-1.7\n1 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Filter /FlateDecode "
        b"/DecodeParms << /Predictor 12 /Columns 7 >> /Length %d >>\nstream\n"
        % (count, len(data))
        + data
        + b"\nendstream\nendobj\n"
    )
    path = tmp_path / "long.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        section = _StreamSection.at(_File(fd, len(body)), body.index(b"1 0 obj"))
        for num in [0, 39, 40, 41, 1500, count - 2, count - 1, *rng.sample(range(count), 40)]:
            assert section.lookup(num) == _expected(entries[num], (1, 4, 2)), num
    finally:
        os.close(fd)


@pytest.mark.parametrize("last", [b"\n", b"\r"], ids=["LF", "CR"])
def test_xref_stream_rows_that_end_in_newline_bytes_keep_them(tmp_path: Path, last: bytes) -> None:
    # The /Length says where the rows end; only a stream without one is trimmed of the end
    # of line before "endstream", which here would cut the last row short.
    rows = b"\x00\x00\x00\xff" + b"\x01\x00\x64\x00" + b"\x01\x00\xc8" + last
    body = (
        b"%%PDF-1.7\n1 0 obj\n<< /Type /XRef /Size 3 /W [1 2 1] /Length %d >>\nstream\n" % len(rows)
        + rows
        + b"\nendstream\nendobj\n"
    )
    path = tmp_path / "x.pdf"
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        section = _StreamSection.at(_File(fd, len(body)), body.index(b"1 0 obj"))
        assert [section.lookup(n) for n in (1, 2)] == [0x64, 0xC8]
    finally:
        os.close(fd)


def _file_of(tmp_path: Path, data: bytes) -> _File:
    path = tmp_path / "f.pdf"
    path.write_bytes(data)
    return _File(os.open(path, os.O_RDONLY), len(data))


@pytest.mark.parametrize(
    "data",
    [b"1 0 obj\n<< /Type /XRefX >>\nendobj\n", b"1 0 obj\n[1 2]\nendobj\n"],
    ids=["another-type", "no-stream"],  # no backslashes: mutmut passes ids back to pytest
)
def test_an_offset_without_an_xref_stream_says_so(tmp_path: Path, data: bytes) -> None:
    file = _file_of(tmp_path, data)
    try:
        with pytest.raises(Broken, match="^offset 0 holds no xref stream$"):
            _StreamSection.at(file, 0)
    finally:
        os.close(file.fd)


@pytest.mark.parametrize("offset", [-1, 5, 6], ids=str)
def test_a_read_outside_the_file_is_refused(tmp_path: Path, offset: int) -> None:
    file = _file_of(tmp_path, b"%PDF-")
    try:
        with pytest.raises(Broken, match=f"^offset {offset} is outside the file \\(5 bytes\\)$"):
            file.read(offset, 10)
        assert file.read(4, 10) == b"-"  # the last byte, at most what is left
    finally:
        os.close(file.fd)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(min_size=1, max_size=300),
    span=st.integers(0, 400),
    reads=st.lists(st.tuples(st.integers(0, 299), st.integers(0, 400)), max_size=8),
)
def test_reads_inside_the_kept_tail_equal_the_file(
    tmp_path: Path, data: bytes, span: int, reads: list[tuple[int, int]]
) -> None:
    file = _file_of(tmp_path, data)
    try:
        assert file.tail(span) == data[max(0, len(data) - span) :]
        for offset, length in reads:
            if offset < len(data):
                assert file.read(offset, length) == data[offset : offset + length]
        assert file.tail(span + 10) == data[max(0, len(data) - span - 10) :]  # a wider tail
        assert file.tail(1) == data[-1:]  # a narrower one, from what is kept
    finally:
        os.close(file.fd)


@pytest.mark.parametrize(("rows", "whole"), [(1000, True), (20_000, False)], ids=str)
def test_a_small_xref_stream_is_inflated_whole_a_large_one_as_far_as_asked(
    tmp_path: Path, rows: int, whole: bool
) -> None:
    # 4-byte rows (type 1, a 3-byte offset): 4 KB and 80 KB decoded, either side of 64 KiB.
    raw = b"".join(b"\x01" + (k * 7).to_bytes(3, "big") for k in range(rows))
    packed = zlib.compress(raw)
    section = _xref_stream(tmp_path, b"/Size %d /W [1 3 0] /Filter /FlateDecode" % rows, packed)
    assert section.lookup(1) == 7
    assert section.source.done is whole
    assert (len(section.source.data) == len(raw)) is whole
    assert section.lookup(rows - 1) == (rows - 1) * 7  # the rest is there when asked for
