"""Ingest of many paths (files, globs, folders): the report, the CLI summary and exit code,
the progress bar, and --conversation-id wherever a FILE is accepted."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from leanreplay.index import ImportFormatError, IngestError, InvalidArgumentError, Workspace
from leanreplay.index.faces.cli import cli
from tests.conftest import REPO, SAMPLES


def run(base: Path, *args: str) -> tuple[int, str]:
    """Run the CLI with its home in ``base/home`` (the logs the tests write stay beside it)."""
    home = base / "home"
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)
    return result.exit_code, result.output


def _chat(path: Path, *texts: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    roles = ["user", "assistant"]
    path.write_text(
        "".join(
            json.dumps({"role": roles[i % 2], "content": t}) + "\n" for i, t in enumerate(texts)
        )
    )
    return path


def test_a_claude_code_project_folder_imports_every_session(
    tmp_path: Path, transcripts: Path
) -> None:
    folder = transcripts / "claude-code-m-claude"
    stems = sorted(p.name.removesuffix(".jsonl") for p in folder.glob("*.jsonl"))
    with Workspace(tmp_path / "home") as ws:
        report = ws.ingest(folder)
        assert [f.status for f in report.files] == ["imported"] * len(stems)
        assert list(report) == stems, "one conversation per file, named by the file"
        assert report.counts()["imported"] == 6
        again = ws.ingest(folder)
        assert again.summary() == "0 imported, 0 appended, 6 unchanged, 0 refused"
    code, out = run(tmp_path / "cli-home", "ingest", str(folder))
    assert code == 0
    assert out.splitlines()[-1] == "-- 6 imported, 0 appended, 0 unchanged, 0 refused"


def test_files_globs_and_folders_in_a_stable_order_with_a_report(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _chat(logs / "b" / "two.jsonl", "q2", "a2")
    _chat(logs / "a" / "one.jsonl", "q1", "a1")
    (logs / "a" / "notes.json").write_text('{"not": "a log"}')
    (logs / "a" / "readme.txt").write_text("ignored: no log suffix")
    grown = _chat(tmp_path / "live.jsonl", "q")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with Workspace(tmp_path / "home") as ws:
        ws.ingest(grown)
        _chat(grown, "q", "a", "q again")
        report = ws.ingest(
            logs, str(tmp_path / "*.jsonl"), bad, tmp_path / "missing", logs, errors="report"
        )
        by_name = {Path(f.path).name: f for f in report.files}
        assert [Path(f.path).name for f in report.files] == [
            "notes.json",
            "one.jsonl",
            "two.jsonl",
            "live.jsonl",
            "bad.json",
            "missing",
        ], "folders in sorted order, each file once"
        assert by_name["notes.json"].status == "skipped"
        assert by_name["one.jsonl"].status == "imported"
        assert by_name["live.jsonl"].status == "appended"
        assert by_name["live.jsonl"].added == 2
        assert by_name["bad.json"].status == "refused"
        assert "cannot tell the format" in str(by_name["bad.json"].reason)
        assert by_name["missing"].reason == "no file or folder here"
        assert not report.ok
        assert report.summary() == "2 imported, 1 appended, 0 unchanged, 2 refused, 1 skipped"
        assert list(report) == ["one", "two", "live"]
        # By default the refusals raise, after every other file was imported.
        _chat(logs / "c" / "three.jsonl", "q3")
        with pytest.raises(IngestError, match="2 of 6 files refused") as caught:
            ws.ingest(logs, bad, tmp_path / "missing")
        assert caught.value.report.counts()["imported"] == 1
        assert "three" in ws.conversations()
        with pytest.raises(ImportFormatError, match="no file matches this pattern"):
            ws.ingest(tmp_path / "nothing-*.jsonl")
        with pytest.raises(InvalidArgumentError, match="names one conversation"):
            ws.ingest(logs, conversation_id="x")


def test_progress_is_reported_per_file(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _chat(tmp_path / "logs" / f"{name}.jsonl", name)
    calls: list[tuple[int, int, str]] = []
    with Workspace(tmp_path / "home") as ws:
        ws.ingest(tmp_path / "logs", progress=lambda *a: calls.append(a))
    assert [(d, t) for d, t, _ in calls] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert calls[0][2].endswith("a.jsonl")


def test_cli_summary_lists_each_refusal_and_exits_non_zero(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    code, out = run(tmp_path, "ingest", str(SAMPLES / "conversation.jsonl"), str(bad))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("imported ")
    assert lines[0].endswith("-> conversation: 8 messages, anthropic")
    assert lines[1].startswith("refused   ")
    assert "cannot tell the format" in lines[1]
    assert lines[-1] == "-- 1 imported, 0 appended, 0 unchanged, 1 refused"
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), "ingest", str(bad)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: cannot tell the format"), "one file: one error line"
    assert len(result.output.strip().splitlines()) == 1
    code, out = run(tmp_path, "ingest", "--json", str(bad), str(SAMPLES / "conversation.jsonl"))
    assert code == 1
    data = json.loads(out)
    assert [f["status"] for f in data["files"]] == ["refused", "unchanged"]
    assert data["counts"]["refused"] == 1


def test_cli_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    for name in ("a", "b"):
        _chat(tmp_path / "logs" / f"{name}.jsonl", name)
    command = [
        sys.executable,
        "-m",
        "leanreplay.index.cli",
        "--home",
        str(tmp_path / "home"),
        "ingest",
    ]
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*command, str(tmp_path / "logs")],
            stdout=subprocess.PIPE,
            stderr=follower,
            cwd=REPO,
            env={**os.environ, "COLUMNS": "100"},
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0
    assert b"ingesting" in shown
    assert b"100%" in shown
    assert b"2 imported" in done.stdout


def test_conversation_id_wherever_a_file_is_accepted(tmp_path: Path) -> None:
    log = _chat(tmp_path / "chat.jsonl", "q", "a")
    code, _ = run(tmp_path, "replay", str(log), "--conversation-id", "mine", "--json")
    assert code == 0
    code, out = run(tmp_path, "conversations")
    assert out.startswith("mine\t2 messages")
    code, out = run(tmp_path, "ingest", str(log), "--conversation-id", "other")
    assert code == 0
    assert "-> other: 2 messages" in out


def test_options_named_in_error_messages_exist(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    for command in ("ingest", "replay"):
        result = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), command, str(junk)])
        assert result.exit_code != 0
        named = set(re.findall(r"(--[a-z][a-z-]+)", result.output))
        assert "--format" in named, result.output
        help_text = CliRunner().invoke(cli, [command, "--help"]).output
        for option in named:
            assert option in help_text, f"{command} error names {option}, which it lacks"


def _deep_folder(base: Path, levels: int) -> None:
    """``base/d/d/.../d/deep.jsonl``, ``levels`` folders down (made through descriptors: the
    path is longer than any one call may name)."""
    here = os.open(base, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=here)
        down = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = down
    log = os.open("deep.jsonl", os.O_WRONLY | os.O_CREAT, dir_fd=here)
    os.write(log, b'{"role": "user", "content": "deep"}\n')
    os.close(log)
    os.close(here)


def _remove_deep_folder(base: Path) -> None:
    """Remove what `_deep_folder` made without recursion (shutil.rmtree recurses)."""
    chain = [os.open(base, os.O_RDONLY)]
    while "d" in os.listdir(chain[-1]):
        chain.append(os.open("d", os.O_RDONLY, dir_fd=chain[-1]))
    for name in os.listdir(chain[-1]):
        os.unlink(name, dir_fd=chain[-1])
    for parent in reversed(chain[:-1]):
        os.close(chain.pop())
        os.rmdir("d", dir_fd=parent)
    os.close(chain.pop())


def test_a_folder_nested_past_the_walk_bound_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    (folder / "top").mkdir(parents=True)
    (folder / "top" / "a.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    _deep_folder(folder, 1_200)
    try:
        code, out = run(tmp_path, "ingest", str(folder))
        assert code == 1
        assert "Traceback" not in out
        assert [line.split()[0] for line in out.splitlines()] == ["refused", "imported", "--"]
        assert "folders nested over 128 levels deep are not searched" in out
        code, out = run(tmp_path, "ingest", str(folder) + "/**/*.jsonl")
        assert code == 1
        assert "Traceback" not in out
        assert "the pattern reaches folders nested too deeply" in out
    finally:
        _remove_deep_folder(folder)


def test_a_folder_with_no_log_says_so_and_exits_nonzero(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("no log suffix")
    code, out = run(tmp_path, "ingest", str(empty))
    assert code == 1
    assert "no log found: no .traj.json/.jsonl/.ndjson/.json file under this folder" in out
    assert "0 imported" not in out  # one line, not a summary of nothing
    # Files with a log suffix, none of them a log: each skipped, and the folder refused.
    notes = tmp_path / "notes"
    (notes / "a").mkdir(parents=True)
    (notes / "a" / "x.json").write_text('{"not": "a log"}')
    (notes / "y.json").write_text("[1, 2, 3]")
    code, out = run(tmp_path, "ingest", str(notes))
    assert code == 1
    assert "the 2 .traj.json/.jsonl/.ndjson/.json files under this folder are in no log" in out
    assert out.splitlines()[-1] == "-- 0 imported, 0 appended, 0 unchanged, 1 refused, 2 skipped"
    # In the library, such a folder raises (errors="raise"), beside one with a log it is refused.
    with Workspace(tmp_path / "home") as ws:
        with pytest.raises(ImportFormatError, match="empty: no log found"):
            ws.ingest(empty)
        report = ws.ingest(empty, _chat(tmp_path / "chat.jsonl", "q"), errors="report")
        assert [f.status for f in report.files] == ["refused", "imported"]
