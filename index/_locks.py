"""Cross-process locks on files under the home (``flock``: released even if the holder is
killed)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

from ._errors import home_error

__all__ = ["file_lock"]

_POLL_S = 0.05


_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC  # what open(path, "a+") asks


@contextlib.contextmanager
def file_lock(path: str, wait_s: float = 0.0) -> Iterator[bool]:
    """Hold an exclusive lock on ``path``; yields False if another process held it for
    longer than ``wait_s`` seconds (0: do not wait)."""
    # A bare descriptor: flock needs no file object (open()'s text layer cost as much as the
    # lock), and the folder is made only when it is missing (a fold takes one per file).
    try:
        try:
            fd = os.open(path, _FLAGS, 0o666)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, _FLAGS, 0o666)
    except OSError as exc:
        raise home_error("a lock file in the home", exc) from None
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_POLL_S)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
