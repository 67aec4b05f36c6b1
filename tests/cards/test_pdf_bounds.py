"""Every hostile-input bound of the PDF probe counts what it claims to bound, on both sides of
its limit, with real PDFs built here. A bound that is removed or counts the wrong thing makes
its test fail by assertion: the loops these bounds stop would otherwise run to the limit of
memory, not to an exception."""

from __future__ import annotations

import io
import re
import zlib
from pathlib import Path

import pypdf
import pytest

from leanreplay.cards import PdfFacts, _pdf, _pdfdoc, _pdffile, _pdfstream, _pdfxref, pdf_facts
from leanreplay.cards._pdfobj import Broken
from leanreplay.cards._pdfstream import _png_decode
from tests import pdfgen
from tests.cards.conftest import require_predictor
from tests.pdfgen import ObjStm, assemble, three_pages


def facts_of(tmp_path: Path, data: bytes) -> PdfFacts:
    path = tmp_path / "hostile.pdf"
    path.write_bytes(data)
    return pdf_facts(path)


def warned(facts: PdfFacts, text: str) -> bool:
    return any(text in w for w in facts.warnings)


def test_the_assembler_writes_what_the_probe_and_pypdf_read(tmp_path: Path) -> None:
    tree = {2: three_pages()[2]}
    data = assemble(
        {k: v for k, v in three_pages().items() if k != 2},
        (ObjStm(6, tree, columns=5),),
        widths=(1, 8, 2),
    )
    facts = facts_of(tmp_path, data)
    assert (facts.pages, facts.warnings) == (3, [])
    assert len(pypdf.PdfReader(io.BytesIO(data)).pages) == 3


# /Prev: the chain of cross-reference sections.


def _prev_cycle_pdf(sections: int, back_to: int) -> tuple[bytes, list[int]]:
    """Sections s0..s(n-1), newest last; each points at the one before, and s0 at
    s(back_to). No section lists the catalog, so a lookup walks the whole chain."""
    out = bytearray(b"%PDF-1.4\n")
    out += b"1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n"
    out += b"2 0 obj <</Type/Pages/Kids[]/Count 0>> endobj\n"
    width = 10  # fixed-width offsets: each section's /Prev is known before it is written
    section = b"xref\n0 1\n0000000000 65535 f \ntrailer\n<</Size 3/Root 1 0 R/Prev %0*d>>\n"
    size = len(section % (width, 0))
    at = [len(out) + i * size for i in range(sections)]
    for i in range(sections):
        prev = at[back_to] if i == 0 else at[i - 1]
        out += section % (width, prev)
    out += b"startxref\n%d\n%%%%EOF\n" % at[-1]
    return bytes(out), at


@pytest.mark.parametrize(
    ("sections", "back_to"),
    [(1, 0), (2, 1), (3, 1), (3, 2), (40, 0)],
    ids=["self", "two-cycle", "cycle-after-a-tail", "three-cycle", "forty-cycle"],
)
def test_a_prev_cycle_stops_where_it_loops(tmp_path: Path, sections: int, back_to: int) -> None:
    data, at = _prev_cycle_pdf(sections, back_to)
    facts = facts_of(tmp_path, data)
    # Sections load newest first, down to s0, whose /Prev is s(back_to): loaded already.
    assert warned(facts, f"/Prev chain loops back to offset {at[back_to]}"), facts.warnings
    assert facts.pages == 0  # the recovery scan still finds the (empty) page tree


# Reference chains: an indirect object whose value is a reference to another.


def _ref_chain_pdf(links: int, *, self_loop: bool = False) -> bytes:
    """The trailer's /Root reaches the catalog through ``links`` objects that are each just a
    reference to the next (or, with ``self_loop``, one object that refers to itself)."""
    w = pdfgen.build_text_pdf(3)
    head = target = w._root  # type: ignore[attr-defined]
    for _ in range(links):
        head = w.add(b"%d 0 R" % head)
    if self_loop:
        head = w.reserve()
        w.set(head, b"%d 0 R" % head)
    out = io.BytesIO()
    w.write(out, root=head)
    assert target != head
    return out.getvalue()


def test_a_reference_chain_within_the_limit_is_followed(tmp_path: Path) -> None:
    # The trailer's /Root and each link are references: MAX_REF_CHAIN of them are followed.
    facts = facts_of(tmp_path, _ref_chain_pdf(_pdffile.MAX_REF_CHAIN - 1))
    assert (facts.pages, facts.warnings) == (3, [])


