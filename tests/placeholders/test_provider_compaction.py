"""The providers' own compaction passes through: imported, replayed from it on, sent unchanged.

Anthropic's ``compaction`` block (context management's ``compact_20260112`` edit) and the
OpenAI Responses ``compaction`` item stand for everything before them: the provider reads
nothing earlier, so the replay starts there (after the system messages) and our own fold
does not fold them away. Payloads are checked against the SDKs' own request types (the
Anthropic block is a beta type: ``BetaMessageParam``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from anthropic.types.beta import BetaMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    FoldPolicy,
    ReplayPolicy,
    check_pairing,
    compaction_start,
    fold_boundary,
    for_provider,
    replay,
)
from tests.builders import an_call, an_results, dumps, rs_call, rs_result, user, with_ids
from tests.sdk_types import problems

COMPACTION = {
    "type": "compaction",
    "content": "The user is debugging the router; the DHCP lease table was read.",
    "encrypted_content": "Zm9sZGVkIGJ5IHRoZSBwcm92aWRlcg==",
    "signature": "c2lnbmVk",
}


def anthropic_session(block: dict[str, Any] = COMPACTION) -> list[dict[str, Any]]:
    return with_ids(
        [
            {"role": "system", "content": "You are a network engineer."},
            user("troubleshoot the network"),
            an_call(("t1", "bash")),
            an_results(("t1", "lease " * 2000, False)),
            {"role": "assistant", "content": [block, {"type": "text", "text": "Continuing."}]},
            user("now the firewall"),
            an_call(("t2", "bash")),
            an_results(("t2", "rule " * 100, False)),
        ]
    )


def check_anthropic(payload: list[dict[str, Any]]) -> None:
    TypeAdapter(list[BetaMessageParam]).validate_python(payload)
    found = [p for i, m in enumerate(payload) for p in problems(m, BetaMessageParam, f"$[{i}]")]
    assert found == []
    assert check_pairing(payload) == []


def test_an_anthropic_compaction_block_starts_the_replay_and_is_sent_unchanged() -> None:
    messages = anthropic_session()
    assert compaction_start(messages) == 4
    result = replay(messages, conversation_id="c")
    # A user turn leads (the API drops it with everything else before the block).
    lead = "provider-compaction-lead"
    assert [m["id"] for m in result.messages] == ["m1", lead, "m5", "m6", "m7", "m8"]
    assert result.messages[1]["role"] == "user"
    assert result.messages[2]["content"][0] == COMPACTION
    assert result.chars_out < result.chars_in - 10_000, "the old lease table is not sent"
    assert dumps(replay(result.messages, conversation_id="c").messages) == dumps(result.messages)
    payload = for_provider(result.messages[1:], "anthropic")
    assert payload[1]["content"][0] == COMPACTION, "the block goes back byte for byte"
    check_anthropic(payload)


def test_blocks_before_the_compaction_in_its_message_are_dropped_a_failed_one_is_no_boundary() -> (
    None
):
    messages = anthropic_session()
    messages[4] = {**messages[4], "content": [{"type": "text", "text": "x"}, COMPACTION]}
    assert replay(messages, conversation_id="c").messages[2]["content"] == [COMPACTION]
    failed = anthropic_session({**COMPACTION, "content": None, "encrypted_content": None})
    assert compaction_start(failed) == 0
    assert len(replay(failed, conversation_id="c").messages) == len(failed)


def test_a_responses_compaction_item_starts_the_replay_and_validates() -> None:
    item = {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAB-opaque"}
    messages = with_ids(
        [
            {"type": "message", "role": "developer", "content": "Be brief."},
            {"type": "message", "role": "user", "content": "look at the logs"},
            rs_call("call_1", "shell"),
            rs_result("call_1", "log line\n" * 800),
            item,
            {"type": "message", "role": "user", "content": "and now?"},
        ]
    )
    result = replay(messages, conversation_id="c", policy=ReplayPolicy())
    assert [m.get("type") for m in result.messages] == ["message", "compaction", "message"]
    payload = for_provider(result.messages, "openai-responses")
    # Its id is optional in a request; the store may have put its own there.
    assert payload[1] == {"type": "compaction", "encrypted_content": "gAAAAB-opaque"}
    TypeAdapter(list[ResponseInputItemParam]).validate_python(payload)
    found = [p for i, m in enumerate(payload) for p in problems(m, ResponseInputItemParam)]
    assert found == []


def test_our_fold_leaves_a_provider_compacted_conversation_alone() -> None:
    messages = anthropic_session()
    boundary, why = fold_boundary(messages, 0, FoldPolicy(threshold_chars=1000, keep_last=1))
    assert boundary is None
    assert "the provider compacted this conversation itself (message 4)" in why
    boundary, _ = fold_boundary(messages[:4], 0, FoldPolicy(threshold_chars=1000, keep_last=1))
    assert boundary == 1 or boundary is None  # before any compaction the usual rule holds


@pytest.mark.parametrize("shape", ["anthropic", "openai-responses"])
def test_imported_logs_keep_every_message_and_replay_from_the_compaction(
    tmp_path: Path, shape: str
) -> None:
    if shape == "anthropic":
        log = [m for m in anthropic_session() if m["role"] != "system"]
        body = {"system": "You are a network engineer.", "messages": log}
    else:
        log = [
            {"type": "message", "role": "user", "content": "look at the logs"},
            rs_call("call_1", "shell"),
            rs_result("call_1", "log line\n" * 800),
            {"type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAB-opaque"},
            {"type": "message", "role": "user", "content": "and now?"},
        ]
        body = {"input": log}
    path = tmp_path / "session.json"
    path.write_text(json.dumps(body))
    with Workspace(tmp_path / "home", fold_policy=FoldPolicy(threshold_chars=1000)) as ws:
        (cid,) = ws.ingest(path)
        assert ws.info(cid).format == shape
        stored = ws.messages(cid)
        assert len(stored) == len(log) + (shape == "anthropic")
        result = ws.replay(cid)
        assert ws.fold_state(cid) is None, "the provider's compaction is the fold"
        kinds = [
            m.get("type") or (m["content"][0].get("type") if m["role"] == "assistant" else None)
            for m in result.messages[:3]
        ]
        assert "compaction" in kinds
        if shape == "anthropic":
            assert result.messages[0]["role"] == "system"
            check_anthropic(for_provider(result.messages[1:], "anthropic"))
        else:
            TypeAdapter(list[ResponseInputItemParam]).validate_python(
                for_provider(result.messages, "openai-responses")
            )
