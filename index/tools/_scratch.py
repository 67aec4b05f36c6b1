"""DuckDB's scratch folders and the copy builder's unfinished databases, named after the
process that owns them, so a later process removes what a killed one left behind.

A query's connection spills to a folder of its own (up to 4 GB, `_duck`'s limit) and removes it
when it is done; the copy builder writes its database beside the finished copy's name and
renames it into place. A process killed meanwhile (SIGKILL, the OOM killer) leaves them on
disk for good. Each is named ``<kind>-<space>-<pid>-...`` (a database
``<copy>.<space>-<pid>.tmp``, and its ``.wal``), where ``space`` is 12 hex digits of the
host's name and the pid namespace's identity: the pids that mean the same process. `sweep`
removes those of this space whose process is gone. A name of another space (another host, a
container sharing the home, a namespace since gone) is never judged by its pid: at worst it
stays.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import socket
import tempfile
import threading
import time

__all__ = ["KINDS", "alive", "make", "owner", "prefix", "sweep", "tmp_database"]

KINDS = ("q", "copy-q", "copy")  # a query's connection, a copy's open database, the builder
SWEEP_EVERY_S = 60.0  # a folder is swept at most this often by one process
_MAX_PID = 1 << 22  # Linux's highest pid_max
_NAME = re.compile(
    rf"(?P<kind>{'|'.join(sorted(KINDS, key=len, reverse=True))})"  # copy-q before copy
    r"-(?P<space>[0-9a-f]{12})-(?P<pid>[0-9]{1,7})-[^-]+"
)
_DATABASE = re.compile(r".+\.duckdb\.(?P<space>[0-9a-f]{12})-(?P<pid>[0-9]{1,7})\.tmp(?:\.wal)?")
_swept: dict[str, float] = {}
_swept_lock = threading.Lock()


@functools.cache
def _space_of(host: str, namespace: str) -> str:
    return hashlib.sha256(f"{host}\0{namespace}".encode()).hexdigest()[:12]


def space() -> str:
    """Where this process's pid means this process: its host and pid namespace."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:  # not Linux: the host alone
        namespace = ""
    return _space_of(socket.gethostname(), namespace)


def owner() -> str:
    """``<space>-<pid>`` of this process (read at each call: a fork has its own pid)."""
    return f"{space()}-{os.getpid()}"


def alive(pid: int) -> bool:
    """Whether a process ``pid`` runs here (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def prefix(kind: str) -> str:
    """What the names of this process's scratch folders of ``kind`` start with."""
    return f"{kind}-{owner()}-"


def make(root: str, kind: str) -> str:
    """A new scratch folder of ``kind`` under ``root``, owned by this process."""
    os.makedirs(root, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix(kind), dir=root)


def tmp_database(target: str) -> str:
    """Where the builder writes the copy ``target`` before renaming it into place."""
    return f"{target}.{owner()}.tmp"


def sweep(folder: str, *, force: bool = False) -> list[str]:
    """Remove the scratch folders and unfinished databases in ``folder`` whose process (in
    this space) is gone; returns their names. At most once a `SWEEP_EVERY_S` per folder
    unless ``force``. Called outside any lock: removing gigabytes takes a while."""
    now = time.monotonic()
    with _swept_lock:
        if not force and now - _swept.get(folder, -SWEEP_EVERY_S) < SWEEP_EVERY_S:
            return []
        _swept[folder] = now
    here, me = space(), os.getpid()
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        found = _NAME.fullmatch(name) or _DATABASE.fullmatch(name)
        if found is None or found["space"] != here:
            continue
        pid = int(found["pid"])
        if pid == me or pid >= _MAX_PID or alive(pid):
            continue
        path = os.path.join(folder, name)
        if found.re is _NAME:
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                continue
        removed.append(name)
    return removed
