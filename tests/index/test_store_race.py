"""Two writers racing on ``BEGIN IMMEDIATE``: real processes, one store file (and, on the
PostgreSQL store, one database, where the conversation's row lock plays that part).

An import reads what of its log is stored already, then appends the rest. A deferred ``BEGIN``
lets both processes read the same state and then fight over the upgrade to a writer: one of
them fails with "database is locked" (SQLite's stale-snapshot refusal, which no busy wait
retries). ``BEGIN IMMEDIATE`` takes the write lock before the first read, so the second
import waits, then finds the log stored and appends nothing. (An append's first statement
is a write, so it takes the lock first either way; `test_store.py` races appends.)

To make the race certain rather than likely, each process pauses inside its transaction right
after that first read (in the ``attachments`` callback, which runs there for every message)
until the other process is paused there too, or ``RACE_WAIT_S`` passes. Under ``BEGIN
IMMEDIATE`` the other one never gets there while the first holds the lock, so the pause only
costs that wait; under ``BEGIN`` both get there and the race happens every time.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from leanreplay.index.store._attachments import SavedAttachment
from leanreplay.index.store._open import open_store

RACE_WAIT_S = 3.0
LOG = [
    {"role": "user", "content": "why did the build fail?"},
    {"role": "assistant", "content": "make stopped at the linker"},
    {"role": "user", "content": "fix it"},
]


def _importer(
    home: str,
    url: str | None,
    tag: str,
    log: list[dict[str, Any]],
    start: Any,
    inside: Any,
    out: Any,
) -> None:
    store = open_store(home, url)
    paused = False

    def pause_after_first_read(message: Mapping[str, Any]) -> list[SavedAttachment]:
        nonlocal paused
        if not paused:
            paused = True
            # Broken when the other import is not inside a transaction: it waits for our lock.
            with contextlib.suppress(threading.BrokenBarrierError):
                inside.wait(RACE_WAIT_S)
        return []

    start.wait(60)
    try:
        ids = store.ingest("log", log, attachments=pause_after_first_read)
        out.put((tag, "ok", ids))
    except Exception as exc:  # noqa: BLE001 - every failure, raw or not, goes to the parent
        out.put((tag, type(exc).__name__, str(exc)))
    finally:
        store.close()


def race(
    home: Path, url: str | None, logs: dict[str, list[dict[str, Any]]]
) -> list[tuple[str, str, Any]]:
    """Each process imports its log at the same moment; returns (tag, outcome, ids) by tag."""
    ctx = multiprocessing.get_context("spawn")
    start, inside, out = ctx.Barrier(2), ctx.Barrier(2), ctx.Queue()
    workers = [
        ctx.Process(target=_importer, args=(str(home), url, tag, log, start, inside, out))
        for tag, log in logs.items()
    ]
    for w in workers:
        w.start()
    results = sorted(out.get(timeout=120) for _ in workers)
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    return results


def test_two_imports_of_one_log_at_once_store_it_once(
    store_url: str | None, tmp_path: Path
) -> None:
    open_store(str(tmp_path), store_url).close()
    results = race(tmp_path, store_url, {"a": LOG, "b": LOG})
    # Neither saw "database is locked" (raw or as a StoreError).
    assert [status for _, status, _ in results] == ["ok", "ok"], results
    # One import stored the log; the other found it stored and appended nothing.
    assert sorted(len(ids) for _, _, ids in results) == [0, len(LOG)]
    store = open_store(str(tmp_path), store_url)
    stored = store.messages("log")
    store.close()
    assert [m.seq for m in stored] == [1, 2, 3]
    assert [m.message()["content"] for m in stored] == [m["content"] for m in LOG]


def test_a_live_log_imported_twice_at_once_as_it_grows(tmp_path: Path) -> None:
    """One process imports the log as it was, the other as it is now, at the same moment (the
    SQLite store only: the PostgreSQL store's race is the test above)."""
    store_url = None
    open_store(str(tmp_path), store_url).close()
    (a, b) = race(tmp_path, store_url, {"a": LOG[:2], "b": LOG})
    assert b[1] == "ok", b
    if a[1] == "ok":  # the older copy went first; the newer one appended the rest
        assert (len(a[2]), len(b[2])) == (2, 1)
    else:  # the newer copy went first; the older one is refused, not merged
        assert a[1:] == (
            "ImportFormatError",
            "conversation 'log' already holds 3 messages, more than this log; ingest it under "
            "another conversation id",
        )
        assert len(b[2]) == 3
    store = open_store(str(tmp_path), store_url)
    stored = store.messages("log")
    store.close()
    assert [m.message()["content"] for m in stored] == [m["content"] for m in LOG]
    assert [m.seq for m in stored] == [1, 2, 3]
