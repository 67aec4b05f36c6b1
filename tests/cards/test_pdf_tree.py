"""The page-tree walk the probe falls back on when /Count cannot be trusted: what it counts as
a page, what it never counts twice, and what it never descends into."""

from __future__ import annotations

import io
from pathlib import Path

import pypdf
import pytest

from leanreplay.cards import pdf_facts
from tests import pdfgen
from tests.pdfgen import PAGE


def _tree_pdf(kids: bytes, objects: dict[int, bytes]) -> bytes:
    """Catalog 1, a root node 2 with ``kids`` and no /Count (so the probe walks), and
    ``objects`` numbered from 3."""
    w = pdfgen.PdfWriter()
    w.set(1, b"<< /Type /Catalog /Pages 2 0 R >>")
    w.set(2, b"<< /Type /Pages /Kids [%s] >>" % kids)
    for num, body in objects.items():
        w.set(num, body)
    out = io.BytesIO()
    w.write(out, root=1)
    return out.getvalue()


@pytest.mark.parametrize(
    ("kids", "objects", "pages"),
    [
        # A kid listed twice is one page, and the kids after it still count.
        (b"3 0 R 3 0 R 4 0 R 5 0 R", {3: PAGE, 4: PAGE, 5: PAGE}, 3),
        # A page without /Type (older writers) is a leaf: no /Kids.
        (b"3 0 R 4 0 R", {3: PAGE, 4: b"<< /Parent 2 0 R /MediaBox [0 0 9 9] >>"}, 2),
        # A page that carries a /Kids array is still one page: its "kids" are not pages.
        (b"3 0 R 4 0 R", {3: PAGE, 4: PAGE[:-2] + b"/Kids [5 0 R 6 0 R] >>", 5: PAGE, 6: PAGE}, 2),
        # An intermediate node with an empty /Kids holds no page.
        (b"3 0 R 4 0 R", {3: PAGE, 4: b"<< /Type /Pages /Parent 2 0 R /Kids [] >>"}, 1),
        # Kids that are not dictionaries (a number, a missing object) are skipped.
        (b"7 9 0 R 3 0 R (x)", {3: PAGE}, 1),
    ],
    ids=["shared-kid", "page-without-type", "page-with-kids", "empty-node", "junk-kids"],
)
def test_the_walk_counts_each_page_once(
    tmp_path: Path, kids: bytes, objects: dict[int, bytes], pages: int
) -> None:
    path = tmp_path / "tree.pdf"
    path.write_bytes(_tree_pdf(kids, objects))
    facts = pdf_facts(path)
    assert facts.pages == pages
    assert facts.warnings == [
        f"page tree /Count missing; counted {pages} pages by walking the tree"
    ]


def test_the_walk_agrees_with_pypdf_on_a_deep_tree(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(40, fanout=3).replace(b"/Count 40 ", b"")
    path = tmp_path / "deep.pdf"
    path.write_bytes(data)
    assert pdf_facts(path).pages == 40 == len(pypdf.PdfReader(path).pages)


def _with_size(pages: int, count: bytes, size: bytes) -> bytes:
    data = pdfgen.pdf_bytes(pages, count=count)
    at = data.rindex(b"/Size ")
    end = data.index(b" ", at + 6)
    return data[:at] + b"/Size " + size + data[end:]


@pytest.mark.parametrize(
    ("count", "size", "warning"),
    [
        (b"6", b"0", None),  # a /Size of 0 says nothing: MAX_PAGES is the limit
        (b"6", b"1", "page tree /Count 6 is implausible (limit 1)"),
        (b"100", b"40", "page tree /Count 100 is implausible (limit 40)"),
        (b"true", b"40", "page tree /Count True is implausible (limit 40)"),
        (b"-6", b"40", "page tree /Count -6 is implausible (limit 40)"),
    ],
    ids=["size-zero", "size-one", "count-over-size", "count-bool", "count-negative"],
)
def test_count_is_trusted_up_to_the_object_count(
    tmp_path: Path, count: bytes, size: bytes, warning: str | None
) -> None:
    path = tmp_path / "count.pdf"
    path.write_bytes(_with_size(6, count, size))
    facts = pdf_facts(path)
    assert facts.pages == 6
    expected = [] if warning is None else [f"{warning}; counted 6 pages by walking the tree"]
    assert facts.warnings == expected


def test_a_catalog_without_a_page_tree_is_counted_by_its_page_objects(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(4).replace(b"/Pages 2 0 R", b"/Pagez 2 0 R")
    path = tmp_path / "nopages.pdf"
    path.write_bytes(data)
    facts = pdf_facts(path)
    assert facts.pages == 4
    assert facts.warnings[0] == (
        "page tree unreadable (the catalog has no /Pages dictionary); counted the 4 /Type /Page "
        "objects found by scanning"
    )


def test_a_count_of_zero_is_trusted(tmp_path: Path) -> None:
    # A document of no pages says /Count 0: that is the count, not a reason to walk the tree.
    old = b"/Kids [5 0 R] /Count 1"
    data = pdfgen.pdf_bytes(1).replace(old, b"/Kids [] /Count 0".ljust(len(old)))  # offsets kept
    assert b"/Count 0" in data
    path = tmp_path / "empty.pdf"
    path.write_bytes(data)
    facts = pdf_facts(path)
    assert (facts.pages, facts.warnings) == (0, [])
