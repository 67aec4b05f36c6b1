"""file_list on hostile folders: a repository that configures commands, paths that leave the
roots through git or a swapped link, refusals that would name what lies outside, patterns
and ignore rules built to backtrack, ignore files that are FIFOs or devices, deep folders."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.index import InvalidArgumentError, OutsideRootsError, Workspace
from leanreplay.index.tools import _listing
from leanreplay.index.tools._listing import (
    MAX_IGNORE_RULES,
    MAX_LIST_DEPTH,
    MAX_PATTERN_WILDCARDS,
    MAX_RULE_WILDCARDS,
    glob_regex,
)
from tests.index.test_confinement_race import swapping

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")

# Every place a repository's own configuration can name a command that some git command
# runs: each writes a marker file named after itself.
HOSTILE_CONFIG = """
[core]
    fsmonitor = "{run} fsmonitor"
    hooksPath = {hooks}
    pager = "{run} pager"
    sshCommand = "{run} ssh"
    askPass = "{run} askpass"
    editor = "{run} editor"
[include]
    path = {included}
[alias]
    ls-files = "!{run} alias-ls-files"
    status = "!{run} alias-status"
[filter "evil"]
    clean = "{run} filter-clean"
    smudge = "{run} filter-smudge"
    process = "{run} filter-process"
[diff "evil"]
    textconv = "{run} diff-textconv"
    command = "{run} diff-command"
[credential]
    helper = "!{run} credential"
[uploadpack]
    packObjectsHook = "{run} pack-objects-hook"
"""

# Process starts, as the audit events Python raises for them.
SPAWN_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork")
_spawned: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _spawned is not None and event in SPAWN_EVENTS:
        _spawned.append(f"{event} {args!r}"[:200])


sys.addaudithook(_audit)


@pytest.fixture
def spawned() -> Iterator[list[str]]:
    """The processes started while the test body runs (audit hooks see every start)."""
    global _spawned
    _spawned = []
    try:
        yield _spawned
    finally:
        _spawned = None


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A git work tree whose configuration tries every way to run a command; returns the
    root and the folder where a command that ran leaves its marker."""
    root = tmp_path / "repo"
    marks = tmp_path / "marks"
    marks.mkdir()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    run = tmp_path / "run.sh"
    run.write_text(f'#!/bin/sh\ntouch "{marks}/$1"\n')
    run.chmod(0o755)
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print(1)\n")
    (root / "notes.txt").write_text("notes\n")
    (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    git = root / ".git"
    for sub in ("hooks", "info", "objects", "refs"):
        (git / sub).mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    for name in (
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "fsmonitor-watchman",
        "reference-transaction",
        "pre-auto-gc",
    ):
        for folder in (git / "hooks", hooks):
            hook = folder / name
            hook.write_text(f'#!/bin/sh\n"{run}" hook-{name}\n')
            hook.chmod(0o755)
    included = tmp_path / "included.config"
    included.write_text(f'[core]\n    fsmonitor = "{run} included-fsmonitor"\n')
    (git / "config").write_text(
        HOSTILE_CONFIG.format(run=run, hooks=hooks, included=included)
        + '[includeIf "gitdir:/"]\n'
        + f"    path = {included}\n"
    )
    (git / "info" / "exclude").write_text("*.secret\n")
    (root / "key.secret").write_text("s\n")
    return root, marks


def git(root: Path, *args: str) -> bytes:
    """Run our own git on a repository this test made (never on a hostile one)."""
    assert GIT is not None
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    return subprocess.run(
        [GIT, "-C", str(root), *args], capture_output=True, check=True, env=env
    ).stdout


def names(result: dict[str, Any]) -> list[str]:
    return [line.split('name="', 1)[1].split('"', 1)[0] for line in result["files"]]


def test_a_hostile_repository_runs_nothing(
    hostile_repo: tuple[Path, Path], tmp_path: Path, spawned: list[str]
) -> None:
    root, marks = hostile_repo
    with Workspace(tmp_path / "home", [root]) as ws:
        result = ws.file_list()
        ws.file_list("src", pattern="*.py")
    assert names(result) == [".gitattributes", "notes.txt", "src/main.py"]  # info/exclude
    assert "a git work tree: files .gitignore ignores are left out" in result["notes"]
    assert sorted(os.listdir(marks)) == []
    assert spawned == [], spawned


@needs_git
def test_the_marker_script_does_run_under_git(hostile_repo: tuple[Path, Path]) -> None:
    """The hostile repository is armed: git itself runs its commands (so the test above
    proves something)."""
    root, marks = hostile_repo
    assert GIT is not None
    subprocess.run(
        [GIT, "-C", str(root), "ls-files", "--others"],
        capture_output=True,
        check=False,
        timeout=30,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)},
    )
    assert os.listdir(marks), "git ran nothing the repository configured"


