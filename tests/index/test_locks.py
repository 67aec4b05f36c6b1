"""`file_lock`: one holder at a time (flock on its own open file), its folder made when it
is missing, and a file standing where that folder goes refused as a home error."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanreplay.index import StoreError
from leanreplay.index._locks import file_lock


def test_second_holder_is_refused_until_the_first_lets_go(tmp_path: Path) -> None:
    path = str(tmp_path / "locks" / "fold.lock")  # the folder does not exist yet
    with file_lock(path) as first:
        assert first
        with file_lock(path) as second:
            assert not second
    with file_lock(path) as again:
        assert again
    assert (tmp_path / "locks" / "fold.lock").is_file()


def test_a_file_where_the_lock_folder_goes_is_a_home_error(tmp_path: Path) -> None:
    (tmp_path / "locks").write_text("not a folder")
    with (
        pytest.raises(StoreError, match="a file stands where the home needs a folder"),
        file_lock(str(tmp_path / "locks" / "fold.lock")),
    ):
        pass
