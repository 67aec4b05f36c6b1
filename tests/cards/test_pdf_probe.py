"""The lazy page probe on generated PDFs: every xref style, and hostile files that must still
get a card within bounded time, with exact facts or an honest warning."""

from __future__ import annotations

import io
import os
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.cards import _pdffile, card_for, pdf_facts
from tests import pdfgen


def write(tmp_path: Path, data: bytes, name: str = "f.pdf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"xref": "stream"},
        {"xref": "stream", "objstm": True},
        {"fanout": 7},
        {"compress": True},
        {"version": "2.0"},
    ],
    ids=["table", "xref-stream", "object-streams", "nested-tree", "compressed", "pdf-2.0"],
)
def test_page_count_for_each_xref_style(tmp_path: Path, options: dict[str, object]) -> None:
    path = write(tmp_path, pdfgen.pdf_bytes(57, title="T", **options))
    facts = pdf_facts(path)
    assert facts.pages == 57
    assert facts.title == "T"
    assert facts.version == options.get("version", "1.7")
    assert facts.warnings == []


def test_incremental_update_that_adds_pages_counts_the_newest_tree(tmp_path: Path) -> None:
    facts = pdf_facts(write(tmp_path, pdfgen.incremental_add_pages(5, 4)))
    assert facts.pages == 9
    assert facts.warnings == []


def test_xref_stream_rows_decode_after_many_objects(tmp_path: Path) -> None:
    # The catalog found after thousands of PNG-Up rows exercises the column-sum decoder.
    data = pdfgen.pdf_bytes(1500, xref="stream", objstm=True)
    assert pdf_facts(write(tmp_path, data)).pages == 1500


def test_title_in_utf16_with_bom(tmp_path: Path) -> None:
    w = pdfgen.build_text_pdf(2)
    title = "گزارش 📄".encode("utf-16-be")
    info = w.add(b"<< /Title <feff" + title.hex().encode() + b"> >>")
    data = _serialize(w, info=info)
    assert pdf_facts(write(tmp_path, data)).title == "گزارش 📄"


def _serialize(w: pdfgen.PdfWriter, *, info: int | None = None, **kw: object) -> bytes:
    import io

    out = io.BytesIO()
    w.write(out, root=w._root, info=info, **kw)  # type: ignore[attr-defined, arg-type]
    return out.getvalue()


def _truncated() -> bytes:
    data = pdfgen.pdf_bytes(6)
    return data[: int(len(data) * 0.6)]


def _wrong_startxref() -> bytes:
    data = pdfgen.pdf_bytes(6)
    at = data.rindex(b"startxref")
    return data[:at] + b"startxref\n123\n%%EOF\n"


def _startxref_past_end() -> bytes:
    data = pdfgen.pdf_bytes(6)
    at = data.rindex(b"startxref")
    return data[:at] + b"startxref\n99999999\n%%EOF\n"


def _prev_loop_needs_lookup() -> bytes:
    # Same loop, but the catalog lives only in the base section, so lookups must follow /Prev.
    data = pdfgen.pdf_bytes(6)
    table_at = len(data) + 20
    body = data + b"%" + b"-" * 18 + b"\n"
    assert len(body) == table_at
    body += b"xref\n0 1\n0000000000 65535 f \n"
    body += b"trailer\n<< /Size 20 /Root 1 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n" % (
        table_at,
        table_at,
    )
    return body


def _with_count(count: bytes) -> Callable[[], bytes]:
    return lambda: pdfgen.pdf_bytes(6, count=count)


def _missing_count() -> bytes:
    data = pdfgen.pdf_bytes(6)
    return data.replace(b"/Count 6", b"        ")


def _wrong_offsets() -> bytes:
    data = pdfgen.pdf_bytes(6)
    at = data.index(b"xref\n")
    return data[:at] + data[at:].replace(b"0000000015 00000 n", b"0000000099 00000 n", 1)


def _kids_cycle() -> bytes:
    # /Count missing and the page tree points back at itself.
    w = pdfgen.build_text_pdf(3)
    tree = w.objects[1].split(b"/Pages ")[1].split(b" ")[0]
    body = w.objects[int(tree)]
    w.objects[int(tree)] = body.replace(b"/Count 3", b"").replace(
        b"/Kids [", b"/Kids [%s 0 R " % tree
    )
    return _serialize(w)


def _deep_nesting() -> bytes:
    data = pdfgen.pdf_bytes(3)
    return data.replace(b"/Type /Catalog", b"/Type /Catalog /X " + b"[" * 5000 + b"]" * 5000, 1)


