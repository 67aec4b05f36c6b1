"""Archives: list the entries of zip, tar (plain, gzip, bzip2, xz) and single compressed files,
and extract one member into the workspace's member cache for the other file tools.

Member names are hostile: they are matched as strings and never become paths. An extracted
member is written under ``members/<hash>/`` with a sanitized base name (its extension kept, so
the card recognizes it), and the archive it came from is recorded beside (`member_sources`), so
that a member is served only to whoever may read its archive; absolute, ``..``, link and device
members are listed but never extracted. Decompression is bounded per member (`MAX_RATIO` times
its compressed size past a `MIN_MEMBER_BYTES` floor, and `MAX_MEMBER_BYTES` in all).
"""

from __future__ import annotations

import bz2
import contextlib
import datetime
import gzip
import hashlib
import json
import lzma
import os
import re
import stat
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from typing import IO, Any

from .._errors import InvalidArgumentError, NotFoundError, WrongFileTypeError
from ._paths import OpenFile, fingerprint

__all__ = ["MAX_MEMBER_BYTES", "extract_member", "list_archive", "member_sources"]

MAX_RATIO = 200
MIN_MEMBER_BYTES = 64 * 1024 * 1024
MAX_MEMBER_BYTES = 8 * 1024**3
MAX_LIST_SECONDS = 20.0
_COPY = 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_OPENERS = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}


def _compression(head: bytes) -> str | None:
    return next((kind for magic, kind in _OPENERS.items() if head.startswith(magic)), None)


def _unsafe(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return name.startswith(("/", "\\")) or ".." in parts or bool(re.match(r"^[A-Za-z]:", name))


@contextlib.contextmanager
def _stream(f: OpenFile) -> Iterator[IO[bytes]]:
    with os.fdopen(os.dup(f.fd), "rb") as stream:
        yield stream


def _decompressed(stream: IO[bytes], kind: str) -> gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=stream, mode="rb")
    if kind == "bzip2":
        return bz2.BZ2File(stream, "rb")
    return lzma.LZMAFile(stream, "rb")


def _kind(f: OpenFile) -> str:
    head = os.pread(f.fd, 512, 0)
    if head.startswith(b"PK"):
        return "zip"
    compression = _compression(head)
    if compression is not None:
        return compression
    if (len(head) >= 262 and head[257:262] == b"ustar") or f.path.lower().endswith(".tar"):
        return "tar"
    raise WrongFileTypeError(
        f"{f.path!r} is not an archive archive_list reads (zip, tar, tar.gz, gz, bz2, xz)"
    )


