"""Shared fixtures: paths to the committed samples and to the shared transcripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_files"
SHARED = REPO.parent / "shared"
TRANSCRIPTS = SHARED / "transcripts"


def load_manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SAMPLES / "manifest.json").read_text())
    return data["files"]


@pytest.fixture
def samples() -> Path:
    return SAMPLES