def _inflate_bomb() -> bytes:
    # An xref stream whose data inflates to far more than the probe's limit.
    bomb = zlib.compress(b"\x00" * (40 * 1024 * 1024), 9)
    body = b"%PDF-1.7\n"
    at = len(body)
    body += (
        b"1 0 obj\n<< /Type /XRef /Size 6000000 /W [1 4 2] /Root 5900000 0 R /Filter /FlateDecode "
        b"/Length %d >>\nstream\n" % len(bomb) + bomb + b"\nendstream\nendobj\n"
    )
    body += b"startxref\n%d\n%%%%EOF\n" % at
    return body


def _garbage() -> bytes:
    return b"%PDF-1.4\n" + bytes(range(256)) * 40


def _header_only() -> bytes:
    return b"%PDF-1.7\n"


ADVERSARIAL: dict[str, tuple[Callable[[], bytes], int | None, str]] = {
    # name: (builder, expected pages, substring of a warning; "" means no warning)
    "truncated": (_truncated, 6, "recovered by scanning"),
    "wrong-startxref": (_wrong_startxref, 6, "recovered by scanning"),
    "startxref-past-end": (_startxref_past_end, 6, "outside the file"),
    "prev-loop": (_prev_loop_needs_lookup, 6, "loops back"),
    "count-negative": (_with_count(b"-1"), 6, "/Count -1 is implausible"),
    "count-huge": (_with_count(b"1000000000000"), 6, "/Count 1000000000000 is implausible"),
    "count-not-a-number": (_with_count(b"(six)"), 6, "implausible"),
    "count-missing": (_missing_count, 6, "/Count missing"),
    "wrong-offsets": (_wrong_offsets, 6, "recovered by scanning"),
    "kids-cycle": (_kids_cycle, 3, "counted 3 pages"),
    "deep-nesting": (_deep_nesting, 3, "nested deeper than 64"),  # pages found by scanning
    "inflate-bomb": (_inflate_bomb, None, "inflates past"),
    "garbage": (_garbage, None, "page count unavailable"),
    "header-only": (_header_only, None, "page count unavailable"),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL), ids=str)
def test_hostile_pdf_gets_a_card_in_bounded_time(tmp_path: Path, name: str) -> None:
    build, pages, warning = ADVERSARIAL[name]
    path = write(tmp_path, build())
    started = time.perf_counter()
    card = card_for(path)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"{name}: {elapsed:.2f}s"
    assert card.kind == "pdf"
    assert card.facts["pages"] == pages
    if warning:
        assert any(warning in w for w in card.warnings), card.warnings
    else:
        assert card.warnings == ()
    assert "\n" not in card.render()


def test_page_tree_inside_object_stream_is_read_lazily(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(40, xref="stream", objstm=True)
    assert b"/Type /Pages" not in data  # really packed and compressed
    assert pdf_facts(write(tmp_path, data)).pages == 40


def test_padded_pdf_probe_does_not_read_the_padding(tmp_path: Path) -> None:
    # 300 pages padded to ~30 MB: the probe must not touch page contents.
    path = tmp_path / "padded.pdf"
    pdfgen.write_pdf(str(path), 300, pad=100_000)
    assert path.stat().st_size > 30_000_000
    started = time.perf_counter()
    assert pdf_facts(path).pages == 300
    assert time.perf_counter() - started < 0.5


_TOKENS = [b"0", b"12", b"345", b"9876543210", b" ", b"\n", b"\x00", b"obj", b"objx", b"trailer"]
_TOKENS += [b"<<", b"/Type", b"/XRef", b"/ObjStm", b"x", b"%"]


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.sampled_from(_TOKENS), max_size=120),
    chunk=st.integers(1, 64),
    bounds=st.tuples(st.integers(0, 400), st.integers(0, 400)),
)
def test_the_recovery_scan_reads_in_chunks_and_finds_what_a_whole_read_finds(
    tmp_path_factory: pytest.TempPathFactory,
    parts: list[bytes],
    chunk: int,
    bounds: tuple[int, int],
) -> None:
    # The scan reads with pread, never a memory map (a file truncated under a map is SIGBUS).
    data = b"".join(parts)
    start, stop = sorted(min(b, len(data)) for b in bounds)
    path = tmp_path_factory.mktemp("scan") / "f.pdf"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for pattern in (_pdffile._SCAN_OBJ, _pdffile._SCAN_TRAILER, _pdffile._SCAN_TYPE):
            whole = [(m.start(), m.group(0)) for m in pattern.finditer(data, start, stop)]
            chunked = [
                (at, m.group(0))
                for at, m in _pdffile.scan(fd, pattern, start, stop, chunk=chunk, overlap=48)
            ]
            assert chunked == whole
    finally:
        os.close(fd)


