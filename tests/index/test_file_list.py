"""file_list: cards of the files under a folder, sorted, bounded, paged, .gitignore-aware;
and `leanreplay card DIR`."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.index import InvalidArgumentError, NotAFileError, OutsideRootsError, Workspace
from leanreplay.index.faces.cli import cli
from leanreplay.index.tools._listing import glob_regex
from tests.conftest import SAMPLES


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel in ["a.txt", "b/c.csv", "b/d/e.md", "b/d/f.txt", "z.py", ".hidden/h.txt"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{rel}\n")
    shutil.copy(SAMPLES / "red_64x48.png", root / "b" / "red.png")
    return root


def names(result: dict[str, object]) -> list[str]:
    files = result["files"]
    assert isinstance(files, list)
    return [line.split('name="', 1)[1].split('"', 1)[0] for line in files]


def test_lists_cards_sorted_by_path(tree: Path, tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home", [tree])
    result = ws.file_list()
    assert names(result) == sorted(
        [".hidden/h.txt", "a.txt", "b/c.csv", "b/d/e.md", "b/d/f.txt", "b/red.png", "z.py"]
    )
    assert result["total_files"] == 7
    assert all(line.startswith("[attachment] ") for line in result["files"])
    assert "64x48" in result["files"][names(result).index("b/red.png")]


def test_pattern_and_paging(tree: Path, tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home", [tree])
    assert names(ws.file_list(pattern="**/*.txt")) == [".hidden/h.txt", "a.txt", "b/d/f.txt"]
    assert names(ws.file_list(pattern="*.txt")) == ["a.txt"]
    assert names(ws.file_list("b", pattern="d/*")) == ["d/e.md", "d/f.txt"]
    seen: list[str] = []
    after = None
    while True:
        page = ws.file_list(limit=2, after=after)
        seen += names(page)
        if page["next"] is None:
            break
        after = page["next"].split('after="', 1)[1].rstrip('")')
    assert seen == names(ws.file_list())


def test_git_work_tree_skips_ignored_files(tree: Path, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / ".gitignore").write_text("*.md\nb/d/\n")
    ws = Workspace(tmp_path / "home", [tree])
    result = ws.file_list()
    assert names(result) == [".gitignore", ".hidden/h.txt", "a.txt", "b/c.csv", "b/red.png", "z.py"]
    assert any("gitignore" in n for n in result["notes"])


def test_confinement(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (tree / "link").symlink_to(outside)
    (tree / "filelink.txt").symlink_to(outside / "secret.txt")
    ws = Workspace(tmp_path / "home", [tree])
    with pytest.raises(OutsideRootsError):
        ws.file_list(str(outside))
    with pytest.raises(OutsideRootsError):
        ws.file_list("link")
    assert "filelink.txt" not in names(ws.file_list())
    with pytest.raises(NotAFileError, match="is a file, not a folder"):
        ws.file_list("a.txt")
    with pytest.raises(InvalidArgumentError):
        ws.file_list("")


@settings(max_examples=200)
@given(st.lists(st.sampled_from(["a", "b", "/"]), max_size=8).map("".join))
def test_glob_star_never_crosses_a_folder(path: str) -> None:
    assert bool(glob_regex("*").fullmatch(path)) == ("/" not in path)
    assert bool(glob_regex("**/*").fullmatch(path)) is True
    inside_a = path.startswith("a/") and "/" not in path[2:]
    assert bool(glob_regex("a/*").fullmatch(path)) == inside_a


def test_cli_card_of_a_folder(tree: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "card", str(tree / "b")])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().split("\n")
    assert len(lines) == 4
    assert all(line.startswith("[attachment] ") for line in lines)


def test_the_home_inside_a_root_is_never_listed(tree: Path) -> None:
    ws = Workspace(tree / "home", [tree])
    ws.table_query("b/c.csv", "SELECT 1")  # writes under the home
    listed = names(ws.file_list())
    assert listed
    assert not [n for n in listed if n.startswith("home/")]
    with pytest.raises(OutsideRootsError, match="inside the leanreplay home"):
        ws.file_list("home")


@pytest.fixture
def ignored_tree(tree: Path) -> Path:
    """A work tree whose top .gitignore ignores the folder b/ and every *.log file."""
    (tree / ".git").mkdir()  # a work tree is found by its .git; git itself is never run
    (tree / ".gitignore").write_text("b/\n*.log\n")
    (tree / "b" / "x.log").write_text("log\n")
    (tree / "b" / "d" / "y.log").write_text("log\n")
    (tree / "top.log").write_text("log\n")
    return tree


def test_a_folder_gitignore_ignores_is_listed_when_named(
    ignored_tree: Path, tmp_path: Path
) -> None:
    ws = Workspace(tmp_path / "home", [ignored_tree])
    result = ws.file_list("b")
    # The rule that ignores b/ does not apply inside it; *.log still does, and is counted.
    assert names(result) == ["c.csv", "d/e.md", "d/f.txt", "red.png"]
    assert (
        "left out as .gitignore ignores them: 2 files and 0 folders (not looked into); "
        "include_ignored=True lists them"
    ) in result["notes"]
    assert names(ws.file_list("b/d")) == ["e.md", "f.txt"]  # below the ignored folder too
    top = ws.file_list()
    assert names(top) == [".gitignore", ".hidden/h.txt", "a.txt", "z.py"]
    assert any("1 file and 1 folder (not looked into)" in n for n in top["notes"])


def test_include_ignored_lists_everything(ignored_tree: Path, tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home", [ignored_tree])
    every = ws.file_list(include_ignored=True)
    assert "b/x.log" in names(every)
    assert "top.log" in names(every)
    assert every["total_files"] == 11
    assert not any("left out" in n for n in every["notes"])
    page = ws.file_list("b", limit=2, include_ignored=True)
    assert names(page) == ["c.csv", "d/e.md"]
    assert page["next"].endswith(', after="d/e.md", include_ignored=True)')


def test_card_of_an_ignored_folder_lists_it(ignored_tree: Path, tmp_path: Path) -> None:
    home = ["--home", str(tmp_path / "home")]
    result = CliRunner().invoke(cli, [*home, "card", str(ignored_tree / "b")])
    assert result.exit_code == 0, result.output
    assert [line.split('name="', 1)[1].split('"', 1)[0] for line in result.stdout.splitlines()] == [
        "c.csv",
        "d/e.md",
        "d/f.txt",
        "red.png",
    ]
    assert "2 files and 0 folders (not looked into); --include-ignored lists them" in result.stderr
    every = CliRunner().invoke(cli, [*home, "card", "--include-ignored", str(ignored_tree / "b")])
    assert 'name="x.log"' in every.stdout
    assert 'name="d/y.log"' in every.stdout


def test_card_more_line_is_the_command_that_continues(ignored_tree: Path, tmp_path: Path) -> None:
    home = ["--home", str(tmp_path / "home")]
    folder = str(ignored_tree / "b")
    first = CliRunner().invoke(cli, [*home, "card", "--limit", "3", folder])
    assert first.exit_code == 0, first.output
    (more,) = [line for line in first.stderr.splitlines() if line.startswith("more: ")]
    command = shlex.split(more.removeprefix("more: "))
    assert command == ["leanreplay", "card", folder, "--limit", "3", "--after", "d/f.txt"]
    rest = CliRunner().invoke(cli, [*home, *command[1:]])
    assert rest.exit_code == 0, rest.output
    assert [line.split('name="', 1)[1].split('"', 1)[0] for line in rest.stdout.splitlines()] == [
        "red.png"
    ]
    assert "more: " not in rest.stderr
