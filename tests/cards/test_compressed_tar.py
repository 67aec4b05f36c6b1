"""Cards of compressed tars: read whole when small, from their head only when large or bombs."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from leanreplay.cards import card_for
from leanreplay.cards._archive import HEAD_INPUT_BYTES, HEAD_OUTPUT_BYTES

MODES = {"gz": "w:gz", "bz2": "w:bz2", "xz": "w:xz"}


def _tar(path: Path, mode: str, members: dict[str, bytes]) -> None:
    with tarfile.open(path, mode) as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("suffix", sorted(MODES))
def test_a_small_compressed_tar_gets_exact_entries_and_size(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"small.tar.{suffix}"
    _tar(path, MODES[suffix], {"b.txt": b"bb", "a/c.txt": b"ccc", "z.bin": b"\0" * 100})
    card = card_for(path)
    assert card.facts["entries"] == 3
    assert card.facts["uncompressed_bytes"] == 105
    assert card.facts["first_entries"] == ["a/c.txt", "b.txt", "z.bin"]
    assert not card.warnings


def test_a_large_compressed_tar_gives_its_first_names_and_says_the_rest_is_unread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "big.tar.gz"
    # Incompressible members, so the compressed file is well past the head that is read.
    members = {f"part{i:03}.bin": os.urandom(64 * 1024) for i in range(40)}
    _tar(path, "w:gz", members)
    assert path.stat().st_size > 2 * HEAD_INPUT_BYTES
    card = card_for(path)
    assert "entries" not in card.facts
    assert card.facts["first_entries"] == [f"part{i:03}.bin" for i in range(10)]
    assert any("archive_list lists them all" in w for w in card.warnings)


def test_a_decompression_bomb_stops_at_the_inflated_bound(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tar.gz"
    with tarfile.open(path, "w:gz") as t:  # 4x the inflated bound in zeros, ~100 KB compressed
        info = tarfile.TarInfo("zeros.bin")
        info.size = 4 * HEAD_OUTPUT_BYTES

        class Zeros(io.RawIOBase):
            left = info.size

            def readable(self) -> bool:
                return True

            def readinto(self, b: bytearray) -> int:  # type: ignore[override]
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n

        t.addfile(info, io.BufferedReader(Zeros(), 1 << 20))
        info2 = tarfile.TarInfo("after.txt")
        t.addfile(info2, io.BytesIO(b""))
    assert path.stat().st_size < HEAD_INPUT_BYTES, "the input bound would stop it first"
    card = card_for(path)
    # Only the inflated bound can have stopped the read before "after.txt".
    assert card.facts["first_entries"] == ["zeros.bin"]
    assert "entries" not in card.facts
    assert any("head only (1 seen)" in w for w in card.warnings)


def test_garbage_named_like_a_compressed_tar_gets_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "fake.tar.gz"
    path.write_bytes(gzip.compress(b"not a tar archive at all" * 40))
    card = card_for(path)
    assert "entries" not in card.facts
    assert any("tar stream unreadable" in w for w in card.warnings)