@needs_git
def test_ignore_rules_agree_with_git(tmp_path: Path) -> None:
    """Nested .gitignore files, negations, anchored and folder-only rules, info/exclude:
    the listing is what `git ls-files --others --exclude-standard` says (our own repo, so
    running git here is safe)."""
    root = tmp_path / "repo"
    files = [
        "a.log",
        "keep.log",
        "b/c.log",
        "b/keep.log",
        "b/d/e.txt",
        "build/out.bin",
        "src/build/x.py",
        "src/gen/g.py",
        "src/gen/keep.py",
        "top.txt",
        "sub/top.txt",
        "sub/deep/z.tmp",
        "sub/deep/y.txt",
        "docs/a.md",
        "docs/private/p.md",
        "x.secret",
        "name with space.txt",
        "sp ace/f.txt",
        "#hash.txt",
        "!bang.txt",
    ]
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    git(root, "init", "-q")
    (root / ".gitignore").write_text(
        "*.log\n!keep.log\n/build/\n/top.txt\nsrc/gen/*\n!src/gen/keep.py\n"
        "docs/private/\n\\#hash.txt\n\\!bang.txt\nsp\\ ace/\n"
    )
    (root / "b" / ".gitignore").write_text("!c.log\nkeep.log\n")
    (root / "sub" / ".gitignore").write_text("*.tmp\n/deep/y.txt\n")
    (root / ".git" / "info" / "exclude").write_text("*.secret\n")
    listed = git(root, "ls-files", "-z", "--others", "--exclude-standard")
    expected = sorted(n for n in listed.decode().split("\0") if n)
    with Workspace(tmp_path / "home", [root]) as ws:
        assert names(ws.file_list(limit=1000)) == expected
        # A subfolder listed alone keeps the rules of the folders above it.
        below = sorted(n[4:] for n in expected if n.startswith("sub/"))
        assert names(ws.file_list("sub", limit=1000)) == below


@needs_git
def test_a_tracked_path_through_a_symlinked_folder_is_never_carded(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "data").mkdir(parents=True)
    (root / "data" / "secret.csv").write_text("a,b\n")
    (root / "inside.csv").write_text("a,b\n1,2\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    # data/secret.csv stays in git's index; the folder becomes a link out of the root.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("SECRET_HEADER,b\n1,2\n")
    shutil.rmtree(root / "data")
    (root / "data").symlink_to(outside)
    with Workspace(tmp_path / "home", [root]) as ws:
        result = ws.file_list()
    assert names(result) == ["inside.csv"]
    assert "SECRET" not in str(result)
    assert str(outside) not in str(result)


@pytest.fixture
def racing_root(tmp_path: Path) -> Iterator[Path]:
    """A work tree whose tracked root/dir/file.csv has its folder swapped between the real
    one and a symlink to an outside folder with a file of the same name."""
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "file.csv").write_text("benign,b\n")
    if GIT is not None:  # the old listing took its paths from git's index
        git(root, "init", "-q")
        git(root, "add", ".")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file.csv").write_text("SECRET_HEADER,b\n")
    for i in range(20):
        (outside / f"secret{i}.csv").write_text("SECRET_HEADER,b\n")
    with swapping(root, outside):
        yield root


WANTED_EACH = 100  # listings in each state; the old walk showed the outside 12 in 3,000