def _entry(name: str, size: int | None, kind: str, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": kind, "size": size, **more}
    if _unsafe(name):
        out["unsafe"] = True  # listed, never extracted
    return out


def _zip_type(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if info.is_dir():
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "file"


def _single_name(f: OpenFile, kind: str) -> str:
    base = os.path.basename(f.path)
    stem = re.sub(r"\.(gz|gzip|bz2|xz)$", "", base, flags=re.IGNORECASE)
    return stem if stem != base else base + ".out"


def list_archive(f: OpenFile, prefix: str, limit: int) -> dict[str, Any]:
    """Entries whose name starts with ``prefix``, at most ``limit``, in archive order."""
    kind = _kind(f)
    entries: list[dict[str, Any]] = []
    more = False
    notes: list[str] = []
    total: int | None = None
    if kind == "zip":
        with _stream(f) as stream:
            try:
                with zipfile.ZipFile(stream) as z:
                    infos = z.infolist()
            except (zipfile.BadZipFile, OSError, ValueError) as exc:
                raise WrongFileTypeError(f"{f.path!r} is not a readable zip: {exc}") from None
        total = len(infos)
        for info in infos:
            if not info.filename.startswith(prefix):
                continue
            if len(entries) >= limit:
                more = True
                break
            entries.append(
                _entry(
                    info.filename,
                    info.file_size,
                    _zip_type(info),
                    compressed=info.compress_size,
                    modified=datetime.datetime(*info.date_time).isoformat(),
                )
            )
    else:
        deadline = time.monotonic() + MAX_LIST_SECONDS
        with _stream(f) as stream:
            try:
                with tarfile.open(fileobj=stream, mode="r|*") as t:
                    seen = 0
                    for member in t:
                        seen += 1
                        if time.monotonic() > deadline:
                            notes.append(f"stopped after {MAX_LIST_SECONDS:.0f}s of reading")
                            more = True
                            break
                        if not member.name.startswith(prefix):
                            continue
                        if len(entries) >= limit:
                            more = True
                            break
                        entries.append(
                            _entry(
                                member.name,
                                member.size,
                                "file"
                                if member.isfile()
                                else "dir"
                                if member.isdir()
                                else "link"
                                if member.issym() or member.islnk()
                                else "other",
                                modified=datetime.datetime.fromtimestamp(
                                    member.mtime, datetime.UTC
                                ).isoformat(),
                            )
                        )
                    else:
                        total = seen
                    if kind != "tar":
                        kind = "tar." + {"gzip": "gz", "bzip2": "bz2"}.get(kind, kind)
            except tarfile.ReadError:
                if kind == "tar":
                    raise WrongFileTypeError(f"{f.path!r} is not a readable tar archive") from None
                name = _single_name(f, kind)
                entries = (
                    [_entry(name, None, "file", compression=kind)]
                    if name.startswith(prefix)
                    else []
                )
                total = 1
                notes.append(
                    f"a single {kind}-compressed file; read it with member={json.dumps(name)}"
                )
            except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
                raise WrongFileTypeError(f"{f.path!r}: archive unreadable: {exc}") from None
    result: dict[str, Any] = {
        "path": f.path,
        "format": kind,
        "prefix": prefix,
        "entries": entries,
        "total_entries": total,
        "notes": notes,
        "next": None,
    }
    if more:
        notes.append(f"more than {limit} entries match; narrow the prefix or raise the limit")
    files = [e["name"] for e in entries if e["type"] == "file" and not e.get("unsafe")]
    if files:
        notes.append(
            "read a member with file_read, file_search, doc_read, table_read or image_view and "
            f"member=, e.g. file_read(path={json.dumps(f.path)}, member={json.dumps(files[0])})"
        )
    return result


class _Limited:
    def __init__(self, limit: int, shown: str) -> None:
        self.limit = limit
        self.shown = shown
        self.written = 0

    def copy(self, source: Any, target: IO[bytes]) -> None:
        while chunk := source.read(_COPY):
            self.written += len(chunk)
            if self.written > self.limit:
                raise WrongFileTypeError(
                    f"{self.shown} expands past {self.limit:,} bytes; refused as a "
                    "decompression bomb"
                )
            target.write(chunk)


def _budget(compressed: int) -> int:
    return min(MAX_MEMBER_BYTES, max(MIN_MEMBER_BYTES, MAX_RATIO * compressed))


def extract_member(f: OpenFile, member: str, cache_dir: str) -> str:
    """The path of ``member`` of the archive ``f``, extracted (once) under ``cache_dir``."""
    if not member or "\x00" in member or len(member) > 4096:
        raise InvalidArgumentError("member must be a non-empty entry name from archive_list")
    if _unsafe(member):
        raise InvalidArgumentError(
            f"member {member!r} is an absolute or '..' name; such entries are never extracted"
        )
    key = hashlib.sha256(f"{fingerprint(f)}\x00{member}".encode()).hexdigest()[:32]
    base = _SAFE.sub("_", os.path.basename(member.rstrip("/")))[-100:].lstrip(".") or "member"
    folder = os.path.join(cache_dir, key)
    target = os.path.join(folder, base)
    _record_source(cache_dir, key, f.path)
    if os.path.exists(target):
        return target
    os.makedirs(folder, exist_ok=True)
    tmp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
    shown = f"member {member!r} of {f.path!r}"
    kind = _kind(f)
    try:
        with _stream(f) as stream, open(tmp, "wb") as out:
            if kind == "zip":
                _extract_zip(stream, member, out, shown, f.path)
            else:
                _extract_stream(stream, kind, member, out, shown, f)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return target


def _sources_file(cache_dir: str, key: str) -> str:
    # Beside the member cache, not in it: the file tools never serve it.
    return os.path.join(cache_dir + "-sources", key)


def _record_source(cache_dir: str, key: str, archive: str) -> None:
    """Remember that the members under ``key`` come from ``archive`` (its resolved path)."""
    if archive in member_sources(cache_dir, os.path.join(cache_dir, key)):
        return
    os.makedirs(cache_dir + "-sources", exist_ok=True)
    fd = os.open(
        _sources_file(cache_dir, key),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
    )
    try:
        os.write(fd, archive.encode("utf-8", "surrogateescape") + b"\0")  # one write: atomic
    finally:
        os.close(fd)


def member_sources(cache_dir: str, real: str) -> list[str]:
    """The archives (resolved paths) that the extracted member at ``real``, a path under
    ``cache_dir``, was extracted from: whoever may read one of them may read the member."""
    key = os.path.relpath(real, cache_dir).split(os.sep, 1)[0]
    try:
        with open(_sources_file(cache_dir, key), "rb") as recorded:
            raw = recorded.read(1024 * 1024)
    except (OSError, ValueError):
        return []
    return [p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p]


def _missing(member: str, path: str) -> NotFoundError:
    return NotFoundError(
        f"no member {member!r} in {path!r}; list the entries with archive_list(path="
        f"{json.dumps(path)})"
    )


def _extract_zip(stream: IO[bytes], member: str, out: IO[bytes], shown: str, path: str) -> None:
    try:
        with zipfile.ZipFile(stream) as z:
            info = z.NameToInfo.get(member)
            if info is None:
                raise _missing(member, path)
            if _zip_type(info) != "file":
                raise InvalidArgumentError(f"{shown} is a {_zip_type(info)}, not a file")
            with z.open(info) as source:
                _Limited(_budget(info.compress_size), shown).copy(source, out)
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError, OSError) as exc:
        raise WrongFileTypeError(f"{shown} cannot be extracted: {exc}") from None


def _extract_stream(
    stream: IO[bytes], kind: str, member: str, out: IO[bytes], shown: str, f: OpenFile
) -> None:
    budget = _budget(f.size)
    try:
        with tarfile.open(fileobj=stream, mode="r|*") as t:
            for entry in t:
                if entry.name != member:
                    continue
                if not entry.isfile():
                    raise InvalidArgumentError(f"{shown} is not a regular file; not extracted")
                source = t.extractfile(entry)
                if source is None:
                    raise WrongFileTypeError(f"{shown} has no data")
                _Limited(min(budget, MAX_MEMBER_BYTES), shown).copy(source, out)
                return
        raise _missing(member, f.path)
    except tarfile.ReadError:
        if kind == "tar" or member != _single_name(f, kind):
            raise _missing(member, f.path) from None
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise WrongFileTypeError(f"{shown} cannot be extracted: {exc}") from None
    stream.seek(0)
    out.seek(0)
    out.truncate()
    try:
        with _decompressed(stream, kind) as inflated:
            _Limited(budget, shown).copy(inflated, out)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise WrongFileTypeError(f"{shown} cannot be decompressed: {exc}") from None
