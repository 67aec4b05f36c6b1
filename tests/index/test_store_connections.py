"""Every connection the store opens carries the settings its promises rest on.

A SIGKILL test cannot see ``synchronous=OFF`` or a lost WAL mode (the OS keeps the pages), so
the settings are read back from each connection: a new home, a reopened one, an old store
being migrated, the Workspace's, one shared by threads, processes creating one home at once,
a full disk and a read-only home (in a private mount namespace). The store opens no other
connection: `index/store/_store.py` is the only module that calls ``sqlite3.connect``.
"""

from __future__ import annotations

import multiprocessing
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.index.store._store import BUSY_TIMEOUT_S, Store
from tests.conftest import REPO
from tests.index.test_store_migrations import TURN1, legacy_store
from tests.smallfs import on_small_home

WRITABLE = {
    "journal_mode": "wal",
    "synchronous": 2,  # FULL
    "foreign_keys": 1,
    "busy_timeout": int(BUSY_TIMEOUT_S * 1000),
}


def settings(store: Store) -> dict[str, Any]:
    with store._lock:  # threads share the one connection a Store holds, under its lock
        db: sqlite3.Connection = store._db
        return {name: db.execute(f"PRAGMA {name}").fetchone()[0] for name in WRITABLE}


def test_only_the_store_connects_to_sqlite() -> None:
    callers = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "index").rglob("*.py"))
        if re.search(r"sqlite3\.connect\(", path.read_text(encoding="utf-8"))
    ]
    assert callers == ["index/store/_store.py"]
    source = (REPO / "index/store/_store.py").read_text(encoding="utf-8")
    assert source.count("sqlite3.connect(") == 1  # in _connect, which applies the settings


def test_a_new_home_a_reopened_one_and_a_migrated_one(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "new"))
    assert settings(store) == WRITABLE
    store.append("c", [{"role": "user", "content": "x"}])
    store.close()
    again = Store(str(tmp_path / "new"))
    assert settings(again) == WRITABLE
    again.close()
    legacy_store(tmp_path / "old", TURN1)
    migrated = Store(str(tmp_path / "old"))
    assert migrated.migrated  # this open ran the steps
    assert settings(migrated) == WRITABLE
    migrated.close()


def test_the_workspace_store_and_threads(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        assert settings(ws._store) == WRITABLE
    opened: list[Store] = []
    thread = threading.Thread(target=lambda: opened.append(Store(str(tmp_path))))
    thread.start()
    thread.join()
    (store,) = opened
    seen: list[dict[str, Any]] = []

    def work(n: int) -> None:
        store.append("c", [{"role": "user", "content": f"from thread {n}"}])
        seen.append(settings(store))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [WRITABLE] * 4
    assert settings(store) == WRITABLE
    assert len(store.messages("c")) == 4
    store.close()


def _open_and_report(home: str, start: Any, out: Any) -> None:
    start.wait(60)
    store = Store(home)
    out.put(settings(store))
    store.close()


def test_processes_creating_one_home_at_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(3), ctx.Queue()
    workers = [
        ctx.Process(target=_open_and_report, args=(str(tmp_path), start, out)) for _ in "abc"
    ]
    for w in workers:
        w.start()
    reports = [out.get(timeout=90) for _ in workers]
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    assert reports == [WRITABLE] * 3


_SCENARIO = """
import json, os, sqlite3, sys
sys.path.insert(0, sys.argv[2])
from leanreplay.index import WorkspaceError
from leanreplay.index.store._store import Store
from tests.index.test_store_connections import settings
from tests.index.test_store_migrations import TURN1, legacy_store
home, step = sys.argv[1], sys.argv[3]
out = {}
if step == "setup":
    store = Store(os.path.join(home, "new"))
    store.append("c", [{"role": "user", "content": "kept"}])
    store.close()
    from pathlib import Path
    legacy_store(Path(home) / "old", TURN1)
    sys.exit()
if step == "full":
    fill_disk(home)
store = Store(os.path.join(home, "new"))
out["settings"] = settings(store)
out["read_only"] = store.read_only
out["messages"] = [m.message()["content"] for m in store.messages("c")]
store.close()
try:
    Store(os.path.join(home, "old"))
    out["old"] = "opened"
except WorkspaceError as exc:
    out["old"] = type(exc).__name__ + ": " + str(exc)
print(json.dumps(out))
"""


@pytest.mark.parametrize("remount", ["full", "ro"], ids=["full-disk", "read-only-home"])
def test_a_full_disk_and_a_read_only_home(tmp_path: Path, remount: str) -> None:
    read_only = remount == "ro"
    out = on_small_home(
        tmp_path, _SCENARIO, str(REPO), size="2m", setup=True, read_only=read_only, mode=remount
    )
    assert out["messages"] == ["kept"]
    # Both fall back to reading: a read-only file system, and a disk too full for the -shm
    # file. Without a -shm the store opens immutable, which keeps the file's journal mode
    # and reports "delete", since an immutable connection writes nothing.
    why = {
        "ro": "the home is on a read-only file system",
        "full": "the home cannot be written: disk I/O error (is the disk holding the home full?)",
    }[remount]
    assert out["read_only"] == why
    assert out["settings"] == {**WRITABLE, "journal_mode": "delete"}
    # A store too old to read as it is says how to upgrade it, in one line.
    assert out["old"] == (
        f"StoreVersionError: {why}, and the store was written by an older leanreplay (version "
        "0, this one reads 6): open it once where the home can be written, to upgrade it"
    )
