"""A directory on the path swapped for a symlink out of the root while the tool opens the
path: the check (realpath) and the open are two steps, so only the walk from the root's own
descriptor with ``O_NOFOLLOW`` on every component keeps the outside out."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanreplay.index import NotFoundError, OutsideRootsError, Workspace

BENIGN = "benign inside the root"
SECRET = "secret outside the root"

# Swaps root/dir between the real folder and a symlink to a folder outside the root, as
# fast as it can, in its own process (no GIL shared with the reader), until it is killed or
# its parent is gone (a test process killed by a timeout or a mutation run must not leave a
# swapper spinning).
# renameat2(RENAME_EXCHANGE) swaps the two names in one step, so root/dir always exists;
# where the file system lacks it, two renames through a parked name do.
SWAPPER = """
import ctypes, itertools, os, sys
root, outside = sys.argv[1], sys.argv[2]
parent = os.getppid()
def running(counter=itertools.count()):
    return next(counter) % 256 or os.getppid() == parent
real, parked, link = (os.path.join(root, n).encode() for n in ("dir", "dir.parked", "dir.link"))
os.symlink(outside, link)
libc = ctypes.CDLL(None, use_errno=True)
exchange = getattr(libc, "renameat2", None)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
if exchange is not None and exchange(AT_FDCWD, real, AT_FDCWD, link, RENAME_EXCHANGE) == 0:
    print("ready", flush=True)
    while running():
        exchange(AT_FDCWD, real, AT_FDCWD, link, RENAME_EXCHANGE)
    sys.exit()
print("ready", flush=True)
while running():
    os.rename(real, parked)
    os.rename(link, real)  # root/dir -> outside
    os.rename(real, link)
    os.rename(parked, real)  # root/dir is the real folder again
"""

WANTED_HITS = 3  # refusals by the walk itself: the swap landed between check and open
MAX_ATTEMPTS = 50_000  # only reached when the race never lands (the test then says so)


@contextlib.contextmanager
def swapping(root: Path, outside: Path) -> Iterator[None]:
    """root/dir swapped for a symlink to ``outside`` and back, as fast as it can, while the
    block runs (the swapper process is ready when the block starts)."""
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root), str(outside)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert swapper.stdout is not None
    try:
        assert swapper.stdout.readline() == "ready\n"
        yield
    finally:
        swapper.kill()
        swapper.wait()
        swapper.stdout.close()
        assert swapper.returncode == -9, "the swapper stopped on its own: the race proved nothing"


@pytest.fixture
def racing_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "file.txt").write_text(BENIGN)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file.txt").write_text(SECRET)
    with swapping(root, outside):
        yield root


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_directory_swapped_for_a_symlink_never_leaks(
    racing_root: Path, tmp_path: Path, absolute: bool
) -> None:
    path = str(racing_root / "dir" / "file.txt") if absolute else "dir/file.txt"
    outcomes = {"read": 0, "refused by the check": 0, "refused by the walk": 0, "missing": 0}
    with Workspace(tmp_path / "home", [racing_root]) as ws:
        for _ in range(MAX_ATTEMPTS):
            try:
                result = ws.file_read(path)
            except OutsideRootsError as exc:
                message = str(exc)
                assert SECRET not in message
                if "changed into a symlink while it was opened" in message:
                    outcomes["refused by the walk"] += 1
                else:
                    assert "outside the allowed roots" in message, message
                    outcomes["refused by the check"] += 1
                continue
            except NotFoundError:  # caught between two renames: no folder there
                outcomes["missing"] += 1
                continue
            # Whatever was read came from inside the root, and says so.
            assert result["content"] == f"1\t{BENIGN}", (result, outcomes)
            assert result["path"] == str(racing_root / "dir" / "file.txt"), result
            outcomes["read"] += 1
            if outcomes["refused by the walk"] >= WANTED_HITS:
                break
    # The walk refused a symlink it met after the check passed: the very state in which
    # following it would have served the secret. Without that, the test proved nothing.
    assert outcomes["refused by the walk"] >= WANTED_HITS, outcomes
    assert outcomes["read"] > 0, outcomes
