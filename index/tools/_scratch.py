"""DuckDB's scratch folders and the copy builder's unfinished databases, named after the
process that owns them, so a later process removes what a killed one left behind.

A query's connection spills to a folder of its own (up to `MAX_SPILL`, 4 GB) and removes it
when it is done; the copy builder writes its database beside the finished copy's name and
renames it into place. A process killed meanwhile (SIGKILL, the OOM killer, a power cut)
leaves them on disk for good. Each is named ``<kind>-<host>-<pid>-...`` (a database
``<copy>.<host>-<pid>.tmp``, and its ``.wal``); `sweep` removes those of this host whose
process is gone. A process of another host (a home on a shared disk) is never judged by its
pid here.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import threading
import time

__all__ = ["KINDS", "alive", "make", "owner", "sweep", "tmp_database"]

KINDS = ("q", "copy-q", "copy")  # a query's connection, a copy's open database, the builder
SWEEP_EVERY_S = 60.0  # a folder is swept at most this often by one process
_swept: dict[str, float] = {}
_swept_lock = threading.Lock()


def owner() -> str:
    """``<host>-<pid>`` of this process (read at each call: a fork has its own pid)."""
    return f"{socket.gethostname()}-{os.getpid()}"


def alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make(root: str, kind: str) -> str:
    """A new scratch folder of ``kind`` under ``root``, owned by this process; what killed
    processes left under ``root`` is swept first."""
    os.makedirs(root, exist_ok=True)
    sweep(root)
    return tempfile.mkdtemp(prefix=f"{kind}-{owner()}-", dir=root)


def tmp_database(target: str) -> str:
    """Where the builder writes the copy ``target`` before renaming it into place."""
    return f"{target}.{owner()}.tmp"


def _dead_pid(rest: str) -> bool:
    """``rest`` starts with a pid of this host and that process is gone."""
    pid, _, _ = rest.partition("-")
    return pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid))


def sweep(folder: str, *, force: bool = False) -> list[str]:
    """Remove the scratch folders and unfinished databases in ``folder`` whose process (of
    this host) is gone; returns their names. At most once a `SWEEP_EVERY_S` per folder
    unless ``force``."""
    now = time.monotonic()
    with _swept_lock:
        if not force and now - _swept.get(folder, -SWEEP_EVERY_S) < SWEEP_EVERY_S:
            return []
        _swept[folder] = now
    host = socket.gethostname()
    database = re.compile(rf"\.duckdb\.{re.escape(host)}-(\d+)\.tmp(?:\.wal)?")
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        path = os.path.join(folder, name)
        kind = next((k for k in KINDS if name.startswith(f"{k}-{host}-")), None)
        if kind is not None and _dead_pid(name[len(f"{kind}-{host}-") :]):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
            continue
        found = database.search(name)
        if found is not None and name.endswith(found.group(0)) and _dead_pid(found.group(1)):
            try:
                os.unlink(path)
            except OSError:
                continue
            removed.append(name)
    return removed