def _chained_xref_pdf(sections: int, *, self_loop: bool = False) -> bytes:
    """A PDF whose objects no xref section lists, behind a /Prev chain of ``sections``."""
    out = bytearray(b"%PDF-1.4\n")
    out += b"1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n"
    out += b"2 0 obj <</Type/Pages/Kids[]/Count 0>> endobj\n"
    prev: int | None = None
    for _ in range(sections):
        at = len(out)
        link = at if self_loop else prev
        out += b"xref\n0 1\n0000000000 65535 f \ntrailer\n<</Size 3/Root 1 0 R"
        out += b"" if link is None else b"/Prev %d" % link
        out += b">>\n"
        prev = at
    out += b"startxref\n%d\n%%%%EOF\n" % prev
    return bytes(out)


@pytest.mark.parametrize(
    ("sections", "self_loop", "warning"),
    [
        (_pdffile.MAX_XREF_SECTIONS + 1, False, "longer than 1000 sections"),
        (1, True, "loops back"),
    ],
    ids=["chain-over-the-limit", "self-loop"],
)
def test_prev_chain_bound_counts_sections(
    tmp_path: Path, sections: int, self_loop: bool, warning: str
) -> None:
    path = tmp_path / "chain.pdf"
    path.write_bytes(_chained_xref_pdf(sections, self_loop=self_loop))
    facts = pdf_facts(path)
    assert any(warning in w for w in facts.warnings), facts.warnings


def test_prev_chain_at_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "chain.pdf"
    path.write_bytes(_chained_xref_pdf(_pdffile.MAX_XREF_SECTIONS))
    facts = pdf_facts(path)
    assert not any("sections" in w for w in facts.warnings), facts.warnings


def test_junk_before_the_header_still_gives_the_facts(tmp_path: Path) -> None:
    """Bytes before ``%PDF-`` (a mail header, a BOM): readers find the header in the first
    1024 bytes, and the offsets, now off by the junk, are recovered by scanning."""
    data = pdfgen.pdf_bytes(3, title="T", version="1.6")
    facts = pdf_facts(write(tmp_path, b"X-Junk: mail header\r\n" * 20 + data))
    assert (facts.pages, facts.version, facts.title) == (3, "1.6", "T")
    assert not any("no %PDF- header" in w for w in facts.warnings)
    late = pdf_facts(write(tmp_path, b"\0" * 1030 + data, "late.pdf"))
    assert late.version is None
    assert "no %PDF- header in the first 1024 bytes" in late.warnings


def test_startxref_at_an_object_that_is_not_an_xref_stream(tmp_path: Path) -> None:
    data = pdfgen.pdf_bytes(3)
    catalog = data.index(b"1 0 obj")
    body = data[: data.rindex(b"startxref")] + b"startxref\n%d\n%%%%EOF\n" % catalog
    facts = pdf_facts(write(tmp_path, body))
    assert facts.pages == 3
    (unusable,) = [w for w in facts.warnings if w.startswith("cross-reference index unusable")]
    assert "facts recovered by scanning object headers" in unusable


def test_a_last_startxref_without_an_offset_leaves_the_one_before_it(tmp_path: Path) -> None:
    # The probe takes the last "startxref" at once; one with no number after it (a stray
    # keyword in a trailing comment) sends it back to the last one that has one.
    data = pdfgen.pdf_bytes(3) + b"% startxref\n"
    facts = pdf_facts(write(tmp_path, data))
    assert (facts.pages, facts.warnings) == (3, [])


@pytest.mark.parametrize(
    ("header", "entry", "version"),
    [
        ("1.4", b"/Version /1.7", "1.7"),  # the catalog raises the version
        ("1.7", b"/Version /1.4", "1.7"),  # but never lowers it
        ("1.4", b"/Version (1.7)", "1.4"),  # a string is not a version name
        ("1.4", b"/Version /17", "1.4"),  # nor a name that is not N.N
        ("1.4", b"/Version /2.0", "2.0"),
    ],
    ids=["raises", "never-lowers", "string", "malformed", "pdf-2.0"],
)
def test_the_catalog_version_overrides_a_lower_header(
    tmp_path: Path, header: str, entry: bytes, version: str
) -> None:
    w = pdfgen.build_text_pdf(2, version=header)
    root = w._root  # type: ignore[attr-defined]
    w.objects[root] = w.objects[root].replace(b"/Type /Catalog", b"/Type /Catalog " + entry)
    out = io.BytesIO()
    w.write(out, root=root)
    facts = pdf_facts(write(tmp_path, out.getvalue()))
    assert (facts.pages, facts.version, facts.warnings) == (2, version, [])
