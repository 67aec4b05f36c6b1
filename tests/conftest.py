"""Shared fixtures: paths to the committed samples and to the shared transcripts.

Tests that read the real transcripts in ``../shared/transcripts`` get them through
`transcripts` (a fixture) or `transcript_files` (for parametrizing). In a fresh clone without
that folder those tests skip and say why; under ``CI=true`` a missing folder, or a missing
file of those its ``SOURCES.md`` lists, fails the run, so CI can never go green by skipping
the real-data tests or running them on part of the data.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# No timing assertions in tests (machines are shared and noisy): hypothesis's per-example
# deadline is one, and it failed runs under load (a 342 ms example against 200 ms).
settings.register_profile("leanreplay", deadline=None)
settings.load_profile("leanreplay")

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_files"
SHARED = REPO.parent / "shared"
TRANSCRIPTS = SHARED / "transcripts"

MISSING_TRANSCRIPTS = (
    f"needs the shared transcripts at {TRANSCRIPTS} (a folder beside the checkout); "
    "absent here, so the real-data tests are skipped"
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def listed_transcripts(sources: str) -> list[str]:
    """The files a ``SOURCES.md`` lists: the first cell of each table row, under the folder
    its ``## folder/`` section names."""
    listed = []
    folder = ""
    for line in sources.splitlines():
        if line.startswith("## "):
            folder = line[3:].split()[0].rstrip("/")
        elif line.startswith("| ") and not line.startswith(("| file |", "|---")):
            listed.append(f"{folder}/{line.split('|')[1].strip()}")
    return listed


def pytest_sessionstart(session: pytest.Session) -> None:
    if not in_ci():
        return
    if not TRANSCRIPTS.is_dir():
        raise pytest.UsageError(
            f"CI=true but {TRANSCRIPTS} is missing: the real-data tests cannot be skipped in CI; "
            "check out the shared transcripts beside the repository"
        )
    sources = TRANSCRIPTS / "SOURCES.md"
    listed = listed_transcripts(sources.read_text(encoding="utf-8")) if sources.is_file() else []
    missing = [name for name in listed if not (TRANSCRIPTS / name).is_file()]
    if not listed or missing:
        raise pytest.UsageError(
            f"CI=true but {TRANSCRIPTS} is incomplete ({len(missing)} of the files its "
            f"SOURCES.md lists are missing, e.g. {missing[:1]}, or it lists none); the real-data "
            "tests would run on part of the data"
        )


def require_transcripts() -> Path:
    """The transcripts folder; skips the calling test (fails it under CI=true) when absent."""
    if TRANSCRIPTS.is_dir():
        return TRANSCRIPTS
    if in_ci():
        pytest.fail(f"CI=true but {TRANSCRIPTS} is missing", pytrace=False)
    pytest.skip(MISSING_TRANSCRIPTS)


def transcript_files(
    select: Callable[[Path], bool] = lambda p: p.suffix in (".json", ".jsonl"),
) -> list[Any]:
    """Transcript files for ``parametrize``, sorted; without the folder, one parameter that
    skips with the reason (instead of pytest's silent "empty parameter set")."""
    if not TRANSCRIPTS.is_dir():
        # A path (not None), so that ids computed from it still work while it is skipped.
        absent = TRANSCRIPTS / "absent"
        return [pytest.param(absent, marks=pytest.mark.skip(reason=MISSING_TRANSCRIPTS))]
    return sorted(p for p in TRANSCRIPTS.rglob("*") if p.is_file() and select(p))


def transcript_id(path: Path) -> str:
    return str(path.relative_to(TRANSCRIPTS))


@pytest.fixture(scope="session")
def transcripts() -> Path:
    """``../shared/transcripts``; the test skips (fails under CI=true) when it is absent."""
    return require_transcripts()


def load_manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SAMPLES / "manifest.json").read_text())
    return data["files"]


@pytest.fixture
def samples() -> Path:
    return SAMPLES
