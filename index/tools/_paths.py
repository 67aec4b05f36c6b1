"""Confinement: file tools open only regular files inside the configured roots.

A path is resolved (symlinks, ``..``) first, and its containment checked per path component,
then against what a `Roots` keeps private even inside a root (the workspace's own home),
so a root ``/data/allow`` never admits ``/data/allow_secret``. The file is then opened by
walking from the root's own descriptor one component at a time with ``O_NOFOLLOW``: a symlink
swapped in after the check makes the walk fail instead of escaping. The descriptor is
``fstat``-ed before use, so FIFOs, devices, sockets and directories are refused without
blocking.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from .._errors import (
    InvalidArgumentError,
    NotAFileError,
    NotFoundError,
    OutsideRootsError,
    WorkspaceError,
    home_error,
    not_a_file,
)

__all__ = [
    "Gate",
    "OpenFile",
    "Roots",
    "admitted",
    "fingerprint",
    "inside",
    "no_roots_error",
    "open_confined",
    "open_confined_dir",
    "open_file",
    "resolve_roots",
    "root_notices",
]

MAX_PATH_CHARS = 4096
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass(frozen=True)
class OpenFile:
    fd: int
    path: str  # resolved, absolute
    size: int
    mtime_ns: int
    dev: int
    ino: int
    ctime_ns: int = 0  # 0 only where no stat of the file exists


def open_file(fd: int, path: str, st: os.stat_result | None = None) -> OpenFile:
    """An `OpenFile` from an open descriptor, the path it was opened by and its ``fstat``
    (taken here when not given): the one place the fields of a fingerprint are read."""
    st = os.fstat(fd) if st is None else st
    return OpenFile(fd, path, st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino, st.st_ctime_ns)


_EDGE = 64 * 1024


def fingerprint(f: OpenFile) -> str:
    """Identity of a file's content that a rewrite cannot cheaply keep: size, mtime, ctime
    (which no one can set back), device, inode and SHA-256 of the first and last 64 KiB."""
    h = hashlib.sha256(f"{f.size}:{f.mtime_ns}:{f.ctime_ns}:{f.dev}:{f.ino}".encode())
    h.update(os.pread(f.fd, _EDGE, 0))
    h.update(os.pread(f.fd, _EDGE, max(0, f.size - _EDGE)))
    return h.hexdigest()[:32]


Gate = Callable[[str, str], None]


class Roots(tuple[str, ...]):
    """Resolved roots, and what inside them is never served: ``private`` folders (the
    workspace's home: its store, indexes and copies), except the ``gates``: folders inside
    a private one (saved attachments, extracted archive members) where ``gate(real_path,
    shown_path)`` decides per file, and raises to refuse."""

    private: tuple[str, ...]
    gates: tuple[tuple[str, Gate], ...]

    def __new__(
        cls,
        roots: Sequence[str],
        *,
        private: Sequence[str] = (),
        gates: Mapping[str, Gate] | None = None,
    ) -> Roots:
        self = super().__new__(cls, roots)
        self.private = tuple(private)
        self.gates = tuple((gates or {}).items())
        return self

    def watched(self, folder: str) -> tuple[str, ...]:
        """The folders `check` looks at (private and gated ones) that lie inside ``folder``
        or hold it: a path under ``folder`` outside all of them needs no `check`."""
        kept = [*self.private, *(g for g, _ in self.gates)]
        return tuple(w for w in kept if inside(folder, w) or inside(w, folder))

    def check(self, real: str, shown: str) -> None:
        for folder, gate in self.gates:
            if inside(folder, real):
                gate(real, shown)
                return
        if any(inside(p, real) for p in self.private):
            raise OutsideRootsError(
                f"{shown!r} is inside the leanreplay home, whose store and indexes the file "
                "tools never serve; read conversations with conversation_read"
            )


def no_roots_error() -> OutsideRootsError:
    """The error of a file tool called with no roots at all."""
    return OutsideRootsError(
        "no roots are configured, so the file tools read no folder; give the workspace "
        "roots (the folders they may read)",
        names=("roots",),
    )


def root_notices(roots: Roots) -> list[str]:
    """What an operator should know about these roots (the CLI prints it; nothing refuses).
    A home inside a root needs no notice: its files are refused with a message that says so."""
    notices = []
    if "/" in roots:
        notices.append(
            "root '/' lets the file tools read every file this process can read; give "
            "narrower roots"
        )
    try:
        with open("/proc/sys/fs/protected_hardlinks") as f:
            protected = f.read().strip() != "0"
    except OSError:
        protected = True  # not Linux, or not visible: nothing to say
    if not protected:
        notices.append(
            "fs.protected_hardlinks is 0: anyone who can write inside a root can hard-link "
            "any file there; set it to 1 (confinement is by path, not by inode)"
        )
    return notices


def resolve_roots(roots: Sequence[str]) -> tuple[str, ...]:
    """Resolve each root once (a root may itself be a symlink) and require a directory."""
    resolved = []
    for root in roots:
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise InvalidArgumentError(f"root {root!r} is not a directory")
        resolved.append(real)
    return tuple(resolved)


def inside(root: str, path: str) -> bool:
    """Whether the resolved ``path`` is ``root`` or lies under it."""
    # Both are resolved paths (realpath: absolute, no "." or "..", no doubled or trailing
    # separator), so a prefix test at a separator decides; commonpath took 4x as long.
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


@contextmanager
def open_confined(path: object, roots: Sequence[str]) -> Iterator[OpenFile]:
    """Open ``path`` read-only if it is a regular file inside one of ``roots``.

    A relative path resolves against the first root that has it (roots in order), never
    the process's working directory; when none has it, the error names every place tried.
    """
    f = _open_confined(path, roots)
    try:
        yield f
    except OSError as exc:
        raise _read_error(str(path), exc) from None
    finally:
        os.close(f.fd)


def _read_error(shown: str, exc: OSError) -> Exception:
    """Reading a confined file meets OSErrors only when it changes under us (a symlink
    swapped, the file truncated or removed) or the home the tool writes to fails."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EEXIST, errno.ENOTDIR):
        return home_error("what this tool keeps in the home", exc)
    return NotFoundError(
        f"{shown!r} changed while it was read ({exc.strerror or 'replaced'}); retry"
    )


def _locate(path: object, roots: Sequence[str]) -> tuple[str, list[str], str]:
    """(root, components below it, resolved path) of ``path``: validated, resolved, inside a
    root and admitted by it. The one containment check of the file tools."""
    where = ", ".join(roots)
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(
            f"path must be a non-empty string; pass a file's path inside the roots ({where})"
        )
    if "\x00" in path:
        raise InvalidArgumentError(
            f"path {path[:80]!r} contains a NUL byte, which no file name holds; pass the "
            "name without it"
        )
    if len(path) > MAX_PATH_CHARS:
        raise InvalidArgumentError(
            f"path {path[:80]!r}... is {len(path)} characters, longer than any file path "
            f"({MAX_PATH_CHARS}); pass a shorter path inside the roots ({where})"
        )
    if not roots:
        raise no_roots_error()
    if os.path.isabs(path):
        joined = path
    else:
        tried = [os.path.join(r, path) for r in roots]
        found = next((t for t in tried if os.path.lexists(t)), None)
        if found is None:
            raise NotFoundError(
                f"no file {path!r} in any root; tried {', '.join(map(repr, tried))}; check "
                "the name, or pass an absolute path inside a root"
            )
        joined = found
    try:
        real = os.path.realpath(joined)
    except OSError as exc:  # a link that changed while it was being resolved
        raise NotFoundError(
            f"{path!r} changed while it was resolved ({exc.strerror}); retry"
        ) from None
    root = next((r for r in roots if inside(r, real)), None)
    if root is None:
        # Never name where it resolves: a link's target, /proc/self/cwd or /proc/self/fd/N
        # would tell the caller what lies outside the roots.
        raise OutsideRootsError(
            f"{path!r} is outside the allowed roots ({where}); read files inside them"
        )
    if isinstance(roots, Roots):
        roots.check(real, path)
    parts = [p for p in os.path.relpath(real, root).split(os.sep) if p not in ("", ".")]
    return root, parts, real


def admitted(path: str, roots: Sequence[str]) -> bool:
    """Whether the file tools would open ``path`` (a path a listing found): the same check
    as `open_confined`, without opening."""
    try:
        _locate(path, roots)
    except WorkspaceError:
        return False
    return True


def _open_confined(path: object, roots: Sequence[str]) -> OpenFile:
    root, parts, real = _locate(path, roots)
    assert isinstance(path, str)  # _locate refuses anything else
    fd = _walk(root, parts, path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_a_file(repr(path), st.st_mode, "the file tools read regular files")
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise _read_error(path, exc) from None
        raise
    return open_file(fd, real, st)


@contextmanager
def open_confined_dir(path: object, roots: Sequence[str]) -> Iterator[tuple[int, str]]:
    """Open the folder ``path`` inside one of ``roots`` as (descriptor, resolved path), by
    the same check and walk as `open_confined`, so a listing starts from a confined
    descriptor and never from a path string that a swapped link could redirect."""
    root, parts, real = _locate(path, roots)
    assert isinstance(path, str)
    fd = _walk(root, parts, path, folder=True)
    try:
        yield fd, real
    finally:
        os.close(fd)


def _walk(root: str, parts: list[str], shown: str, *, folder: bool = False) -> int:
    last_flags = _DIR_FLAGS if folder else _FILE_FLAGS
    try:
        current = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise NotFoundError(f"root {root!r} cannot be opened: {exc.strerror}") from None
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            try:
                nxt = os.open(part, last_flags if last else _DIR_FLAGS, dir_fd=current)
            except FileNotFoundError:
                what = "folder" if folder else "file"
                raise NotFoundError(f"no {what} at {shown!r}; check the name") from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK):
                    raise OutsideRootsError(
                        f"{shown!r} changed into a symlink while it was opened; refused"
                    ) from None
                dir_wanted = folder or not last
                if exc.errno == errno.ENOTDIR and dir_wanted and _is_symlink(part, current):
                    # O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR, not ELOOP.
                    raise OutsideRootsError(
                        f"{shown!r} changed into a symlink while it was opened; refused"
                    ) from None
                if exc.errno == errno.ENOTDIR and last and folder:
                    raise NotAFileError(
                        f"{shown!r} is a file, not a folder; read it with file_read"
                    ) from None
                if exc.errno == errno.ENOTDIR:
                    raise NotFoundError(
                        f"no file at {shown!r}; a parent is not a directory"
                    ) from None
                if exc.errno == errno.EACCES:
                    raise NotFoundError(f"{shown!r} is not readable (permission denied)") from None
                raise NotFoundError(f"cannot open {shown!r}: {exc.strerror}") from None
            os.close(current)
            current = nxt
        if not parts and not folder:
            raise NotAFileError(f"{shown!r} is a directory; the file tools read regular files")
        return current
    except BaseException:
        os.close(current)
        raise


def _is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
