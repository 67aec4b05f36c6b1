"""Hostile documents (round 3 of the red team): one huge paragraph is cut as it streams and the
answer says so; a part lying about its compressed size is bounded by what was read; one
doc_search call indexes for a bounded time and the next continues."""

from __future__ import annotations

import io
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from leanreplay.index import InvalidArgumentError, Workspace, WrongFileTypeError
from leanreplay.index.search import _pdfindex
from leanreplay.index.tools import _docs
from leanreplay.index.tools._docs import MAX_PART_CHARS, PART_CUT_NOTE
from tests import officegen
from tests.filetools import raw_zip, root

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
MIB = 1024 * 1024


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "root").mkdir()
    return Workspace(tmp_path / "home", [tmp_path / "root"])


def _document(body: str) -> list[tuple[str, bytes]]:
    """The parts of a docx whose body is ``body`` (raw XML)."""
    with_body = officegen.docx([("p", "x")])

    parts = []
    with zipfile.ZipFile(io.BytesIO(with_body)) as z:
        for name in z.namelist():
            data = z.read(name)
            if name == "word/document.xml":
                data = (f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>').encode()
            parts.append((name, data))
    return parts


def test_one_huge_docx_paragraph_is_cut_as_it_streams(ws: Workspace) -> None:
    # 200,000 runs in one paragraph (2.2M chars): read run by run, dropped once read.
    runs = "<w:r><w:t>abcdefghij </w:t></w:r>" * 200_000
    body = f"<w:p>{runs}</w:p><w:p><w:r><w:t>after</w:t></w:r></w:p>"
    (root(ws) / "huge.docx").write_bytes(raw_zip(_document(body)))
    tracemalloc.start()
    try:
        result = ws.doc_read("huge.docx", part="1-2")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    first, second = result["parts"]
    assert first["text"].endswith(PART_CUT_NOTE)
    assert len(first["text"]) <= MAX_PART_CHARS + len(PART_CUT_NOTE)
    assert first["text"].startswith("abcdefghij abcdefghij")
    assert second == {"part": 2, "text": "after"}
    assert (
        f"part 1 had more than {MAX_PART_CHARS:,} chars of text and was cut there"
        in (result["notes"])
    )
    assert peak < 24 * MIB, peak  # the tree of 200,000 runs alone held over 50 MiB
    found = ws.doc_search("huge.docx", "after")
    assert found["hits"][0]["part"] == 2
    assert found["notes"] == [
        f"1 part(s) had more than {MAX_PART_CHARS:,} chars of text and were cut there "
        "(the first: part 1)"
    ]


def test_a_docx_part_lying_about_its_compressed_size_is_bounded_by_what_was_read(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_docs, "MIN_MEMBER_BUDGET", MIB)
    monkeypatch.setattr(_docs, "MAX_RATIO", 20)
    body = "<w:p><w:r><w:t>" + "a" * (8 * MIB) + "</w:t></w:r></w:p>"
    (root(ws) / "liar.docx").write_bytes(
        raw_zip(_document(body), pad=MIB, padded="word/document.xml")
    )
    with pytest.raises(WrongFileTypeError, match="compressed bytes read.*decompression bomb"):
        ws.doc_read("liar.docx", part="1")


def test_one_huge_html_paragraph_is_cut(ws: Workspace) -> None:
    (root(ws) / "huge.html").write_text(
        "<html><body><p>" + "word " * 400_000 + "</p><p>after</p></body></html>"
    )
    result = ws.doc_read("huge.html", part="1-2")
    first, second = result["parts"]
    assert first["text"].endswith(PART_CUT_NOTE)
    assert len(first["text"]) <= MAX_PART_CHARS + len(PART_CUT_NOTE)
    assert second["text"] == "after"
    assert any("part 1 had more than" in n for n in result["notes"])


def test_one_huge_markdown_line_is_cut(ws: Workspace) -> None:
    (root(ws) / "huge.md").write_text("# Title\n\n" + "x" * (2 * MIB) + "\n\nafter\n")
    result = ws.doc_read("huge.md", part="1-3")
    title, line, after = result["parts"]
    assert title["text"] == "# Title"
    assert line["text"] == "x" * MAX_PART_CHARS + PART_CUT_NOTE
    assert after["text"] == "after"
    assert any("part 2 had more than" in n for n in result["notes"])


def test_doc_search_indexes_for_a_bounded_time_and_continues(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No time at all per call: each call still indexes one part, and the next goes on.
    monkeypatch.setattr(_pdfindex, "MAX_INDEX_SECONDS", 0.0)
    blocks = [("p", f"paragraph {i} about topic{i}") for i in range(1, 5)]
    (root(ws) / "four.docx").write_bytes(officegen.docx(blocks))
    seen = []
    for call in range(1, 5):
        found = ws.doc_search("four.docx", "topic4")
        seen.append(found["parts"])
        if call < 4:
            assert found["notes"] == [
                f"parts 1-{call} are indexed so far (indexing stops after 0s per call); the "
                f"next doc_search continues from part {call + 1}, and doc_read reads any part now"
            ]
            assert found["hits"] == []
            assert found["indexed_now"] is True
    assert seen == [None, None, None, 4]
    assert found["hits"][0]["part"] == 4
    again = ws.doc_search("four.docx", "topic2")
    assert again["indexed_now"] is False
    assert again["hits"][0]["part"] == 2
    assert again["notes"] == []


_BLOCKS = [
    '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Title</w:t></w:r></w:p>',
    "<w:p/>",
    '<w:p w:rsidR="00A1"></w:p>',
    "<w:p><w:r><w:t>  </w:t></w:r><w:r><w:tab/></w:r></w:p>",
    "<w:p><w:r><w:t>&#160;&#x20;</w:t></w:r></w:p>",
    "<w:p><w:r><w:t>\u3000</w:t></w:r></w:p>",
    "<w:p><w:r><w:t>&amp;</w:t></w:r></w:p>",
    "<w:p><w:r><w:t/></w:r><w:r><w:t xml:space='preserve'> late</w:t></w:r></w:p>",
    "<w:tbl><w:tblPr/></w:tbl>",
    "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>cell</w:t></w:r></w:p></w:tc></w:tr></w:tbl>",
    "<w:sdt><w:sdtContent><w:p><w:r><w:t>in a content control</w:t></w:r></w:p>"
    "</w:sdtContent></w:sdt>",
    "<w:p><w:r><w:t>outer</w:t></w:r><w:r><w:pict><w:txbxContent><w:p><w:r><w:t>inner</w:t>"
    "</w:r></w:p></w:txbxContent></w:pict></w:r></w:p>",
    "<w:p><w:r><w:t>caf\u00e9</w:t></w:r></w:p>",
    "<w:bookmarkStart w:id='1'/>",
    "<w:p><w:r><w:t>last</w:t></w:r></w:p>",
]


@pytest.mark.parametrize(
    "extra", ["", "<!-- a comment -->", "<?pi x?>"], ids=["scan", "comment", "pi"]
)
def test_parts_after_a_skip_are_the_parts_of_a_whole_parse(ws: Workspace, extra: str) -> None:
    # doc_read(part="K") passes over parts 1..K-1 by scanning bytes where it can (a comment
    # or a processing instruction sends it to the parser): the same parts either way.
    body = "".join(_BLOCKS * 3) + extra + "".join(_BLOCKS)
    (root(ws) / "mixed.docx").write_bytes(raw_zip(_document(body)))
    whole = ws.doc_read("mixed.docx", part="1-400")["parts"]
    texts = ["# Title", "&", "late", "| cell |", "outerinner", "café", "last"]
    assert [p["text"] for p in whole] == texts * 4
    for k in range(2, len(whole) + 1):
        assert ws.doc_read("mixed.docx", part=str(k))["parts"] == [whole[k - 1]], k
    xml = dict(_document(body))["word/document.xml"]
    if extra:
        with pytest.raises(_docs._Rewind):
            _docs._skip_blocks(io.BytesIO(xml), 27)
    else:
        assert _docs._skip_blocks(io.BytesIO(xml), 27)[0] == 27
    with pytest.raises(InvalidArgumentError, match="past the end: the document has 28 parts"):
        ws.doc_read("mixed.docx", part="29")


def test_odf_spans_nested_deeper_than_python_recurses(ws: Workspace) -> None:
    deep = "<text:span>" * 1200 + "deep <text:s/>text" + "</text:span>" * 1200
    spaces = '<text:p>a<text:s text:c="1000000000"/>b</text:p>'  # a billion spaces claimed
    (root(ws) / "deep.odt").write_bytes(
        officegen._odf(
            "application/vnd.oasis.opendocument.text",
            f"<office:text><text:p>{deep}</text:p>{spaces}<text:p>after</text:p></office:text>",
        )
    )
    result = ws.doc_read("deep.odt", part="1-3")
    assert [p["text"] for p in result["parts"]] == [
        "deep  text",
        "a" + " " * (MAX_PART_CHARS - 1) + PART_CUT_NOTE,
        "after",
    ]
    assert ws.doc_search("deep.odt", "after")["hits"][0]["part"] == 3
