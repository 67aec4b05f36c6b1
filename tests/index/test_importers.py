"""Importers on the real transcripts in ../shared/transcripts and on crafted edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import ImportFormatError, InvalidArgumentError, Workspace, load_log
from leanreplay.index.store._importers import UNREADABLE
from leanreplay.placeholders import (
    STUB_TEXT,
    ReplayPolicy,
    call_inputs,
    check_pairing,
    content_chars,
    is_genuine_user,
    is_placeholder,
    replay,
    result_slots,
)
from leanreplay.placeholders._shapes import INJECTED_PREFIXES
from tests.builders import oa_call, oa_result, read_whole, user
from tests.conftest import (
    TRANSCRIPTS,
    listed_transcripts,
    require_transcripts,
    transcript_files,
    transcript_id,
)
from tests.placeholders.test_replay import assert_prefix_extensions, parse_call, parse_part

REAL_FILES = transcript_files()


# What each folder of the shared transcripts holds (its SOURCES.md says so).
SOURCE_FORMATS = {
    "claude-code-m-claude": "claude-code",
    "mini-swe-agent-pr816": "mini-swe-agent",
    "tau-bench": "tau-bench",
}


def test_the_ci_guard_reads_the_transcripts_sources_md_list(transcripts: Path) -> None:
    # Under CI=true, conftest refuses to start when a file SOURCES.md lists is missing: its
    # parser must see exactly the files these tests read.
    listed = listed_transcripts((transcripts / "SOURCES.md").read_text(encoding="utf-8"))
    assert sorted(listed) == sorted(transcript_id(p) for p in REAL_FILES)


@pytest.mark.parametrize("path", REAL_FILES, ids=transcript_id)
def test_real_transcript_is_detected_as_the_format_it_was_written_in(path: Path) -> None:
    imported = load_log(str(path))  # format="auto"
    assert imported, "no conversation"
    expected = SOURCE_FORMATS[path.relative_to(TRANSCRIPTS).parts[0]]
    assert {i.format for i in imported} == {expected}
    assert all(i.messages for i in imported)


@pytest.fixture(scope="module")
def real_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    require_transcripts()
    home = tmp_path_factory.mktemp("real")
    ids: dict[str, list[str]] = {}
    with Workspace(home) as ws:
        for path in REAL_FILES:
            ids[str(path)] = list(ws.ingest(path))
    return home, ids


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        return _strings(parsed) if not isinstance(parsed, str) else [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def check_round_trips(ws: Workspace, result: Any, stored: dict[str, dict[str, Any]]) -> int:
    """Every placeholder, result or input, names a call whose pages give the original back."""
    checked = 0
    for new in result.messages:
        for slot in result_slots(new):
            if not is_placeholder(slot.content):
                continue
            text = slot.content if isinstance(slot.content, str) else slot.content[0]["text"]
            conv, mid, call = parse_call(text)
            (match,) = [s for s in result_slots(stored[mid]) if s.tool_call_id == slot.tool_call_id]
            whole, pages = read_whole(ws, conv, mid, call)
            assert whole == match.content
            assert all(len(json.dumps(p, ensure_ascii=False)) <= 40_000 for p in pages)
            checked += 1
        for call_id, value in call_inputs(new):
            fields = [s for s in _strings(value) if is_placeholder(s)]
            if not fields:
                continue
            for field in fields:
                conv, mid, call = parse_call(field)
                assert (call, parse_part(field)) == (call_id, "input")
                before = dict(call_inputs(stored[mid]))[call_id]
                whole, _ = read_whole(ws, conv, mid, call, part="input")
                assert json.dumps(whole) == json.dumps(before)  # byte-exact
            if isinstance(value, str):
                json.loads(value)  # OpenAI arguments still parse
            else:
                assert list(value) == list(before)  # the object keeps its keys
            checked += 1
    return checked


REAL_POLICIES = [
    ReplayPolicy(),
    ReplayPolicy.seed(),
    ReplayPolicy(timing="eager", keep_user_exchanges=1, keep_assistant_turns=3),
]


@pytest.mark.parametrize("path", REAL_FILES, ids=transcript_id)
def test_real_transcript_imports_replays_and_round_trips(
    real_home: tuple[Path, dict[str, list[str]]], path: Path
) -> None:
    home, ids = real_home
    with Workspace(home) as ws:
        for cid in ids[str(path)]:
            originals = ws.messages(cid)
            assert originals, f"{cid} imported no messages"
            stored = {m["id"]: m for m in originals}
            for policy in REAL_POLICIES:
                result = ws.replay(cid, policy)
                assert check_pairing(result.messages) == []
                assert result.chars_out <= result.chars_in
                assert check_round_trips(ws, result, stored) == result.placeholders
                again = replay(result.messages, conversation_id=cid, policy=policy)
                assert json.dumps(again.messages) == json.dumps(result.messages)  # idempotent


@pytest.mark.parametrize("path", REAL_FILES, ids=transcript_id)
def test_real_agent_loops_extend_their_requests_between_batches(
    real_home: tuple[Path, dict[str, list[str]]], path: Path
) -> None:
    home, ids = real_home
    with Workspace(home) as ws:
        for cid in ids[str(path)]:
            assert_prefix_extensions(ws.messages(cid), ReplayPolicy(), cid)


def test_real_claude_code_session_facts(real_home: tuple[Path, dict[str, list[str]]]) -> None:
    home, ids = real_home
    path = TRANSCRIPTS / "claude-code-m-claude" / "21037e11-89de-484d-abba-8705254aa991.jsonl"
    with Workspace(home) as ws:
        (cid,) = ids[str(path)]
        assert cid == "21037e11-89de-484d-abba-8705254aa991"
        info = ws.info(cid)
        assert "28 unreadable lines skipped" in info.notes
        messages = ws.messages(cid)
        # Records sharing message.id were merged: no two assistants in a row from one API call.
        assert sum(is_genuine_user(m) for m in messages) >= 10
        # Ingest folds the 215k-char session as if it had been appended message by message.
        fold = ws.fold_state(cid)
        assert fold is not None
        assert fold["generation"] >= 1
        lean = ws.replay(cid)
        assert lean.messages[0]["content"].startswith("[Summary of the earlier conversation")
        assert lean.chars_out < sum(content_chars(m) for m in messages) / 2


def test_subagent_log_becomes_its_own_conversation(
    real_home: tuple[Path, dict[str, list[str]]],
) -> None:
    home, ids = real_home
    (cid,) = ids[str(TRANSCRIPTS / "claude-code-m-claude" / "agent-abc3cb6.jsonl")]
    assert cid == "agent-abc3cb6"
    with Workspace(home) as ws:
        assert any("subagent log" in n for n in ws.info(cid).notes)


def test_tau_bench_is_one_conversation_per_trajectory(
    real_home: tuple[Path, dict[str, list[str]]],
) -> None:
    _, ids = real_home
    tau = ids[str(TRANSCRIPTS / "tau-bench" / "gpt-4o-airline.json")]
    assert len(tau) == 200
    assert "gpt-4o-airline-task0-trial0" in tau


def test_mini_swe_agent_exit_is_meta(real_home: tuple[Path, dict[str, list[str]]]) -> None:
    home, ids = real_home
    path = next(p for p in REAL_FILES if p.name.endswith(".traj.json"))
    with Workspace(home) as ws:
        messages = ws.messages(ids[str(path)][0])
    assert messages[-1]["meta"] is True
    assert messages[-1]["source_role"] == "exit"
    assert sum(is_genuine_user(m) for m in messages) == 1


def _write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def cc(
    kind: str, content: Any, uuid: str, *, msg_id: str | None = None, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if msg_id:
        message["id"] = msg_id
    return {
        "type": kind,
        "sessionId": "sess-1",
        "uuid": uuid,
        "isSidechain": False,
        "message": message,
        **extra,
    }


def test_claude_code_merge_meta_broken_lines_and_stubs(tmp_path: Path) -> None:
    records = [
        {"type": "summary", "summary": "x"},
        cc("user", "please check", "u1"),
        cc(
            "assistant",
            [{"type": "thinking", "thinking": "t", "signature": "s"}],
            "a1",
            msg_id="msg_1",
        ),
        cc(
            "assistant",
            [{"type": "tool_use", "id": "T1", "name": "Bash", "input": {}}],
            "a2",
            msg_id="msg_1",
        ),
        cc("user", [{"type": "tool_result", "tool_use_id": "T1", "content": "one"}], "r1"),
        cc(
            "assistant",
            [{"type": "tool_use", "id": "T2", "name": "Read", "input": {}}],
            "a3",
            msg_id="msg_1",
        ),
        cc("user", [{"type": "tool_result", "tool_use_id": "T2", "content": "two"}], "r2"),
        '{"type": "user", "message": {"role": "us',  # a line cut by a redaction pass
        cc("user", "<command-name>/clear</command-name>", "u2"),
        cc("user", "caveat", "u3", isMeta=True),
        cc("user", [{"type": "tool_result", "tool_use_id": "GHOST", "content": "orphan"}], "r3"),
        cc(
            "assistant",
            [{"type": "tool_use", "id": "T3", "name": "Bash", "input": {}}],
            "a4",
            msg_id="msg_2",
        ),
        cc("assistant", [{"type": "text", "text": "side"}], "s1", msg_id="msg_9", isSidechain=True),
    ]
    path = _write_jsonl(tmp_path / "session.jsonl", records)
    with Workspace(tmp_path / "home") as ws:
        (cid,) = ws.ingest(path)
        assert cid == "session", "the file names the conversation"
        stored = ws.messages(cid)
        notes = ws.info(cid).notes
        replayed = ws.replay(cid)
    # The store holds every record of the main chain as it is, the orphan result included.
    assert [m["id"] for m in stored] == ["u1", "a1", "a2", "r1", "a3", "r2", "u2", "u3", "r3", "a4"]
    assert stored[8]["content"][0]["tool_use_id"] == "GHOST"
    assert stored[1]["api_message_id"] == "msg_1"
    assert stored[6]["meta"] is True
    assert stored[7]["meta"] is True
    assert "1 unreadable lines skipped" in notes
    assert "1 sidechain records skipped" in notes
    # The replay joins the records of one API message, leaves the orphan out, stubs T3.
    messages = replayed.messages
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "user",
        "user",
        "user",
        "assistant",
        "user",
    ]
    merged = messages[1]
    assert merged["id"] == "a1"
    assert [b["type"] for b in merged["content"]] == ["thinking", "tool_use", "tool_use"]
    assert [b["tool_use_id"] for b in messages[2]["content"]] == ["T1", "T2"]
    assert messages[2]["block_ids"] == ["r1", "r2"]
    stub = messages[6]
    assert stub["content"][0]["tool_use_id"] == "T3"
    assert stub["content"][0]["content"] == STUB_TEXT
    assert check_pairing(messages) == []
    assert any("joined" in n for n in replayed.notes)
    assert any("without a call" in n for n in replayed.notes)
    assert any("got an explicit stub result" in n for n in replayed.notes)


@pytest.mark.parametrize("prefix", INJECTED_PREFIXES, ids=str)
@pytest.mark.parametrize("as_blocks", [False, True], ids=["string", "text-blocks"])
def test_the_importer_marks_meta_exactly_what_replay_calls_injected(
    tmp_path: Path, prefix: str, as_blocks: bool
) -> None:
    # The importer had its own copy of the list, without "Caveat:": a Claude Code caveat
    # record not flagged isMeta was stored as a message a person typed.
    text = f"  {prefix} ... the rest of what the runtime wrote"
    content: Any = [{"type": "text", "text": text}] if as_blocks else text
    records = [cc("user", "fix the build", "u1"), cc("user", content, "u2")]
    path = _write_jsonl(tmp_path / "session.jsonl", records)
    with Workspace(tmp_path / "home") as ws:
        (cid,) = ws.ingest(path)
        stored = ws.messages(cid)
    assert "meta" not in stored[0]
    assert stored[1]["meta"] is True
    assert not is_genuine_user({"role": "user", "content": content})


def test_real_claude_code_task_notifications_are_runtime_input(
    real_home: tuple[Path, dict[str, list[str]]],
) -> None:
    # Claude Code writes "<task-notification>" user records (no isMeta) when a background
    # command or subagent ends; counted as typed input, each one restarted the exchange age.
    home, ids = real_home
    found: dict[str, int] = {}
    with Workspace(home) as ws:
        for path, cids in ids.items():
            for cid in cids:
                for m in ws.messages(cid):
                    content = m.get("content")
                    text = content if isinstance(content, str) else ""
                    if m.get("role") == "user" and text.startswith("<task-notification>"):
                        assert m.get("meta") is True
                        assert not is_genuine_user({"role": "user", "content": content})
                        found[Path(path).name[:8]] = found.get(Path(path).name[:8], 0) + 1
    assert found == {"21037e11": 2, "343e3472": 1, "554b9fa6": 2}


def test_openai_jsonl_and_json_array_import_the_same(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "s"},
        user("q"),
        oa_call(("c", "f")),
        oa_result("c", "r"),
    ]
    (tmp_path / "a.json").write_text(json.dumps(messages))
    _write_jsonl(tmp_path / "b.jsonl", messages)
    with Workspace(tmp_path / "home") as ws:
        (a,) = ws.ingest(tmp_path / "a.json")
        (b,) = ws.ingest(tmp_path / "b.jsonl")
        assert (a, b) == ("a", "b")
        assert ws.info(a).format == "openai"
        assert [m["content"] for m in ws.messages(a)] == [m["content"] for m in ws.messages(b)]


def test_reingesting_a_grown_log_appends_only_new_messages(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    first = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}]
    _write_jsonl(path, first)
    with Workspace(tmp_path / "home") as ws:
        ws.ingest(path)
        ws.ingest(path)  # unchanged: a no-op
        assert len(ws.messages("chat")) == 2
        _write_jsonl(path, [*first, {"role": "user", "content": "q2"}])
        ws.ingest(path)
        assert [m["content"] for m in ws.messages("chat")] == ["q1", "a1", "q2"]
        _write_jsonl(path, [{"role": "user", "content": "different"}, *first])
        with pytest.raises(ImportFormatError, match="already stored with different messages"):
            ws.ingest(path)


@pytest.mark.parametrize(
    ("content", "fmt", "match"),
    [
        ("not json at all", "auto", "cannot tell the format"),
        ('{"hello": 1}', "auto", "cannot tell the format"),
        ('[{"role": "user", "content": "x"}, 5]', "openai", "item 1 is not a message"),
        ('{"messages": 3}', "mini-swe-agent", "object with 'messages'"),
        ('[{"nope": 1}]', "tau-bench", "element 0 has no 'traj'"),
    ],
    ids=["garbage", "object", "bad-item", "bad-traj", "bad-tau"],
)
def test_bad_logs_get_clear_errors(tmp_path: Path, content: str, fmt: str, match: str) -> None:
    path = tmp_path / "log.json"
    path.write_text(content)
    with Workspace(tmp_path / "home") as ws, pytest.raises(ImportFormatError, match=match):
        ws.ingest(path, format=fmt)
    with Workspace(tmp_path / "home") as ws:
        assert ws.conversations() == []


def test_unknown_format_and_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_bytes(b"\xff\xfe\x00junk")
    with Workspace(tmp_path / "home") as ws:
        with pytest.raises(InvalidArgumentError, match="format must be one of"):
            ws.ingest(path, format="yaml")
        with pytest.raises(ImportFormatError, match="not UTF-8"):
            ws.ingest(path)


def test_saved_request_bodies_import_their_messages(tmp_path: Path) -> None:
    anthropic = {
        "model": "claude-x",
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        ],
    }
    openai = {
        "model": "gpt-x",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
    }
    (tmp_path / "a.json").write_text(json.dumps(anthropic))
    (tmp_path / "o.json").write_text(json.dumps(openai))
    with Workspace(tmp_path / "home") as ws:
        (a,) = ws.ingest(tmp_path / "a.json")
        (o,) = ws.ingest(tmp_path / "o.json")
        assert ws.info(a).format == "anthropic"
        assert [m["role"] for m in ws.messages(a)] == ["system", "user", "assistant", "user"]
        assert ws.messages(a)[0]["content"] == "You are terse."
        assert any("system prompt" in n for n in ws.info(a).notes)
        assert ws.info(o).format == "openai"
        assert [m["content"] for m in ws.messages(o)] == ["s", "q"]


def test_a_saved_responses_request_body_imports_its_input_items(tmp_path: Path) -> None:
    body = {
        "model": "gpt-x",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ],
    }
    (tmp_path / "r.json").write_text(json.dumps(body))
    with Workspace(tmp_path / "home") as ws:
        (cid,) = ws.ingest(tmp_path / "r.json")
        assert ws.info(cid).format == "openai-responses"
        stored = ws.messages(cid)
        assert stored[0] == {
            "type": "message",
            "role": "developer",
            "content": "Be brief.",
            "id": "m1",
        }
        assert [m.get("type") for m in stored[2:]] == ["function_call", "function_call_output"]
        assert any("instructions" in n for n in ws.info(cid).notes)
        assert check_pairing(ws.replay(cid).messages) == []


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"garbage": [1,2\n', "1 unreadable lines skipped"),
        ("not json\nnor this\n", "2 unreadable lines skipped"),
    ],
    ids=["truncated-json", "no-json-lines"],
)
def test_a_file_with_no_messages_is_refused_and_nothing_is_stored(
    tmp_path: Path, content: str, why: str
) -> None:
    log = tmp_path / "g.json"
    log.write_text(content)
    ws = Workspace(tmp_path / "home")
    with pytest.raises(ImportFormatError, match=f"holds no openai messages \\({why}\\)"):
        ws.ingest(log, format="openai")
    assert ws.conversations() == []


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x1c", "\x0b"])
def test_a_record_holding_a_unicode_line_separator_is_one_record(
    tmp_path: Path, separator: str
) -> None:
    # JSON strings may hold these unescaped; str.splitlines would break the record at them.
    text = f"first{separator}second"
    records = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": text}},
        {"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": "ok"}},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    (item,) = load_log(str(path))
    assert item.format == "claude-code"
    assert [m["content"] for m in item.messages] == [text, [{"type": "text", "text": "ok"}]]
    assert item.notes == []


def test_a_claude_code_log_reads_the_same_after_a_byte_order_mark_or_a_cut_character(
    tmp_path: Path,
) -> None:
    # The Claude Code reader splits the file's UTF-8, not its text: a byte order mark is not
    # part of the first record, and a last line cut inside a character is skipped, as the text
    # reading skips it. Behind a byte order mark the cut is where the character starts (it was
    # three bytes early: the last complete record was cut and read as broken).
    records = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "héllo ✓ 😀"}},
        {"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": "ok"}},
    ]
    data = ("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n").encode()
    files = {
        "plain": data,
        "bom": b"\xef\xbb\xbf" + data,
        "cut": data + '{"type": "user", "message": {"content": "😀'.encode()[:-2],
        # the character cut right after the last complete line, behind a byte order mark
        "bom_cut": b"\xef\xbb\xbf" + data + "😀".encode()[:2],
    }
    read = {}
    for name, raw in files.items():
        (tmp_path / f"{name}.jsonl").write_bytes(raw)
        (read[name],) = load_log(str(tmp_path / f"{name}.jsonl"))
    assert read["plain"].messages[0]["content"] == "héllo ✓ 😀"
    assert read["bom"].messages == read["cut"].messages == read["plain"].messages
    assert read["bom_cut"].messages == read["plain"].messages
    assert read["plain"].notes == read["bom"].notes == read["bom_cut"].notes == []
    assert read["cut"].notes == [f"1 {UNREADABLE}"]


# Each JSONL line is parsed by msgspec, and by the standard decoder where msgspec refuses:
# the values are json.loads' own, whichever parsed them.

_EDGE_LINES = [
    '{"role": "user", "content": "big", "n": 123456789012345678901234567890}',
    '{"role": "user", "content": "neg", "n": -9223372036854775809}',
    '{"role": "user", "content": "lone \\ud800 surrogate"}',
    '{"role": "user", "content": "nan", "x": NaN, "y": -Infinity}',
    '{"role": "user", "content": "huge float", "x": 1e400}',
    '{"role": "user", "content": "dup", "a": 1, "a": 2}',
    '{"role": "user", "content": "floats", "x": [0.1, -0.0, 5e-324, 1.7976931348623157e308]}',
    '  {"role": "user", "content": "spaces"}  \r',
    '{"role": "user", "content": "sep \u2028 \u0085 chars"}',
    '{"role": "user", "content": "trailing"} x',
    '{"role": "user", "content": "tab\tinside"}',
    "[" * 2000 + "]" * 2000,
    '{"role": "user", "content": "digits", "n": ' + "1" * 5000 + "}",
]


def _json_loads_reading(text: str) -> list[tuple[int, Any]]:
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line or line.isspace():
            continue
        try:
            out.append((number, json.loads(line)))
        except (ValueError, RecursionError):
            out.append((number, None))
    return out


def _reading(text: str) -> list[tuple[int, Any]]:
    from leanreplay.index.store._importers import _NOT_JSON, _jsonl

    return [(n, None if v is _NOT_JSON else v) for n, v in _jsonl(text)]


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (1 == 1.0 == True in Python; NaN != NaN).

    Walked with a stack, not by recursion: the edge lines nest deeper than Python 3.13's
    recursion limit allows a recursive walk (3.13 decodes JSON ten times deeper)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, float):
            if repr(x) != repr(y):
                return False
        elif x != y:
            return False
    return True


def test_jsonl_lines_read_as_json_loads_reads_them() -> None:
    text = "\n".join(_EDGE_LINES)
    ours, theirs = _reading(text), _json_loads_reading(text)
    assert [n for n, _ in ours] == [n for n, _ in theirs]
    for (n, a), (_, b) in zip(ours, theirs, strict=True):
        assert _same(a, b), f"line {n}: {_EDGE_LINES[n - 1][:60]!r}"
    assert ours[0][1]["n"] == 123456789012345678901234567890  # an int, not a float
    assert ours[2][1]["content"] == "lone \ud800 surrogate"


def test_real_logs_read_as_json_loads_reads_them(transcripts: Path) -> None:
    logs = sorted(transcripts.rglob("*.jsonl"))
    assert logs
    for log in logs:
        text = log.read_text(encoding="utf-8")
        ours, theirs = _reading(text), _json_loads_reading(text)
        assert len(ours) == len(theirs)
        assert all(_same(a, b) for (_, a), (_, b) in zip(ours, theirs, strict=True)), log
