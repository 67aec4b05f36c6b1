"""What a killed process leaves in the table cache (a query's spill folder, a builder's
unfinished database) is removed by the next process that queries; nothing a live process
or another host owns is touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leanreplay.index import Workspace
from leanreplay.index.tools import _scratch
from tests.conftest import REPO, in_ci

_SLOW_QUERY = """
import sys
from leanreplay.index import Workspace
ws = Workspace(sys.argv[1], [sys.argv[2]])
ws.table_query("t.csv", "SELECT count(*) FROM t, range(1000000000) r WHERE r.range % 7 = t.id")
"""


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def _table(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "t.csv").write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(5)))
    return tmp_path / "home", root


def test_a_query_killed_mid_run_leaves_its_scratch_and_the_next_query_removes_it(
    tmp_path: Path,
) -> None:
    home, root = _table(tmp_path)
    scratch = home / "tables" / "scratch"
    query = subprocess.Popen(
        [sys.executable, "-c", _SLOW_QUERY, str(home), str(root)], cwd=str(REPO)
    )
    mine = f"q-{_scratch.space()}-{query.pid}-"
    deadline = time.monotonic() + 60
    while not (scratch.is_dir() and any(p.name.startswith(mine) for p in scratch.iterdir())):
        assert query.poll() is None, "the query ended before it could be killed"
        assert time.monotonic() < deadline, "no scratch folder after 60 s"
        time.sleep(0.02)
    query.send_signal(signal.SIGKILL)
    query.wait()
    left = [p.name for p in scratch.iterdir() if p.name.startswith(mine)]
    assert left  # SIGKILL runs no cleanup
    with Workspace(home, [root]) as ws:
        assert ws.table_query("t.csv", "SELECT count(*) FROM t")["rows"] == [[5]]
    assert [p.name for p in scratch.iterdir()] == []  # its own removed as well


def test_the_sweep_removes_only_what_dead_processes_of_this_space_own(tmp_path: Path) -> None:
    here, dead = _scratch.space(), _dead_pid()
    elsewhere = "0123456789ab" if here != "0123456789ab" else "ba9876543210"
    live = subprocess.Popen(["sleep", "30"])
    try:
        names = {
            "dead query": f"q-{here}-{dead}-abc123",
            "dead open copy": f"copy-q-{here}-{dead}-abc123",
            "dead builder": f"copy-{here}-{dead}-abc123",
            "live query": f"q-{here}-{live.pid}-abc123",
            "this process": f"q-{here}-{os.getpid()}-abc123",
            "another space": f"q-{elsewhere}-{dead}-abc123",
            "an older version's": f"copy-{dead}abc",
            "a huge pid": f"q-{here}-9999999-abc123",
        }
        for name in names.values():
            (tmp_path / name).mkdir()
            (tmp_path / name / "spill.tmp").write_bytes(b"x" * 100)
        databases = {
            "dead database": f"k-v2.duckdb.{here}-{dead}.tmp",
            "its log": f"k-v2.duckdb.{here}-{dead}.tmp.wal",
            "live database": f"k-v2.duckdb.{here}-{live.pid}.tmp",
            "another space's database": f"k-v2.duckdb.{elsewhere}-{dead}.tmp",
            "an older version's database": f"k-v2.duckdb.{dead}.tmp",
            "finished copy": "k-v2.duckdb",
            "its claim": "k-v2.duckdb.building",
        }
        for name in databases.values():
            (tmp_path / name).write_bytes(b"d")
        removed = _scratch.sweep(str(tmp_path), force=True)
        gone = {"dead query", "dead open copy", "dead builder", "dead database", "its log"}
        every = {**names, **databases}
        assert sorted(removed) == sorted(every[k] for k in gone)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            v for k, v in every.items() if k not in gone
        )
        # Swept once a minute at most, unless forced.
        (tmp_path / names["dead query"]).mkdir()
        assert _scratch.sweep(str(tmp_path)) == []
        assert _scratch.sweep(str(tmp_path), force=True) == [names["dead query"]]
    finally:
        live.kill()
        live.wait()


def test_a_process_in_another_pid_namespace_names_another_space(tmp_path: Path) -> None:
    # A container sharing the home and the host's name (host networking): its pids mean
    # other processes, so its folders carry another space and no sweep here judges them.
    tools = os.path.dirname(_scratch.__file__)
    child = "import sys; sys.path.insert(0, sys.argv[1]); import _scratch; print(_scratch.owner())"
    argv = ["unshare", "-Urpf", "--mount-proc", sys.executable, "-I", "-c", child, tools]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        # util-linux's unshare with unprivileged user namespaces: Linux machines like CI's
        # have both; some hardened ones (AppArmor's userns restriction) refuse them.
        why = f"needs a pid namespace of its own (unshare -Urpf): {exc}"
        if in_ci():
            pytest.fail(f"CI=true but {why}", pytrace=False)
        pytest.skip(why)
    space, pid = out.stdout.strip().split("-")
    assert space != _scratch.space()
    assert int(pid) == 1  # the first process of its namespace
    (tmp_path / f"q-{space}-{pid}-abc123").mkdir()
    assert _scratch.sweep(str(tmp_path), force=True) == []


def test_the_builder_takes_over_its_scratch_folder_under_its_own_name(tmp_path: Path) -> None:
    # Made by the asking process and renamed by the builder (another process, as in
    # _duck._start), so a sweep after the asker exits (a CLI call) does not remove the
    # folder of a builder still running.
    from leanreplay.index.tools import _duckcopy

    made = _scratch.make(str(tmp_path), "copy")
    config = json.dumps({"temp_directory": made, "threads": 1})
    builder = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import _duckcopy, _scratch; "
        "print(json.dumps([_scratch.owner(), *_duckcopy.take_over(sys.argv[2], sys.argv[3])]))"
    )
    tools = os.path.dirname(_duckcopy.__file__)
    out = subprocess.run(
        [sys.executable, "-I", "-c", builder, tools, made, config],
        capture_output=True,
        text=True,
        check=True,
    )
    owner, mine, settings = json.loads(out.stdout)
    assert owner != _scratch.owner()
    assert not os.path.exists(made)
    assert os.path.isdir(mine)
    assert os.path.basename(mine) == f"copy-{owner}-{made.rsplit('-', 1)[-1]}"
    assert json.loads(settings) == {"temp_directory": mine, "threads": 1}
    assert _scratch.sweep(str(tmp_path), force=True) == [os.path.basename(mine)]  # it exited
