"""archive_list and member= on the file tools: zip, tar, tar.gz, gz, bz2, xz; hostile names,
links and bombs never reach the disk."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from leanreplay.cards import card_for
from leanreplay.index import InvalidArgumentError, NotFoundError, Workspace, WrongFileTypeError
from leanreplay.index.tools._archives import MIN_MEMBER_BYTES
from tests.conftest import SAMPLES
from tests.filetools import root, sample_workspace

ARCHIVES = [
    "bundle.zip",
    "bundle.tar",
    "bundle.tar.gz",
    "notes.txt.gz",
    "notes.txt.bz2",
    "notes.txt.xz",
]
TAR_NAMES = ["data/table.csv", "docs/guide.md", "img/red.png"]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return sample_workspace(tmp_path, ARCHIVES)


@pytest.mark.parametrize("name", ["bundle.zip", "bundle.tar"], ids=str)
def test_card_facts_agree_with_the_standard_library(name: str) -> None:
    path = SAMPLES / name
    if name.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            names = [i.filename for i in z.infolist()]
            total = sum(i.file_size for i in z.infolist())
    else:
        with tarfile.open(path) as t:
            names = t.getnames()
            total = sum(m.size for m in t.getmembers() if m.isfile())
    facts = card_for(path).facts
    assert facts["entries"] == len(names)
    assert facts["uncompressed_bytes"] == total
    assert facts["first_entries"] == sorted(names)[:10]
    assert card_for(path).tools == ("archive_list",)


def test_gzip_card_reads_the_header_and_trailer() -> None:
    facts = card_for(SAMPLES / "notes.txt.gz").facts
    assert facts["original_name"] == "notes.txt"
    assert facts["trailer_size"] == (SAMPLES / "notes_utf8.txt").stat().st_size


@pytest.mark.parametrize(
    ("name", "fmt", "names"),
    [
        ("bundle.tar", "tar", TAR_NAMES),
        ("bundle.tar.gz", "tar.gz", TAR_NAMES),
        ("notes.txt.gz", "gzip", ["notes.txt"]),
        ("notes.txt.bz2", "bzip2", ["notes.txt"]),
        ("notes.txt.xz", "xz", ["notes.txt"]),
        ("bundle.zip", "zip", [f"data/file{i}.txt" for i in range(7)]),
    ],
    ids=str,
)
def test_archive_list(ws: Workspace, name: str, fmt: str, names: list[str]) -> None:
    result = ws.archive_list(name)
    assert result["format"] == fmt
    assert [e["name"] for e in result["entries"]] == names
    assert result["total_entries"] == len(names)


def test_prefix_and_limit(ws: Workspace) -> None:
    assert [e["name"] for e in ws.archive_list("bundle.tar.gz", prefix="docs/")["entries"]] == [
        "docs/guide.md"
    ]
    limited = ws.archive_list("bundle.zip", limit=2)
    assert len(limited["entries"]) == 2
    assert any("more than 2 entries" in n for n in limited["notes"])


def test_members_are_read_by_the_file_tools(ws: Workspace) -> None:
    expected = (SAMPLES / "table.csv").read_text().splitlines()
    lines = ws.file_read("bundle.tar.gz", member="data/table.csv")["content"].split("\n")
    assert [line.split("\t", 1)[1] for line in lines] == expected
    assert ws.table_read("bundle.tar", member="data/table.csv", rows="2")["rows"] == [
        [2, "1", "alpha", "10.5"]
    ]
    assert ws.doc_read("bundle.tar", member="docs/guide.md", part="1")["parts"][0]["text"] == (
        "# Guide"
    )
    assert ws.image_view("bundle.tar.gz", member="img/red.png", max_side=32)["mime"] == "image/png"
    notes = (SAMPLES / "notes_utf8.txt").read_text()
    for name in ("notes.txt.gz", "notes.txt.bz2", "notes.txt.xz"):
        hits = ws.file_search(name, "café", member="notes.txt")["hits"]
        assert hits == [{"line": 3, "text": notes.splitlines()[2]}]
    assert ws.file_read("bundle.zip", member="data/file3.txt", end_line=1)["content"] == (
        "1\tentry 3"
    )


def test_missing_member_points_at_archive_list(ws: Workspace) -> None:
    with pytest.raises(NotFoundError, match="no member 'nope.txt'.*archive_list"):
        ws.file_read("bundle.zip", member="nope.txt")
    with pytest.raises(NotFoundError, match="archive_list"):
        ws.file_read("bundle.tar.gz", member="data/missing.csv")


def _hostile_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("../escape.txt", "out")
        z.writestr("/abs.txt", "abs")
        link = zipfile.ZipInfo("link.txt")
        link.external_attr = 0o120777 << 16  # a symlink entry
        z.writestr(link, "/etc/passwd")
        z.writestr("fine/ok.txt", "ok\n")
    return buf.getvalue()


def test_hostile_names_are_listed_but_never_extracted(ws: Workspace, tmp_path: Path) -> None:
    (root(ws) / "evil.zip").write_bytes(_hostile_zip())
    listed = {e["name"]: e for e in ws.archive_list("evil.zip")["entries"]}
    assert listed["../escape.txt"]["unsafe"] is True
    assert listed["/abs.txt"]["unsafe"] is True
    assert listed["link.txt"]["type"] == "link"
    for member in ("../escape.txt", "/abs.txt"):
        with pytest.raises(InvalidArgumentError, match="never extracted"):
            ws.file_read("evil.zip", member=member)
    with pytest.raises(InvalidArgumentError, match="is a link, not a file"):
        ws.file_read("evil.zip", member="link.txt")
    assert ws.file_read("evil.zip", member="fine/ok.txt")["content"] == "1\tok"
    assert not (root(ws).parent / "escape.txt").exists()
    assert not Path("/abs.txt").exists()
    written = [p.name for p in Path(ws.members_dir).rglob("*") if p.is_file()]
    assert written == ["ok.txt"]


def test_tar_links_are_not_extracted(ws: Workspace) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("passwd")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        t.addfile(info)
    (root(ws) / "links.tar").write_bytes(buf.getvalue())
    assert ws.archive_list("links.tar")["entries"][0]["type"] == "link"
    with pytest.raises(InvalidArgumentError, match="not a regular file"):
        ws.file_read("links.tar", member="passwd")


def test_zip_bomb_member_is_refused(ws: Workspace) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.txt", b"\0" * (MIN_MEMBER_BYTES + 8 * 1024 * 1024))
    assert len(buf.getvalue()) < 1024 * 1024
    (root(ws) / "bomb.zip").write_bytes(buf.getvalue())
    with pytest.raises(WrongFileTypeError, match="decompression bomb"):
        ws.file_read("bomb.zip", member="zeros.txt")
    assert not [p for p in Path(ws.members_dir).rglob("*") if p.is_file()]


def test_not_an_archive(ws: Workspace) -> None:
    shutil.copy(SAMPLES / "red_64x48.png", root(ws) / "red.png")
    with pytest.raises(WrongFileTypeError, match="not an archive"):
        ws.archive_list("red.png")
