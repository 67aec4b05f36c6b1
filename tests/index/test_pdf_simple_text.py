"""The simple-page reader reads what PDFium reads, word for word, or declines the page.

Property: on every sample PDF and on generated pages (fonts with and without a plain
encoding, ToUnicode maps, line moves up and down, several strings on a line, kerning,
character spacing, scaling, marked content, images), each page's words equal PDFium's words
for that page, or the reader declined it. Separate tests check that it does not simply
decline everything: the pages the benchmarks and most writers produce are read.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pypdfium2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanreplay.cards import open_simple_text
from leanreplay.index.tools._pdftext import extract_pages
from leanreplay.index.tools._pdfworker import _clean
from tests import pdfgen
from tests.conftest import SAMPLES

FONTS = {
    # Standard Latin font, no /Encoding: StandardEncoding (read).
    "F1": b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    # WinAnsiEncoding by name and through a /BaseEncoding (read).
    "F2": b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>",
    "F3": b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier-Bold "
    b"/Encoding << /BaseEncoding /WinAnsiEncoding >> >>",
    "F4": b"<< /Type /Font /Subtype /TrueType /BaseFont /Arial /Encoding /WinAnsiEncoding "
    b"/FontDescriptor << /Type /FontDescriptor /FontName /Arial /Flags 32 "
    b"/FontBBox [-665 -325 2000 1040] /ItalicAngle 0 /Ascent 905 /Descent -212 "
    b"/CapHeight 716 /StemV 80 >> >>",
    # Declined: a symbolic font, /Differences, a ToUnicode map, a symbolic TrueType font.
    "F5": b"<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>",
    "F6": b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Differences "
    b"[65 /B /C] >> >>",
    "F7": b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode TOUNICODE >>",
    "F8": b"<< /Type /Font /Subtype /TrueType /BaseFont /Arial /Encoding /WinAnsiEncoding "
    b"/FontDescriptor << /Type /FontDescriptor /FontName /Arial /Flags 4 "
    b"/FontBBox [-665 -325 2000 1040] /ItalicAngle 0 /Ascent 905 /Descent -212 "
    b"/CapHeight 716 /StemV 80 >> >>",
}
TOUNICODE = (
    b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T def "
    b"1 begincodespacerange <00> <FF> endcodespacerange "
    b"1 beginbfrange <20> <7E> <0041> endbfrange endcmap CMapName currentdict /CMap "
    b"defineresource pop end end"
)
# Bytes strings are made of: letters and spaces mostly, then punctuation both encodings
# map alike, quotes they map differently, bytes only WinAnsi defines, soft hyphens and
# control characters.
ALPHABET = (
    b"abcdefghijklmnopqrstuvwxyzABCXYZ0123456789      "
    b".,;:!?-_()\\'`\"@#&*+=/<>[]{}~^|\xad\xe9\xfc\x93\x94\x80\x96\xa0\x81\x09\x7f\x01\x00"
)


def _escape(raw: bytes) -> bytes:
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


text_bytes = st.one_of(
    st.lists(st.sampled_from(list(ALPHABET[:60])), min_size=0, max_size=40).map(bytes),
    st.lists(st.sampled_from(list(ALPHABET)), min_size=0, max_size=40).map(bytes),
)
string_operand = st.one_of(
    text_bytes.map(lambda b: b"(" + _escape(b) + b")"),
    text_bytes.map(lambda b: b"<" + b.hex().encode() + b">"),
)


@st.composite
def line_ops(draw: st.DrawFn) -> bytes:
    """One step of a page: usually a move to a new line and a string, sometimes something
    the reader must decline or must get right (same line, upward, kerning, spacing)."""
    string = draw(string_operand)
    move = draw(
        st.sampled_from(
            [
                b"T* ",
                b"0 -14 Td ",
                b"0 -30 Td ",
                b"5 -12 TD ",
                b"0 -6 Td ",
                b"",
                b"40 0 Td ",
                b"0 20 Td ",
                b"-200 -13 Td ",
            ]
        )
    )
    show = draw(st.sampled_from(["Tj", "'", '"', "TJ", "TJk", "TJK"]))
    if show == "Tj":
        body = move + string + b" Tj"
    elif show == "'":
        body = string + b" '"
    elif show == '"':
        body = b"%d %d " % (draw(st.integers(0, 3)), draw(st.integers(0, 2))) + string + b' "'
    else:
        kern = {"TJ": 0, "TJk": draw(st.integers(-50, 50)), "TJK": draw(st.integers(-900, 900))}
        body = move + b"[" + string + b" %d " % kern[show] + draw(string_operand) + b"] TJ"
    extra = draw(
        st.sampled_from(
            [
                b"",
                b"1 Tc ",
                b"0 Tc ",
                b"90 Tz ",
                b"3 Tr ",
                b"2 Ts ",
                b"4 Tw ",
                b"/P <</MCID 0>> BDC ",
                b"/Span BMC ",
                b"EMC ",
                b"/F2 12 Tf ",
                b"/F1 4 Tf ",
                b"/F5 11 Tf ",
                b"/F6 11 Tf ",
                b"/F7 11 Tf ",
                b"/F8 11 Tf ",
                b"/F4 13 Tf ",
                b"1 0 0 1 50 700 Tm ",
                b"1 0 0 1 50 790 Tm ",
                b"0 1 -1 0 300 300 Tm ",
                b"2 0 0 2 40 300 Tm ",
                b"14 TL ",
                b"8 TL ",
            ]
        )
        | st.just(b"")
    )
    return extra + body + b"\n"


@st.composite
def page_content(draw: st.DrawFn) -> bytes:
    font = draw(st.sampled_from(sorted(FONTS)))
    size = draw(st.sampled_from([7, 10, 12, 18]))
    prefix = draw(
        st.sampled_from(
            [
                b"",
                b"q 1 0 0 1 0 0 cm ",
                b"q 0.5 0 0 0.5 0 0 cm ",
                b"0 0 1 rg 10 10 100 100 re f ",
                b"/Im1 Do ",
            ]
        )
    )
    ops = draw(st.lists(line_ops(), min_size=0, max_size=8))
    suffix = b" Q" if prefix.startswith(b"q") else b""
    return (
        prefix
        + b"BT /%s %d Tf %d TL 40 800 Td\n" % (font.encode(), size, size + 3)
        + b"".join(ops)
        + b"ET"
        + suffix
        + b"\n"
    )


def _pdf(contents: list[bytes], *, compress: bool) -> bytes:
    w = pdfgen.PdfWriter()
    catalog = w.reserve()
    tree = w.reserve()
    tounicode = w.add_stream(TOUNICODE)
    fonts = b" ".join(
        b"/%s %d 0 R" % (name.encode(), w.add(body.replace(b"TOUNICODE", b"%d 0 R" % tounicode)))
        for name, body in FONTS.items()
    )
    image = w.add_stream(
        b"\xff\x00\x00" * 4,
        b" /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceRGB "
        b"/BitsPerComponent 8",
    )
    kids = []
    for content in contents:
        stream = w.add_stream(content, compress=compress)
        kids.append(
            w.add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 842] /Contents %d 0 R "
                b"/Resources << /Font << %s >> /XObject << /Im1 %d 0 R >> >> >>"
                % (tree, stream, fonts, image)
            )
        )
    refs = b" ".join(b"%d 0 R" % k for k in kids)
    w.set(tree, b"<< /Type /Pages /Kids [%s] /Count %d >>" % (refs, len(kids)))
    w.set(catalog, b"<< /Type /Catalog /Pages %d 0 R >>" % tree)
    import io

    out = io.BytesIO()
    w.write(out, root=catalog)
    return out.getvalue()


def _pdfium_words(path: str) -> list[list[str]]:
    doc = pypdfium2.PdfDocument(path)
    try:
        words = []
        for i in range(len(doc)):
            page = doc[i]
            textpage = page.get_textpage()
            words.append(_clean(textpage.get_text_range()).split())
            textpage.close()
            page.close()
        return words
    finally:
        doc.close()


def _texts(path: str) -> list[str | None] | None:
    """Each page's text from the simple reader (None: declined), or None for the document."""
    fd = os.open(path, os.O_RDONLY)
    try:  # the reader reads the descriptor as it goes
        reader = open_simple_text(fd, os.fstat(fd).st_size)
        return None if reader is None else [reader.text(i) for i in range(reader.count)]
    finally:
        os.close(fd)


