"""Stream data as the probe decodes it: PNG predictors checked against Pillow's PNG decoder
(an independent implementation), the column sums of Up rows against sum(), and the search for
"endstream" when a stream's /Length cannot be used."""

from __future__ import annotations

import io
import os
import re
import struct
import zlib
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from leanreplay.cards import _pdfstream, pdf_facts
from leanreplay.cards._pdffile import MAX_STREAM_BYTES, _File
from leanreplay.cards._pdfobj import Broken, Name, Stream
from leanreplay.cards._pdfstream import (
    _byte_sum,
    _Decoded,
    _find_forward,
    _object_at,
    _png_decode,
    _stream_source,
)
from tests.pdfgen import ObjStm, assemble, three_pages


def _png(filtered: bytes, columns: int, rows: int) -> bytes:
    """A grayscale 8-bit PNG whose IDAT holds ``filtered`` rows as they are."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", columns, rows, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(filtered))
        + chunk(b"IEND", b"")
    )


@st.composite
def _filtered_rows(draw: st.DrawFn) -> tuple[bytes, int, int]:
    columns = draw(st.integers(1, 12))
    rows = draw(st.integers(1, 12))
    out = bytearray()
    for _ in range(rows):
        out.append(draw(st.integers(0, 4)))  # None, Sub, Up, Average, Paeth
        out += draw(st.binary(min_size=columns, max_size=columns))
    return bytes(out), columns, rows


@settings(max_examples=300, deadline=None)
@given(_filtered_rows())
def test_png_predictors_decode_as_pillow_decodes_them(case: tuple[bytes, int, int]) -> None:
    filtered, columns, rows = case
    with Image.open(io.BytesIO(_png(filtered, columns, rows))) as image:
        expected = image.tobytes()
    assert _png_decode(filtered, columns, rows) == expected


def test_paeth_takes_up_when_up_and_upleft_are_equally_near() -> None:
    # Second row, second byte: left 110, up 80, up-left 100; p = 90 is 10 from both up and
    # up-left, and the PNG rule takes up on that tie (random rows almost never hit it).
    filtered = bytes([0, 100, 80, 4, 10, 0])
    with Image.open(io.BytesIO(_png(filtered, 2, 2))) as image:
        assert image.tobytes() == bytes([100, 80, 110, 80])
    assert _png_decode(filtered, 2, 2) == bytes([100, 80, 110, 80])


def test_an_unknown_predictor_row_type_is_refused() -> None:
    with pytest.raises(Broken, match="unknown PNG predictor row type 5"):
        _png_decode(b"\x00ab\x05cd", 2, 2)


@given(st.binary(max_size=2000))
def test_byte_sum_is_the_sum_of_the_bytes(data: bytes) -> None:
    assert _byte_sum(data) == sum(data)


@pytest.mark.parametrize("before", [0, 1, 65_536 - 9, 65_536 - 4, 65_536, 200_000])
def test_endstream_is_found_wherever_it_falls_in_the_reads(tmp_path: Path, before: int) -> None:
    # The xref stream has no /Length; blanks after its rows put "endstream" at ``before``
    # bytes past the 64 KiB reads' boundaries (within and across them).
    data = assemble(three_pages())
    assert data.count(b"/Length ") == 1
    data = re.sub(rb"/Length \d+ ", b"", data)
    head, sep, tail = data.rpartition(b"\nendstream")
    rows_at = head.rindex(b"stream\n") + len(b"stream\n")
    pad = max(0, before - (len(head) - rows_at) - 1)
    path = tmp_path / "f.pdf"
    path.write_bytes(head + b" " * pad + sep + tail)
    facts = pdf_facts(path)
    assert (facts.pages, facts.warnings) == (3, [])


def _zlib_ng() -> ModuleType:
    from zlib_ng import zlib_ng

    return zlib_ng


@pytest.mark.parametrize("inflater", [zlib, _zlib_ng()], ids=["zlib", "zlib-ng"])
def test_either_inflater_gives_the_same_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inflater: ModuleType
) -> None:
    # zlib-ng inflates when installed, the standard zlib otherwise: the same facts from both,
    # for xref and object streams, the committed samples and a stream that does not inflate.
    from tests import pdfgen
    from tests.conftest import SAMPLES, load_manifest

    paths = [SAMPLES / n for n in sorted(load_manifest()) if n.endswith(".pdf")]
    for i, kwargs in enumerate(
        [{"xref": "stream", "objstm": True}, {"xref": "stream", "compress": True}]
    ):
        paths.append(Path(pdfgen.write_pdf(str(tmp_path / f"gen{i}.pdf"), 40, **kwargs)))
    broken = tmp_path / "broken.pdf"
    plain = {k: v for k, v in three_pages().items() if k != 2}
    undecodable = ObjStm(6, {2: three_pages()[2]}, data=b"not zlib at all")
    broken.write_bytes(assemble(plain, (undecodable,)))
    paths.append(broken)
    expected = [pdf_facts(p) for p in paths]
    monkeypatch.setattr(_pdfstream, "INFLATE", inflater)
    assert [pdf_facts(p) for p in paths] == expected
    assert expected[-1].pages == 3
    assert any("does not inflate" in w for w in expected[-1].warnings), expected[-1].warnings


def _opened(tmp_path: Path, data: bytes) -> _File:
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    return _File(fd, len(data))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"abc\nendstream\nendobj\n2 0 obj\n<< >>\nstream\nxyz\nendstream\n", b"abc"),
        (b"endstream\nendobj\n2 0 obj\n<< >>\nstream\nxyz\nendstream\n", b""),
        (b"\nab X \r\nendstream\n", b"\nab X "),  # only the end of line goes
        (b"abX\nendstream\n", b"abX"),
    ],
    ids=["the first endstream", "empty data", "blanks kept", "letters kept"],
)
def test_a_stream_without_length_ends_at_its_first_endstream(
    tmp_path: Path, data: bytes, expected: bytes
) -> None:
    file = _opened(tmp_path, b"1 0 obj\n<< >>\nstream\n" + data)
    try:
        source = _stream_source(file, Stream({}, data_offset=len(b"1 0 obj\n<< >>\nstream\n")))
        assert source.all() == expected
    finally:
        os.close(file.fd)


def test_a_length_of_zero_is_an_empty_stream(tmp_path: Path) -> None:
    head = b"1 0 obj\n<< /Length 0 >>\nstream\n"
    file = _opened(tmp_path, head + b"xyz\nendstream\n")
    try:
        assert _stream_source(file, Stream({"Length": 0}, data_offset=len(head))).all() == b""
    finally:
        os.close(file.fd)


def test_a_length_of_max_stream_bytes_is_read_as_written(tmp_path: Path) -> None:
    # The limit itself is a usable /Length: the data is read, "endstream" inside it or not.
    head = b"1 0 obj\n<< /Length %d >>\nstream\n" % MAX_STREAM_BYTES
    data = b"endstream" + bytes(MAX_STREAM_BYTES - 9)
    file = _opened(tmp_path, head + data + b"\nendstream\n")
    try:
        stream = Stream({"Length": MAX_STREAM_BYTES}, data_offset=len(head))
        assert _stream_source(file, stream).all() == data
    finally:
        os.close(file.fd)


def test_the_endstream_search_reads_limit_bytes_and_no_further(tmp_path: Path) -> None:
    # Reads of 64 KiB plus the needle's length: a needle across a read boundary is found, and
    # one a little past the limit is not, however the reads fall.
    limit = 2 * 64 * 1024
    for at, found in [(65_530, True), (limit - 1, True), (limit + 100, False)]:
        data = bytearray(b"." * (limit + 4096))
        data[at : at + 9] = b"endstream"
        file = _opened(tmp_path, bytes(data))
        try:
            assert _find_forward(file, 0, b"endstream", limit) == (at if found else -1), at
        finally:
            os.close(file.fd)


def _stored(size: int, *, final: bool = False) -> bytes:
    """One stored (uncompressed) deflate block of ``size`` bytes."""
    return bytes([final]) + struct.pack("<HH", size, size ^ 0xFFFF) + b"a" * size


def test_a_stream_is_inflated_only_as_far_as_a_reader_asks() -> None:
    # 16 KiB, then 100 bytes, then an invalid block: asking for the first 16 KiB never
    # reaches the bad block; asking for one byte more does, and the error says where.
    raw = b"\x78\x01" + _stored(16_384) + _stored(100) + b"\x07" + b"junk" * 10
    source = _Decoded(raw, compressed=True, where=1234, predictor=1)
    assert source.ensure(16_384) == b"a" * 16_384
    with pytest.raises(Broken, match="stream at offset 1234 does not inflate"):
        source.ensure(16_385)


def test_a_stream_may_inflate_to_exactly_max_stream_bytes() -> None:
    # A reader that asks for one byte under the limit first (an object stream's /First can
    # be anything) then for the limit gets it; one byte more is refused.
    raw = zlib.compress(bytes(MAX_STREAM_BYTES + 10))
    source = _Decoded(raw, compressed=True, where=7, predictor=1)
    assert len(source.ensure(MAX_STREAM_BYTES - 1)) == MAX_STREAM_BYTES - 1
    assert len(source.ensure(MAX_STREAM_BYTES)) == MAX_STREAM_BYTES
    with pytest.raises(Broken, match=f"stream at offset 7 inflates past {MAX_STREAM_BYTES}"):
        source.ensure(MAX_STREAM_BYTES + 1)


_ROWS = bytes([1, 2, 3, 4, 5, 6])  # two rows of three columns
_UP = bytes([2, 1, 2, 3, 2, 3, 3, 3])  # the same rows PNG-Up predicted


@pytest.mark.parametrize(
    ("entries", "data", "expected"),
    [
        ({"Filter": "FlateDecode"}, zlib.compress(_ROWS), _ROWS),
        ({"Filter": "Fl"}, zlib.compress(_ROWS), _ROWS),  # the abbreviation (inline images')
        ({"Filter": ["FlateDecode"]}, zlib.compress(_ROWS), _ROWS),
        ({"Filter": []}, _ROWS, _ROWS),
        (
            {"Filter": ["FlateDecode"], "DecodeParms": [{"Predictor": 12, "Columns": 3}]},
            zlib.compress(_UP),
            _ROWS,
        ),
        (
            {"Filter": ["FlateDecode"], "DecodeParms": {"Predictor": 12, "Columns": 3}},
            zlib.compress(_UP),
            _ROWS,
        ),
        ({"DecodeParms": {"Predictor": 10, "Columns": 3}}, _UP, _ROWS),  # 10: PNG as well
        ({"DecodeParms": {"Predictor": 12}}, bytes([0, 7, 2, 1]), bytes([7, 8])),  # Columns 1
        ({"DecodeParms": {"Columns": 3}}, _ROWS, _ROWS),  # no /Predictor: none
        ({"DecodeParms": {"Predictor": Name("X"), "Columns": 3}}, _ROWS, _ROWS),  # not a number
    ],
    ids=[
        "flate",
        "fl",
        "flate-in-an-array",
        "empty-array",
        "png-in-arrays",
        "png-params-not-in-an-array",
        "predictor-10",
        "columns-default-1",
        "predictor-default-none",
        "predictor-not-a-number",
    ],
)
def test_stream_filters_and_parameters_decode(
    tmp_path: Path, entries: dict[str, object], data: bytes, expected: bytes
) -> None:
    assert _decoded(tmp_path, entries, data) == expected


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ({"Filter": ["FlateDecode", "FlateDecode"]}, "stream at offset 21 has chained filters"),
        ({"Filter": "LZWDecode"}, "stream filter /LZWDecode is not supported"),
        ({"DecodeParms": {"Predictor": 2}}, "TIFF predictor 2 is not supported"),
    ],
    ids=["chained", "lzw", "tiff"],
)
def test_stream_filters_the_probe_does_not_decode_are_refused(
    tmp_path: Path, entries: dict[str, object], match: str
) -> None:
    with pytest.raises(Broken, match=match):
        _decoded(tmp_path, entries, zlib.compress(zlib.compress(_ROWS)))


def _decoded(tmp_path: Path, entries: dict[str, object], data: bytes) -> bytes:
    head = b"1 0 obj\n<< >>\nstream\n"  # the dictionary is the one given below
    file = _opened(tmp_path, head + data + b"\nendstream\n")
    try:
        stream = Stream({"Length": len(data), **entries}, data_offset=len(head))
        return _stream_source(file, stream).all()
    finally:
        os.close(file.fd)


@pytest.mark.parametrize("eol", [b"\r\n", b"\n", b"\r"], ids=["CRLF", "LF", "CR"])
def test_stream_data_starts_after_the_end_of_line_of_the_keyword(
    tmp_path: Path, eol: bytes
) -> None:
    head = b"1 0 obj\n<< /Length 3 >>\nstream" + eol
    file = _opened(tmp_path, head + b"abc\nendstream\nendobj\n")
    try:
        stream = _object_at(file, 0, 1)
        assert isinstance(stream, Stream)
        assert stream.data_offset == len(head)
        assert _stream_source(file, stream).all() == b"abc"
    finally:
        os.close(file.fd)


@pytest.mark.parametrize(
    ("data", "num", "match"),
    [
        (b"1 0 obj\n<< >>\nendobj\n", 2, "^xref says object 2 is at offset 0, found object 1$"),
        # Object 0 is the free list's head: an xref naming it in use still gets the check.
        (b"1 0 obj\n<< >>\nendobj\n", 0, "^xref says object 0 is at offset 0, found object 1$"),
        (b"<< >>\n", 1, "^no object header at offset 0$"),
    ],
    ids=["another-object", "object-0", "no-header"],
)
def test_an_object_not_where_the_xref_says_is_named(
    tmp_path: Path, data: bytes, num: int, match: str
) -> None:
    file = _opened(tmp_path, data)
    try:
        with pytest.raises(Broken, match=match):
            _object_at(file, 0, num)
    finally:
        os.close(file.fd)
