"""Fold after ingest (as if appended, one fold per crossing) and the offline summary's parts,
on real transcripts."""

from __future__ import annotations

import re
from pathlib import Path

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    FoldPolicy,
    OfflineSummarizer,
    call_inputs,
    fold_boundary,
    is_genuine_user,
    result_slots,
)
from leanreplay.placeholders._shapes import one_line, text_of
from tests.conftest import TRANSCRIPTS, require_transcripts

SESSION = "claude-code-m-claude/f551142a-ef6a-46fd-a3bf-14a924370fb0.jsonl"
SMALL = FoldPolicy(threshold_chars=15_000)


def test_an_imported_log_folds_as_if_appended(tmp_path: Path) -> None:
    require_transcripts()
    path = TRANSCRIPTS / SESSION
    with Workspace(tmp_path / "ingested", fold_policy=SMALL) as ws:
        (cid,) = ws.ingest(path)
        ingested = ws.fold_state(cid)
        messages = ws.messages(cid)
    with Workspace(tmp_path / "appended", fold_policy=SMALL) as ws:
        for message in messages:
            ws.append(cid, message)
        appended = ws.fold_state(cid)
    assert ingested is not None
    assert ingested["generation"] >= 2  # several crossings, one fold each
    assert ingested == appended


def test_ingest_can_leave_folding_alone(tmp_path: Path) -> None:
    require_transcripts()
    path = TRANSCRIPTS / SESSION
    with Workspace(tmp_path / "a", fold_policy=SMALL) as ws:
        (cid,) = ws.ingest(path, fold=False)
        assert ws.fold_state(cid) is None
        assert ws.fold(cid).folded  # a later fold still works
    with Workspace(tmp_path / "b", fold_policy=SMALL, auto_fold=False) as ws:
        (cid,) = ws.ingest(path)
        assert ws.fold_state(cid) is None
    with Workspace(tmp_path / "c", fold_policy=SMALL) as ws:
        (cid,) = ws.ingest(path)
        before = ws.fold_state(cid)
        ws.ingest(path)  # unchanged: nothing new, no new fold
        assert ws.fold_state(cid) == before


def test_the_offline_summary_carries_what_a_reader_needs(tmp_path: Path) -> None:
    require_transcripts()
    path = TRANSCRIPTS / "claude-code-m-claude" / "21037e11-89de-484d-abba-8705254aa991.jsonl"
    with Workspace(tmp_path, auto_fold=False) as ws:
        (cid,) = ws.ingest(path)
        messages = ws.messages(cid)
    boundary, _ = fold_boundary(messages, 0, FoldPolicy())
    assert boundary is not None
    folded = messages[:boundary]
    summary = OfflineSummarizer()(None, folded, max_chars=6_000)
    assert len(summary) <= 6_000
    assert summary == OfflineSummarizer()(None, folded, max_chars=6_000)  # deterministic
    # Every genuine user request, by id and head.
    requests = [m for m in folded if is_genuine_user(m)]
    assert len(requests) >= 5
    for message in requests:
        assert f"- [{message['id']}] {one_line(text_of(message), 20)[:17]}" in summary
    # Commands, deduplicated with counts (this session touches files over ssh only).
    commands = re.search(r"Commands run \((\d+), (\d+) distinct\):\n- ", summary)
    assert commands is not None
    assert int(commands.group(1)) >= int(commands.group(2)) > 0
    # Errors met.
    errors = [s for m in folded for s in result_slots(m) if s.is_error]
    assert errors
    assert re.search(r"Errors met \(\d+\):\n- \[[^\]]+\] \w+: ", summary)
    # The last answer of each exchange (the newest ones, when they do not all fit).
    last = max(
        (i for i, m in enumerate(folded) if m["role"] == "assistant" and text_of(m).strip()),
    )
    answer = folded[last]
    assert "Answers (the last of each exchange):" in summary
    assert f"- [{answer['id']}] {one_line(text_of(answer), 20)[:17]}" in summary


def test_the_offline_summary_counts_the_files_touched(tmp_path: Path) -> None:
    require_transcripts()
    path = TRANSCRIPTS / "claude-code-m-claude" / "554b9fa6-f719-40e8-ba70-beee69bd60b5.jsonl"
    with Workspace(tmp_path, auto_fold=False) as ws:
        (cid,) = ws.ingest(path)
        messages = ws.messages(cid)
    summary = OfflineSummarizer()(None, messages, max_chars=6_000)
    assert len(summary) <= 6_000
    uses: dict[str, int] = {}
    for message in messages:
        for _, value in call_inputs(message):
            if isinstance(value, dict) and isinstance(value.get("file_path"), str):
                uses[value["file_path"]] = uses.get(value["file_path"], 0) + 1
    path_, count = max(uses.items(), key=lambda kv: kv[1])
    assert count > 1
    line = re.search(rf"^- {re.escape(path_)} \((.*)\)$", summary, re.M)
    assert line is not None, summary
    counts = [int(n) for n in re.findall(r"x(\d+)", line.group(1))]
    assert sum(counts) == count  # every use, deduplicated into one line per file
    assert re.search(r"^- swift build \(x\d+\)$", summary, re.M)  # a command, counted