def _compare(path: str) -> tuple[int, int]:
    """(pages read, pages) after asserting every page read matches PDFium's words."""
    texts = _texts(path)
    try:
        expected = _pdfium_words(path)
    except pypdfium2.PdfiumError:  # a file PDFium refuses (pypdf reads it): so does this
        assert texts is None
        return 0, 0
    if texts is None:
        return 0, len(expected)
    assert len(texts) == len(expected)
    read = 0
    for i, (text, words) in enumerate(zip(texts, expected, strict=True)):
        if text is None:
            continue
        read += 1
        assert _clean(text).split() == words, f"{path} page {i + 1}: {text!r}"
    return read, len(expected)


@given(
    pages=st.lists(page_content(), min_size=1, max_size=4),
    compress=st.booleans(),
)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_generated_pages_read_as_pdfium_reads_them_or_declined(
    pages: list[bytes], compress: bool
) -> None:
    with tempfile.NamedTemporaryFile(suffix=".pdf") as f:
        f.write(_pdf(pages, compress=compress))
        f.flush()
        _compare(f.name)


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.pdf")), ids=str)
def test_sample_pages_read_as_pdfium_reads_them_or_declined(name: str) -> None:
    read, pages = _compare(str(SAMPLES / name))
    assert read <= pages


@pytest.mark.parametrize(
    "kwargs",
    [
        {"compress": True},
        {"compress": False},
        {"xref": "stream", "objstm": True},
        {"fanout": 7},
    ],
    ids=["flate", "plain", "object-streams", "deep-tree"],
)
def test_generated_text_pdfs_are_read_without_pdfium(tmp_path: Path, kwargs: object) -> None:
    path = str(tmp_path / "text.pdf")
    pdfgen.write_pdf(path, 40, **kwargs)  # type: ignore[arg-type]
    assert _compare(path) == (40, 40)


