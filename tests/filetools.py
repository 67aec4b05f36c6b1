"""What the file-tool and card tests share: a workspace over copies of sample files, and zip
surgery on office files."""

from __future__ import annotations

import io
import shutil
import zipfile
from collections.abc import Iterable
from pathlib import Path

from leanreplay.index import Workspace
from tests.conftest import SAMPLES


def sample_workspace(tmp_path: Path, names: Iterable[str]) -> Workspace:
    """A workspace (home in ``tmp_path/home``) whose one root holds copies of these samples."""
    folder = tmp_path / "root"
    folder.mkdir()
    for name in names:
        shutil.copy(SAMPLES / name, folder / name)
    return Workspace(tmp_path / "home", [folder])


def root(ws: Workspace) -> Path:
    """The workspace's first root."""
    return Path(ws.roots[0])


def replace_member(data: bytes, member: str, body: bytes) -> bytes:
    """The zip ``data`` with ``member``'s bytes replaced by ``body`` (deflated)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            payload = body if info.filename == member else src.read(info)
            dst.writestr(info.filename, payload, zipfile.ZIP_DEFLATED)
    return out.getvalue()