@pytest.mark.parametrize("self_loop", [False, True], ids=["one-link-too-many", "self-reference"])
def test_a_reference_chain_past_the_limit_is_refused(tmp_path: Path, self_loop: bool) -> None:
    links = 0 if self_loop else _pdffile.MAX_REF_CHAIN
    facts = facts_of(tmp_path, _ref_chain_pdf(links, self_loop=self_loop))
    assert warned(facts, f"reference chain longer than {_pdffile.MAX_REF_CHAIN}"), facts.warnings
    assert facts.pages == 3  # counted from the /Type /Page objects the scan found


# One indirect object's text, at the top level and inside an object stream.


def _big_object_pdf(size: int, *, packed: str) -> bytes:
    """The page tree carries a ``size``-byte string. Packed "first", it comes first in its
    object stream and the catalog after it: reading the catalog inflates the whole stream, so
    the tree's bytes are all there when it is parsed, and only the bound can refuse them.
    Packed "last", no next member says where it ends: it is parsed in growing windows."""
    objects = three_pages(o2=b"<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 /Pad (%s) >>")
    objects[2] = objects[2] % (b"x" * size)
    if not packed:
        return assemble(objects)
    plain = {k: v for k, v in objects.items() if k > 2}
    order = (2, 1) if packed == "first" else (1, 2)
    members = {k: objects[k] for k in order}
    return assemble(plain, (ObjStm(6, members),))


PACKED = pytest.mark.parametrize(
    "packed", ["", "first", "last"], ids=["plain", "in-object-stream", "last-in-object-stream"]
)


@PACKED
def test_an_object_at_the_size_limit_is_read(tmp_path: Path, packed: str) -> None:
    facts = facts_of(tmp_path, _big_object_pdf(_pdffile.MAX_OBJECT_BYTES - 100, packed=packed))
    assert (facts.pages, facts.warnings) == (3, [])


@PACKED
def test_an_object_past_the_size_limit_is_refused(tmp_path: Path, packed: str) -> None:
    facts = facts_of(tmp_path, _big_object_pdf(_pdffile.MAX_OBJECT_BYTES, packed=packed))
    assert warned(facts, f"larger than {_pdffile.MAX_OBJECT_BYTES} bytes"), facts.warnings
    assert facts.pages == 3  # the pages themselves are plain objects the scan finds


# Object streams opened to open another: an object stream's /Length inside an object stream.


def _nested_streams_pdf(depth: int, *, cycle_to: int | None = None) -> bytes:
    """The page tree sits in object stream S1, whose /Length is an object in S2, whose /Length
    is in S3, ... down to S(depth), whose /Length is a plain number. With ``cycle_to``, the
    last stream's /Length is instead an object in S(cycle_to): a loop."""
    base = 100
    streams: list[ObjStm] = []
    members: dict[int, bytes] = {2: three_pages()[2]}
    for i in range(1, depth + 1):
        length_obj = base + i  # where S(i)'s /Length lives (in S(i+1))
        last = i == depth
        length = None if last and cycle_to is None else b"%d 0 R" % length_obj
        stm = ObjStm(base * 2 + i, members, length=length)
        streams.append(stm)
        members = {length_obj: b"%d" % len(stm.data())}
    if cycle_to is not None:
        # The loop's length object lives in S(cycle_to); its value cannot be right anyway.
        streams[cycle_to - 1].members[base + depth] = b"0"
    plain = {k: v for k, v in three_pages().items() if k != 2}
    return assemble(plain, tuple(streams))


def test_object_streams_nested_to_the_limit_are_read(tmp_path: Path) -> None:
    facts = facts_of(tmp_path, _nested_streams_pdf(_pdffile.MAX_OBJECT_STREAM_DEPTH))
    assert (facts.pages, facts.warnings) == (3, [])


def test_object_streams_nested_past_the_limit_are_refused(tmp_path: Path) -> None:
    facts = facts_of(tmp_path, _nested_streams_pdf(_pdffile.MAX_OBJECT_STREAM_DEPTH + 1))
    limit = _pdffile.MAX_OBJECT_STREAM_DEPTH
    assert warned(facts, f"object streams nested deeper than {limit} (201 -> 202"), facts.warnings
    assert facts.pages == 3  # pages are plain objects: the scan counts them


