"""Build the columnar copy of one text table, as a background process at the lowest priority.

``python _duckcopy.py source reader target claim scratch config stamp``: loads the table that
``reader`` (a DuckDB table expression with ``{}`` for the path) reads from ``source`` into the
DuckDB database ``target``, written beside it and renamed into place when complete, so a
reader never sees half a copy, with the settings ``config`` (JSON: the query connections' own,
its folders all in ``scratch``, which is removed at the end). The source is read under the
same confinement as a query (that one file, external access off, configuration locked).
``stamp`` is the file's size and times when the build was asked for; a file that changed
meanwhile gets no copy. The claim file is removed at the end, whatever happened. Imports
nothing from the package but its sibling `_scratch` (the standard library only), and DuckDB.
The scratch folder, made by the process that asked for the copy, is renamed after this
process first, so that a sweep judges it by the builder's life, not the asker's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the folder out
import _scratch  # type: ignore[import-not-found]  # the sibling module, by path


def _stamp(path: str) -> str:
    st = os.stat(path)
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def build(source: str, reader: str, target: str, scratch: str, config: str, stamp: str) -> None:
    import duckdb

    tmp = _scratch.tmp_database(target)
    try:
        con = duckdb.connect(tmp, config=json.loads(config))
        try:
            con.execute("SET enable_progress_bar = false")
            con.execute("SET allowed_paths = ?", [[source]])
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
            quoted = "'" + source.replace("'", "''") + "'"
            con.execute(f"CREATE TABLE t AS SELECT * FROM {reader.format(quoted)}")
            con.execute("CHECKPOINT")
        finally:
            con.close()
        if stamp and _stamp(source) != stamp:
            return  # the file changed while it was copied: no copy
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, tmp + ".wal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
        shutil.rmtree(scratch, ignore_errors=True)


def lowest_priority() -> None:
    """Queries come first; the copy uses what they leave. The builder runs in a session of
    its own, and where Linux groups each session for the scheduler (autogroup, on by default
    in most distributions) a process's nice value weighs only inside its group: the group
    itself competed as an equal of the querying process's. So the group is niced too."""
    os.nice(19)
    # Not Linux, or no autogroup: nice alone is enough.
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as group:
        group.write("19")


def take_over(scratch: str, config: str) -> tuple[str, str]:
    """Rename the scratch folder after this process (its random suffix kept) and point
    the configuration there; a folder already swept (the asker was gone) is made anew."""
    head, name = os.path.split(scratch)
    mine = os.path.join(head, _scratch.prefix("copy") + name.rsplit("-", 1)[-1])
    try:
        os.rename(scratch, mine)
    except FileNotFoundError:
        os.makedirs(mine)
    settings = {k: mine if v == scratch else v for k, v in json.loads(config).items()}
    return mine, json.dumps(settings)


def main() -> None:
    source, reader, target, claim, scratch, config, stamp = sys.argv[1:8]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # run the finally blocks
    try:
        scratch, config = take_over(scratch, config)  # first: the asker may be gone
        lowest_priority()
        build(source, reader, target, scratch, config, stamp)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(claim)


if __name__ == "__main__":
    main()
