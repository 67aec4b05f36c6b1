"""The cyclic garbage collector paused while bulk data passes through: a log's import, a
batch of the conversation index.

An import holds a whole log's messages at once: a million of them are millions of dicts,
lists and strings, none in a reference cycle. The collector still walks every one of them at
each full collection, and on a heap that size the walks miss the caches: at 1,000,000
messages they were a third of the import (33-40 s against 21 s paused), at 100,000 a sixth.
The collector is switched off for the block and back on after it, as it was before the first
pause began; cycles made meanwhile are collected then. Work inside a pause that does make
cycles (a card's XML parser) collects the young generation itself (`collect_young`).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["collect_young", "gc_paused"]

_lock = threading.Lock()
_depth = 0  # pauses in progress, in any thread
_was_enabled = False  # the collector's state when the first of them began


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off. Pauses may overlap (threads, nesting):
    the collector comes back on when the last one ends, if it was on when the first began
    (a ``gc.disable()`` or ``gc.enable()`` inside a pause is overridden then)."""
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


def collect_young() -> None:
    """Collect the youngest generation if a pause is on: what was made since the last
    collection, so cycles a step left behind do not pile up until the pause ends. Each object
    is walked here once at most (survivors move to an older generation, which a pause never
    walks)."""
    if _depth:
        gc.collect(0)
