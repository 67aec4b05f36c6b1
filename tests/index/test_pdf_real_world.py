"""PDFs as they come from the real world, through both text backends (PDFium with the
``fast`` extra, pypdf without): password-protected files get one actionable error, a file
whose index and page tree are gone is still counted and read, metadata reads as people read
it, and page text carries no PDFium hyphen artefacts."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pypdf
import pytest
from mcp import Client

from leanreplay.cards import card_for
from leanreplay.index import Workspace, WrongFileTypeError
from leanreplay.index.faces.server import build_server
from leanreplay.index.tools import _pdfworker
from tests import pdfgen
from tests.conftest import SAMPLES

PASSWORD_ERROR = "is encrypted with a password; its pages cannot be read"


@pytest.fixture(params=["pypdfium2", "pypdf"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test with PDFium (the default) and again with pypdf (the pure-Python fallback)."""
    if request.param == "pypdfium2":
        pytest.importorskip("pypdfium2")
        assert _pdfworker.backend() == "pypdfium2"
    else:
        monkeypatch.setattr(_pdfworker, "_pdfium", None)
    _pdfworker.close_documents()
    yield request.param
    _pdfworker.close_documents()


def encrypted(algorithm: str, pages: int = 3) -> bytes:
    """A text PDF locked with a user password by pypdf."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdfgen.pdf_bytes(pages))))
    writer.encrypt(user_password="user-secret", owner_password="owner", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


ALGORITHMS = ["RC4-40", "RC4-128", "AES-128", "AES-256"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    for algorithm in ALGORITHMS:
        (root / f"locked-{algorithm}.pdf").write_bytes(encrypted(algorithm))
    (root / "lost_tree.pdf").write_bytes(pdfgen.lost_page_tree_pdf(3))
    for name in ("metadata_encodings.pdf", "hyphenated.pdf", "broken_page_tree.pdf"):
        (root / name).write_bytes((SAMPLES / name).read_bytes())
    return root


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_password_protected_pdf_gets_one_actionable_error(
    backend: str, root: Path, tmp_path: Path, algorithm: str
) -> None:
    name = f"locked-{algorithm}.pdf"
    assert card_for(root / name).facts["encrypted"] is True
    with Workspace(tmp_path / "home", [root]) as ws:
        for call in (
            lambda: ws.pdf_read(name, "1"),
            lambda: ws.pdf_search(name, "marker00002"),
        ):
            with pytest.raises(WrongFileTypeError, match=PASSWORD_ERROR) as caught:
                call()
            assert "\n" not in str(caught.value)
        assert ws.pdf_info(name)["facts"]["encrypted"] is True


def test_over_mcp_a_locked_pdf_is_not_reported_as_a_bug(
    backend: str, root: Path, tmp_path: Path
) -> None:
    async def main() -> list[Any]:
        with Workspace(tmp_path / "home", [root]) as ws:
            async with Client(build_server(ws)) as client:
                return [
                    await client.call_tool(tool, {"path": "locked-AES-128.pdf", **args})
                    for tool, args in (("pdf_read", {"pages": "1"}), ("pdf_search", {"query": "x"}))
                ]

    for result in anyio.run(main):
        assert result.is_error
        text = "".join(c.text for c in result.content if c.type == "text")
        assert PASSWORD_ERROR in text
        assert "bug" not in text


@pytest.mark.parametrize("name", ["lost_tree.pdf", "broken_page_tree.pdf"])
def test_a_pdf_without_index_or_page_tree_is_counted_and_read(
    backend: str, root: Path, tmp_path: Path, name: str
) -> None:
    card = card_for(root / name).to_dict()
    assert card["facts"]["pages"] == 3
    assert any("counted the 3 /Type /Page objects" in w for w in card["warnings"])
    with Workspace(tmp_path / "home", [root]) as ws:
        read = ws.pdf_read(name, "1-3")
        assert read["total_pages"] == 3
        assert [p["page"] for p in read["pages"]] == [1, 2, 3]
        for number, page in enumerate(read["pages"], 1):
            assert f"marker{number:05d}" in page["text"]
        assert ws.pdf_search(name, "marker00002")["hits"][0]["page"] == 2


def test_metadata_reads_as_people_read_it(backend: str, root: Path, tmp_path: Path) -> None:
    assert card_for(root / "metadata_encodings.pdf").facts["title"] == pdfgen.METADATA_READ["title"]
    with Workspace(tmp_path / "home", [root]) as ws:
        assert ws.pdf_info("metadata_encodings.pdf")["metadata"] == pdfgen.METADATA_READ


def test_page_text_has_no_hyphen_artefacts(backend: str, root: Path, tmp_path: Path) -> None:
    with Workspace(tmp_path / "home", [root]) as ws:
        text = ws.pdf_read("hyphenated.pdf", "1")["pages"][0]["text"]
    assert "\ufffe" not in text
    assert "\u00ad" not in text
    assert text.strip() == pdfgen.HYPHENATED_TEXT


@pytest.mark.parametrize(
    ("raw", "iso"),
    [
        ("D:20100503143917-05'00'", "2010-05-03T14:39:17-05:00"),
        ("D:20240101120000Z", "2024-01-01T12:00:00Z"),
        ("D:20240101120000+0530", "2024-01-01T12:00:00+05:30"),
        ("D:199912", "1999-12"),
        ("20240229", "2024-02-29"),
        ("D:20241301", "D:20241301"),
        ("last tuesday", "last tuesday"),
    ],
)
def test_pdf_dates_become_iso_8601(raw: str, iso: str) -> None:
    from leanreplay.index.tools._pdftext import pdf_date_iso

    assert pdf_date_iso(raw) == iso
