"""Hostile archives (round 3 of the red team): bombs bounded inside a member, a central
directory that holds more than its end record claims, a member lying about its compressed
size, repeated names, a gzip whose content starts with a zero block, a crafted date."""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
from pathlib import Path

import pytest

from leanreplay.cards import card_for
from leanreplay.index import Workspace, WrongFileTypeError
from leanreplay.index.tools import _archives
from tests.filetools import raw_zip, root

MIB = 1024 * 1024


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "root").mkdir()
    return Workspace(tmp_path / "home", [tmp_path / "root"])


def tar_of(members: list[tuple[str, bytes]], fmt: int = tarfile.GNU_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_a_tar_bz2_bomb_is_bounded_inside_its_member(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One member of zeros: the bound is met while the member is being skipped, not after it.
    monkeypatch.setattr(_archives, "MIN_MEMBER_BYTES", MIB)
    bomb = bz2.compress(tar_of([("zeros.bin", b"\0" * 4 * MIB), ("after.txt", b"x")]))
    assert len(bomb) < 3000
    (root(ws) / "bomb.tar.bz2").write_bytes(bomb)
    listed = ws.archive_list("bomb.tar.bz2")
    assert listed["format"] == "tar.bz2"
    assert listed["total_entries"] is None
    assert [e["name"] for e in listed["entries"]] == ["zeros.bin"]
    assert any(f"stopped after {MIB:,} inflated bytes" in n for n in listed["notes"])
    with pytest.raises(WrongFileTypeError, match="inflated bytes"):
        ws.file_read("bomb.tar.bz2", member="after.txt")


def test_a_long_name_header_block_is_bounded(ws: Workspace) -> None:
    # tarfile reads a GNU long-name block whole into memory: a huge one is never read.
    name = "n" * (_archives.MAX_TAR_HEADER_BYTES + 1)
    (root(ws) / "long.tar.gz").write_bytes(gzip.compress(tar_of([("a.txt", b"a"), (name, b"")])))
    listed = ws.archive_list("long.tar.gz")
    assert [e["name"] for e in listed["entries"]] == ["a.txt"]
    assert listed["total_entries"] is None
    assert any("tar header block of" in n for n in listed["notes"])


def test_the_card_counts_the_central_directory_not_the_end_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "liar.zip"
    path.write_bytes(raw_zip([(f"f{i}.txt", b"x") for i in range(5)], claimed_entries=1))
    card = card_for(path)
    assert card.facts["entries"] == 5
    assert "the end record claims 1 entries; the central directory holds 5" in card.warnings
    assert card.facts["first_entries"] == [f"f{i}.txt" for i in range(5)]
    # Over the bound: counting stops after it, and the card says so rather than trust the claim.
    from leanreplay.cards import _archive

    monkeypatch.setattr(_archive, "MAX_LISTED_ENTRIES", 3)
    card = card_for(path)
    assert card.facts["entries"] is None
    assert any(
        "claims 1 entries but the central directory holds over 3" in w for w in card.warnings
    )


def test_archive_list_walks_the_directory_itself(ws: Workspace) -> None:
    (root(ws) / "liar.zip").write_bytes(
        raw_zip([(f"f{i}.txt", b"x") for i in range(5)], claimed_entries=1)
    )
    listed = ws.archive_list("liar.zip")
    assert listed["total_entries"] == 5
    assert [e["name"] for e in listed["entries"]] == [f"f{i}.txt" for i in range(5)]


def test_a_member_lying_about_its_compressed_size_is_bounded_by_what_was_read(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The recorded compressed size counts 1 MiB of junk after the real data: a budget of
    # 20x the claim would allow 20 MiB; 20x the bytes really inflated from allows far less.
    monkeypatch.setattr(_archives, "MIN_MEMBER_BYTES", MIB)
    monkeypatch.setattr(_archives, "MAX_RATIO", 20)
    (root(ws) / "liar.zip").write_bytes(raw_zip([("zeros.txt", b"\0" * 8 * MIB)], pad=MIB))
    with pytest.raises(WrongFileTypeError, match="compressed bytes read.*decompression bomb"):
        ws.file_read("liar.zip", member="zeros.txt")
    # The same member honestly sized is within the bound and read.
    (root(ws) / "honest.zip").write_bytes(raw_zip([("small.txt", b"ok\n" * 1000)], pad=0))
    assert ws.file_read("honest.zip", member="small.txt", end_line=1)["content"] == "1\tok"


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_repeated_names_one_rule_for_zip_and_tar(ws: Workspace, kind: str) -> None:
    members = [("a.txt", b"first\n"), ("b.txt", b"b\n"), ("a.txt", b"second\n")]
    data = raw_zip(members) if kind == "zip" else tar_of(members)
    (root(ws) / f"dup.{kind}").write_bytes(data)
    listed = ws.archive_list(f"dup.{kind}")
    assert [e["name"] for e in listed["entries"]] == ["a.txt", "b.txt", "a.txt"]
    assert any(
        '1 entries repeat an earlier entry\'s name (e.g. "a.txt"): member= reads the first' in n
        for n in listed["notes"]
    )
    assert ws.file_read(f"dup.{kind}", member="a.txt")["content"] == "1\tfirst"


def test_a_gzip_whose_content_starts_with_a_zero_block_is_one_file(ws: Workspace) -> None:
    (root(ws) / "data.bin.gz").write_bytes(gzip.compress(b"\0" * 512 + b"hello\n"))
    listed = ws.archive_list("data.bin.gz")
    assert listed["format"] == "gzip"
    assert [e["name"] for e in listed["entries"]] == ["data.bin"]
    path = ws.file_read("data.bin.gz", member="data.bin")["path"]
    assert path.endswith("data.bin")
    # A real empty tar (zeros only) is still an empty tar.
    (root(ws) / "empty.tar.gz").write_bytes(gzip.compress(tar_of([])))
    assert ws.archive_list("empty.tar.gz")["format"] == "tar.gz"
    assert ws.archive_list("empty.tar.gz")["total_entries"] == 0


def test_a_zip_entry_dated_month_zero_is_listed(ws: Workspace) -> None:
    (root(ws) / "dated.zip").write_bytes(raw_zip([("a.txt", b"a\n")], dos_date=(44 << 9) | 1))
    (entry,) = ws.archive_list("dated.zip")["entries"]
    assert entry["name"] == "a.txt"
    assert entry["modified"] is None
    assert ws.file_read("dated.zip", member="a.txt")["content"] == "1\ta"
