"""Invariants of the fold and of the in-turn compactor on generated conversations."""

from __future__ import annotations

import copy
import json
import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    FoldPolicy,
    check_pairing,
    compact_turn,
    content_chars,
    is_genuine_user,
)
from tests.builders import conversations


@settings(max_examples=40, deadline=None)
@given(
    messages=conversations(),
    threshold=st.integers(500, 20_000),
    keep_last=st.integers(1, 10),
)
def test_fold_keeps_pairing_a_user_led_tail_and_every_original(
    messages: list[dict[str, Any]], threshold: int, keep_last: int
) -> None:
    policy = FoldPolicy(threshold_chars=threshold, keep_last=keep_last, max_summary_chars=800)
    with (
        tempfile.TemporaryDirectory() as home,
        Workspace(home, fold_policy=policy, auto_fold=False) as ws,
    ):
        for message in messages:
            ws.append("c", message)
        originals = ws.messages("c")
        result = ws.fold("c")
        replayed = ws.replay("c").messages
        assert check_pairing(replayed) == []
        assert ws.messages("c") == originals, "a fold never edits or deletes originals"
        if not result.folded:
            assert result.reason
            assert ws.fold_state("c") is None
            return
        assert result.summary is not None
        assert len(result.summary) <= policy.max_summary_chars
        body = [m for m in replayed if m.get("role") not in ("system", "developer")]
        assert body[0]["id"].startswith("fold-")
        assert body[1]["role"] == "assistant"
        assert is_genuine_user(body[2]), "the verbatim tail starts with a user turn"
        through = result.summarized_through_message
        assert through is not None
        assert originals[through - 1]["id"] == result.summarized_through_message_id
        again = ws.fold("c")
        assert not again.folded, "folding unchanged input again is a no-op"
        assert ws.replay("c").messages == replayed


@settings(max_examples=60, deadline=None)
@given(
    messages=conversations(),
    window=st.integers(2_000, 30_000),
    reported=st.none() | st.integers(0, 40_000),
)
def test_compaction_invariants(
    messages: list[dict[str, Any]], window: int, reported: int | None
) -> None:
    before = copy.deepcopy(messages)
    reserve = window // 10
    result = compact_turn(
        messages, context_window=window, output_reserve=reserve, reported_input_tokens=reported
    )
    again = compact_turn(
        messages, context_window=window, output_reserve=reserve, reported_input_tokens=reported
    )
    assert messages == before, "input mutated"
    assert json.dumps(result.messages) == json.dumps(again.messages), "not deterministic"
    out = result.messages
    assert check_pairing(out) == []
    assert len(out) == len(messages)
    assert out[0] == messages[0]
    assert out[-3:] == messages[-3:]
    for old, new in zip(messages, out, strict=True):
        assert content_chars(new) <= content_chars(old)
        assert new["role"] == old["role"]
        if isinstance(old.get("content"), list):
            for a, b in zip(old["content"], new["content"], strict=True):
                assert a.get("type") == b.get("type")
                if a.get("type") == "thinking" or a.get("is_error"):
                    assert a == b, "thinking blocks and error results are protected"
        if old.get("is_error"):
            assert new == old
    if result.triggered:
        assert result.target_reached or "cannot reach the target" in result.reason
    else:
        assert out == messages
