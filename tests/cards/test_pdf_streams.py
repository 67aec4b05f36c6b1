"""Stream data as the probe decodes it: PNG predictors checked against Pillow's PNG decoder
(an independent implementation), the column sums of Up rows against sum(), and the search for
"endstream" when a stream's /Length cannot be used."""

from __future__ import annotations

import io
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
from leanreplay.cards._pdfobj import Broken
from leanreplay.cards._pdfstream import _byte_sum, _png_decode
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