@pytest.mark.parametrize(("depth", "cycle_to"), [(1, 1), (3, 2)], ids=["self", "two-back"])
def test_object_streams_that_need_themselves_are_refused(
    tmp_path: Path, depth: int, cycle_to: int
) -> None:
    facts = facts_of(tmp_path, _nested_streams_pdf(depth, cycle_to=cycle_to))
    assert warned(facts, f"object stream {200 + cycle_to} is needed to open itself"), facts.warnings
    assert facts.pages == 3


# PNG predictors: rows other than Up are decoded byte by byte, so their bytes are bounded.


def _predicted_xref_pdf(
    filters: list[int] | None = None, *, rows: int = 0, odd: dict[int, int] | None = None
) -> bytes:
    """Three pages behind an xref stream with PNG predictor rows of the given types (``odd``
    then overwrites the type byte of those rows, with types PNG does not know, say); or, with
    ``rows``, a hostile stream of that many Paeth rows and the catalog listed in the last."""
    objects = three_pages()
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    where = {}
    for num, body in objects.items():
        where[num] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (num, body))
    start = out.tell()
    if rows:
        data = zlib.compress((b"\x04" + b"\x00" * 7) * rows, 9)
        size, root = rows, rows - 1
    else:
        table = [bytes([0]) + bytes(4) + b"\xff\xff"]
        table += [bytes([1]) + where[n].to_bytes(4, "big") + bytes(2) for n in range(1, 6)]
        table += [bytes([1]) + start.to_bytes(4, "big") + bytes(2)]
        assert filters is not None
        encoded = bytearray(pdfgen.png_encode(table, filters))
        for row, kind in (odd or {}).items():
            encoded[row * 8] = kind
        data = zlib.compress(bytes(encoded))
        size, root = len(table), 1
    out.write(
        b"6 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root %d 0 R /Filter /FlateDecode "
        b"/DecodeParms << /Predictor 12 /Columns 7 >> /Length %d >>\nstream\n"
        % (size, root, len(data))
        + data
        + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % start
    )
    return out.getvalue()


@pytest.mark.parametrize(
    "filters",
    [[4] * 7, [0, 4, 4, 0, 4, 2, 4], [2, 2, 4, 2, 2, 0, 2]],
    ids=["all-paeth", "none-rows-between", "paeth-under-up"],
)
def test_xref_rows_under_other_predictors_decode_exactly(
    tmp_path: Path, filters: list[int], row_decoder: str
) -> None:
    facts = facts_of(tmp_path, _predicted_xref_pdf(filters))
    assert (facts.pages, facts.warnings) == (3, [])


@pytest.mark.parametrize(
    ("alone", "last"), [(0, 4), (1, 4), (2, 2)], ids=["after-none-rows", "after-sub-rows", "all-up"]
)
def test_paeth_rows_decode_from_the_last_row_that_stands_alone(
    tmp_path: Path, alone: int, last: int, row_decoder: str
) -> None:
    # (Rows that are all Up are never decoded one by one: their columns are summed.)
    # The catalog is object 40000: its Paeth row follows 40000 None (or Sub) rows, which do
    # not build on the row above. Decoding from the first row would pass the predictor bound;
    # from the last of those it is two rows.
    far = 40_000
    assert far * 7 > _pdffile.MAX_PREDICTOR_BYTES
    objects = three_pages()
    objects[far] = objects.pop(1)
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    where = {}
    for num, body in objects.items():
        where[num] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (num, body))
    where[far + 1] = out.tell()
    table = []
    for num in range(far + 2):
        at = where.get(num)
        table.append(bytes([1]) + at.to_bytes(4, "big") + bytes(2) if at else bytes(7))
    filters = [alone] * far + [last, last]
    data = zlib.compress(pdfgen.png_encode(table, filters))
    out.write(
        b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root %d 0 R /Filter /FlateDecode "
        b"/DecodeParms << /Predictor 12 /Columns 7 >> /Length %d >>\nstream\n"
        % (far + 1, far + 2, far, len(data))
        + data
        + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % where[far + 1]
    )
    facts = facts_of(tmp_path, out.getvalue())
    assert (facts.pages, facts.warnings) == (3, [])


def test_millions_of_paeth_rows_are_not_decoded_by_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 4 Mi rows of 7 bytes in a 50 KB file: decoding them one byte at a time took 18 s.
    monkeypatch.setattr(_pdfxref, "_predictor", None)
    rows = _pdffile.MAX_STREAM_BYTES // 8
    facts = facts_of(tmp_path, _predicted_xref_pdf(rows=rows))
    assert warned(facts, f"more than the probe decodes ({_pdffile.MAX_PREDICTOR_BYTES})"), (
        facts.warnings
    )
    assert facts.pages == 3  # the recovery scan finds the pages


