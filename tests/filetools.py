"""What the file-tool and card tests share: a workspace over copies of sample files, and zip
surgery on office files."""

from __future__ import annotations

import io
import shutil
import struct
import zipfile
import zlib
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


def raw_zip(
    members: list[tuple[str, bytes]],
    *,
    claimed_entries: int | None = None,
    deflate: bool = True,
    pad: int = 0,
    padded: str | None = None,
    dos_date: int = (44 << 9) | (3 << 5) | 1,
) -> bytes:
    """A zip written by hand: each member deflated (``pad`` junk bytes after its data, and
    counted in its recorded compressed size; only ``padded``'s, if given), the end record
    claiming ``claimed_entries``."""
    out = io.BytesIO()
    central = io.BytesIO()
    for name, data in members:
        raw = zlib.compress(data, 9)[2:-4] if deflate else data
        raw += b"\xa5" * pad if padded in (None, name) else b""
        method = 8 if deflate else 0
        crc = zlib.crc32(data)
        encoded = name.encode()
        offset = out.tell()
        out.write(
            struct.pack(
                "<4sHHHHHLLLHH",
                b"PK\x03\x04",
                20,
                0,
                method,
                0,
                dos_date,
                crc,
                len(raw),
                len(data),
                len(encoded),
                0,
            )
        )
        out.write(encoded + raw)
        central.write(
            struct.pack(
                "<4sHHHHHHLLLHHHHHLL",
                b"PK\x01\x02",
                20,
                20,
                0,
                method,
                0,
                dos_date,
                crc,
                len(raw),
                len(data),
                len(encoded),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + encoded
        )
    start = out.tell()
    out.write(central.getvalue())
    count = len(members) if claimed_entries is None else claimed_entries
    out.write(
        struct.pack(
            "<4sHHHHLLH", b"PK\x05\x06", 0, 0, count, count, len(central.getvalue()), start, 0
        )
    )
    return out.getvalue()
