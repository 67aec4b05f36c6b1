"""pdf_info, pdf_search, pdf_read and image_view on real files generated at test time."""

from __future__ import annotations

import base64
import io
import os
import time
from pathlib import Path

import pypdf
import pytest
from PIL import Image

from leanreplay.index import InvalidArgumentError, Workspace, WrongFileTypeError
from leanreplay.index.tools import _pdfworker
from leanreplay.index.tools._paths import fingerprint, open_confined
from tests import pdfgen
from tests.conftest import SAMPLES

PAGES = 150


@pytest.fixture(scope="module")
def pdf_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pdfs")
    pdfgen.write_pdf(str(root / "book.pdf"), PAGES, compress=True, title="The Book")
    # A PDF with an outline, written by pypdf from the generated one.
    writer = pypdf.PdfWriter(clone_from=str(root / "book.pdf"))
    writer.add_outline_item(title="Chapter one", page_number=0)
    writer.add_outline_item(title="Chapter two", page_number=9)
    writer.add_metadata({"/Author": "Ada", "/Title": "Outlined"})
    with open(root / "outlined.pdf", "wb") as f:
        writer.write(f)
    (root / "not_a_pdf.pdf").write_text("just text\n")
    for name in ("red_64x48.png", "animated_5_frames.gif", "blue_120x80.jpg"):
        (root / name).write_bytes((SAMPLES / name).read_bytes())
    return root


@pytest.fixture
def ws(pdf_root: Path, tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "home", [pdf_root])


def test_pdf_info_has_card_facts_metadata_and_outline(ws: Workspace) -> None:
    info = ws.pdf_info("outlined.pdf")
    assert info["facts"]["pages"] == PAGES
    assert info["metadata"]["author"] == "Ada"
    assert info["outline"] == [
        {"title": "Chapter one", "page": 1},
        {"title": "Chapter two", "page": 10},
    ]
    assert info["tools"] == ["pdf_info", "pdf_search", "pdf_read"]


def test_pdf_search_indexes_once_reports_progress_and_ranks(ws: Workspace) -> None:
    events: list[tuple[int, int, str]] = []
    first = ws.call(
        "pdf_search",
        {"path": "book.pdf", "query": "marker00077"},
        progress=lambda d, t, m: events.append((d, t, m)),
    )
    assert first["indexed_now"] is True
    assert first["pages"] == PAGES
    assert first["hits"][0]["page"] == 77
    assert "**marker00077**" in first["hits"][0]["snippet"]
    assert first["next"] == f'pdf_read(path="{ws.roots[0]}/book.pdf", pages="77")'
    assert events
    assert events[-1][0] == events[-1][1] == PAGES
    assert [e[0] for e in events] == sorted(e[0] for e in events)
    again = ws.pdf_search("book.pdf", "marker00012 revenue", limit=3)
    assert again["indexed_now"] is False
    assert again["hits"][0]["page"] == 12
    assert len(again["hits"]) == 3


