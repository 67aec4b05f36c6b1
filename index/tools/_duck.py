"""DuckDB, confined: the one way the table tools open DuckDB, check the model's SQL, and keep a
columnar copy of a big text table for the queries after the first.

A connection reads exactly the files it is given (``allowed_paths``) and its own scratch
folder, a fresh one under the home per connection (DuckDB spills there, and always allows
it); every path setting that would name a folder outside (temp, secrets, home, extensions)
points into that scratch folder; external access is off, and the configuration is locked
before any model SQL runs, so a statement cannot turn any of it back on.

The model's SQL must be one SELECT whose tables are the view ``t`` (or its own CTEs) and whose
table functions are a few that read nothing (`range`, `unnest` ...): file readers (``glob``,
``read_csv``, ``FROM 'file.csv'``), catalog and settings functions (``duckdb_settings()``,
``current_setting``) are refused with words that say to query ``t``, before DuckDB runs it.
Checked on DuckDB's own parse tree (``json_serialize_sql``), so no spelling slips past.

A text table's dialect and column types, as DuckDB's sniffer finds them, are remembered per
file content, so a query binds ``t`` without sampling the file again. One of `COPY_MIN_BYTES`
or more gets a columnar copy (a DuckDB database under the home, keyed by the file's content
fingerprint) built after its first query by a background process at the lowest CPU priority;
queries scan the file in place (as fast as DuckDB on the file) until the copy is ready, and
the copy after that. The most recent copy's database stays open between queries (each query
a cursor of its own), so a repeated query finds its blocks in DuckDB's buffer pool.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from .._errors import InvalidArgumentError
from . import _scratch
from ._paths import OpenFile, fingerprint

__all__ = [
    "COPY_MIN_BYTES",
    "COPY_VERSION",
    "MAX_QUERY_MEMORY",
    "MAX_SPILL",
    "QUERY_TABLE_FUNCTIONS",
    "build_copy",
    "cache_key",
    "check_select",
    "clean_error",
    "connect",
    "copy_cursor",
    "copy_path",
    "fd_path",
    "literal",
    "settings",
    "sniffed_reader",
]

MAX_QUERY_MEMORY = "1GB"
MAX_SPILL = "4GB"  # of a query's temporary files (sorts and joins bigger than memory)
QUERY_THREADS = 2
COPY_MIN_BYTES = 32 * 1024 * 1024  # text tables this big get a columnar copy
COPY_VERSION = 2
COPY_MEMORY = "512MB"  # of the background process that builds a copy
COPY_THREADS = 1
# Table functions that read nothing but their arguments.
QUERY_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
# Scalar functions that report the process's configuration or state.
_REFUSED_FUNCTIONS = frozenset({"current_setting", "getenv", "getvariable"})
_BUILDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_duckcopy.py")


@contextlib.contextmanager
def fd_path(f: OpenFile) -> Iterator[str]:
    """A path that names the already-confined open file, so no swapped link is followed."""
    for base in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(base):
            yield f"{base}/{f.fd}"
            return
    yield f.path


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def settings(scratch: str, *, threads: int, memory: str) -> dict[str, Any]:
    """DuckDB's configuration for a connection whose private folder is ``scratch``."""
    return {
        "threads": threads,
        "memory_limit": memory,
        "max_temp_directory_size": MAX_SPILL,
        "temp_directory": scratch,
        "secret_directory": scratch,
        "home_directory": scratch,
        "extension_directory": scratch,
        "allow_persistent_secrets": False,
        "allow_community_extensions": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "python_enable_replacements": False,  # no scan of the caller's Python variables
    }


