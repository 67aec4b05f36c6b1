"""Prompt snapshots, the model-call helper, the size series and the compaction event log:
what `leanreplay view` shows, as library calls."""

from __future__ import annotations

import itertools
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.index import Workspace
from leanreplay.index._workspace import SNAPSHOTS_KEPT
from leanreplay.placeholders import CHARS_PER_TOKEN, FoldPolicy, ReplayPolicy, content_chars
from tests.builders import conversations


def build_turn(i: int, log_lines: int = 60) -> list[dict[str, Any]]:
    log = "".join(f"step {i}.{n}: module {n} built\n" for n in range(log_lines))
    return [
        {"role": "user", "content": f"Run build #{i}."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": log},
        {"role": "assistant", "content": f"Build #{i} passed."},
    ]


def test_a_snapshot_records_what_the_model_receives(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        for i in range(4):
            for message in build_turn(i, log_lines=120):
                ws.append("c", message)
        assert ws.snapshots() == [], "a plain replay records nothing"
        ws.replay("c")
        assert ws.snapshots() == []
        result = ws.replay("c", ReplayPolicy.seed(), snapshot=True, budget_tokens=100_000)
        (snap,) = ws.snapshots("c")
    sent = sum(content_chars(m) for m in result.messages)
    assert snap["conversation_id"] == "c"
    assert snap["source"] == "replay"
    assert snap["chars"] == sent == result.chars_out
    assert snap["estimated_tokens"] == round(sent / CHARS_PER_TOKEN)
    assert snap["budget_tokens"] == 100_000
    assert snap["placeholders"] == result.placeholders > 0
    assert snap["messages_stored"] == 16
    assert snap["last_message_id"] == "m16"
    assert snap["chars_unfolded"] == result.chars_in  # not folded: the fold changes nothing
    assert snap["folded"] is False
    assert snap["compacted"] is False
    assert snap["time"].endswith("+00:00")


def test_the_home_keeps_the_last_snapshots_across_writers(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        ws.append("a", {"role": "user", "content": "hello"})
        ws.append("b", {"role": "user", "content": "hi"})

    def writer(cid: str) -> None:
        with Workspace(tmp_path) as own:  # its own connection, like another process
            for _ in range(30):
                own.replay(cid, snapshot=True)

    threads = [threading.Thread(target=writer, args=(cid,)) for cid in ("a", "b", "a")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with Workspace(tmp_path) as ws:
        kept = ws.snapshots()
        ws.replay("b", snapshot=True)
        after = ws.snapshots()
        only_a = ws.snapshots("a")
    assert len(kept) == SNAPSHOTS_KEPT == 50
    assert len(after) == SNAPSHOTS_KEPT
    assert after[-1]["conversation_id"] == "b"
    assert after[:-1] == kept[1:], "the oldest one rotates out"
    assert {s["conversation_id"] for s in only_a} == {"a"}


def test_model_call_snapshots_each_request_and_logs_the_forced_compaction(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        for i in range(6):
            for message in build_turn(i, log_lines=400):
                ws.append("loop", message)
        sent: list[list[dict[str, Any]]] = []

        def provider(messages: list[dict[str, Any]]) -> dict[str, Any]:
            sent.append(messages)
            if len(sent) == 1:
                raise RuntimeError("Error code: 400 - prompt is too long: 250000 tokens > 200000")
            return {"role": "assistant", "content": "done"}

        # ~16k tokens with the seed rule: under 75% of the 28k budget, so the first request
        # goes out as is
        reply = ws.model_call(
            "loop",
            provider,
            context_window=30_000,
            output_reserve=2_000,
            policy=ReplayPolicy.seed(),
        )
        snaps = ws.snapshots("loop")
        events = ws.compaction_events("loop")
    assert reply == {"role": "assistant", "content": "done"}
    assert len(sent) == 2
    assert len(snaps) == 2
    first, second = snaps
    assert first["source"] == second["source"] == "model_call"
    assert first["compacted"] is False
    assert second["compacted"] is True
    assert first["chars"] == sum(content_chars(m) for m in sent[0])
    assert second["chars"] == sum(content_chars(m) for m in sent[1]) < first["chars"]
    assert first["budget_tokens"] == 28_000
    started, applied = events
    assert started["event"] == "compaction.started"
    assert started["forced"] is True
    assert applied["event"] == "compaction.applied"
    assert started["compaction_id"] == applied["compaction_id"]
    assert applied["chars_saved"] == applied["chars_before"] - applied["chars_after"] > 0
    assert applied["targets"], "per-target detail"
    for target in applied["targets"]:
        assert target["chars_after"] < target["chars_before"]
        assert target["message_id"] in {m.get("id") for m in sent[0]}
    assert second["compaction"]["tokens_after"] == applied["tokens_after"]


def test_compaction_events_are_per_conversation(tmp_path: Path) -> None:
    big = [{"role": "user", "content": "x" * 9000}, *build_turn(1, 3000), *build_turn(2, 10)]
    with Workspace(tmp_path) as ws:
        ws.compact_turn(big, context_window=10_000, output_reserve=0, conversation_id="one")
        ws.compact_turn(big, context_window=10_000, output_reserve=0, conversation_id="two")
        ws.compact_turn(big, context_window=10_000_000, output_reserve=0, conversation_id="one")
        (tmp_path / "logs" / "compaction-2000-01-01.jsonl").write_text("not json\n[1]\n")
        one = ws.compaction_events("one")
        every = ws.compaction_events()
    assert [e["event"] for e in one] == ["compaction.started", "compaction.applied"]
    applied = one[1]
    assert applied["targets"], "the 3,000-line result was cut"
    for target in applied["targets"]:
        assert target["chars_after"] < target["chars_before"], "only texts really cut are targets"
    tool_targets = sum(1 for t in applied["targets"] if t["kind"] == "tool")
    assert any(a.startswith(f"truncated {tool_targets} tool texts") for a in applied["actions"])
    assert len(every) == 4
    assert {e["conversation_id"] for e in every} == {"one", "two"}


def observed_growth(
    ws: Workspace, cid: str, messages: list[dict[str, Any]]
) -> list[tuple[int, int, int]]:
    """Append message by message; replay after each turn (what bench_fold.py measures)."""
    from leanreplay.placeholders import is_genuine_user

    out = []
    total = 0
    for i, message in enumerate(messages):
        ws.append(cid, message)
        total += content_chars(message)
        last = i == len(messages) - 1
        if last or is_genuine_user(messages[i + 1]):
            result = ws.replay(cid)
            out.append((total, result.chars_in, result.chars_out))
    return out


def test_the_size_series_is_the_sawtooth_growth_produces(tmp_path: Path) -> None:
    policy = FoldPolicy(threshold_chars=20_000, keep_last=8, max_summary_chars=1_000)
    messages = [m for i in range(40) for m in build_turn(i, log_lines=80)]
    with Workspace(tmp_path, fold_policy=policy) as ws:
        observed = observed_growth(ws, "c", messages)
        series = ws.size_series("c")
        sampled = ws.size_series("c", max_points=8)
        folds = (ws.fold_state("c") or {})["generation"]
    assert [(p.stored_chars, p.replay_chars_fold_only, p.replay_chars) for p in series] == observed
    assert series[-1].folds == folds > 3
    assert max(p.replay_chars_fold_only for p in series) < series[-1].stored_chars / 3
    assert [p.turn for p in series] == list(range(1, 41))
    assert series[-1].message_id == "m160"
    assert series[-1].messages == 160
    assert set(sampled) < set(series)
    assert sampled[0] == series[0]
    assert sampled[-1] == series[-1]
    drops = [p for p, q in itertools.pairwise(sampled) if q.folds != p.folds]
    assert drops, "the sampled series keeps the turns on both sides of a fold"


@settings(max_examples=25, deadline=None)
@given(messages=conversations(), threshold=st.integers(500, 8_000))
def test_size_series_matches_growth_on_any_conversation(
    messages: list[dict[str, Any]], threshold: int
) -> None:
    policy = FoldPolicy(threshold_chars=threshold, keep_last=3, max_summary_chars=400)
    with tempfile.TemporaryDirectory() as home, Workspace(home, fold_policy=policy) as ws:
        observed = observed_growth(ws, "c", messages)
        series = ws.size_series("c")
    assert [(p.stored_chars, p.replay_chars_fold_only, p.replay_chars) for p in series] == observed


def test_snapshots_and_series_respect_the_allowlist(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        ws.append("open", {"role": "user", "content": "a"})
        ws.append("secret", {"role": "user", "content": "b"})
        ws.replay("open", snapshot=True)
        ws.replay("secret", snapshot=True)
    with Workspace(tmp_path, conversations=["open"]) as ws:
        assert [s["conversation_id"] for s in ws.snapshots()] == ["open"]
        with pytest.raises(Exception, match="no conversation 'secret'"):
            ws.size_series("secret")
        with pytest.raises(Exception, match="no conversation 'secret'"):
            ws.snapshots("secret")


def test_replay_at_turn_is_what_the_model_received_then(tmp_path: Path) -> None:
    policy = FoldPolicy(threshold_chars=20_000, keep_last=8, max_summary_chars=1_000)
    messages = [m for i in range(30) for m in build_turn(i, log_lines=80)]
    seen = {}
    with Workspace(tmp_path, fold_policy=policy) as ws:
        for n, message in enumerate(messages, start=1):
            ws.append("c", message)
            if n % 4 == 0:
                seen[n // 4] = ws.replay("c").messages
        series = ws.size_series("c")
        for turn in (1, 7, 18, 30):
            result, point = ws.replay_at_turn("c", turn)
            assert result.messages == seen[turn], f"turn {turn} as the model received it"
            assert point == series[turn - 1]
        with pytest.raises(Exception, match="has 30 turns; turn 31 is past its end"):
            ws.replay_at_turn("c", 31)