def test_pdf_search_reindexes_when_the_file_changes(pdf_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    path = root / "doc.pdf"
    pdfgen.write_pdf(str(path), 5, text=lambda n: f"old text page {n}")
    with Workspace(tmp_path / "home", [root]) as ws:
        assert ws.pdf_search("doc.pdf", "old")["hits"]
        time.sleep(0.01)
        pdfgen.write_pdf(str(path), 7, text=lambda n: f"new words page {n}")
        result = ws.pdf_search("doc.pdf", "new")
        assert result["indexed_now"] is True
        assert result["pages"] == 7
        assert ws.pdf_search("doc.pdf", "old")["hits"] == []


@pytest.mark.parametrize(
    "query",
    [
        "foo:bar",
        '"unbalanced',
        "a AND",
        "c++ (x",
        "page:[1 TO 5]",
        "*",
        "marker00005^3",
        "NOT OR AND",
    ],
    ids=str,
)
def test_hostile_queries_search_their_words_or_explain(ws: Workspace, query: str) -> None:
    try:
        result = ws.pdf_search("book.pdf", query)
    except InvalidArgumentError as exc:
        assert "no searchable words" in str(exc)
        return
    assert isinstance(result["hits"], list)
    if query == "marker00005^3":
        assert result["hits"][0]["page"] == 5


def test_pdf_read_ranges_bounds_and_next(ws: Workspace) -> None:
    one = ws.pdf_read("book.pdf", "7")
    assert [p["page"] for p in one["pages"]] == [7]
    assert "marker00007" in one["pages"][0]["text"]
    assert one["next"] == f'pdf_read(path="{ws.roots[0]}/book.pdf", pages="8-27")'
    many = ws.pdf_read("book.pdf", "1-100")
    assert [p["page"] for p in many["pages"]] == list(range(1, 21))
    assert many["next"].endswith('pages="21-40")')
    end = ws.pdf_read("book.pdf", "149-400")
    assert [p["page"] for p in end["pages"]] == [149, 150]
    assert end["next"] is None
    with pytest.raises(
        InvalidArgumentError, match="page 151 is past the end: the PDF has 150 pages"
    ):
        ws.pdf_read("book.pdf", "151")
    for bad in ("0", "5-3", "x", "1,2"):
        with pytest.raises(InvalidArgumentError):
            ws.call("pdf_read", {"path": "book.pdf", "pages": bad})


def test_pdf_read_uses_the_index_and_extraction_alike(ws: Workspace) -> None:
    before = ws.pdf_read("book.pdf", "30-31")["pages"]
    ws.pdf_search("book.pdf", "marker00030")
    after = ws.pdf_read("book.pdf", "30-31")["pages"]
    assert before == after


def test_pdf_tools_refuse_other_files(ws: Workspace) -> None:
    with pytest.raises(WrongFileTypeError, match="not a PDF"):
        ws.pdf_read("not_a_pdf.pdf", "1")
    with pytest.raises(WrongFileTypeError, match="not a PDF"):
        ws.pdf_info("red_64x48.png")
    with pytest.raises(WrongFileTypeError):
        ws.pdf_search("not_a_pdf.pdf", "text")


def test_pypdf_fallback_extracts_the_same_words(
    pdf_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    st = os.stat(pdf_root / "book.pdf")
    identity = (st.st_dev, st.st_ino)
    fast = _pdfworker.extract_range(str(pdf_root / "book.pdf"), identity, 0, 3)
    _pdfworker.close_documents()
    monkeypatch.setattr(_pdfworker, "_pdfium", None)
    try:
        slow = _pdfworker.extract_range(str(pdf_root / "book.pdf"), identity, 0, 3)
        assert _pdfworker.page_count(str(pdf_root / "book.pdf"), identity) == PAGES
    finally:
        _pdfworker.close_documents()  # pypdf readers: closed before the backend comes back
    for a, b in zip(fast, slow, strict=True):
        assert a.split()[:2] == b.split()[:2]  # "pageN markerN": the same words either way


def test_worker_refuses_a_replaced_file(pdf_root: Path, tmp_path: Path) -> None:
    st = os.stat(pdf_root / "book.pdf")
    with pytest.raises(OSError, match="was replaced"):
        _pdfworker.extract_range(str(pdf_root / "outlined.pdf"), (st.st_dev, st.st_ino), 0, 1)


def test_fingerprint_changes_with_content(pdf_root: Path) -> None:
    with (
        open_confined("book.pdf", [str(pdf_root)]) as a,
        open_confined("outlined.pdf", [str(pdf_root)]) as b,
    ):
        assert fingerprint(a) != fingerprint(b)
        assert fingerprint(a) == fingerprint(a)


@pytest.mark.parametrize(
    ("name", "max_side", "mime", "size"),
    [
        ("red_64x48.png", 32, "image/png", (32, 24)),
        ("red_64x48.png", 1568, "image/png", (64, 48)),
        ("blue_120x80.jpg", 60, "image/jpeg", (60, 40)),
        ("animated_5_frames.gif", 16, "image/png", (16, 16)),
    ],
    ids=str,
)
def test_image_view_downscales(
    ws: Workspace, name: str, max_side: int, mime: str, size: tuple[int, int]
) -> None:
    result = ws.image_view(name, max_side)
    assert result["mime"] == mime
    assert (result["width"], result["height"]) == size
    with Image.open(io.BytesIO(base64.b64decode(result["data"]))) as im:
        assert im.size == size


def test_image_view_refuses_bombs_and_non_images(ws: Workspace, pdf_root: Path) -> None:
    bomb = pdf_root / "bomb.png"
    Image.new("1", (10_000, 10_000)).save(bomb)  # 100 MP, a few KB on disk
    try:
        with pytest.raises(WrongFileTypeError, match="over the limit"):
            ws.image_view("bomb.png")
    finally:
        bomb.unlink()
    with pytest.raises(WrongFileTypeError, match="not an image"):
        ws.image_view("book.pdf")
    with pytest.raises(InvalidArgumentError, match="max_side"):
        ws.call("image_view", {"path": "red_64x48.png", "max_side": 5})


def test_password_protected_pdf_says_so(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    for name in ("encrypted.pdf", "encrypted_object_streams.pdf"):
        (root / name).write_bytes((SAMPLES / name).read_bytes())
    with Workspace(tmp_path / "home", [root]) as ws:
        assert (
            ws.pdf_search("encrypted.pdf", "marker00003")["hits"][0]["page"] == 3
        )  # empty password
        with pytest.raises(WrongFileTypeError, match="encrypted with a password"):
            ws.pdf_read("encrypted_object_streams.pdf", "1")
        info = ws.pdf_info("encrypted_object_streams.pdf")
        assert info["facts"]["encrypted"] is True
        assert info["facts"]["pages"] is None


def test_the_pdf_tools_leave_the_host_loggers_alone(pdf_root: Path, tmp_path: Path) -> None:
    import logging

    logger = logging.getLogger("pypdf")
    before = logger.level
    logger.setLevel(logging.DEBUG)  # a host application that wants to see pypdf's warnings
    try:
        with Workspace(tmp_path / "home", [pdf_root]) as ws:
            ws.pdf_info("book.pdf")
            ws.pdf_read("book.pdf", "1")
        assert logger.level == logging.DEBUG
    finally:
        logger.setLevel(before)