@pytest.mark.parametrize(
    "name", ["classic_xref.pdf", "object_streams.pdf", "linearized.pdf", "hyphenated.pdf"]
)
def test_simple_samples_are_read_without_pdfium(name: str) -> None:
    read, pages = _compare(str(SAMPLES / name))
    assert read == pages


def test_a_page_pdfium_may_read_as_vertical_is_declined(tmp_path: Path) -> None:
    # Two one-letter lines, one above the other: PDFium takes the flow as vertical and reads
    # "aa" (hypothesis found it). Left-aligned lines of 16 letters are horizontal to it.
    stacked = b"BT /F1 7 Tf 10 TL 40 800 Td\nT* (a) Tj\nT* (a) Tj\nET\n"
    column = b"BT /F1 7 Tf 10 TL 40 800 Td\nT* (abcdefghijklmnop) Tj\nT* (a) Tj\nET\n"
    indented = b"BT /F1 7 Tf 10 TL 40 800 Td\nT* (abcdefghijklmnop) Tj\n30 -10 Td (a) Tj\nET\n"
    path = tmp_path / "flow.pdf"
    path.write_bytes(_pdf([stacked, column, indented], compress=False))
    assert _pdfium_words(str(path))[0] == ["aa"]
    texts = _texts(str(path))
    assert texts is not None
    assert texts[0] is None
    assert texts[1] == "abcdefghijklmnop\na"
    assert texts[2] is None
    assert _compare(str(path)) == (1, 3)


def test_pages_it_declines_are_read_by_pdfium(tmp_path: Path) -> None:
    # Page 2 uses a ToUnicode font (declined); the mix still comes out in page order.
    simple = b"BT /F1 12 Tf 14 TL 40 800 Td (first page) Tj ET\n"
    mapped = b"BT /F7 12 Tf 14 TL 40 800 Td (ABC) Tj ET\n"
    path = tmp_path / "mixed.pdf"
    path.write_bytes(_pdf([simple, mapped, simple], compress=True))
    texts = _texts(str(path))
    assert texts is not None
    assert [t is None for t in texts] == [False, True, False]
    st_ = path.stat()
    texts = extract_pages(str(path), (st_.st_dev, st_.st_ino), 3, workers=0)
    assert [t.split() for t in texts] == _pdfium_words(str(path))


def test_pages_are_walked_in_order_and_skipped_pages_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "ordered.pdf"
    pdfgen.write_pdf(str(path), 30, fanout=4)
    fd = os.open(path, os.O_RDONLY)
    try:
        reader = open_simple_text(fd, os.fstat(fd).st_size)
        assert reader is not None
        assert reader.count == 30
        first, skipped_to = reader.text(0), reader.text(20)
        again = reader.text(3)  # behind the walk: declined, PDFium reads it
    finally:
        os.close(fd)
    assert (first or "").split()[:2] == ["page1", "marker00001"]
    assert (skipped_to or "").split()[:2] == ["page21", "marker00021"]
    assert again is None
