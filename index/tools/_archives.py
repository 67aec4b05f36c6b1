"""Archives: list the entries of zip, tar (plain, gzip, bzip2, xz) and single compressed files,
and extract one member into the workspace's member cache for the other file tools.

Member names are hostile: they are matched as strings and never become paths. An extracted
member is written under ``members/<hash>/`` with a sanitized base name (its extension kept, so
the card recognizes it), and the archive it came from is recorded beside (`member_sources`), so
that a member is served only to whoever may read its archive; absolute, ``..``, link and device
members are listed but never extracted. Decompression is bounded per member (`MAX_RATIO` times
its compressed size past a `MIN_MEMBER_BYTES` floor, and `MAX_MEMBER_BYTES` in all); a zip
member's compressed size is the bytes really read from it, never the size its header claims.

A zip's central directory is walked header by header (``leanreplay.cards.walk_zip``), never
parsed whole. A tar is read through a meter checked on every read, inside members too: at most
`MAX_LIST_SECONDS` (`MAX_EXTRACT_SECONDS` to extract), a compressed one inflated to at most
`MAX_RATIO` times the archive's size, and a long-name or pax block of at most
`MAX_TAR_HEADER_BYTES`. A name that repeats is read as its first entry, in zip and tar alike,
and the listing says so.
"""

from __future__ import annotations

import bz2
import contextlib
import datetime
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import stat
import struct
import tarfile
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

from leanreplay.cards import ZipEntry, inflate_member, walk_zip

from .._errors import InvalidArgumentError, NotFoundError, WrongFileTypeError
from ._paths import OpenFile, fingerprint

__all__ = [
    "MAX_MEMBER_BYTES",
    "MemberStream",
    "extract_member",
    "first_zip_entries",
    "list_archive",
    "member_sources",
]

MAX_RATIO = 200
MIN_MEMBER_BYTES = 64 * 1024 * 1024
MAX_MEMBER_BYTES = 8 * 1024**3
MAX_LIST_SECONDS = 20.0  # archive_list reads for at most this long (inside members too)
MAX_EXTRACT_SECONDS = 50.0  # one member's extraction, the entries before it included
MAX_TAR_HEADER_BYTES = 1024 * 1024  # a tar long-name or pax header block (read whole)
MAX_TRACKED_NAMES = 200_000  # names remembered to tell which repeat
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
        stream.seek(0)  # a duplicate shares the offset an earlier read moved
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


def _zip_type(entry: ZipEntry) -> str:
    mode = entry.external_attr >> 16
    if entry.is_dir:
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "file"


def _single_name(f: OpenFile, kind: str) -> str:
    base = os.path.basename(f.path)
    stem = re.sub(r"\.(gz|gzip|bz2|xz)$", "", base, flags=re.IGNORECASE)
    return stem if stem != base else base + ".out"


class _Stopped(Exception):
    """A bound of the archive's reading was reached (the message says which)."""


class _Metered(io.RawIOBase):
    """The bytes a tar stream is read from (inflated, for a compressed tar), checked on every
    read, inside members too: at most ``limit`` bytes and until ``deadline``."""

    def __init__(self, source: Any, limit: int, deadline: float, compressed: bool) -> None:
        self.source, self.limit, self.deadline, self.compressed = (
            source,
            limit,
            deadline,
            compressed,
        )
        self.seconds = deadline - time.monotonic()
        self.read_bytes = 0
        self.nonzero = False  # any byte that is not NUL seen yet

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if time.monotonic() > self.deadline:
            raise _Stopped(f"stopped after {self.seconds:.0f}s of reading")
        data = self.source.read(min(len(buffer), _COPY))
        self.read_bytes += len(data)
        if self.compressed and self.read_bytes > self.limit:
            raise _Stopped(
                f"stopped after {self.limit:,} inflated bytes ({MAX_RATIO}x the archive's size, "
                "the bound of a compressed archive): the rest was not read"
            )
        if not self.nonzero and data.strip(b"\0"):
            self.nonzero = True
        buffer[: len(data)] = data
        return len(data)


