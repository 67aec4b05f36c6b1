"""What goes back to providers validates against their official SDKs' request types.

Every real transcript is replayed (both age units, folded and not) and sent through
`for_provider`; the payload must match anthropic's ``MessageParam``, openai's
``ChatCompletionMessageParam`` or the Responses ``ResponseInputItemParam`` at every depth
(pydantic's TypeAdapter, and `tests.sdk_types.problems` for unknown keys in nested types).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    FoldPolicy,
    PlaceholderError,
    ReplayPolicy,
    for_provider,
    is_placeholder,
    result_slots,
    tool_calls,
)
from tests.builders import an_call, an_results, oa_call, oa_result, rs_call, rs_result, user
from tests.conftest import require_transcripts, transcript_files, transcript_id
from tests.placeholders.test_replay import parse_call
from tests.sdk_types import TYPES, assert_valid, problems

PROVIDER_OF = {
    "claude-code": "anthropic",
    "anthropic": "anthropic",
    "mini-swe-agent": "openai",
    "tau-bench": "openai",
    "openai": "openai",
    "openai-responses": "openai-responses",
}
POLICIES = (ReplayPolicy(), ReplayPolicy.seed(), ReplayPolicy(age_unit="assistant_turn"))


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], dict[str, list[str]]]:
    """One home with every transcript as imported, one with each conversation folded, and
    the conversation ids of each file."""
    transcripts = require_transcripts()
    plain, folded = tmp_path_factory.mktemp("plain"), tmp_path_factory.mktemp("folded")
    with Workspace(plain) as ws:
        report = ws.ingest(transcripts, fold=False)
    ids = {f.path: list(f.conversation_ids) for f in report.files}
    policy = FoldPolicy(threshold_chars=30_000)
    with Workspace(folded, fold_policy=policy) as ws:
        for cid in ws.ingest(transcripts):
            ws.fold(cid)
    return {"plain": plain, "folded": folded}, ids


@pytest.mark.parametrize("path", transcript_files(), ids=transcript_id)
def test_every_real_replay_validates_against_the_sdk_types(
    homes: tuple[dict[str, Path], dict[str, list[str]]], path: Path
) -> None:
    places, ids = homes
    for name, home in places.items():
        with Workspace(home) as ws:
            for cid in ids[str(path)]:
                if name == "folded" and ws.fold_state(cid) is None:
                    continue  # the same replay as in the plain home
                provider = PROVIDER_OF[str(ws.info(cid).format)]
                for policy in POLICIES:
                    assert_valid(for_provider(ws.replay(cid, policy).messages, provider), provider)


@pytest.mark.parametrize(
    ("provider", "payload", "problem"),
    [
        ("anthropic", {"role": "user", "content": "q", "id": "m1"}, "key 'id' is not in"),
        (
            "anthropic",
            {"role": "user", "content": [{"type": "text", "text": "q", "meta": True}]},
            "$.content[0]: key 'meta' is not in TextBlockParam",
        ),
        (
            "openai",
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "index": 0,
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            },
            "$.tool_calls[0]: key 'index' is not in",
        ),
        ("openai", {"role": "tool", "tool_call_id": "c", "content": "r", "name": "f"}, "'name'"),
        (
            "openai-responses",
            {"type": "function_call_output", "call_id": "c", "output": "r", "stub": True},
            "key 'stub' is not in",
        ),
        (
            "openai-responses",
            {"type": "function_call", "name": "f", "arguments": "{}"},
            "needs 'call_id'",
        ),
    ],
    ids=["anthropic-id", "anthropic-block-key", "openai-index", "tool-name", "stub", "no-call-id"],
)
def test_the_type_walker_finds_what_providers_reject(
    provider: str, payload: dict[str, Any], problem: str
) -> None:
    found = problems(payload, TYPES[provider])
    assert any(problem in p for p in found), found


def test_the_folded_home_is_folded(homes: tuple[dict[str, Path], dict[str, list[str]]]) -> None:
    with Workspace(homes[0]["folded"]) as ws:
        folded = [c for c in ws.conversations() if ws.fold_state(c) is not None]
        formats = {ws.info(c).format for c in folded}
    assert {"claude-code", "mini-swe-agent"} <= formats, formats


def test_openai_payload_leaves_out_what_the_api_rejects(transcripts: Path, tmp_path: Path) -> None:
    path = next(transcripts.glob("mini-swe-agent-pr816/*/*/*.traj.json"))
    with Workspace(tmp_path) as ws:
        (cid,) = ws.ingest(path)
        stored = ws.messages(cid)
        payload = for_provider(ws.replay(cid).messages, "openai")
    assert any("index" in c for m in stored for c in m.get("tool_calls") or ())
    assert not any("index" in c for m in payload for c in m.get("tool_calls") or ())
    assert not any("extra" in m or "id" in m for m in payload)
    tau = transcripts / "tau-bench" / "gpt-4o-airline.json"
    with Workspace(tmp_path) as ws:
        cid = next(iter(ws.ingest(tau)))
        assert any(m.get("role") == "tool" and "name" in m for m in ws.messages(cid))
        payload = for_provider(ws.replay(cid).messages, "openai")
    assert not any(m["role"] == "tool" and "name" in m for m in payload)


def test_a_shape_sent_under_another_providers_name_is_an_error() -> None:
    openai = [user("q"), oa_call(("c", "f")), oa_result("c", "r")]
    anthropic = [user("q"), an_call(("t", "f")), an_results(("t", "r", False))]
    responses = [user("q"), rs_call("c", "f"), rs_result("c", "r")]
    cases = {"openai": openai, "anthropic": anthropic, "openai-responses": responses}
    for shape, messages in cases.items():
        assert_valid(for_provider(messages, shape), shape)  # type: ignore[arg-type]
        for other in cases.keys() - {shape}:
            with pytest.raises(PlaceholderError, match=f"in the {shape} shape, not {other}"):
                for_provider(messages, other)  # type: ignore[arg-type]
    with pytest.raises(PlaceholderError, match="which the Anthropic Messages API does not take"):
        for_provider([{"role": "user", "content": [{"type": "video", "url": "x"}]}], "anthropic")


def as_responses_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Chat Completions log written as the Responses API input items an agent built on the
    Responses API (the OpenAI Agents SDK) would have stored for the same run."""
    items: list[dict[str, Any]] = []
    for m in messages:
        role, text = m["role"], m.get("content") or ""
        if role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m["tool_call_id"], "output": text}
            )
            continue
        if role == "assistant":
            items.append({"type": "reasoning", "id": f"rs_{len(items)}", "summary": []})
            if text:
                part = {"type": "output_text", "text": text, "annotations": []}
                items.append(
                    {
                        "type": "message",
                        "id": f"msg_{len(items)}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [part],
                    }
                )
            for call in m.get("tool_calls") or ():
                items.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{len(items)}",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                        "status": "completed",
                    }
                )
            continue
        role = "developer" if role == "system" else role
        items.append(
            {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}
        )
    return items


