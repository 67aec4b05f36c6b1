"""Replays of stored conversations under timed, cut and previewed policies: every placeholder
and every cut result names a call that gives the original back byte-exact; the store's
append times tell a replay when the cache expired, and a cold request folds early."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    CUT_MARKER,
    PREVIEW_PARTS,
    FoldPolicy,
    ReplayPolicy,
    check_pairing,
    parse_cut,
    parse_read_call,
    replay,
    result_slots,
)
from tests.builders import conversations, oa_call, oa_result, read_whole, user, with_ids

POLICIES = [
    ReplayPolicy(fresh_cap_chars=2400, fresh_keep_chars=600, preview_shape=PREVIEW_PARTS),
    ReplayPolicy(fresh_cap_chars=5000, keep_assistant_turns=1, preview_shape=("tail", "errors")),
    ReplayPolicy(fresh_cap_chars=2001, fresh_keep_chars=2000, age_unit="user_exchange"),
]


def read_from(ws: Workspace, call: dict[str, Any]) -> str:
    """Every page of a conversation_read from the call's offset on, joined."""
    text, args = "", dict(call)
    while True:
        answer = ws.call("conversation_read", args)
        text += answer["content"]
        if answer["next"] is None:
            return text
        args = parse_read_call(answer["next"]) or {}


def text_of(content: Any) -> str:
    return content if isinstance(content, str) else content[0]["text"]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """One workspace for every example (each stores its own conversation)."""
    with Workspace(tmp_path_factory.mktemp("times"), auto_fold=False) as ws:
        yield ws


_numbers = itertools.count()


@settings(max_examples=30, deadline=None)
@given(
    messages=conversations(),
    policy=st.sampled_from(POLICIES),
    gaps=st.lists(st.sampled_from([1.0, 400.0]), min_size=1, max_size=4),
)
def test_every_placeholder_and_cut_round_trips_through_conversation_read(
    shared: Workspace, messages: list[dict[str, Any]], policy: ReplayPolicy, gaps: list[float]
) -> None:
    times = {m["id"]: 1000.0 + 10 * i + gaps[i % len(gaps)] for i, m in enumerate(messages)}
    ws, cid = shared, f"conv-{next(_numbers)}"
    ws.extend(cid, messages)
    stored = ws.messages(cid)
    result = replay(stored, conversation_id=cid, policy=policy, times=times)
    assert check_pairing(result.messages) == []
    seen = 0
    for new, old in zip(result.messages, stored, strict=True):
        for slot_new, slot_old in zip(result_slots(new), result_slots(old), strict=True):
            if slot_new.content == slot_old.content:
                continue
            seen += 1
            text = text_of(slot_new.content)
            call = parse_read_call(text)
            assert call is not None
            cut = parse_cut(text)
            if cut is not None and isinstance(slot_old.content, str):
                # The head it shows and the rest the call returns spell the original.
                assert text.startswith(CUT_MARKER)
                assert call["offset"] == len(cut.head)
                assert cut.head + read_from(ws, call) == slot_old.content
                continue
            assert "offset" not in call
            whole, _ = read_whole(
                ws, call["conversation_id"], call["message_id"], call.get("tool_call_id")
            )
            original = (
                slot_old.content
                if call.get("tool_call_id") is not None or len(result_slots(old)) == 1
                else old["content"]
            )
            assert json.dumps(whole, ensure_ascii=False) == json.dumps(original, ensure_ascii=False)
    assert seen == result.placeholders


def stale_batch() -> list[dict[str, Any]]:
    """A 6,000-char result that goes stale behind a larger recent part (see
    test_replay_expiry): on a warm cache it waits."""
    return with_ids(
        [
            user("first question"),
            oa_call(("c1", "bash")),
            oa_result("c1", "old " * 1500),
            {"role": "assistant", "content": "done"},
            user("second question"),
            oa_call(("c2", "bash")),
            oa_result("c2", "r" * 1900),
            {"role": "assistant", "content": "done"},
            user("third question"),
            oa_call(("c3", "bash")),
            oa_result("c3", "n" * 1900),
            {"role": "assistant", "content": "done"},
            user("fourth question"),
        ]
    )


def test_the_store_s_append_times_tell_a_replay_its_cache_expired(tmp_path: Path) -> None:
    with Workspace(tmp_path, auto_fold=False) as ws:
        ws.extend("c", stale_batch())
        any_size = ReplayPolicy(min_request_chars=0)  # the batch is 9,894 chars: no floor
        assert ws.replay("c").placeholders == 0, "under the default's request floor"
        assert ws.replay("c", any_size).placeholders == 0, "appended just now: the cache is warm"
        later = time.time() + 600
        assert ws.replay("c", any_size, now=later).placeholders == 1
        assert ws.replay("c", now=later).placeholders == 0, "expired, but under the floor"
        assert ws.replay("c", any_size, now=later, last_request_at=later - 10).placeholders == 0
        policy = ReplayPolicy(min_request_chars=0, cache_ttl_s=3600)
        assert ws.replay("c", policy, now=later).placeholders == 0


def test_a_request_after_expiry_folds_once_past_the_cold_threshold(tmp_path: Path) -> None:
    fold = FoldPolicy(threshold_chars=40_000, keep_last=2, cold_threshold_chars=9_000)
    with Workspace(tmp_path, fold_policy=fold) as ws:
        ws.extend("c", stale_batch())
        assert ws.replay("c").messages[0]["content"] == "first question"
        assert ws.fold_state("c") is None, "under the threshold, and the cache is warm"
        result = ws.replay("c", now=time.time() + 600)
        state = ws.fold_state("c")
        assert state is not None
        assert state["summarized_through_message_id"] == "m8"
        assert result.messages[0]["content"].startswith("[Summary of the earlier conversation")
        assert result.messages[-1]["content"] == "fourth question"
        assert check_pairing(result.messages) == []
    roomy = FoldPolicy(threshold_chars=40_000, keep_last=2, cold_threshold_chars=30_000)
    with Workspace(tmp_path / "other", fold_policy=roomy) as ws:
        ws.extend("c", stale_batch())
        ws.replay("c", now=time.time() + 600)
        assert ws.fold_state("c") is None, "under the cold threshold"
    assert FoldPolicy(threshold_chars=10_000).cold_threshold() == 5_000
    assert FoldPolicy(threshold_chars=10_000, cold_threshold_chars=20_000).cold_threshold() == (
        10_000
    )


def test_fold_when_the_cache_expired_uses_the_cold_threshold(tmp_path: Path) -> None:
    """`Workspace.fold(..., cache_expired=True)`: what the proxy calls for a request that finds
    the cache expired (the store does not hold that request's new messages yet)."""
    fold = FoldPolicy(threshold_chars=40_000, keep_last=2, cold_threshold_chars=9_000)
    with Workspace(tmp_path, fold_policy=fold, auto_fold=False) as ws:
        ws.extend("c", stale_batch())
        warm = ws.fold("c")
        assert not warm.folded
        assert "not over the threshold of 40,000" in warm.reason
        cold = ws.fold("c", cache_expired=True)
        assert cold.folded
        assert cold.summarized_through_message_id == "m8"
        again = ws.fold("c", cache_expired=True)  # the rest is under 9,000 chars
        assert not again.folded
        assert "threshold of 9,000 of a request that finds the cache expired" in again.reason
