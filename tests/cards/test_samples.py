"""Every committed sample gets the card its manifest promises, checked against independent
readers too (pypdf, Pillow, zipfile), so the manifest cannot drift from the files."""

from __future__ import annotations

import os
import time
import zipfile

import pypdf
import pytest
from PIL import Image

from leanreplay.cards import card_for, card_for_descriptor
from tests.conftest import SAMPLES, load_manifest

MANIFEST = load_manifest()


@pytest.mark.parametrize("name", sorted(MANIFEST), ids=str)
def test_sample_card_matches_manifest(name: str) -> None:
    expected = MANIFEST[name]
    started = time.perf_counter()
    card = card_for(SAMPLES / name)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"card of {name} took {elapsed:.2f}s"
    data = card.to_dict()
    assert data["name"] == name
    assert data["path"] == str((SAMPLES / name).resolve())
    assert data["kind"] == expected["kind"]
    assert data["mime"] == expected["mime"]
    assert data["size"] == (SAMPLES / name).stat().st_size
    assert data["facts"] == expected["facts"]
    if "warning" in expected:
        assert any(expected["warning"] in w for w in data["warnings"])
    else:
        assert data["warnings"] == []


@pytest.mark.parametrize(
    "name",
    # Damaged samples (with a warning) are exactly the ones pypdf cannot count.
    sorted(
        n
        for n in MANIFEST
        if n.endswith(".pdf") and MANIFEST[n]["facts"]["pages"] and "warning" not in MANIFEST[n]
    ),
    ids=str,
)
def test_pdf_page_count_agrees_with_pypdf(name: str) -> None:
    reader = pypdf.PdfReader(SAMPLES / name)
    if reader.is_encrypted:
        assert reader.decrypt("") != 0
    assert card_for(SAMPLES / name).facts["pages"] == len(reader.pages)


@pytest.mark.parametrize(
    "name", sorted(n for n in MANIFEST if MANIFEST[n]["kind"] == "image"), ids=str
)
def test_image_facts_agree_with_pillow(name: str) -> None:
    with Image.open(SAMPLES / name) as im:
        expected = {
            "width": im.width,
            "height": im.height,
            "format": im.format,
            "frames": getattr(im, "n_frames", 1),
        }
    assert dict(card_for(SAMPLES / name).facts) == expected


@pytest.mark.parametrize("name", ["bundle.zip", "letter.docx"], ids=str)
def test_zip_entries_agree_with_zipfile(name: str) -> None:
    with zipfile.ZipFile(SAMPLES / name) as z:
        assert card_for(SAMPLES / name).facts["entries"] == len(z.infolist())


@pytest.mark.parametrize(
    ("name", "tools"),
    [
        ("classic_xref.pdf", ["pdf_info", "pdf_search", "pdf_read"]),
        ("notes_utf8.txt", ["file_read", "file_search"]),
        ("red_64x48.png", ["image_view"]),
        ("table.csv", ["file_read", "file_search", "table_read", "table_query"]),
        ("cities.tsv", ["file_read", "file_search", "table_read", "table_query"]),
        ("sales.xlsx", ["table_read", "table_query"]),
        ("sales.ods", ["table_read", "table_query"]),
        ("sales.parquet", ["table_read", "table_query"]),
        ("report.docx", ["doc_read", "doc_search"]),
        ("deck.pptx", ["doc_read", "doc_search"]),
        ("voyage.epub", ["doc_read", "doc_search"]),
        ("guide.md", ["file_read", "file_search", "doc_read", "doc_search"]),
        ("bundle.zip", ["archive_list"]),
        ("bundle.tar.gz", ["archive_list"]),
        ("notes.txt.xz", ["archive_list"]),
    ],
    ids=str,
)
def test_card_names_the_tools_that_read_it(name: str, tools: list[str]) -> None:
    card = card_for(SAMPLES / name)
    assert card.to_dict()["tools"] == tools
    for tool in tools:
        assert tool in card.render()


@pytest.mark.parametrize("name", sorted(MANIFEST), ids=str)
def test_light_card_names_the_same_kind_and_tools(name: str) -> None:
    full = card_for(SAMPLES / name)
    fd = os.open(SAMPLES / name, os.O_RDONLY)
    try:
        light = card_for_descriptor(fd, path=full.path, light=True)
    finally:
        os.close(fd)
    assert (light.mime, light.kind, light.tools) == (full.mime, full.kind, full.tools)
    for key in ("table", "document", "delimiter"):
        assert light.facts.get(key) == full.facts.get(key)
