"""What `leanreplay view` remembers between requests: numbers that are expensive to compute
and change only when a conversation grows (the store is append-only) or folds again, each
keyed by the conversation's last position (and fold generation), so a stale one is never
shown."""

from __future__ import annotations

import os
import threading
from typing import Any

from .._errors import WorkspaceError
from .._workspace import Workspace
from ._viewfacts import TITLE_MESSAGES, log_times, title_of

__all__ = ["SERIES_POINTS", "ViewCache"]

SERIES_POINTS = 150  # turns drawn at most, plus both sides of up to 75 folds


class ViewCache:
    """Cached numbers of one workspace's conversations, safe across the server's threads."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self._lock = threading.Lock()
        self._stored: dict[str, tuple[int, int]] = {}  # cid -> (last seq, chars)
        self._replays: dict[str, tuple[tuple[int, int], dict[str, int]]] = {}
        self._turns: dict[str, tuple[int, int]] = {}
        self._series: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self._titles: dict[str, tuple[int, str | None]] = {}
        self._sources: dict[str, str | None] = {}
        self._times: dict[str, tuple[tuple[Any, ...], tuple[float, float] | None]] = {}

    def title(self, cid: str, last_seq: int) -> str | None:
        """The first request (`title_of`); once found it never changes (append-only)."""
        with self._lock:
            cached = self._titles.get(cid)
        if cached is not None and (cached[1] is not None or cached[0] == last_seq):
            return cached[1]
        head = [m for _, m in self.ws.message_page(cid, before=TITLE_MESSAGES + 1)]
        found = title_of(head)
        with self._lock:
            self._titles[cid] = (last_seq, found)
        return found

    def log_times(self, cid: str) -> tuple[float, float] | None:
        """The first and last times the conversation's log records (`log_times`), read again
        only when the log file changes."""
        with self._lock:
            known = cid in self._sources
            source = self._sources.get(cid)
        if not known:  # a conversation's source is the one it was created with
            try:
                source = self.ws.info(cid).source
            except WorkspaceError:
                return None
            with self._lock:
                self._sources[cid] = source
        try:
            st = os.stat(source) if source else None
        except OSError:
            st = None
        key = (source, st.st_size, st.st_mtime_ns, st.st_ino) if st else (source,)
        with self._lock:
            cached = self._times.get(cid)
        if cached is not None and cached[0] == key:
            return cached[1]
        times = log_times(source) if st else None
        with self._lock:
            self._times[cid] = (key, times)
        return times

    def stored_chars(self, cid: str, last_seq: int) -> int:
        """Content chars of everything stored, adding only what arrived since last asked."""
        with self._lock:
            seq, total = self._stored.get(cid, (0, 0))
        if seq != last_seq:  # append-only: add what arrived since
            total += self.ws.stored_chars(cid, after=seq)
            with self._lock:
                self._stored[cid] = (last_seq, total)
        return total

    def replay_stats(self, cid: str, last_seq: int, *, compute: bool = True) -> dict[str, Any]:
        """Replay size and placeholders of a conversation now (cached until it changes); with
        ``compute=False`` None for both when not cached yet (the page fetches them later)."""
        fold = self.ws.fold_state(cid)
        key = (last_seq, fold["generation"] if fold else 0)
        with self._lock:
            cached = self._replays.get(cid)
        if cached is not None and cached[0] == key:
            return cached[1]
        if not compute:
            return {"replay": None, "placeholders": None, "folds": key[1]}
        result = self.ws.replay(cid)
        stats = {"replay": result.chars_out, "placeholders": result.placeholders, "folds": key[1]}
        with self._lock:
            self._replays[cid] = (key, stats)
        return stats

    def turns(self, cid: str, last_seq: int) -> int:
        """Turns of a conversation (a genuine user message starts each)."""
        with self._lock:
            cached = self._turns.get(cid)
        if cached is not None and cached[0] == last_seq:
            return cached[1]
        count = self.ws.turn_count(cid)
        with self._lock:
            self._turns[cid] = (last_seq, count)
        return count

    def size_series(self, cid: str, last_seq: int) -> list[dict[str, Any]]:
        """`Workspace.size_series` at most `SERIES_POINTS` points, as dicts."""
        with self._lock:
            cached = self._series.get(cid)
        if cached is not None and cached[0] == last_seq:
            return cached[1]
        series = [p.to_dict() for p in self.ws.size_series(cid, max_points=SERIES_POINTS)]
        with self._lock:
            self._series[cid] = (last_seq, series)
        return series