def test_a_folder_swapped_for_a_link_never_lists_the_outside(
    racing_root: Path, tmp_path: Path
) -> None:
    seen = {"with the file": 0, "without it": 0}
    with Workspace(tmp_path / "home", [racing_root]) as ws:
        for _ in range(5000):
            result = ws.file_list()
            text = str(result)
            assert "secret" not in text.lower(), result
            listed = names(result)
            # The swapper's own names: the real folder under one of them, the link skipped.
            allowed = {"dir/file.csv", "dir.link/file.csv", "dir.parked/file.csv"}
            assert set(listed) <= allowed, listed
            seen["with the file" if "dir/file.csv" in listed else "without it"] += 1
            if min(seen.values()) >= WANTED_EACH:
                break
    # The listing met the link state (the folder was a symlink when walked) and the real one.
    assert min(seen.values()) >= WANTED_EACH, seen


def test_refusals_name_only_the_given_path_and_the_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    hidden = tmp_path / "hidden-outside"
    hidden.mkdir()
    (root / "away").symlink_to(hidden)
    cwd = tmp_path / "server-working-dir"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with Workspace(tmp_path / "home", [root]) as ws:
        where = ", ".join(ws.roots)
        for path in ("away", str(root / "away"), "/proc/self/cwd", str(hidden), "../"):
            with pytest.raises(OutsideRootsError) as listed:
                ws.file_list(path)
            with pytest.raises(OutsideRootsError) as read:
                ws.file_read(path)
            assert str(listed.value) == str(read.value), path
            assert str(listed.value) == (
                f"{path!r} is outside the allowed roots ({where}); read files inside them"
            )
            if path != str(hidden):
                assert "hidden-outside" not in str(listed.value)
            assert "server-working-dir" not in str(listed.value)


HOSTILE_PATTERNS = [
    "**a**a**a**a**a**a**a**a**a**a**a**ab",
    "*a*a*a*a*a*a*a*a*a*a*a*a*b",
    "**/" * 6 + "*a" * 20 + "b",
]