def test_millions_of_paeth_rows_are_decoded_by_c(tmp_path: Path) -> None:
    # C undoes all 4 Mi rows (the stream's bound, not Python's byte bound, applies): they are
    # zeros, so the catalog's entry is a free object and the recovery scan finds the pages.
    require_predictor()
    rows = _pdffile.MAX_STREAM_BYTES // 8
    facts = facts_of(tmp_path, _predicted_xref_pdf(rows=rows))
    assert warned(facts, "the trailer's /Root is not a dictionary"), facts.warnings
    assert not warned(facts, "more than the probe decodes"), facts.warnings
    assert facts.pages == 3


def test_png_decode_counts_the_bytes_it_decodes() -> None:
    limit = _pdffile.MAX_PREDICTOR_BYTES
    columns = 8
    rows = limit // columns
    data = (b"\x04" + bytes(range(columns))) * (rows + 1)
    assert len(_png_decode(data, columns, rows)) == limit
    with pytest.raises(Broken, match=f"rows hold {limit + columns} bytes, more than"):
        _png_decode(data, columns, rows + 1)


@pytest.mark.parametrize(("columns", "ok"), [(4096, True), (4097, False)], ids=str)
def test_object_stream_predictor_columns_are_bounded(
    tmp_path: Path, columns: int, ok: bool
) -> None:
    tree = {2: three_pages()[2]}
    plain = {k: v for k, v in three_pages().items() if k != 2}
    facts = facts_of(tmp_path, assemble(plain, (ObjStm(6, tree, columns=columns),)))
    if ok:
        assert (facts.pages, facts.warnings) == (3, [])
    else:
        assert warned(facts, "invalid /Columns"), facts.warnings
        assert facts.pages == 3


# Cross-reference stream field widths.


@pytest.mark.parametrize(("width", "ok"), [(8, True), (9, False)], ids=str)
def test_xref_stream_field_widths_are_bounded(tmp_path: Path, width: int, ok: bool) -> None:
    facts = facts_of(tmp_path, assemble(three_pages(), widths=(1, width, 2)))
    if ok:
        assert (facts.pages, facts.warnings) == (3, [])
    else:
        assert warned(facts, "has an invalid /W [1, 9, 2]"), facts.warnings
        assert facts.pages == 3


# Where startxref is looked for.


@pytest.mark.parametrize(("pad", "found"), [(60_000, True), (70_000, False)], ids=str)
def test_startxref_is_looked_for_in_the_last_64_kib(tmp_path: Path, pad: int, found: bool) -> None:
    data = pdfgen.pdf_bytes(3) + b"%" + b"p" * pad + b"\n"
    facts = facts_of(tmp_path, data)
    assert facts.pages == 3
    if found:
        assert facts.warnings == []
    else:
        assert warned(facts, f"no startxref in the last {_pdffile.MAX_TAIL_BYTES} bytes")


# /Count without a /Size to compare it with: MAX_PAGES is the only limit.


def _count_without_size(count: int) -> bytes:
    data = pdfgen.pdf_bytes(3, count=b"%d" % count)
    return data[: data.index(b"xref\n")]  # no table, no trailer: recovery finds the catalog


@pytest.mark.parametrize(
    ("count", "pages"), [(_pdffile.MAX_PAGES, _pdffile.MAX_PAGES), (_pdffile.MAX_PAGES + 1, 3)]
)
def test_a_count_without_size_is_trusted_up_to_max_pages(
    tmp_path: Path, count: int, pages: int
) -> None:
    facts = facts_of(tmp_path, _count_without_size(count))
    assert facts.pages == pages
    implausible = any("is implausible" in w for w in facts.warnings)
    assert implausible == (pages == 3), facts.warnings


def test_a_count_is_never_trusted_past_max_pages(tmp_path: Path) -> None:
    # The trailer claims more objects than MAX_PAGES: MAX_PAGES is still the limit.
    data = pdfgen.pdf_bytes(3, count=b"%d" % (_pdffile.MAX_PAGES + 1))
    at = data.rindex(b"/Size ")
    data = data[:at] + re.sub(rb"/Size \d+", b"/Size 99999999", data[at:], count=1)
    facts = facts_of(tmp_path, data)
    assert facts.pages == 3
    assert warned(facts, f"is implausible (limit {_pdffile.MAX_PAGES})"), facts.warnings


# Bounds too large to reach in a fast test, made test-sized: what each counts is the same.