@contextlib.contextmanager
def connect(files: Sequence[OpenFile | str], scratch_root: str) -> Iterator[tuple[Any, list[str]]]:
    """An in-memory DuckDB connection that may read only ``files`` (open files, or our own
    cache paths); yields it and the paths that name ``files`` in SQL."""
    import duckdb

    _scratch.sweep(scratch_root)  # what killed processes left
    scratch = _scratch.make(scratch_root, "q")
    try:
        with contextlib.ExitStack() as stack:
            paths = [
                stack.enter_context(fd_path(f)) if isinstance(f, OpenFile) else f for f in files
            ]
            con = duckdb.connect(
                ":memory:",
                config=settings(scratch, threads=QUERY_THREADS, memory=MAX_QUERY_MEMORY),
            )
            try:
                _lock_down(con, paths)
                yield con, paths
            finally:
                con.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _lock_down(con: Any, paths: list[str]) -> None:
    """What every connection gets before any model SQL runs: only ``paths`` (and its scratch
    folder) readable, no external access, and the configuration locked so no statement can
    turn either back on."""
    con.execute("SET enable_progress_bar = false")  # it would print to stdout
    con.execute("SET allowed_paths = ?", [paths])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


class _OpenCopy:
    """A columnar copy's database, open read-only and locked down as `connect`'s are, with
    the scratch folder it spills to, the file it opened (inode and mtime) and the queries
    using it."""

    def __init__(self, path: str, scratch_root: str, stamp: tuple[int, int]) -> None:
        import duckdb

        self.scratch = _scratch.make(scratch_root, "copy-q")
        self.stamp = stamp
        self.users = 0
        try:
            self.con = duckdb.connect(
                path,
                read_only=True,
                config=settings(self.scratch, threads=QUERY_THREADS, memory=MAX_QUERY_MEMORY),
            )
            _lock_down(self.con, [])
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    def close(self) -> None:
        self.con.close()  # its cursors too: only once no query uses it
        shutil.rmtree(self.scratch, ignore_errors=True)


# The copies kept open between queries, by path, most recent last: a repeated query then
# finds the copy's blocks in DuckDB's buffer pool instead of reading them again (a 1 GB CSV's
# copy: 137 -> 93 ms for a GROUP BY). One is kept once its queries are done (its pool, at
# most MAX_QUERY_MEMORY, stays allocated while it is open), besides those in use (never
# closed under a query).
# DuckDB opens a database file once per process (a second connect with another
# configuration is refused), so a path has one entry, whoever uses it.
COPIES_KEPT_OPEN = 1
_open_copies: OrderedDict[str, _OpenCopy] = OrderedDict()
_open_copies_lock = threading.Lock()


@contextlib.contextmanager
def copy_cursor(copy: str, scratch_root: str) -> Iterator[tuple[Any, list[str]]]:
    """A cursor on the columnar copy at ``copy`` (as `connect` yields: with no file paths),
    its database kept open for the next query. A copy replaced on disk (another inode or
    mtime: the same content, a copy is named by it) is opened anew once no query uses the
    old one. Raises DuckDB's error when the copy does not open."""
    st = os.stat(copy)
    stamp = (st.st_ino, st.st_mtime_ns)
    _scratch.sweep(scratch_root)  # outside the lock: it may remove gigabytes
    with _open_copies_lock:
        entry = _open_copies.pop(copy, None)
        if entry is not None and entry.stamp != stamp and not entry.users:
            entry.close()
            entry = None
        if entry is None:
            entry = _OpenCopy(copy, scratch_root, stamp)
        _open_copies[copy] = entry
        entry.users += 1
        try:
            cursor = entry.con.cursor()
        except BaseException:
            entry.users -= 1
            raise
        finally:
            _close_idle(COPIES_KEPT_OPEN)
    try:
        yield cursor, []
    finally:
        cursor.close()
        with _open_copies_lock:
            entry.users -= 1
            _close_idle(COPIES_KEPT_OPEN)


def _close_idle(keep: int) -> None:
    """Close the least recently used copies no query uses, all but ``keep`` of them (the
    lock held)."""
    idle = [path for path, entry in _open_copies.items() if not entry.users]
    for path in idle[: max(len(idle) - keep, 0)]:
        _open_copies.pop(path).close()


@atexit.register
def close_open_copies() -> None:
    """Close every copy kept open that no query uses (and remove its scratch folder)."""
    with _open_copies_lock:
        _close_idle(0)


_DESCRIPTOR = re.compile(r"/(?:proc/self|proc/\d+|dev)/fd/\d+")