@pytest.fixture(scope="module")
def long_names(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("long") / "root"
    deep = root / "/".join(["a" * 200] * 8)
    deep.mkdir(parents=True)
    for i in range(20):
        (deep / ("a" * 200 + str(i))).write_text("x")
    return root


@pytest.mark.timeout(60)  # backtracking ran past 90 s on one of these
@pytest.mark.parametrize("pattern", HOSTILE_PATTERNS, ids=["double", "single", "mixed"])
def test_patterns_built_to_backtrack_finish(pattern: str, long_names: Path, tmp_path: Path) -> None:
    with Workspace(tmp_path / "home", [long_names]) as ws:
        assert ws.file_list(pattern=pattern)["files"] == []
        assert len(ws.file_list(pattern="**a*")["files"]) == 20


def test_a_pattern_with_too_many_wildcards_is_refused(tmp_path: Path) -> None:
    with Workspace(tmp_path / "home", [tmp_path]) as ws:
        with pytest.raises(InvalidArgumentError, match=f"more than {MAX_PATTERN_WILDCARDS}"):
            ws.file_list(pattern="*a" * (MAX_PATTERN_WILDCARDS + 1))
        with pytest.raises(InvalidArgumentError, match="is not a valid glob"):
            ws.file_list(pattern="[z-a]")


def _oracle(pattern: str, path: str) -> bool:
    """An independent glob matcher: dynamic programming over the pattern's tokens."""
    tokens: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            tokens.append("**/")
            i += 3
        elif pattern.startswith("**", i):
            tokens.append("**")
            i += 2
        else:
            tokens.append(pattern[i])
            i += 1
    # reach[j]: positions in path reachable after the first j tokens
    reach = {0}
    for token in tokens:
        nxt: set[int] = set()
        for p in reach:
            if token == "**":
                nxt.update(range(p, len(path) + 1))
            elif token == "**/":
                nxt.add(p)
                nxt.update(q + 1 for q in range(p, len(path)) if path[q] == "/")
            elif token == "*":
                q = p
                nxt.add(q)
                while q < len(path) and path[q] != "/":
                    q += 1
                    nxt.add(q)
            elif token == "?":
                if p < len(path) and path[p] != "/":
                    nxt.add(p + 1)
            elif p < len(path) and path[p] == token:
                nxt.add(p + 1)
        reach = nxt
    return len(path) in reach


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab/*?", max_size=12),
    st.text(alphabet="ab/\n", max_size=12),
)
def test_glob_matches_as_an_independent_matcher_does(pattern: str, path: str) -> None:
    if not pattern:
        return
    assert bool(glob_regex(pattern).fullmatch(path)) == _oracle(pattern, path), (pattern, path)


def test_hostile_ignore_files_are_read_safely(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "sub").mkdir()
    (root / "fifo").mkdir()
    for rel in ("keep.txt", "sub/" + "a" * 200, "fifo/x.txt"):
        (root / rel).write_text("x")
    os.mkfifo(root / "fifo" / ".gitignore")  # reading it would block
    (root / ".gitignore").symlink_to("/dev/zero")  # reading it would never end
    hostile = "*a" * (MAX_RULE_WILDCARDS + 1) + "*b\n"
    (root / "sub" / ".gitignore").write_text(hostile * 3 + "*.nothing\n")
    with Workspace(tmp_path / "home", [root]) as ws:
        result = ws.file_list()
    # The link to /dev/zero resolves outside the roots: not listed either.
    assert names(result) == [
        "fifo/.gitignore",
        "fifo/x.txt",
        "keep.txt",
        "sub/.gitignore",
        "sub/" + "a" * 200,
    ]
    assert any("3 ignore rules were not applied" in n for n in result["notes"]), result


def test_a_folder_deeper_than_the_bound_is_noted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    deep = root / "/".join(["d"] * (MAX_LIST_DEPTH + 10))
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("x")
    (root / "top.txt").write_text("x")
    with Workspace(tmp_path / "home", [root]) as ws:
        result = ws.file_list()
        assert names(result) == ["top.txt"]
        assert any(f"deeper than {MAX_LIST_DEPTH} levels" in n for n in result["notes"])
        assert names(ws.file_list(str(deep.parent))) == ["d/bottom.txt"]


def test_names_with_newlines_and_undecodable_bytes_are_listed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "two\nlines.txt").write_text("x")
    os.close(os.open(os.fsencode(root) + b"/bad-\xff.txt", os.O_CREAT | os.O_WRONLY))
    with Workspace(tmp_path / "home", [root]) as ws:
        result = ws.file_list(pattern="**/*.txt")
    assert len(result["files"]) == 2, result


def test_ignore_rules_past_the_budget_are_not_applied_and_counted(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    rules = [f"ignored{i}.txt" for i in range(MAX_IGNORE_RULES + 5)]
    (root / ".gitignore").write_text("\n".join(rules) + "\n")
    for name in ("ignored0.txt", f"ignored{MAX_IGNORE_RULES - 1}.txt", "kept.txt"):
        (root / name).write_text("x")
    (root / f"ignored{MAX_IGNORE_RULES + 4}.txt").write_text("x")
    with Workspace(tmp_path / "home", [root]) as ws:
        result = ws.file_list()
    # The first rules apply (across RE2 sets of a few hundred); the ones past the budget don't.
    assert names(result) == [".gitignore", f"ignored{MAX_IGNORE_RULES + 4}.txt", "kept.txt"]
    assert any(n.startswith("5 ignore rules were not applied") for n in result["notes"])


def test_ignore_rules_built_to_be_slow_stop_the_walk_at_the_work_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_listing, "MAX_IGNORE_WORK", 50_000)
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("".join(f"x{i}?y*z\n" for i in range(1000)))
    for i in range(300):
        (root / f"f{i:03d}.txt").write_text("x")
    with Workspace(tmp_path / "home", [root]) as ws:
        result = ws.file_list(limit=1000)
    assert 0 < len(result["files"]) < 300  # the walk stopped part way, and says so
    assert result["total_files"] is None
    assert any("cost too much to match" in n for n in result["notes"]), result["notes"]
    assert not any("looked at the first" in n for n in result["notes"])
