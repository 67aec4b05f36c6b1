"""Live and resumed logs: the store holds exactly what the log holds, whatever point it was
cut at, and a grown log re-imports by appending. Pairing repair happens at replay time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import check_pairing, result_slots, tool_calls


def _main_chain_records(path: Path) -> list[dict[str, Any]]:
    records = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("type") in ("user", "assistant") and not record.get("isSidechain"):
            records.append(record)
    return records


def test_orphan_results_are_stored_and_left_out_only_in_the_replay(
    tmp_path: Path, transcripts: Path
) -> None:
    path = transcripts / "claude-code-m-claude" / "554b9fa6-f719-40e8-ba70-beee69bd60b5.jsonl"
    in_log = sum(
        1
        for r in _main_chain_records(path)
        if isinstance(r["message"].get("content"), list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result"
    )
    with Workspace(tmp_path / "home") as ws:
        (cid,) = ws.ingest(path)
        stored = ws.messages(cid)
        result = ws.replay(cid)
    assert sum(len(result_slots(m)) for m in stored) == in_log, "every result is stored"
    assert "18 tool results without a call right before them left out" in result.notes
    assert check_pairing(result.messages) == []


def _cuts(data: bytes) -> list[int]:
    """After every message record, and in the middle of each (a line still being written)."""
    cuts, offset = [], 0
    for line in data.splitlines(keepends=True):
        end = offset + len(line)
        if b'"type":"user"' in line or b'"type":"assistant"' in line:
            cuts += [offset + len(line) // 2, end]
        offset = end
    return cuts


def test_a_live_log_cut_anywhere_grows_by_appending(tmp_path: Path, transcripts: Path) -> None:
    full = (
        transcripts / "claude-code-m-claude" / "9be1d737-c769-4d5e-b69d-3e0f4f13a1ce.jsonl"
    ).read_bytes()
    live = tmp_path / "live.jsonl"
    live.write_bytes(full)
    cuts = _cuts(full)
    mid_call = 0
    with Workspace(tmp_path / "home", auto_fold=False) as ws:
        ws.ingest(live, conversation_id="reference")
        reference = ws.messages("reference")
        for n, cut in enumerate(cuts):
            cid = f"cut{n}"
            live.write_bytes(full[:cut])
            ws.ingest(live, conversation_id=cid)
            snapshot = ws.messages(cid)
            assert snapshot == reference[: len(snapshot)]
            replayed = ws.replay(cid)
            assert check_pairing(replayed.messages) == [], f"cut at byte {cut}"
            if snapshot and any(tool_calls(snapshot[-1])):
                mid_call += 1
                assert any("stub result" in note for note in replayed.notes)
            live.write_bytes(full)
            ws.ingest(live, conversation_id=cid)  # the log grew: append what is new
            assert ws.messages(cid) == reference, f"cut at byte {cut}"
            assert ws.info(cid).notes == ws.info("reference").notes
    assert mid_call >= 10, "the cuts include snapshots taken in the middle of tool calls"


def test_a_resumed_claude_code_session_is_its_own_conversation(
    tmp_path: Path, transcripts: Path
) -> None:
    earlier = transcripts / "claude-code-m-claude" / "343e3472-b9b6-4561-ade0-21d1a4730c11.jsonl"
    old_session = earlier.stem
    records = _main_chain_records(earlier)
    new_session = "7d3c1f52-9a0e-4b8e-8f7e-2f6a4c1d9b10"
    last = records[-1]["uuid"]

    def record(kind: str, uuid: str, parent: str, content: Any, **extra: Any) -> str:
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"id": f"msg_{uuid}", "type": "message", "model": "claude-opus-4-5"}
        return json.dumps(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": kind,
                "message": message,
                "uuid": uuid,
                "sessionId": new_session,
                "timestamp": "2026-01-17T10:00:00.000Z",
                **extra,
            }
        )

    call = {"type": "tool_use", "id": "toolu_resumed1", "name": "Bash", "input": {"command": "id"}}
    new = [
        record("user", "n1", last, "continue where we left off"),
        record("assistant", "n2", "n1", [call]),
        record(
            "user",
            "n3",
            "n2",
            [{"type": "tool_result", "tool_use_id": "toolu_resumed1", "content": "uid=0(root)"}],
        ),
        record("assistant", "n4", "n3", [{"type": "text", "text": "Still root."}]),
    ]
    # Claude Code writes the resumed session as a new file: the earlier session's records
    # (with the earlier sessionId) first, then its own.
    resumed = tmp_path / f"{new_session}.jsonl"
    resumed.write_text(earlier.read_text() + "\n".join(new) + "\n")
    with Workspace(tmp_path / "home") as ws:
        assert list(ws.ingest(earlier)) == [old_session]
        assert list(ws.ingest(resumed)) == [new_session]
        before = ws.messages(old_session)
        after = ws.messages(new_session)
        assert after[: len(before)] == before, "the resumed file holds the full history"
        assert [m["id"] for m in after[len(before) :]] == ["n1", "n2", "n3", "n4"]
        assert ws.messages(old_session) == before
        assert check_pairing(ws.replay(new_session).messages) == []


@pytest.mark.parametrize("instance", ["sqlfluff__sqlfluff-1733", "sqlfluff__sqlfluff-1517"])
def test_two_runs_of_one_instance_do_not_collide(
    tmp_path: Path, transcripts: Path, instance: str
) -> None:
    paths = sorted(transcripts.glob(f"mini-swe-agent-pr816/*/{instance}/{instance}.traj.json"))
    assert len(paths) == 2
    with Workspace(tmp_path / "home") as ws:
        ids = [cid for p in paths for cid in ws.ingest(p)]
        assert ids == [f"{p.parent.parent.name}/{instance}" for p in paths]
        assert [len(ws.messages(c)) for c in ids] == [
            len(json.loads(p.read_text())["messages"]) for p in paths
        ]
