"""The cyclic garbage collector paused while a log is imported.

An import holds a whole log's messages at once: a million of them are about a million dicts,
lists and strings, none in a reference cycle. The collector still walks every one of them at
each full collection, and on a heap that size the walks miss the caches: at 1,000,000
messages they were a third of the import (40 s against 25 s paused), at 100,000 a sixth. The
collector is switched off for the import and back on after it, as it was before the first
pause began; cycles made meanwhile are collected then.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0  # pauses in progress, in any thread
_was_enabled = False  # the collector's state when the first of them began


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off. Pauses may overlap (threads, nesting):
    the collector comes back on when the last one ends, if it was on when the first began."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
