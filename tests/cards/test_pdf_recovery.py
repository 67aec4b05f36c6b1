"""Recovery when the cross-reference index is unusable: the chunked scan for object headers,
trailers and typed objects finds exactly what one read of the whole file finds, and the
document is rebuilt from whichever of a trailer, an xref stream or a catalog is there."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from leanreplay.cards import PdfFacts, _pdffile, pdf_facts
from tests import pdfgen
from tests.pdfgen import assemble, three_pages

SCAN_DATA = b"1 0 obj 12 0 obj x345 0 obj\n9 0 objx trailer\n<< /Type /ObjStm 7 0 obj /Type /Page"


@pytest.mark.parametrize("chunk", range(1, 12))
def test_every_chunking_of_the_scan_finds_what_a_whole_read_finds(
    tmp_path: Path, chunk: int
) -> None:
    # Every start, stop and chunk size over a short file: matches that straddle a chunk
    # boundary, and numbers whose first digit sits just before one (the look-behind).
    path = tmp_path / "scan.pdf"
    path.write_bytes(SCAN_DATA)
    fd = os.open(path, os.O_RDONLY)
    try:
        for pattern in (_pdffile._SCAN_OBJ, _pdffile._SCAN_TRAILER, _pdffile._SCAN_TYPE):
            for start in range(0, len(SCAN_DATA), 3):
                for stop in range(start, len(SCAN_DATA) + 1, 5):
                    whole = [
                        (m.start(), m.group(0)) for m in pattern.finditer(SCAN_DATA, start, stop)
                    ]
                    chunked = [
                        (at, m.group(0))
                        for at, m in _pdffile.scan(
                            fd, pattern, start, stop, chunk=chunk, overlap=20
                        )
                    ]
                    assert chunked == whole, (pattern.pattern, start, stop)
    finally:
        os.close(fd)


def _broken_index(data: bytes) -> bytes:
    """The same file with startxref pointing at its header: the index is unusable."""
    return data[: data.rindex(b"startxref")] + b"startxref\n3\n%%EOF\n"


def facts_of(tmp_path: Path, data: bytes) -> PdfFacts:
    path = tmp_path / "broken.pdf"
    path.write_bytes(data)
    return pdf_facts(path)


def test_recovery_takes_the_root_from_a_trailer(tmp_path: Path) -> None:
    facts = facts_of(tmp_path, _broken_index(pdfgen.pdf_bytes(4, title="From the trailer")))
    assert (facts.pages, facts.title) == (4, "From the trailer")
    assert any("recovered by scanning object headers" in w for w in facts.warnings)


def test_recovery_skips_a_trailer_it_cannot_read_and_uses_the_next(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(4, title="Second trailer")
    # An unreadable trailer first (in a comment the scan still sees), the real one after.
    data = data.replace(b"\n", b"\n%trailer << /Root ] >>\n", 1)
    facts = facts_of(tmp_path, _broken_index(data))
    assert (facts.pages, facts.title) == (4, "Second trailer")


def test_recovery_ignores_trailers_without_a_root(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(4, title="Root")
    data += b"trailer\n<< /Size 3 >>\n"  # a later trailer that names no /Root
    facts = facts_of(tmp_path, _broken_index(data))
    assert (facts.pages, facts.title) == (4, "Root")


def test_recovery_takes_the_root_from_an_xref_stream(tmp_path: Path) -> None:
    # No "trailer" keyword anywhere: the /Type /XRef stream's dictionary holds /Root.
    data = assemble(three_pages(o6=b"<< /Title (From the xref stream) >>"), trailer=b"/Info 6 0 R ")
    assert b"trailer" not in data
    facts = facts_of(tmp_path, _broken_index(data))
    assert (facts.pages, facts.title) == (3, "From the xref stream")


def test_recovery_falls_back_on_the_catalog(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(4, title="No trailer to find it")
    data = data[: data.index(b"xref\n")]  # no table, no trailer, no startxref
    facts = facts_of(tmp_path, data)
    assert (facts.pages, facts.title) == (4, None)  # the title hangs off the lost trailer


def test_recovery_without_any_root_says_so(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(4).replace(b"/Type /Catalog", b"/Type /Katalog")
    data = data[: data.index(b"xref\n")]
    facts = facts_of(tmp_path, data)
    assert facts.pages is None
    assert any("no trailer and no /Type /Catalog object found" in w for w in facts.warnings)


def test_recovery_counts_page_objects_and_only_inside_objects(tmp_path: Path) -> None:
    # The page tree is gone; the pages are counted by their /Type /Page, but not the one
    # a comment before the first object mentions.
    data = pdfgen.lost_page_tree_pdf(5)
    data = data.replace(b"\n", b"\n% /Type /Page in a comment\n", 1)
    facts = facts_of(tmp_path, data)
    assert facts.pages == 5
    assert any("counted the 5 /Type /Page objects" in w for w in facts.warnings)


@pytest.mark.parametrize(("offset", "ok"), [(0, False), (-1, False), (None, True)])
def test_startxref_must_point_inside_the_file(tmp_path: Path, offset: int | None, ok: bool) -> None:
    data = pdfgen.pdf_bytes(3)
    if offset is not None:
        at = len(data) if offset < 0 else offset
        data = data[: data.rindex(b"startxref")] + b"startxref\n%d\n%%%%EOF\n" % at
    facts = facts_of(tmp_path, data)
    assert facts.pages == 3
    if ok:
        assert facts.warnings == []
    else:
        assert any("points outside the file" in w for w in facts.warnings), facts.warnings


def test_an_index_at_an_offset_with_leading_blanks_is_read(tmp_path: Path) -> None:
    # startxref points a few blank bytes before "xref": writers that count the newline.
    data = pdfgen.pdf_bytes(3)
    start = pdfgen.startxref_of(data)
    data = data[:start] + b"\r\n  " + data[start:]
    body = data[: data.rindex(b"startxref")] + b"startxref\n%d\n%%%%EOF\n" % start
    facts = facts_of(tmp_path, body)
    assert (facts.pages, facts.warnings) == (3, [])


def test_recovery_of_an_empty_file_says_there_is_nothing(tmp_path: Path) -> None:
    facts = facts_of(tmp_path, b"")
    assert facts.pages is None
    assert any("recovery failed: no objects found in the file" in w for w in facts.warnings)


def test_recovery_finds_an_object_at_the_first_byte(tmp_path: Path) -> None:
    # No header, no index: the catalog's "1 0 obj" starts the file.
    data = pdfgen.pdf_bytes(3)
    data = data[data.index(b"1 0 obj") : data.index(b"xref\n")]
    facts = facts_of(tmp_path, data)
    assert facts.pages == 3
    assert "no %PDF- header in the first 1024 bytes" in facts.warnings


def test_recovery_reads_a_trailer_with_no_blank_before_its_dictionary(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(4, title="Tight").replace(b"trailer\n<<", b"trailer<<")
    facts = facts_of(tmp_path, _broken_index(data))
    assert (facts.pages, facts.title) == (4, "Tight")


@pytest.mark.parametrize("at_size", [True, False], ids=["the-size", "zero"])
def test_a_prev_is_inside_the_file_from_0_to_before_its_size(tmp_path: Path, at_size: bool) -> None:
    data = pdfgen.pdf_bytes(3).replace(b"trailer\n<<", b"trailer\n<< /Prev XXXXXXXX", 1)
    prev = len(data) if at_size else 0
    facts = facts_of(tmp_path, data.replace(b"XXXXXXXX", b"%8d" % prev))
    assert facts.pages == 3
    outside = [w for w in facts.warnings if "points outside the file" in w]
    assert outside == (
        [
            f"cross-reference index unusable (/Prev {prev} points outside the file); facts "
            "recovered by scanning object headers"
        ]
        if at_size
        else []
    )


@pytest.mark.parametrize("past", [0, 10], ids=["at-the-size", "past-it"])
def test_an_xref_offset_outside_the_file_is_named(tmp_path: Path, past: int) -> None:
    data = pdfgen.pdf_bytes(3)
    entry = re.search(rb"(\d{10}) 00000 n", data)  # object 1, the catalog
    assert entry is not None
    at = len(data) + past
    data = data[: entry.start()] + b"%010d" % at + data[entry.start() + 10 :]
    facts = facts_of(tmp_path, data)
    assert facts.pages == 3
    assert facts.warnings == [
        f"cross-reference index unusable (xref offset {at} of object 1 is outside the file); "
        "facts recovered by scanning object headers"
    ]
