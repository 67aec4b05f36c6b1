"""`leanreplay ingest / replay / call / tools / conversations` through click's runner."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from leanreplay.index.faces._render import progress_bar
from leanreplay.index.faces.cli import cli
from leanreplay.placeholders import CUT_MARKER, PLACEHOLDER_MARKER
from tests.conftest import SAMPLES
from tests.placeholders.test_replay import parse_call


def run(base: Path, *args: str) -> tuple[int, str]:
    """Run the CLI with its home in ``base/home`` (logs the tests write stay beside it)."""
    home = base / "home"
    result = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_ingest_replay_and_call_round_trip(tmp_path: Path) -> None:
    code, out = run(tmp_path, "ingest", str(SAMPLES / "conversation.jsonl"))
    assert code == 0
    assert out.startswith("imported  sample_files/conversation.jsonl -> conversation: 8 messages")
    code, out = run(tmp_path, "replay", "conversation", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["stats"]["placeholders"] == 1
    placeholder = data["messages"][2]["content"][0]["content"]
    cid, mid, _ = parse_call(placeholder)
    args = {"conversation_id": cid, "message_id": mid}
    code, out = run(tmp_path, "call", "conversation_read", json.dumps(args))
    assert code == 0
    read = json.loads(out)
    original = json.loads((SAMPLES / "conversation.jsonl").read_text().splitlines()[2])
    assert read["content"] == original["content"][0]["content"]


def test_replay_text_mode_shows_transcript_and_stats(tmp_path: Path) -> None:
    code, out = run(tmp_path, "replay", str(SAMPLES / "conversation.jsonl"))
    assert code == 0
    assert "== conversation ==" in out
    assert "[elided tool result]" in out
    assert "1 placeholders" in out


@pytest.mark.parametrize(
    ("floor", "shown"), [("40000", CUT_MARKER), ("0", PLACEHOLDER_MARKER)], ids=str
)
def test_replay_min_request_chars_sets_the_request_floor(
    tmp_path: Path, floor: str, shown: str
) -> None:
    """The sample's request is under 30,000 chars: under a 40,000-char floor nothing stale is
    elided, so its 27,708-char log, over the 20,000-char cap for a fresh result, is only cut
    to its ends; with no floor the stale log becomes a placeholder."""
    assert run(tmp_path, "ingest", str(SAMPLES / "conversation.jsonl"))[0] == 0
    code, out = run(tmp_path, "replay", "conversation", "--min-request-chars", floor, "--json")
    assert code == 0
    data = json.loads(out)
    stats = data["stats"]
    assert 20_000 < stats["chars_in"] < 30_000
    assert data["messages"][2]["content"][0]["content"].startswith(shown)
    assert stats["placeholders"] == 1
    assert stats["chars_out"] < stats["chars_in"]


def test_replay_of_a_real_agent_loop_by_assistant_turns(tmp_path: Path, transcripts: Path) -> None:
    path = next(transcripts.rglob("*.traj.json"))
    args = ["--home", str(tmp_path / "home"), "replay", str(path), "--age-unit", "assistant_turn"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["stats"]["placeholders"] > 0  # stderr says it was stored


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["call", "conversation_read", "{bad json"], "ARGUMENTS must be a JSON object"),
        (["call", "conversation_read", "[]"], "takes a JSON object of arguments"),
        (["call", "conversation_read", '{"conversation_id": "x"}'], "message_id: Field required"),
        (
            ["call", "conversation_read", '{"conversation_id": 5, "message_id": "m1"}'],
            "conversation_id: Input should be a valid string",
        ),
        (
            [
                "call",
                "conversation_read",
                '{"conversation_id": "x", "message_id": "m", "extra": 1}',
            ],
            "extra: Extra inputs are not permitted",
        ),
        (
            ["call", "conversation_read", '{"conversation_id": "nope", "message_id": "m1"}'],
            "no conversation 'nope'",
        ),
        (["call", "rm_rf", "{}"], "unknown tool 'rm_rf'"),
        (["replay", "no-such-conversation"], "no conversation 'no-such-conversation'"),
    ],
    ids=[
        "json",
        "array",
        "missing",
        "type",
        "extra",
        "unknown-conv",
        "unknown-tool",
        "replay-unknown",
    ],
)
def test_errors_are_one_line_with_nonzero_exit(
    tmp_path: Path, args: list[str], message: str
) -> None:
    code, out = run(tmp_path, *args)
    assert code == 1
    assert message in out
    assert "Traceback" not in out
    assert out.startswith("Error: ")
    assert out.count("\n") == 1


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "mcp"], ids=str)
def test_tools_schemas(fmt: str, tmp_path: Path) -> None:
    code, out = run(tmp_path, "tools", "--format", fmt)
    assert code == 0
    schemas = json.loads(out)
    names = [s["function"]["name"] if fmt == "openai" else s["name"] for s in schemas]
    assert "conversation_read" in names
    for s in schemas:
        description = s["function"]["description"] if fmt == "openai" else s["description"]
        assert 10 < len(description) < 300


def test_conversations_lists_ingested(tmp_path: Path) -> None:
    run(tmp_path, "ingest", str(SAMPLES / "conversation.jsonl"), "--conversation-id", "demo-1")
    code, out = run(tmp_path, "conversations")
    assert code == 0
    assert out.startswith("demo-1\t8 messages\tanthropic")


def test_home_from_environment(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["ingest", str(SAMPLES / "conversation.jsonl")], env={"LEANREPLAY_HOME": str(tmp_path)}
    )
    assert result.exit_code == 0
    assert (tmp_path / "store.sqlite3").is_file()


def _long_log(folder: Path) -> Path:
    """long.jsonl: 50 questions and answers of 3,000 chars, well over the fold threshold."""
    log = folder / "long.jsonl"
    lines = []
    for i in range(50):
        lines += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"answer {i} " + "z" * 3000},
        ]
    log.write_text("".join(json.dumps(m) + "\n" for m in lines))
    return log


def test_ingest_folds_a_long_log_unless_told_not_to(tmp_path: Path) -> None:
    log = _long_log(tmp_path)
    assert run(tmp_path / "a", "ingest", str(log))[0] == 0
    out = run(tmp_path / "a", "fold", "long", "--json")[1]
    assert json.loads(out)["folded"] is False  # ingest folded it already: nothing more to do
    out = run(tmp_path / "a", "replay", "long", "--json")[1]
    assert json.loads(out)["messages"][0]["content"].startswith("[Summary of the earlier")
    assert run(tmp_path / "b", "ingest", "--no-fold", str(log))[0] == 0
    out = run(tmp_path / "b", "replay", "long", "--json")[1]
    assert json.loads(out)["messages"][0]["content"] == "question 0"


def test_fold_command_folds_an_imported_long_conversation(tmp_path: Path) -> None:
    log = _long_log(tmp_path)
    assert run(tmp_path, "ingest", "--no-fold", str(log))[0] == 0
    code, out = run(tmp_path, "fold", "long")
    assert code == 0
    assert out.startswith("folded ")
    assert "fold #1" in out
    code, out = run(tmp_path, "fold", "long", "--json")
    assert json.loads(out)["folded"] is False
    code, out = run(tmp_path, "replay", "long", "--json")
    messages = json.loads(out)["messages"]
    assert messages[0]["content"].startswith("[Summary of the earlier conversation")
    assert messages[-1]["content"].startswith("answer 49")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_is_a_click_progressbar_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with progress_bar("pdf_search") as show:
        assert show is not None
        for done in (0, 64, 128, 150):
            show(done, 150, f"extracted {done} of 150 pages")
    text = sys.stderr.getvalue()
    assert "pdf_search: extracted 150 of 150 pages" in text
    assert "100%" in text
    assert text.endswith("\n")


def test_progress_bar_is_silent_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar("pdf_search") as show:
        assert show is None
    assert sys.stderr.getvalue() == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--home", "/proc/leanreplay-cannot-exist", "conversations"],
            "cannot use '/proc/leanreplay-cannot-exist' as the home",
        ),
        (
            ["--root", "/nonexistent-root", "conversations"],
            "root '/nonexistent-root' is not a directory",
        ),
    ],
    ids=["home", "root"],
)
def test_unusable_home_or_root_is_one_clear_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    if args[0] == "--root":
        args = ["--home", str(tmp_path / "home"), *args]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


def test_conversation_allowlist_option(tmp_path: Path) -> None:
    run(tmp_path, "ingest", str(SAMPLES / "conversation.jsonl"))
    args = json.dumps({"conversation_id": "conversation", "message_id": "m1"})
    code, out = run(tmp_path, "--conversation", "other", "call", "conversation_read", args)
    assert code == 1
    assert "no conversation 'conversation'" in out
    code, out = run(tmp_path, "--conversation", "conversation", "call", "conversation_read", args)
    assert code == 0
    assert json.loads(out)["role"] == "user"


def test_search_command_for_people(tmp_path: Path) -> None:
    run(tmp_path, "ingest", str(SAMPLES / "conversation.jsonl"))
    code, out = run(tmp_path, "search", "quota")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("conversation m")
    assert "**quota**" in first
    assert 'conversation_read(conversation_id="conversation"' in out.splitlines()[1]
    code, out = run(tmp_path, "search", "zeppelin")
    assert out.strip() == "no messages match 'zeppelin'"


def test_replay_of_a_folder_says_to_ingest_it(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    code, out = run(tmp_path, "replay", str(folder))
    assert code == 2
    assert "is a folder; import it with `leanreplay ingest" in out


@pytest.mark.parametrize("flag", ["meta", "isMeta"], ids=str)
def test_the_transcript_marks_meta_as_replay_sees_it(flag: str) -> None:
    # The renderer had its own test (meta only); is_meta also honours Claude Code's isMeta.
    from leanreplay.index.faces._render import render_message

    assert render_message({"role": "user", "content": "x", flag: True}).endswith("[meta]\nx")
    assert "[meta]" not in render_message({"role": "user", "content": "x"})
