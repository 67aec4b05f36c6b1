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


@contextlib.contextmanager
def file_lock(path: str, wait_s: float = 0.0) -> Iterator[bool]:
    """Hold an exclusive lock on ``path``; yields False if another process held it for
    longer than ``wait_s`` seconds (0: do not wait)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, "a+")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise home_error("a lock file in the home", exc) from None
    with handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_POLL_S)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
