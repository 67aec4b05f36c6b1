"""Folder listings: the files under a confined folder that match a glob, sorted, bounded and
paged as one-line cards, leaving out what ``.gitignore`` ignores in a git work tree.

Nothing a repository configures is ever run: git itself is never started (a repository's
own configuration can name commands: ``core.fsmonitor``, hooks, filters, aliases,
includes). The ignore rules are read as text from the ``.gitignore`` files and
``.git/info/exclude`` and matched with pathspec; a repository's index is never read. The
walk starts from the folder's confined descriptor and opens each subfolder from its parent's
descriptor with ``O_NOFOLLOW``, so a folder swapped for a symlink mid-walk is skipped, never
followed; a listed symlink is kept only when `admitted` (the file tools' own check) admits
it, and each file shown is opened by `open_confined`, as a path a user gives. Patterns, the
caller's glob and the ignore rules alike, are matched by RE2 in time linear in the path, and
bounded in length and wildcards.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import functools
import json
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pathspec
import re2

from leanreplay.cards import CardError, card_for_descriptor, quote

from .._errors import InvalidArgumentError, WorkspaceError
from ._paths import Roots, admitted, inside, open_confined, open_confined_dir

__all__ = [
    "MAX_IGNORE_BYTES",
    "MAX_IGNORE_RULES",
    "MAX_IGNORE_WORK",
    "MAX_LIST_DEPTH",
    "MAX_PATTERN_WILDCARDS",
    "MAX_SCANNED",
    "glob_regex",
    "list_folder",
    "matching_files",
]

MAX_SCANNED = 200_000  # paths looked at per listing
MAX_LIST_DEPTH = 128  # folder levels below the listed folder; deeper ones are not walked
MAX_PATTERN_WILDCARDS = 32  # *, ? and [...] in one glob
MAX_IGNORE_BYTES = 1024 * 1024  # of one .gitignore (or info/exclude) file read
# Ignore rules applied per listing, over all the files read: compiling them costs about a
# millisecond a rule.
MAX_IGNORE_RULES = 2_000
# What matching the ignore rules may cost in one listing, in units of about a microsecond
# (per check of one RE2 set: 2, plus 1 per 25 rules, plus 1 per costly wildcard): the walk
# stops there, so a .gitignore built to be slow bounds the listing, not the other way round.
MAX_IGNORE_WORK = 10_000_000
MAX_RULE_CHARS = 1000  # an ignore rule longer than this is not applied
RULES_PER_SET = 500
COSTLY_PER_SET = 32  # costly wildcards in one RE2 set (matching slows with their square)
MAX_RULE_WILDCARDS = 16  # nor one with more wildcards than this
_SKIP_DIRS = {".git", ".hg", ".svn"}
_EVERYTHING = frozenset({"**", "**/*"})  # patterns every file path matches
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_IGNORE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would log a bad pattern to the server's stderr
    options.dot_nl = True  # file names may hold newlines
    return options


def _wildcards(text: str) -> int:
    return text.count("*") + text.count("?") + text.count("[")


@functools.lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re2._Regexp:
    """``**`` spans folders, ``*`` and ``?`` stay within one, ``[...]`` is a class; matched
    by RE2 (``fullmatch``), so no pattern can backtrack."""
    count = _wildcards(pattern)
    if count > MAX_PATTERN_WILDCARDS:
        raise InvalidArgumentError(
            f"pattern {pattern[:80]!r} has {count} wildcards, more than "
            f"{MAX_PATTERN_WILDCARDS}; use fewer (one ** spans any depth of folders)"
        )
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
            out.append("[" + ("^/" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re2.escape(pattern[i]))
            i += 1
    try:
        return re2.compile("".join(out), _options())
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidArgumentError(
            f"pattern {pattern[:80]!r} is not a valid glob ({reason}); use *, ?, ** and "
            "[abc] classes"
        ) from None


def _matchable(rel: str) -> str:
    # RE2 matches UTF-8: a name that is not (held with surrogate escapes) is matched with
    # U+FFFD in place of its undecodable bytes.
    try:
        rel.encode()
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return rel


def _costly(rule: str) -> int:
    """Wildcards of an ignore rule that make RE2's set slow to match: all but a leading ``*``
    (``*.log``) or a trailing one (``build*``), measured cheap at any count."""
    body = rule.rstrip("/")
    count = _wildcards(body)
    if body.startswith("*") and not body.startswith("**"):
        count -= 1
    if body.endswith("*") and len(body) > 1 and not body.endswith("**"):
        count -= 1
    return max(count, 0)


@dataclass
class _Ignore:
    """The ignore rules of a work tree, as layers (folder relative to the work tree's top,
    its rules, what one check of them costs), shallowest first; deeper layers override
    shallower ones, as in git. ``work`` adds up the cost of every check made, in the units of
    `MAX_IGNORE_WORK`."""

    prefix: str  # the listed folder, relative to the work tree's top ("" or "a/b/")
    layers: list[tuple[str, pathspec.GitIgnoreSpec, int]] = field(default_factory=list)
    rules: int = 0
    skipped: int = 0  # rules over the bounds, not applied
    work: int = 0

    def add(self, base: str, text: str, named: Sequence[str] = ()) -> None:
        """Add the rules of the ignore file at ``base``; a rule that ignores one of the
        folders ``named`` (the listed folder and its parents below ``base``) is dropped: a
        folder the caller names is listed even when .gitignore ignores it."""
        sets: list[list[str]] = [[]]
        costly = 0
        lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
        if named:
            lines = _not_ignoring(lines, [n[len(base) :] for n in named])
        for line in lines:
            if (
                self.rules >= MAX_IGNORE_RULES
                or len(line) > MAX_RULE_CHARS
                or _wildcards(line) > MAX_RULE_WILDCARDS
            ):
                self.skipped += 1
                continue
            self.rules += 1
            # RE2 sets of a bounded size: one of thousands of rules fails to compile, and one
            # of many costly wildcards is slow to match (each set is matched on its own).
            cost = _costly(line)
            if len(sets[-1]) >= RULES_PER_SET or costly + cost > COSTLY_PER_SET:
                sets.append([])
                costly = 0
            sets[-1].append(line)
            costly += cost
        # Later rules win over earlier ones, as later layers over earlier ones.
        for rules in sets:
            if not rules:
                continue
            try:
                spec = pathspec.GitIgnoreSpec.from_lines(rules, backend="re2")
            except (re2.error, ValueError, TypeError):  # RE2 out of memory, a rule refused
                self.skipped += len(rules)
                continue
            cost = 2 + len(rules) // 25 + sum(_costly(r) for r in rules)
            self.layers.append((base, spec, cost))

    def ignored(self, rel: str, folder: bool) -> bool:
        """Whether ``rel`` (relative to the listed folder) is ignored."""
        path = _matchable(self.prefix + rel) + ("/" if folder else "")
        for base, spec, cost in reversed(self.layers):
            if base and not path.startswith(base):
                continue
            self.work += cost
            verdict = spec.check_file(path[len(base) :]).include
            if verdict is not None:
                return verdict
        return False


def _not_ignoring(lines: list[str], folders: list[str]) -> list[str]:
    """``lines`` without the rules that ignore one of ``folders`` (``"a/", "a/b/"``).

    Checked per rule only when the rules as a whole ignore one of them (rarely)."""
    bounded = [
        line
        for line in lines[:MAX_IGNORE_RULES]
        if len(line) <= MAX_RULE_CHARS and _wildcards(line) <= MAX_RULE_WILDCARDS
    ]
    try:
        whole = pathspec.GitIgnoreSpec.from_lines(bounded, backend="re2")
        if not any(whole.match_file(_matchable(f)) for f in folders):
            return lines
    except (re2.error, ValueError, TypeError):
        return lines  # not applied at all by `add` either
    applied = set(bounded)
    kept = []
    for line in lines:
        if line in applied and not line.startswith("!"):
            try:
                rule = pathspec.GitIgnoreSpec.from_lines([line], backend="re2")
            except (re2.error, ValueError, TypeError):
                continue  # `add` would not apply it
            if any(rule.match_file(_matchable(f)) for f in folders):
                continue
        kept.append(line)
    return kept


def _read_rules(name: str, dir_fd: int | None = None) -> str | None:
    """The text of an ignore file, if it is a regular file (never a FIFO or a device)."""
    try:
        fd = os.open(name, _IGNORE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_IGNORE_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _work_tree_rules(folder: str) -> _Ignore | None:
    """The rules that apply above ``folder`` (from the work tree's top down to it), or None
    outside a git work tree. The folder's own .gitignore is read by the walk."""
    top = folder
    while not os.path.lexists(os.path.join(top, ".git")):
        parent = os.path.dirname(top)
        if parent == top:
            return None
        top = parent
    rel = os.path.relpath(folder, top)
    parts = [] if rel == "." else rel.split(os.sep)
    ignore = _Ignore(prefix="".join(p + "/" for p in parts))
    # The listed folder and its parents: rules above it that ignore one of them are dropped.
    named = ["".join(p + "/" for p in parts[: depth + 1]) for depth in range(len(parts))]
    text = _read_rules(os.path.join(top, ".git", "info", "exclude"))
    if text is not None:
        ignore.add("", text, named)
    for depth in range(len(parts)):
        base = "".join(p + "/" for p in parts[:depth])
        text = _read_rules(os.path.join(top, *parts[:depth], ".gitignore"))
        if text is not None:
            ignore.add(base, text, named[depth:])
    return ignore


@dataclass
class _Walk:
    complete: bool = True
    too_deep: int = 0  # folders not walked: deeper than MAX_LIST_DEPTH
    costly: bool = False  # stopped at MAX_IGNORE_WORK
    ignored_files: int = 0  # left out as .gitignore ignores them
    ignored_dirs: int = 0  # left out, not walked


def _entries(fd: int) -> tuple[list[tuple[str, bool]], list[str]]:
    """(files with whether each is a symlink, subfolders) of the open folder ``fd``."""
    files: list[tuple[str, bool]] = []
    dirs: list[str] = []
    try:
        with os.scandir(fd) as it:
            for entry in it:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in _SKIP_DIRS:
                            dirs.append(entry.name)
                    elif entry.is_symlink():
                        if not entry.is_dir():  # a link to a folder is never walked
                            files.append((entry.name, True))
                    else:
                        files.append((entry.name, False))
                except OSError:
                    continue  # removed while listed
    except OSError:
        pass  # unreadable, or removed while listed
    return files, sorted(dirs, reverse=True)


def _walk(
    top: int, ignore: _Ignore | None, state: _Walk
) -> Generator[tuple[str, bool], None, None]:
    """(path relative to the listed folder, is a symlink) of every file below ``top``."""
    frames: list[tuple[int, str, list[str]]] = []
    try:

        def enter(fd: int, rel: str) -> Iterator[tuple[str, bool]]:
            if ignore is not None:
                text = _read_rules(".gitignore", fd)
                if text is not None:
                    ignore.add(ignore.prefix + rel, text)
            files, dirs = _entries(fd)
            frames.append((fd, rel, dirs))
            for name, link in sorted(files):
                path = rel + name
                if ignore is None:
                    yield path, link
                elif ignore.work > MAX_IGNORE_WORK:
                    state.costly = True
                    return
                elif not ignore.ignored(path, False):
                    yield path, link
                else:
                    state.ignored_files += 1

        yield from enter(os.dup(top), "")
        while frames and not state.costly:
            if ignore is not None and ignore.work > MAX_IGNORE_WORK:
                state.costly = True
                break
            fd, rel, dirs = frames[-1]
            if not dirs:
                os.close(fd)
                frames.pop()
                continue
            name = dirs.pop()
            path = rel + name
            if ignore is not None and ignore.ignored(path, True):
                state.ignored_dirs += 1
                continue  # git never looks inside an ignored folder
            if len(frames) > MAX_LIST_DEPTH:
                state.too_deep += 1
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.EMFILE:
                    raise
                continue  # swapped for a symlink, removed or unreadable: never followed
            yield from enter(child, path + "/")
    finally:
        for fd, _, _ in frames:
            os.close(fd)


def matching_files(
    path: str, pattern: str, roots: Sequence[str], *, include_ignored: bool = False
) -> tuple[str, list[str], list[str], bool]:
    """(resolved folder, sorted relative paths under it matching ``pattern``, notes,
    complete) for the folder ``path`` inside ``roots``; in a git work tree, what .gitignore
    ignores is left out unless ``include_ignored``."""
    regex = None if pattern in _EVERYTHING else glob_regex(pattern)
    state = _Walk()
    found = []
    with open_confined_dir(path, roots) as (fd, folder):
        # Only paths in or under the home's folders need the roots' own check, per file.
        watched = roots.watched(folder) if isinstance(roots, Roots) else ()
        every = any(inside(w, folder) for w in watched)
        under = tuple(w + os.sep for w in watched)
        ignore = None if include_ignored else _work_tree_rules(folder)
        walk = _walk(fd, ignore, state)
        with contextlib.closing(walk):
            for scanned, (rel, link) in enumerate(walk, start=1):
                if scanned > MAX_SCANNED:
                    state.complete = False
                    break
                if regex is not None and not regex.fullmatch(_matchable(rel)):
                    continue
                full = folder + os.sep + rel
                if link:
                    if not admitted(full, roots):
                        continue  # a link out of the roots, or into the home
                elif isinstance(roots, Roots) and (every or full.startswith(under)):
                    try:
                        roots.check(full, rel)
                    except WorkspaceError:
                        continue  # inside the workspace's home
                found.append(rel)
    found.sort()
    notes = []
    if ignore is not None:
        notes.append("a git work tree: files .gitignore ignores are left out")
        if state.ignored_files or state.ignored_dirs:
            notes.append(
                f"left out as .gitignore ignores them: {_count(state.ignored_files, 'file')} "
                f"and {_count(state.ignored_dirs, 'folder')} (not looked into); "
                "include_ignored=True lists them"
            )
        if ignore.skipped:
            notes.append(
                f"{ignore.skipped:,} ignore rules were not applied (past {MAX_IGNORE_RULES:,} "
                f"rules in all, or over {MAX_RULE_CHARS:,} chars or {MAX_RULE_WILDCARDS} "
                "wildcards in one)"
            )
        if state.costly:
            notes.append(
                "the .gitignore rules cost too much to match past the paths looked at; list a "
                "narrower folder"
            )
    if state.too_deep:
        notes.append(
            f"{state.too_deep:,} folder{'s' if state.too_deep != 1 else ''} nested deeper than "
            f"{MAX_LIST_DEPTH} levels not listed; list a deeper folder itself"
        )
    if not state.complete:
        notes.append(f"looked at the first {MAX_SCANNED:,} paths only; narrow the pattern")
    return folder, found, notes, state.complete and not state.costly


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'s' if n != 1 else ''}"