def _tree_pdf(pages: int, fanout: int) -> bytes:
    # No /Count, so the probe walks: 1 root + ceil(pages / fanout) inner nodes + the pages.
    return pdfgen.pdf_bytes(pages, fanout=fanout).replace(b"/Count %d " % pages, b"")


@pytest.mark.parametrize(("limit", "walked"), [(16, True), (15, False)], ids=str)
def test_the_page_tree_walk_counts_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, walked: bool
) -> None:
    monkeypatch.setattr(_pdf, "MAX_TREE_NODES", limit)
    data = pdfgen.pdf_bytes(12, fanout=4)
    root_count = b"/Count 12 >>"
    assert data.count(root_count) == 1
    facts = facts_of(tmp_path, data.replace(root_count, b">>"))  # 1 + 3 + 12 = 16 nodes
    assert facts.pages == 12
    if walked:
        assert warned(facts, "counted 12 pages by walking the tree"), facts.warnings
    else:
        assert warned(facts, f"page tree has more than {limit} nodes"), facts.warnings


def test_recovery_opens_at_most_max_object_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 150 pages packed 100 objects to a stream; the index is gone and the root has no
    # /Count, so recovery must open the object streams to walk the tree.
    data = pdfgen.pdf_bytes(150, xref="stream", objstm=True, count=b"null")
    data = data[: data.rindex(b"startxref")] + b"startxref\n9\n%%EOF\n"
    assert facts_of(tmp_path, data).pages == 150
    monkeypatch.setattr(_pdfdoc, "MAX_OBJECT_STREAMS", 1)
    # The first stream packs the catalog, the tree, the font and 97 pages; the second stream,
    # with the other 53, stays unopened.
    assert facts_of(tmp_path, data).pages == 97


@pytest.mark.parametrize(("gap", "found"), [(60_000, True), (70_000, False)], ids=str)
def test_endstream_is_looked_for_within_max_stream_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gap: int, found: bool
) -> None:
    # The xref stream has no /Length: its end is where "endstream" is, if that is near enough.
    monkeypatch.setattr(_pdfstream, "MAX_STREAM_BYTES", 64 * 1024)
    data = assemble(three_pages())
    assert data.count(b"/Length ") == 1
    data = re.sub(rb"/Length \d+ ", b"", data)
    head, sep, tail = data.rpartition(b"\nendstream")
    data = head + b"\n" + b" " * gap + sep + tail  # blanks after the rows change none of them
    facts = facts_of(tmp_path, data)
    assert facts.pages == 3
    if found:
        assert facts.warnings == []
    else:
        assert warned(facts, "has no endstream within the limit"), facts.warnings


def test_recovery_scans_at_most_max_recovery_scan_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The objects sit in the middle of 3 MiB, the index points nowhere.
    data = pdfgen.pdf_bytes(3)
    data = data[: data.rindex(b"startxref")] + b"startxref\n9\n%%EOF\n"
    pad = b"%" + b"p" * (1536 * 1024) + b"\n"
    data = data[:9] + pad + data[9:] + pad
    assert facts_of(tmp_path, data).pages == 3
    monkeypatch.setattr(_pdfdoc, "MAX_RECOVERY_SCAN_BYTES", 2 * 1024 * 1024)
    facts = facts_of(tmp_path, data)
    assert facts.pages is None
    assert warned(facts, "recovery failed: no objects found in the file"), facts.warnings


@pytest.mark.parametrize("trailer_at", ["end", "start"])
def test_recovery_of_a_big_file_scans_its_first_and_last_half_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trailer_at: str
) -> None:
    # The objects in the first MiB, the trailer (with the title) in the last or the first,
    # 3 MiB of comment after the objects; the index points nowhere.
    data = pdfgen.pdf_bytes(3, title="Both ends")
    data = data[: data.rindex(b"startxref")] + b"startxref\n9\n%%EOF\n"
    at = data.index(b"xref\n") if trailer_at == "end" else len(data)
    data = data[:at] + b"%" + b"p" * (3 * 1024 * 1024) + b"\n" + data[at:]
    monkeypatch.setattr(_pdfdoc, "MAX_RECOVERY_SCAN_BYTES", 2 * 1024 * 1024)
    facts = facts_of(tmp_path, data)
    assert (facts.pages, facts.title) == (3, "Both ends")
    note = (
        f"recovery scanned the first and last 1 MiB only (file is {len(data)} bytes, "
        "scan limit 2097152)"
    )
    assert note in facts.warnings, facts.warnings
