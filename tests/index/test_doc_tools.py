"""doc_read and doc_search over docx, pptx, odt, odp, epub, html and markdown, and the hostile
inputs they must survive: entity bombs, zip bombs, a 5,000-slide deck."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from leanreplay.cards import card_for
from leanreplay.index import InvalidArgumentError, Workspace, WrongFileTypeError
from leanreplay.index._tools import call_tool
from leanreplay.index.tools._docs import MIN_MEMBER_BUDGET
from tests import officegen
from tests.conftest import SAMPLES
from tests.filetools import replace_member, root, sample_workspace
from tests.make_samples import CHAPTERS, DECK

DOCS = [
    "report.docx",
    "report.odt",
    "deck.pptx",
    "deck.odp",
    "voyage.epub",
    "page.html",
    "guide.md",
]
REPORT_PARTS = [
    "# Quarterly report",
    "Revenue grew in every region this quarter.",
    "## By region",
    "| region | amount |\n| north | 260 |\n| south | 175.5 |",
    "The east office opened in Q2.",
]
DECK_PARTS = [f"# {title}\n" + "\n".join(lines) for title, lines in DECK]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return sample_workspace(tmp_path, DOCS)


def texts(result: dict[str, object]) -> list[str]:
    parts = result["parts"]
    assert isinstance(parts, list)
    return [p["text"] for p in parts]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("report.docx", REPORT_PARTS),
        ("report.odt", REPORT_PARTS),
        ("deck.pptx", DECK_PARTS),
        ("deck.odp", DECK_PARTS),
        ("voyage.epub", [f"# {h}\n{t}" for h, t in CHAPTERS]),
        (
            "page.html",
            [
                "# Release notes",
                "Tables and documents get real cards.",
                "| tool | reads |",
                "| doc_read | parts |",
                "Archives come next.",
            ],
        ),
        (
            "guide.md",
            [
                "# Guide",
                "leanreplay keeps replays lean.",
                "## Install",
                "```bash\npip install leanreplay\n\nleanreplay demo\n```",
                "## Use",
                "Call doc_read for parts.",
            ],
        ),
    ],
    ids=str,
)
def test_parts_in_order_with_headings_and_tables(
    ws: Workspace, name: str, expected: list[str]
) -> None:
    result = ws.doc_read(name)
    assert texts(result) == expected
    assert result["total_parts"] == len(expected)
    assert result["next"] is None
    assert [p["part"] for p in result["parts"]] == list(range(1, len(expected) + 1))


@pytest.mark.parametrize("name", DOCS, ids=str)
def test_card_names_the_document_tools(name: str) -> None:
    card = card_for(SAMPLES / name)
    assert card.tools[-2:] == ("doc_read", "doc_search")
    assert "doc_read" in card.render()


def test_card_counts_agree_with_doc_read(ws: Workspace) -> None:
    for name in ("report.docx", "report.odt"):
        facts = card_for(SAMPLES / name).facts
        parts = texts(ws.doc_read(name))
        assert facts["paragraphs"] + facts["tables"] == len(parts)
        assert facts["headings"] == sum(p.startswith("#") for p in parts)
        assert facts["tables"] == sum(p.startswith("|") for p in parts)
    for name in ("deck.pptx", "deck.odp"):
        facts = card_for(SAMPLES / name).facts
        assert facts["slides"] == len(DECK)
        assert facts["titles"] == [t for t, _ in DECK]
    assert card_for(SAMPLES / "voyage.epub").facts["chapters"] == len(CHAPTERS)


def test_ranges_and_next(ws: Workspace) -> None:
    result = ws.doc_read("report.docx", part="2-3")
    assert texts(result) == REPORT_PARTS[1:3]
    assert result["next"] == f'doc_read(path="{root(ws) / "report.docx"}", part="4-5")'
    with pytest.raises(InvalidArgumentError, match="past the end: the document has 5 parts"):
        ws.doc_read("report.docx", part="9")


@pytest.mark.parametrize(
    ("name", "query", "part"),
    [
        ("report.docx", "east office", 5),
        ("deck.pptx", "hire", 3),
        ("voyage.epub", "copper", 2),
        ("page.html", "archives", 5),
        ("report.odt", "revenue", 2),
    ],
    ids=str,
)
def test_search_finds_the_part(ws: Workspace, name: str, query: str, part: int) -> None:
    first = ws.doc_search(name, query)
    assert first["indexed_now"] is True
    assert first["hits"][0]["part"] == part
    assert "**" in first["hits"][0]["snippet"]
    again = ws.doc_search(name, query)
    assert again["indexed_now"] is False
    assert again["hits"] == first["hits"]


def test_search_index_is_rebuilt_when_the_file_changes(ws: Workspace) -> None:
    assert ws.doc_search("report.docx", "zebra")["hits"] == []
    blocks: list[officegen.Block] = [("p", "a zebra crossed the road")]
    (root(ws) / "report.docx").write_bytes(officegen.docx(blocks))
    result = ws.doc_search("report.docx", "zebra")
    assert result["indexed_now"] is True
    assert result["hits"][0]["part"] == 1


def test_a_5000_slide_deck(ws: Workspace) -> None:
    slides = [(f"Slide {i}", [f"body of slide {i}"]) for i in range(1, 5001)]
    (root(ws) / "big.pptx").write_bytes(officegen.pptx(slides))
    card = card_for(root(ws) / "big.pptx")
    assert card.facts["slides"] == 5000
    assert card.facts["titles"] == [f"Slide {i}" for i in range(1, 11)]
    tail = ws.doc_read("big.pptx", part="4999-5000")
    assert texts(tail) == ["# Slide 4999\nbody of slide 4999", "# Slide 5000\nbody of slide 5000"]
    assert tail["total_parts"] == 5000
    hits = ws.doc_search("big.pptx", '"slide 4321"')["hits"]
    assert hits[0]["part"] == 4321


BOMB = (
    b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(
        f'<!ENTITY a{i} "{("&a" + (str(i - 1) if i else "") + ";") * 10}">'.encode()
        for i in range(9)
    )
    + b']><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    b"<w:body><w:p><w:r><w:t>&a8;</w:t></w:r></w:p></w:body></w:document>"
)


def test_entity_bomb_is_refused(ws: Workspace) -> None:
    data = replace_member(officegen.docx([("p", "x")]), "word/document.xml", BOMB)
    (root(ws) / "bomb.docx").write_bytes(data)
    card = card_for(root(ws) / "bomb.docx")
    assert "paragraphs" not in card.facts
    assert any("refused" in w for w in card.warnings)
    with pytest.raises(WrongFileTypeError, match="declares XML entities or a DTD"):
        ws.doc_read("bomb.docx")
    with pytest.raises(WrongFileTypeError, match="declares XML entities"):
        ws.doc_search("bomb.docx", "aaaa")


def test_zip_bomb_is_refused_after_a_bounded_read(ws: Workspace) -> None:
    # One paragraph, then far more padding than the member may expand to.
    pad = b" " * (MIN_MEMBER_BUDGET + 1024 * 1024)
    xml = (
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        b"<w:body><w:p><w:r><w:t>first</w:t></w:r></w:p>" + pad + b"</w:body></w:document>"
    )
    data = replace_member(officegen.docx([("p", "x")]), "word/document.xml", xml)
    assert len(data) < MIN_MEMBER_BUDGET // 100
    (root(ws) / "zipbomb.docx").write_bytes(data)
    first = ws.doc_read("zipbomb.docx", part="1")
    assert texts(first) == ["first"]  # what was readable before the pad, and why it stopped
    assert "decompression bomb" in first["notes"][0]
    assert first["total_parts"] is None
    with pytest.raises(WrongFileTypeError, match="decompression bomb"):
        ws.doc_read("zipbomb.docx", part="2")
    card = card_for(root(ws) / "zipbomb.docx")  # the card's own budget ends first
    assert any("budget" in w for w in card.warnings)


def test_non_documents_are_refused_with_their_tools(ws: Workspace) -> None:
    shutil.copy(SAMPLES / "sales.xlsx", root(ws) / "sales.xlsx")
    with pytest.raises(WrongFileTypeError, match="not a document.*table_read"):
        ws.doc_read("sales.xlsx")


def test_tools_run_through_the_one_definition(ws: Workspace) -> None:
    result = call_tool(ws, "doc_read", {"path": "deck.odp", "part": "2"})
    assert texts(result) == [DECK_PARTS[1]]
    with pytest.raises(InvalidArgumentError, match="part"):
        call_tool(ws, "doc_read", {"path": "deck.odp", "part": "two"})


@pytest.mark.parametrize(
    ("name", "part", "expected"),
    [
        ("deck.pptx", "3", [DECK_PARTS[2]]),
        ("deck.pptx", "2-3", DECK_PARTS[1:]),
        ("voyage.epub", "2-3", [f"# {h}\n{t}" for h, t in CHAPTERS[1:]]),
        ("deck.odp", "3", [DECK_PARTS[2]]),
    ],
    ids=str,
)
def test_later_slides_and_chapters(
    ws: Workspace, name: str, part: str, expected: list[str]
) -> None:
    result = ws.doc_read(name, part=part)
    assert texts(result) == expected
    first = int(part.split("-")[0])
    assert [p["part"] for p in result["parts"]] == list(range(first, first + len(expected)))
