"""The real-data tests skip (with the reason) in a fresh clone without ../shared/transcripts,
and fail the run under CI=true, through the one helper in tests/conftest.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PROBE = """
from pathlib import Path

import pytest

from tests.conftest import transcript_files, transcript_id


def test_with_fixture(transcripts: Path) -> None:
    assert transcripts.is_dir()


@pytest.mark.parametrize("path", transcript_files(), ids=transcript_id)
def test_parametrized(path: Path) -> None:
    assert path.is_file()


def test_without_transcripts() -> None:
    assert True
"""


@pytest.fixture
def lone_checkout(tmp_path: Path) -> Path:
    """A copy of the test scaffolding with no ``shared`` folder beside it."""
    repo = tmp_path / "clone"
    (repo / "tests").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", repo)
    for name in ("__init__.py", "conftest.py"):
        shutil.copy(REPO / "tests" / name, repo / "tests")
    (repo / "tests" / "test_probe.py").write_text(PROBE)
    assert not (tmp_path / "shared").exists()
    return repo


def _pytest(repo: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_missing_transcripts_skip_with_the_reason(lone_checkout: Path) -> None:
    run = _pytest(lone_checkout, ci=None)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 2 skipped" in run.stdout
    assert run.stdout.count("needs the shared transcripts at") == 2


def test_missing_transcripts_fail_the_run_under_ci(lone_checkout: Path) -> None:
    run = _pytest(lone_checkout, ci="true")
    assert run.returncode != 0
    assert "CI=true but" in run.stdout + run.stderr
    assert "passed" not in run.stdout


def test_the_whole_suite_collects_without_transcripts(tmp_path: Path) -> None:
    """Every test module that uses the transcripts imports and parametrizes in a checkout with
    no ../shared beside it (a parametrize id that reads the absent folder stops the whole run)."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    clone = tmp_path / "clone"
    for name in tracked:
        source = REPO / name
        if source.is_symlink():  # leanreplay/<room>: the links that make the rooms one package
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            (clone / name).symlink_to(source.readlink())
        elif source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, clone / name)
    # The modules that touch the transcripts (the others cannot depend on the folder).
    users = [
        name
        for name in tracked
        if name.startswith("tests/")
        and name.endswith(".py")
        and "transcripts" in (REPO / name).read_text(encoding="utf-8")
        and name not in ("tests/conftest.py", "tests/test_shared_transcripts.py")
    ]
    assert "tests/index/test_importers.py" in users
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *users],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
