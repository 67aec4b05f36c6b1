"""Scenarios on a small or read-only file system: a tmpfs mounted over the home in a private
mount namespace (needs root, or skips with the reason)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

# Prepended to every scenario: ``fill_disk(home)`` writes zeros until the disk is full.
FILL_DISK = """
def fill_disk(home):
    import os
    try:
        with open(os.path.join(home, "filler"), "wb") as f:
            while True:
                f.write(bytes(65536))
                f.flush()
    except OSError:
        pass
"""


def can_mount() -> bool:
    """True where ``unshare -m`` may mount a tmpfs (root in a private mount namespace)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


def on_small_home(
    tmp_path: Path,
    script: str,
    *args: str,
    size: str,
    setup: bool = False,
    read_only: bool = False,
    mode: str | None = None,
) -> dict[str, Any]:
    """Run the Python ``script`` (after `FILL_DISK`) with ``HOME_DIR *args [step]`` where the
    home is a tmpfs of ``size``: first ``setup`` (when asked), then the home remounted
    read-only (when asked), then ``mode``. Returns the JSON object the last step prints on
    its last line."""
    if not can_mount():
        pytest.skip("mounting a small tmpfs needs a private mount namespace (root)")
    home = tmp_path / "home"
    home.mkdir()
    path = tmp_path / "scenario.py"
    path.write_text(FILL_DISK + script)
    py = " ".join([sys.executable, str(path), str(home), *args])
    steps = [f"mount -t tmpfs -o size={size} tmpfs {home}"]
    if setup:
        steps.append(f"{py} setup")
    if read_only:
        steps.append(f"mount -o remount,ro {home}")
    steps.append(f"{py} {mode}" if mode else py)
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", " && ".join(steps)],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return out