def test_responses_items_import_replay_and_validate(transcripts: Path, tmp_path: Path) -> None:
    source = transcripts / "mini-swe-agent-pr816/deepseek_chat_dev/sqlfluff__sqlfluff-1733"
    trajectory = json.loads((source / "sqlfluff__sqlfluff-1733.traj.json").read_text())
    chat = [m for m in trajectory["messages"] if m["role"] != "exit"]
    items = as_responses_items(chat)
    log = tmp_path / "agents-sdk-run.jsonl"
    log.write_text("".join(json.dumps(i) + "\n" for i in items))
    with Workspace(tmp_path / "home") as ws:
        (cid,) = ws.ingest(log)
        assert ws.info(cid).format == "openai-responses"
        stored = {m["id"]: m for m in ws.messages(cid)}
        assert len(stored) == len(items), "stored item by item, as given"
        result = ws.replay(cid, ReplayPolicy(age_unit="assistant_turn"))
        assert result.placeholders > 10
        # Each placeholder sits in a function_call_output that keeps its call_id and names
        # the stored item, whose output conversation_read returns.
        seen = 0
        for new in result.messages:
            slots = result_slots(new)
            if not slots or not is_placeholder(slots[0].content):
                continue
            assert new["type"] == "function_call_output"
            assert set(new) == set(stored[new["id"]])
            assert new["call_id"] == stored[new["id"]]["call_id"]
            conv, mid, call = parse_call(new["output"])
            assert ws.conversation_read(conv, mid, call)["content"] == stored[mid]["output"]
            seen += 1
        assert seen == result.placeholders
        assert_valid(for_provider(result.messages, "openai-responses"), "openai-responses")
        calls = [c for m in result.messages for c, _ in tool_calls(m)]
        assert len(calls) == sum(1 for m in chat for _ in m.get("tool_calls") or ())
        # A live snapshot cut between a call and its output replays with a stub output.
        cut = next(i for i, m in enumerate(items) if m["type"] == "function_call") + 1
        log.write_text("".join(json.dumps(i) + "\n" for i in items[:cut]))
        (snap,) = ws.ingest(log, conversation_id="snapshot")
        lean = ws.replay(snap)
        assert lean.messages[-1]["type"] == "function_call_output"
        assert lean.messages[-1]["stub"] is True
        assert any("stub result" in n for n in lean.notes)
        assert_valid(for_provider(lean.messages, "openai-responses"), "openai-responses")