class _TarInfo(tarfile.TarInfo):
    """A tar header whose long-name or pax block is bounded (tarfile reads it whole)."""

    def _proc_member(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _HEADER_BLOCKS and self.size > MAX_TAR_HEADER_BYTES:
            raise _Stopped(
                f"a tar header block of {self.size:,} bytes (over {MAX_TAR_HEADER_BYTES:,}): "
                "the rest was not read"
            )
        return super()._proc_member(tarfile)  # type: ignore[misc, no-any-return]


_HEADER_BLOCKS = frozenset(
    (
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
    )
)


@contextlib.contextmanager
def _tar_stream(
    f: OpenFile, kind: str, seconds: float = MAX_LIST_SECONDS
) -> Iterator[tarfile.TarFile]:
    """The archive as a tar stream (inflated here, so that every read is metered)."""
    deadline = time.monotonic() + seconds
    with _stream(f) as stream:
        source: Any = stream if kind == "tar" else _decompressed(stream, kind)
        metered = _Metered(source, _budget(f.size), deadline, kind != "tar")
        with tarfile.open(
            fileobj=io.BufferedReader(metered, _COPY), mode="r|", tarinfo=_TarInfo
        ) as t:
            yield t


def _only_zeros(f: OpenFile, kind: str) -> bool:
    """Whether the compressed file inflates to NUL bytes only (an empty tar does; a file whose
    content merely starts with a zero block, which tarfile reads as an empty tar, does not)."""
    with _stream(f) as stream:
        metered = _Metered(
            _decompressed(stream, kind), _budget(f.size), time.monotonic() + MAX_LIST_SECONDS, True
        )
        try:
            while metered.read(_COPY) and not metered.nonzero:
                pass
        except (_Stopped, OSError, EOFError, lzma.LZMAError):
            pass
    return not metered.nonzero


def _modified(timestamp: float) -> str | None:
    try:
        return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat()
    except (ValueError, OverflowError, OSError):
        return None  # a crafted date


class _Names:
    """Names seen in an archive, to tell which repeat (at most `MAX_TRACKED_NAMES` kept)."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.repeated: list[str] = []
        self.count = 0

    def add(self, name: str) -> None:
        key = hash(name)
        if key in self.seen:
            self.count += 1
            if len(self.repeated) < 3 and name not in self.repeated:
                self.repeated.append(name)
        elif len(self.seen) < MAX_TRACKED_NAMES:
            self.seen.add(key)

    def note(self) -> list[str]:
        if not self.count:
            return []
        shown = ", ".join(json.dumps(n) for n in self.repeated)
        return [
            f"{self.count:,} entries repeat an earlier entry's name (e.g. {shown}): member= "
            "reads the first entry of a name, in zip and tar alike"
        ]


def _zip_entries(f: OpenFile) -> Iterator[ZipEntry]:
    try:
        yield from walk_zip(f.fd, f.size)
    except (zipfile.BadZipFile, struct.error) as exc:
        raise WrongFileTypeError(f"{f.path!r} is not a readable zip: {exc}") from None


def list_archive(f: OpenFile, prefix: str, limit: int) -> dict[str, Any]:
    """Entries whose name starts with ``prefix``, at most ``limit``, in archive order."""
    kind = _kind(f)
    entries: list[dict[str, Any]] = []
    more = False
    notes: list[str] = []
    total: int | None = None
    names = _Names()
    if kind == "zip":
        deadline = time.monotonic() + MAX_LIST_SECONDS
        seen = 0
        for entry in _zip_entries(f):
            seen += 1
            if seen % 1024 == 0 and time.monotonic() > deadline:
                notes.append(f"stopped after {MAX_LIST_SECONDS:.0f}s of reading, {seen:,} entries")
                more = True
                break
            names.add(entry.name)
            if not entry.name.startswith(prefix):
                continue
            if len(entries) >= limit:
                more = True
                break
            entries.append(
                _entry(
                    entry.name,
                    entry.size,
                    _zip_type(entry),
                    compressed=entry.compressed,
                    modified=entry.modified(),
                )
            )
        else:
            total = seen
    else:
        try:
            with _tar_stream(f, kind) as t:
                seen = 0
                for member in t:
                    seen += 1
                    names.add(member.name)
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
                            modified=_modified(member.mtime),
                        )
                    )
                else:
                    total = seen
            if seen == 0 and kind != "tar" and not _only_zeros(f, kind):
                raise tarfile.ReadError("a zero block, then data: not a tar")
            if kind != "tar":
                kind = "tar." + {"gzip": "gz", "bzip2": "bz2"}.get(kind, kind)
        except _Stopped as exc:
            notes.append(str(exc))
            more = True
            total = None
            if kind != "tar":
                kind = "tar." + {"gzip": "gz", "bzip2": "bz2"}.get(kind, kind)
        except tarfile.ReadError:
            if kind == "tar":
                raise WrongFileTypeError(f"{f.path!r} is not a readable tar archive") from None
            name = _single_name(f, kind)
            entries = (
                [_entry(name, None, "file", compression=kind)] if name.startswith(prefix) else []
            )
            total = 1
            names = _Names()
            notes.append(f"a single {kind}-compressed file; read it with member={json.dumps(name)}")
        except (tarfile.TarError, OSError, EOFError, ValueError, lzma.LZMAError) as exc:
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
    notes += names.note()
    if more and len(entries) >= limit:
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
                _extract_zip(f, member, out, shown)
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


class MemberStream(io.RawIOBase):
    """One zip member's inflated bytes, refused as a decompression bomb once they pass
    ``ratio`` times the compressed bytes really read (past a ``floor``, and ``cap`` in all):
    a member's recorded compressed size is a claim, never its budget."""

    def __init__(
        self,
        f: OpenFile,
        entry: ZipEntry,
        shown: str,
        *,
        floor: int | None = None,
        ratio: int | None = None,
        cap: int | None = None,
    ) -> None:
        self._steps = inflate_member(f.fd, f.size, entry)
        self._shown = shown
        self._floor = MIN_MEMBER_BYTES if floor is None else floor
        self._ratio = MAX_RATIO if ratio is None else ratio
        self._cap = MAX_MEMBER_BYTES if cap is None else cap
        self._chunk = memoryview(b"")
        self.written = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._chunk:
            try:
                out, consumed = next(self._steps)
            except StopIteration:
                return 0
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
                raise WrongFileTypeError(f"{self._shown} cannot be read: {exc}") from None
            self.written += len(out)
            limit = min(self._cap, max(self._floor, self._ratio * consumed))
            if self.written > limit:
                raise WrongFileTypeError(
                    f"{self._shown} expands past {limit:,} bytes ({self._ratio}x the "
                    f"{consumed:,} compressed bytes read); refused as a decompression bomb"
                )
            self._chunk = memoryview(out)
        n = min(len(buffer), len(self._chunk))
        buffer[:n] = self._chunk[:n]
        self._chunk = self._chunk[n:]
        return n


def first_zip_entries(f: OpenFile, limit: int) -> dict[str, ZipEntry]:
    """Name -> entry of a zip's members, the first entry of a repeated name (as archive_list
    says and the tar readers do); a zip of over ``limit`` entries is refused."""
    out: dict[str, ZipEntry] = {}
    for count, entry in enumerate(_zip_entries(f), start=1):
        if count > limit:
            raise WrongFileTypeError(f"{f.path!r} has over {limit:,} zip entries")
        out.setdefault(entry.name, entry)
    return out


def _extract_zip(f: OpenFile, member: str, out: IO[bytes], shown: str) -> None:
    deadline = time.monotonic() + MAX_EXTRACT_SECONDS
    for count, entry in enumerate(_zip_entries(f), start=1):
        if count % 1024 == 0 and time.monotonic() > deadline:
            raise WrongFileTypeError(
                f"{shown}: the zip's central directory was not read in {MAX_EXTRACT_SECONDS:.0f}s"
            )
        if entry.name == member:
            break
    else:
        raise _missing(member, f.path)
    if _zip_type(entry) != "file":
        raise InvalidArgumentError(f"{shown} is a {_zip_type(entry)}, not a file")
    stream = MemberStream(f, entry, shown, cap=min(MAX_MEMBER_BYTES, _budget(entry.compressed)))
    _Limited(MAX_MEMBER_BYTES, shown).copy(io.BufferedReader(stream, _COPY), out)


def _extract_stream(
    stream: IO[bytes], kind: str, member: str, out: IO[bytes], shown: str, f: OpenFile
) -> None:
    budget = _budget(f.size)
    try:
        with _tar_stream(f, kind, MAX_EXTRACT_SECONDS) as t:
            seen = 0
            for entry in t:
                seen += 1
                if entry.name != member:
                    continue
                if not entry.isfile():
                    raise InvalidArgumentError(f"{shown} is not a regular file; not extracted")
                source = t.extractfile(entry)
                if source is None:
                    raise WrongFileTypeError(f"{shown} has no data")
                _Limited(min(budget, MAX_MEMBER_BYTES), shown).copy(source, out)
                return
        if seen or kind == "tar" or _only_zeros(f, kind):
            raise _missing(member, f.path)
        raise tarfile.ReadError("a zero block, then data: not a tar")
    except _Stopped as exc:
        raise WrongFileTypeError(f"{shown} cannot be extracted: {exc}") from None
    except tarfile.ReadError:
        if kind == "tar" or member != _single_name(f, kind):
            raise _missing(member, f.path) from None
    except (tarfile.TarError, EOFError, OSError, lzma.LZMAError) as exc:
        raise WrongFileTypeError(f"{shown} cannot be extracted: {exc}") from None
    stream.seek(0)
    out.seek(0)
    out.truncate()
    try:
        with _decompressed(stream, kind) as inflated:
            _Limited(budget, shown).copy(inflated, out)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise WrongFileTypeError(f"{shown} cannot be decompressed: {exc}") from None