def clean_error(exc: BaseException, names: dict[str, str]) -> str:
    """The first line of a DuckDB error, with every path in ``names`` (a descriptor path, a
    private folder) replaced by what the caller may see."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    for path, shown in sorted(names.items(), key=lambda item: -len(item[0])):
        text = text.replace(path, shown)
    return _DESCRIPTOR.sub("(the file)", text)  # whatever descriptor path is left


def _columns_note(columns: Sequence[str], limit: int = 20) -> str:
    return ", ".join(json.dumps(c) for c in columns[:limit])


def check_select(con: Any, sql: str, columns: Sequence[str]) -> None:
    """Refuse anything but one SELECT that reads the view ``t`` (and its own CTEs)."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise InvalidArgumentError(
            f"SQL does not parse: {clean_error(exc, {})}; write one SELECT over the view t"
        ) from None
    if len(statements) != 1:
        raise InvalidArgumentError(
            f"table_query runs exactly one statement, got {len(statements)}; "
            "write one SELECT over the view t"
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise InvalidArgumentError(
            f"table_query is read-only: only SELECT is allowed, got {kind.name}; "
            f"query the view t (columns {_columns_note(columns)})"
        )
    try:
        (raw,) = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
        tree = json.loads(raw)
    except (duckdb.Error, RecursionError, ValueError, TypeError):
        raise InvalidArgumentError(
            "table_query could not check this SELECT (it nests too deeply); write a "
            "flatter SELECT over the view t"
        ) from None
    if tree.get("error"):
        raise InvalidArgumentError(
            f"SQL does not parse: {tree.get('error_message', 'unknown error')}; write one "
            "SELECT over the view t"
        )
    refused = _refused(tree)
    if refused is not None:
        raise InvalidArgumentError(
            f"table_query reads only the view t: {refused} is not allowed; query t "
            f"(columns {_columns_note(columns)})"
        )


def _refused(tree: Any) -> str | None:
    """What in a parse tree reads anything but ``t``, or None. Iterative: a tree can be as
    deep as DuckDB's own expression depth limit."""
    ctes: set[str] = set()
    found: list[dict[str, Any]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            for entry in cte_map.get("map") or []:
                if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                    ctes.add(entry["key"].lower())
        found.append(node)
        stack.extend(node.values())
    for node in found:
        kind = node.get("type")
        if kind == "BASE_TABLE":
            name = str(node.get("table_name", ""))
            qualified = node.get("schema_name") or node.get("catalog_name")
            if qualified or name.lower() not in {"t", *ctes}:
                return f"the table {json.dumps(name)}"
        elif kind == "TABLE_FUNCTION":
            function = node.get("function")
            name = function.get("function_name", "") if isinstance(function, dict) else ""
            if str(name).lower() not in QUERY_TABLE_FUNCTIONS:
                return f"the table function {name}()"
        elif node.get("class") == "FUNCTION":
            name = str(node.get("function_name", ""))
            if name.lower() in _REFUSED_FUNCTIONS or node.get("schema") not in (None, ""):
                return f"the function {name}()"
    return None


# Background copies: target path -> the process building it.
_builds: dict[str, int] = {}
_builds_lock = threading.Lock()


def cache_key(source: OpenFile | str) -> str:
    """What the copy and the sniffed options of a text table are filed under: the content
    fingerprint of a user's file; the hash our own caches (sheet CSVs, UTF-8 copies) are
    named by."""
    if isinstance(source, OpenFile):
        return fingerprint(source)[:32]
    return os.path.basename(source).split(".", 1)[0][:32]


def sniffed_reader(con: Any, path: str, delim: str, cache_dir: str, key: str) -> str:
    """``read_csv`` with the options DuckDB's sniffer finds for the file at ``path`` (its
    dialect and column types), remembered per content: binding the view ``t`` then reads no
    sample of the file again (about a tenth of a second on a big file, at every query). A
    table expression with ``{}`` for the path."""
    plain = f"read_csv({{}}, delim = {literal(delim)}, header = true)"
    remembered = os.path.join(cache_dir, f"{key}-v{COPY_VERSION}.sniff")
    with contextlib.suppress(OSError):
        with open(remembered, encoding="utf-8") as kept:
            options = kept.read()
        if options:
            return _with_options(options)
    (prompt,) = con.execute(
        f"SELECT Prompt FROM sniff_csv({literal(path)}, delim = {literal(delim)}, header = true)"
    ).fetchone() or ("",)
    # DuckDB's own read_csv call with what it found: FROM read_csv('<path>', <options>);
    head, tail = f"FROM read_csv({literal(path)}, ", ");"
    if not (isinstance(prompt, str) and prompt.startswith(head) and prompt.endswith(tail)):
        return plain
    options = prompt[len(head) : -len(tail)]
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{remembered}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(options)
    os.replace(tmp, remembered)
    return _with_options(options)


def _with_options(options: str) -> str:
    # The columns={'a': 'BIGINT'} braces are literal in the table expression's template.
    return "read_csv({}, " + options.replace("{", "{{").replace("}", "}}") + ")"


def copy_path(key: str, cache_dir: str) -> str | None:
    """The columnar copy filed under ``key``, if it is built."""
    _reap()
    target = os.path.join(cache_dir, f"{key}-v{COPY_VERSION}.duckdb")
    return target if os.path.exists(target) else None


def _reap() -> None:
    with _builds_lock:
        for target, pid in list(_builds.items()):
            try:
                done = os.waitpid(pid, os.WNOHANG)[0] != 0
            except ChildProcessError:
                done = True  # waited for elsewhere
            if done:
                del _builds[target]  # waited for: no zombie is left behind


def build_copy(
    source: OpenFile | str, reader: str, key: str, cache_dir: str, scratch_root: str
) -> None:
    """Start building the columnar copy of the text table ``source`` (read by ``reader``, a
    table expression with ``{}`` for its path) in the background, unless it is built or
    being built (by this process or another)."""
    target = os.path.join(cache_dir, f"{key}-v{COPY_VERSION}.duckdb")
    _reap()
    with _builds_lock:
        if target in _builds or os.path.exists(target):
            return
        os.makedirs(cache_dir, exist_ok=True)
        claim = target + ".building"
        if not _claim(claim):
            return  # another process builds it
        try:
            _builds[target] = _start(source, reader, target, claim, scratch_root)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(claim)
            raise


def _claim(claim: str) -> bool:
    """Take the build of a copy (a file holding the builder's pid); a claim whose process is
    gone is taken over."""
    for _ in range(2):
        try:
            fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            os.write(fd, str(os.getpid()).encode())  # the builder's own pid replaces it
        except FileExistsError:
            try:
                with open(claim) as held:
                    pid = int(held.read().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid > 0 and _scratch.alive(pid):
                return False
            with contextlib.suppress(OSError):
                os.unlink(claim)
            continue
        os.close(fd)
        return True
    return False


def _start(source: OpenFile | str, reader: str, target: str, claim: str, scratch_root: str) -> int:
    """Spawn the builder (a process of its own session, not waited for: it outlives a CLI
    call that asked for it) and return its pid."""
    scratch = _scratch.make(scratch_root, "copy")  # the builder takes it over and removes it
    config = json.dumps(settings(scratch, threads=COPY_THREADS, memory=COPY_MEMORY))
    inherited = -1
    try:
        if isinstance(source, OpenFile):
            # The builder reads the very file this call confined, through a copy of the
            # descriptor; its size and times are checked again when the copy is done.
            inherited = os.dup(source.fd)
            os.set_inheritable(inherited, True)
            path = f"/proc/self/fd/{inherited}" if os.path.isdir("/proc/self/fd") else source.path
            stamp = f"{source.size}:{source.mtime_ns}:{source.ctime_ns}"
        else:
            path, stamp = source, ""
        argv = [sys.executable, "-I", _BUILDER, path, reader, target, claim, scratch, config, stamp]
        quiet = [(os.POSIX_SPAWN_OPEN, n, os.devnull, os.O_RDWR, 0) for n in (0, 1, 2)]
        # A session of its own: a terminal's Ctrl-C is for the server, not the builder.
        pid = os.posix_spawn(sys.executable, argv, os.environ, file_actions=quiet, setsid=True)
    finally:
        if inherited >= 0:
            os.close(inherited)
    with open(claim + ".pid", "w") as held:
        held.write(str(pid))
    os.replace(claim + ".pid", claim)
    return pid
