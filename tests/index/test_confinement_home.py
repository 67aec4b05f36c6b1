"""What the roots never admit: the workspace's own home (even inside a root), saved
attachments of conversations outside the allowlist; and what the operator is told."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
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


def _zip(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("notes/secret.txt", text)
    return buffer.getvalue()


def test_archive_members_are_read_only_by_whoever_may_read_the_archive(tmp_path: Path) -> None:
    """A member extracted from conversation a's attachment is scoped like the attachment:
    a workspace limited to b neither reads nor lists it; one rooted elsewhere neither reads
    a member of an archive in another root."""
    home = tmp_path / "home"
    archive = _zip("a's plans\n")
    data = base64.b64encode(archive).decode()
    block = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/zip", "data": data},
    }
    digest = hashlib.sha256(archive).hexdigest()
    saved = str(home / "attachments" / digest[:2] / f"{digest}.zip")
    with Workspace(home) as ws:
        ws.append("a", {"role": "user", "content": [block]})
        ws.append("b", {"role": "user", "content": "no files here"})
    with Workspace(home, conversations=["a"]) as ws:
        read = ws.file_read(saved, member="notes/secret.txt")
        assert read["content"] == "1\ta's plans"
        member = read["path"]
        assert member.startswith(str(home / "members"))
        assert ws.file_read(member)["content"] == "1\ta's plans"  # as its next calls do
        assert len(ws.file_list(str(home / "members"))["files"]) == 1
    with Workspace(home, conversations=["b"]) as ws:
        for call in (lambda: ws.file_read(member), lambda: ws.file_search(member, "plans")):
            with pytest.raises(NotFoundError, match="no file at"):
                call()
        listed = ws.file_list(str(home / "members"))
        assert listed["files"] == []
        assert "plans" not in str(listed)
    # Members of an archive in a root: only for workspaces whose roots hold the archive.
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
    (tmp_path / "x" / "bundle.zip").write_bytes(_zip("x's plans\n"))
    with Workspace(home, [tmp_path / "x"]) as ws:
        member = ws.file_read("bundle.zip", member="notes/secret.txt")["path"]
    with Workspace(home, [tmp_path / "y"]) as ws, pytest.raises(NotFoundError):
        ws.file_read(member)
    with Workspace(home, [tmp_path / "x"]) as ws:
        assert ws.file_read(member)["content"] == "1\tx's plans"
