"""What the roots never admit: the workspace's own home (even inside a root), saved
attachments of conversations outside the allowlist; and what the operator is told."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from leanreplay.index import NotFoundError, OutsideRootsError, Workspace
from tests.conftest import SAMPLES

PNG = (SAMPLES / "red_64x48.png").read_bytes()


def _image_message() -> dict[str, object]:
    data = base64.b64encode(PNG).decode()
    source = {"type": "base64", "media_type": "image/png", "data": data}
    return {"role": "user", "content": [{"type": "image", "source": source}]}


def _saved(home: Path) -> str:
    digest = hashlib.sha256(PNG).hexdigest()
    return str(home / "attachments" / digest[:2] / f"{digest}.png")


def test_the_home_inside_a_root_is_never_served(tmp_path: Path) -> None:
    home = tmp_path / "project" / ".leanreplay"
    with Workspace(home, [tmp_path / "project"]) as ws:
        ws.append("c1", {"role": "user", "content": "secret plans"})
        for path in (".leanreplay/store.sqlite3", str(home / "store.sqlite3")):
            with pytest.raises(OutsideRootsError, match="inside the leanreplay home"):
                ws.file_read(path)
        with pytest.raises(OutsideRootsError, match="inside the leanreplay home"):
            ws.file_search(".leanreplay/store.sqlite3-wal", "secret")
        (tmp_path / "project" / "notes.txt").write_text("fine\n")
        assert ws.file_read("notes.txt")["content"] == "1\tfine"


def test_saved_attachments_are_read_only_for_the_allowed_conversations(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Workspace(home) as ws:
        ws.append("a", _image_message())
        ws.append("b", {"role": "user", "content": "no files here"})
    saved = _saved(home)
    with Workspace(home, conversations=["a"]) as ws:
        assert ws.image_view(saved)["width"] == 64
    with Workspace(home, conversations=["b"]) as ws:
        with pytest.raises(NotFoundError, match="no file at"):
            ws.image_view(saved)
        with pytest.raises(NotFoundError, match="no file at"):
            ws.file_read(saved)
    with Workspace(home) as ws:  # no allowlist: every saved attachment
        assert ws.image_view(saved)["width"] == 64


def test_root_slash_is_accepted_with_a_notice(tmp_path: Path) -> None:
    with Workspace(tmp_path / "home", ["/"]) as ws:
        assert any("root '/'" in n for n in ws.notices)
        with pytest.raises(OutsideRootsError, match="inside the leanreplay home"):
            ws.file_read(str(tmp_path / "home" / "store.sqlite3"))
    with Workspace(tmp_path / "home2", [tmp_path]) as ws:
        assert not any("root '/'" in n for n in ws.notices)