def list_folder(
    path: str,
    pattern: str,
    limit: int,
    after: str | None,
    roots: Sequence[str],
    *,
    include_ignored: bool = False,
) -> dict[str, Any]:
    """The `file_list` answer: one page of cards of the files matching ``pattern``."""
    folder, names, notes, complete = matching_files(
        path, pattern, roots, include_ignored=include_ignored
    )
    start = bisect.bisect_right(names, after) if after is not None else 0
    shown = names[start : start + limit]
    lines = []
    for rel in shown:
        # The same confined open as a path a user gives: a file swapped for a link out of
        # the roots since the walk is refused here, never carded.
        try:
            with open_confined(os.path.join(folder, rel), roots) as f:
                lines.append(card_for_descriptor(f.fd, path=f.path, name=rel).render())
        except (CardError, WorkspaceError) as exc:
            lines.append(f"[unreadable] name={quote(rel)} | {quote(str(exc))}")
    more = start + limit < len(names)
    return {
        "path": folder,
        "pattern": pattern,
        "files": lines,
        "total_files": len(names) if complete else None,
        "notes": notes,
        "next": (
            f"file_list(path={json.dumps(folder)}, pattern={json.dumps(pattern)}, "
            f"limit={limit}, after={json.dumps(shown[-1])}"
            f"{', include_ignored=True' if include_ignored else ''})"
            if more and shown
            else None
        ),
    }
