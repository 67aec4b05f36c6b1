"""Folder listings: the files under a confined directory that match a glob, sorted, bounded,
skipping what ``.gitignore`` ignores when the folder is inside a git work tree."""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from typing import Any

from leanreplay.cards import CardError, card_for, quote

from .._errors import InvalidArgumentError, NotAFileError, NotFoundError, OutsideRootsError
from ._paths import no_roots_error

__all__ = ["MAX_SCANNED", "confined_dir", "list_folder", "matching_files"]

MAX_SCANNED = 200_000  # paths looked at per listing
GIT_SECONDS = 20.0
_SKIP_DIRS = {".git", ".hg", ".svn"}


def confined_dir(path: object, roots: Sequence[str]) -> str:
    """The resolved directory ``path`` if it is inside one of ``roots``."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise InvalidArgumentError("path must be a non-empty folder name")
    if not roots:
        raise no_roots_error()
    real = os.path.realpath(path if os.path.isabs(path) else os.path.join(roots[0], path))
    if not any(real == r or os.path.commonpath([r, real]) == r for r in roots):
        raise OutsideRootsError(
            f"{path!r} resolves to {real!r}, outside the allowed roots ({', '.join(roots)})"
        )
    check = getattr(roots, "check", None)
    if check is not None:
        check(real, path)  # the workspace's home is never listed
    if not os.path.exists(real):
        raise NotFoundError(f"no folder at {path!r}; check the name")
    if not os.path.isdir(real):
        raise NotAFileError(f"{path!r} is a file, not a folder; read it with file_read")
    return real


@functools.lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` spans folders, ``*`` and ``?`` stay within one, ``[...]`` is a class."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _git_files(folder: str) -> list[str] | None:
    """Paths (relative to ``folder``) git does not ignore, or None outside a work tree."""
    probe = folder
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            break
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "-C", folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=GIT_SECONDS,
            check=True,
        )
    except (subprocess.SubprocessError, OSError):
        return None
    names = [n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [n for n in names if os.path.isfile(os.path.join(folder, n))]  # drop deleted ones


def _walk(folder: str) -> Iterator[str]:
    for top, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = os.path.relpath(top, folder)
        for name in files:
            yield name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")


def matching_files(folder: str, pattern: str, roots: Sequence[str]) -> tuple[list[str], bool, bool]:
    """Sorted relative paths under ``folder`` matching ``pattern``; (paths, complete,
    git-ignore applied). Links that leave the roots are dropped."""
    regex = glob_regex(pattern)
    check = getattr(roots, "check", None)
    tracked = _git_files(folder)
    source: Iterator[str] = iter(tracked) if tracked is not None else _walk(folder)
    found = []
    complete = True
    for scanned, rel in enumerate(source, start=1):
        if scanned > MAX_SCANNED:
            complete = False
            break
        if not regex.match(rel):
            continue
        full = os.path.join(folder, rel)
        real = os.path.realpath(full) if os.path.islink(full) else full
        if not any(os.path.commonpath([r, real]) == r for r in roots):
            continue
        if check is not None:
            try:
                check(real, rel)
            except OutsideRootsError:
                continue  # inside the workspace's home
        found.append(rel)
    found.sort()
    return found, complete, tracked is not None


def list_folder(
    path: str, pattern: str, limit: int, after: str | None, roots: Sequence[str]
) -> dict[str, Any]:
    """`file_list`: a page of the files under the confined folder ``path`` matching
    ``pattern``, as one-line cards sorted by path, after the relative path ``after``, with the
    `next` call."""
    folder = confined_dir(path, roots)
    names, complete, git = matching_files(folder, pattern, roots)
    start = bisect.bisect_right(names, after) if after is not None else 0
    shown = names[start : start + limit]
    lines = []
    for rel in shown:
        try:
            lines.append(card_for(os.path.join(folder, rel), name=rel).render())
        except CardError as exc:
            lines.append(f"[unreadable] name={quote(rel)} | {quote(str(exc))}")
    notes = []
    if git:
        notes.append("a git work tree: files .gitignore ignores are left out")
    if not complete:
        notes.append(f"looked at the first {MAX_SCANNED:,} paths only; narrow the pattern")
    more = start + limit < len(names)
    return {
        "path": folder,
        "pattern": pattern,
        "files": lines,
        "total_files": len(names) if complete else None,
        "notes": notes,
        "next": (
            f"file_list(path={json.dumps(folder)}, pattern={json.dumps(pattern)}, "
            f"limit={limit}, after={json.dumps(shown[-1])})"
            if more and shown
            else None
        ),
    }
