"""The C row decoder of xref streams (cards/_predictor.c): rows of every PNG filter type
decode as Pillow decodes them, from any row above, in one call or in pieces, whatever the
width (the SIMD path takes rows of up to 16 bytes); bad arguments are refused."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from leanreplay.cards import _pdfxref, pdf_facts
from leanreplay.cards._pdfdoc import PdfDocument
from leanreplay.cards._pdfstream import _png_decode
from tests.cards.conftest import require_predictor
from tests.cards.test_pdf_bounds import _predicted_xref_pdf
from tests.cards.test_pdf_streams import _png


@pytest.fixture(scope="module")
def predictor() -> ModuleType:
    require_predictor()
    return _pdfxref._predictor  # type: ignore[no-any-return]


@st.composite
def _rows(draw: st.DrawFn) -> tuple[bytes, int, bytes]:
    """Filtered rows (mostly Up, in runs, as xref streams hold them), their width, and a
    decoded row above the first."""
    columns = draw(st.sampled_from([1, 2, 5, 7, 8, 15, 16, 17, 20, 33]))
    kinds = draw(st.lists(st.sampled_from([2, 2, 2, 2, 0, 1, 3, 4]), min_size=1, max_size=60))
    out = bytearray()
    for kind in kinds:
        out.append(kind)
        out += draw(st.binary(min_size=columns, max_size=columns))
    above = draw(st.binary(min_size=columns, max_size=columns))
    return bytes(out), columns, above


@settings(max_examples=400, deadline=None)
@given(case=_rows(), split=st.integers(0, 60))
def test_rows_decode_as_pillow_and_python_decode_them(
    predictor: ModuleType, case: tuple[bytes, int, bytes], split: int
) -> None:
    filtered, columns, above = case
    rows = len(filtered) // (columns + 1)
    # The row above, as a None row in front: then Pillow and _png_decode start from it.
    framed = b"\x00" + above + filtered
    with Image.open(io.BytesIO(_png(framed, columns, rows + 1))) as image:
        expected = image.tobytes()[columns:]
    assert _png_decode(framed, columns, rows + 1)[columns:] == expected
    assert predictor.undo(filtered, columns, above) == expected
    # In two calls, the second from the last row of the first.
    cut = min(split, rows) * (columns + 1)
    head = predictor.undo(memoryview(filtered)[:cut], columns, above)
    last = head[-columns:] if head else above
    tail = predictor.undo(bytearray(filtered[cut:]), columns, last)
    assert head + tail == expected


# Rows whose last byte sits just before a page the process may not touch: a load past the
# input kills the child with SIGSEGV. Run in a child so that a crash is a plain failure.
_GUARDED = r"""
import ctypes, mmap, sys
from leanreplay.cards import _pdfxref
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PAGE = mmap.PAGESIZE
def guarded(data):
    pages = (len(data) + PAGE - 1) // PAGE + 1
    m = mmap.mmap(-1, pages * PAGE)
    base = ctypes.addressof((ctypes.c_char * (pages * PAGE)).from_buffer(m))
    assert libc.mprotect(base + (pages - 1) * PAGE, PAGE, 0) == 0
    start = (pages - 1) * PAGE - len(data)
    m[start : start + len(data)] = data
    return m, memoryview(m)[start : start + len(data)]
done = 0
for columns in range(1, 41):
    for rows in (1, 2, 3, 17, 300):
        data = (b"\x02" + bytes(range(1, columns + 1))) * rows
        keep, view = guarded(data)
        got = _pdfxref._predictor.undo(view, columns, bytes(columns))
        assert got == _pdfxref._predictor.undo(data, columns, bytes(columns))
        assert got[-columns:] == bytes((rows * c) & 0xFF for c in range(1, columns + 1))
        done += 1
print(done)
"""


def test_up_rows_are_read_no_further_than_their_last_byte(predictor: ModuleType) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _GUARDED], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.split() == [str(40 * 5)]


def test_long_runs_of_up_rows_wrap_each_byte(predictor: ModuleType) -> None:
    # 5,000 Up rows adding 1..16 to each column: every byte wraps many times.
    columns = 16
    delta = bytes(range(1, columns + 1))
    filtered = (b"\x02" + delta) * 5000
    decoded = predictor.undo(filtered, columns, bytes(columns))
    for r in (0, 1, 254, 255, 4999):
        assert decoded[r * columns : (r + 1) * columns] == bytes(
            ((r + 1) * d) & 0xFF for d in delta
        )


@pytest.mark.parametrize(
    ("data", "columns", "above", "message"),
    [
        (b"\x02ab\x07cd", 2, b"\x00\x00", "unknown PNG predictor row type 7 in row 1"),
        (b"\x02abc", 2, b"\x00\x00", "4 bytes are not whole rows of 2 columns"),
        (b"\x02ab", 2, b"\x00", "the row above that long (2, 1 bytes)"),
        (b"", 0, b"", "columns must be at least 1"),
    ],
    ids=["unknown-type", "partial-row", "short-above", "no-columns"],
)
def test_bad_rows_are_refused(
    predictor: ModuleType, data: bytes, columns: int, above: bytes, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        predictor.undo(data, columns, above)
    with pytest.raises(TypeError):
        predictor.undo("text", 2, b"\x00\x00")


def test_no_rows_decode_to_nothing(predictor: ModuleType) -> None:
    assert predictor.undo(b"", 7, bytes(7)) == b""


def test_a_row_type_c_does_not_know_leaves_python_to_answer(
    predictor: ModuleType, tmp_path: Path
) -> None:
    # Row 6 is of type 7: C declines the stream, and Python, which decodes only from the last
    # row that stands alone, still reads rows 1-5 (as it did before C was there).
    path = tmp_path / "odd.pdf"
    data = _predicted_xref_pdf([0, 2, 2, 2, 2, 2, 0], odd={6: 7})
    path.write_bytes(data)
    facts = pdf_facts(path)
    assert (facts.pages, facts.warnings) == (3, [])
    with path.open("rb") as f:
        doc = PdfDocument.from_xref(f.fileno(), len(data))
        (section,) = doc._sections
        assert isinstance(section, _pdfxref._StreamSection)
        assert section.lookup(1) == data.index(b"1 0 obj")
        assert section._undone is None  # C declined, Python answered
