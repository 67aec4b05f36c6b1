"""The rolling prefix fold: boundary rules, the one iterative summary, failures that change
nothing, concurrency, and the sawtooth of a long conversation."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    CallableSummarizer,
    FoldPolicy,
    OfflineSummarizer,
    ReplayPolicy,
    check_pairing,
    content_chars,
    fold_boundary,
    is_genuine_user,
    is_placeholder,
    result_slots,
)
from tests.builders import (
    an_call,
    an_results,
    assistant,
    oa_call,
    oa_result,
    read_whole,
    user,
    with_ids,
)

SMALL = FoldPolicy(threshold_chars=5_000, keep_last=4, max_summary_chars=1_000)


def turn(i: int, size: int = 1500, shape: str = "openai") -> list[dict[str, Any]]:
    """One user turn: a request, a tool round trip with a big result, an answer."""
    if shape == "openai":
        call = [oa_call((f"c{i}", "bash")), oa_result(f"c{i}", f"out{i} " + "x" * size)]
    else:
        call = [an_call((f"c{i}", "bash")), an_results((f"c{i}", f"out{i} " + "x" * size, False))]
    return [user(f"request {i}"), *call, assistant(f"answer {i}")]


def grow(ws: Workspace, cid: str, turns: int, **kw: Any) -> None:
    for i in range(turns):
        for message in turn(i, **kw):
            ws.append(cid, message)


def test_boundary_keeps_the_tail_and_starts_it_with_a_user_turn() -> None:
    messages = with_ids([m for i in range(6) for m in turn(i)])
    boundary, why = fold_boundary(messages, 0, SMALL)
    assert boundary is not None
    assert is_genuine_user(messages[boundary])
    assert boundary <= len(messages) - SMALL.keep_last
    assert len(messages) - boundary >= SMALL.keep_last
    assert "folding" in why


@pytest.mark.parametrize(
    ("cut", "keep_last", "expected"),
    [("between-call-and-result", 6, 2), ("between-results", 6, 2), ("right-after-a-call", 2, 7)],
    ids=["between-call-and-result", "between-results", "right-after-a-call"],
)
def test_boundary_never_splits_a_call_from_its_results(
    cut: str, keep_last: int, expected: int
) -> None:
    # A naive "keep the last N" cut would land at the place the id names.
    messages = [user("u0"), assistant("a0"), user("u1"), oa_call(("a", "x"), ("b", "y"))]
    messages += [
        oa_result("a", "1" * 3000),
        oa_result("b", "2" * 3000),
        assistant("a2"),
        user("u2"),
    ]
    messages += [oa_call(("c", "z")), oa_result("c", "3" * 3000), user("u3")]
    policy = FoldPolicy(threshold_chars=1000, keep_last=keep_last, max_summary_chars=500)
    boundary, _ = fold_boundary(with_ids(messages), 0, policy)
    assert boundary == expected
    assert is_genuine_user(messages[boundary])
    assert check_pairing(messages[boundary:]) == []


def test_no_user_message_in_reach_declines_and_says_why() -> None:
    messages = [user("do the whole task")]
    for i in range(30):
        messages += [oa_call((f"c{i}", "bash")), oa_result(f"c{i}", "y" * 1000)]
    boundary, why = fold_boundary(with_ids(messages), 0, SMALL)
    assert boundary is None
    assert "no genuine user message" in why


def test_fold_then_replay_has_preamble_ack_and_tail(tmp_path: Path) -> None:
    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        ws.append("c", {"role": "system", "content": "You are terse."})
        grow(ws, "c", 6)
        result = ws.fold("c")
        assert result.folded, result.reason
        state = ws.fold_state("c")
        assert state is not None
        assert state["summary"] == result.summary
        assert state["summarized_through_message_id"] == result.summarized_through_message_id
        replayed = ws.replay("c").messages
        assert replayed[0] == {"role": "system", "content": "You are terse.", "id": "m1"}
        assert replayed[1]["role"] == "user"
        assert replayed[1]["meta"] is True
        assert "[Summary of the earlier conversation" in replayed[1]["content"]
        assert (
            'conversation_read(conversation_id="c", message_id="MESSAGE_ID")'
            in replayed[1]["content"]
        )
        assert replayed[2]["role"] == "assistant"
        assert is_genuine_user(replayed[3])
        assert check_pairing(replayed) == []
        # The summary names what was folded, by message id.
        assert "User requests:\n- [m2] request 0" in result.summary
        # Every original is still there and readable.
        assert len(ws.messages("c")) == 25
        assert ws.conversation_read("c", "m4")["content"].startswith("out0 ")


def test_rerun_on_unchanged_input_is_a_no_op(tmp_path: Path) -> None:
    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        grow(ws, "c", 6)
        first = ws.fold("c")
        assert first.folded
        again = ws.fold("c")
        assert not again.folded
        assert "not over the threshold" in again.reason
        assert ws.fold_state("c")["generation"] == 1  # type: ignore[index]


def test_summary_is_iterative_and_one_per_conversation(tmp_path: Path) -> None:
    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        grow(ws, "c", 6)
        first = ws.fold("c").summary
        assert first is not None
        for i in range(6, 12):
            for m in turn(i):
                ws.append("c", m)
        second = ws.fold("c")
        assert second.folded
        assert second.generation == 2
        assert second.summary is not None
        assert "request 0" in second.summary  # the previous summary was an input
        assert "request 6" in second.summary
        assert len(second.summary) <= SMALL.max_summary_chars
        assert ws.fold_state("c")["generation"] == 2  # type: ignore[index]


def test_the_summarizer_reads_originals_never_placeholders(tmp_path: Path) -> None:
    seen: list[list[dict[str, Any]]] = []

    def record(previous: str | None, messages: Any, *, max_chars: int) -> str:
        seen.append(list(messages))
        return "summary"

    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        grow(ws, "c", 6, size=2500)
        assert ws.replay("c", ReplayPolicy.seed()).placeholders > 0  # replay shows placeholders...
        assert ws.fold("c", summarizer=record).folded
    folded = seen[0]
    for message in folded:  # ...but the summarizer got the originals
        for slot in result_slots(message):
            assert not is_placeholder(slot.content)
            assert slot.chars() > 2500


@pytest.mark.parametrize(
    "summarizer",
    [
        lambda prev, msgs, *, max_chars: (_ for _ in ()).throw(RuntimeError("model down")),
        lambda prev, msgs, *, max_chars: "   ",
        CallableSummarizer(lambda prompt: "Error generating summary: rate limited"),
        CallableSummarizer(lambda prompt: time.sleep(2) or "late", timeout_s=0.2),
        CallableSummarizer(lambda prompt: ""),
    ],
    ids=["raises", "blank", "error-text", "timeout", "empty"],
)
def test_a_failing_summarizer_changes_nothing(tmp_path: Path, summarizer: Any) -> None:
    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        grow(ws, "c", 6)
        before_messages = ws.messages("c")
        before_replay = ws.replay("c").messages
        result = ws.fold("c", summarizer=summarizer)
        assert not result.folded
        assert "nothing changed" in result.reason or "summarizer" in result.reason
        assert ws.fold_state("c") is None
        assert ws.messages("c") == before_messages
        assert ws.replay("c").messages == before_replay


def test_callable_summarizer_gets_a_prompt_and_its_answer_is_stored(tmp_path: Path) -> None:
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return "TASK: requests 0-3. DONE: answered. [m2]"

    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        grow(ws, "c", 6)
        result = ws.fold("c", summarizer=CallableSummarizer(model))
    assert result.summary == "TASK: requests 0-3. DONE: answered. [m2]"
    assert "[m1] user: request 0" in prompts[0]
    assert "out0 xxx" in prompts[0]  # originals, not placeholders


def test_one_fold_at_a_time_and_a_turn_arriving_meanwhile_survives(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(previous: str | None, messages: Any, *, max_chars: int) -> str:
        started.set()
        release.wait(10)
        return "slow summary"

    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        grow(ws, "c", 6)
        results: list[Any] = []
        worker = threading.Thread(target=lambda: results.append(ws.fold("c", summarizer=slow)))
        worker.start()
        assert started.wait(10)
        with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as other:
            busy = other.fold("c")
            assert not busy.folded
            assert "another fold" in busy.reason
            late = other.append("c", user("a turn that arrived during the fold"))
        release.set()
        worker.join(10)
        assert results[0].folded
        tail = ws.replay("c").messages
        assert tail[-1]["id"] == late
        assert tail[-1]["content"] == "a turn that arrived during the fold"


def test_sawtooth_of_a_long_conversation(tmp_path: Path) -> None:
    policy = FoldPolicy(threshold_chars=60_000, keep_last=8, max_summary_chars=3_000)
    largest_turn = 0
    peak = 0
    with Workspace(tmp_path, fold_policy=policy) as ws:
        total = 0
        i = 0
        while total < 2_000_000:
            messages = turn(i, size=6_000, shape="anthropic" if i % 2 else "openai")
            largest_turn = max(largest_turn, sum(content_chars(m) for m in messages))
            for m in messages:
                ws.append("long", m)
            total += sum(content_chars(m) for m in messages)
            # Replay everything as it stands: no placeholders, to measure the fold alone.
            size = ws.replay("long", policy=None).chars_in
            peak = max(peak, size)
            i += 1
        state = ws.fold_state("long")
        assert state is not None
        assert state["generation"] > 10
        bound = policy.threshold_chars + policy.max_summary_chars + largest_turn + 2_000
        assert peak <= bound, (peak, bound)
        assert total > 10 * peak
        stored = ws.messages("long")
        for mid in (stored[1]["id"], stored[len(stored) // 2]["id"], stored[-1]["id"]):
            original = next(m for m in stored if m["id"] == mid)
            slots = result_slots(original)
            expected = (
                slots[0].content
                if len(slots) == 1
                else original["content"]
                if isinstance(original["content"], str)
                else {k: v for k, v in original.items() if k != "id"}
            )
            assert read_whole(ws, "long", mid)[0] == expected


def test_offline_summarizer_is_deterministic_and_bounded() -> None:
    messages = with_ids([m for i in range(300) for m in turn(i, size=10)])
    summarize = OfflineSummarizer()
    a = summarize("earlier: setup done", messages, max_chars=2000)
    b = summarize("earlier: setup done", messages, max_chars=2000)
    assert a == b
    assert len(a) <= 2000
    assert a.startswith("earlier: setup done")
    assert "earlier items omitted" in a
    assert "request 299" in a


def test_folded_prefix_bytes_stay_identical_until_the_next_fold(tmp_path: Path) -> None:
    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        grow(ws, "c", 6)
        assert ws.fold("c").folded
        before = ws.replay("c").messages
        prefix = json.dumps(before[:2], sort_keys=True)
        ws.append("c", user("one more question"))
        ws.append("c", assistant("one more answer"))
        after = ws.replay("c").messages
        assert json.dumps(after[:2], sort_keys=True) == prefix
        assert after[: len(before)] == before, (
            "the replayed history before the new turn is unchanged"
        )


@pytest.mark.parametrize("system", [0, 1, 9])
def test_replay_of_a_folded_conversation_reads_only_the_system_messages_and_the_tail(
    tmp_path: Path, system: int
) -> None:
    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        for i in range(system):
            ws.append("c", {"role": "system", "content": f"rule {i}"})
        grow(ws, "c", 6)
        assert ws.fold("c").folded
        before = ws.replay("c")
        through = ws.fold_state("c")["summarized_through_message"]  # type: ignore[index]
    # Damage every folded-away row, its body and its append time: a replay that read them
    # would fail to parse them.
    with closing(sqlite3.connect(tmp_path / "store.sqlite3")) as db, db:
        db.execute(
            "UPDATE messages SET body='{broken', at='broken' "
            "WHERE conversation_id='c' AND seq>? AND seq<=?",
            (system, through),
        )
    with Workspace(tmp_path, fold_policy=SMALL, auto_fold=False) as ws:
        after = ws.replay("c")
    assert after.messages == before.messages
    assert after.stats() == before.stats()


def test_an_append_to_a_long_unfolded_conversation_returns_before_its_fold(
    tmp_path: Path,
) -> None:
    from leanreplay.index.lifecycle._conversations import FOLD_INLINE_MESSAGES

    turns = FOLD_INLINE_MESSAGES // 2 + 10
    backlog = [
        m
        for i in range(turns)
        for m in (
            {"role": "user", "content": f"question {i} about the build"},
            {"role": "assistant", "content": f"answer {i}: " + "the build passed " * 3},
        )
    ]
    with Workspace(tmp_path, auto_fold=False) as ws:  # stored unfolded, as a bulk import
        ws.extend("c", backlog)
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def summarize(previous: str | None, messages: Any, *, max_chars: int) -> str:
        started.set()
        release.wait(60)
        finished.set()
        return f"summary of {len(messages)} messages"

    ws = Workspace(tmp_path, summarizer=summarize)
    ws.append("c", {"role": "user", "content": "and now?"})
    # The append came back while the summarizer still waits: the fold runs behind it.
    assert started.wait(60)
    assert not finished.is_set()
    release.set()
    state = ws.fold_state("c")  # waits for the fold to land
    assert state is not None
    assert state["summary"].startswith("summary of ")
    assert state["summarized_through_message"] > FOLD_INLINE_MESSAGES
    replayed = ws.replay("c").messages
    assert "summary of" in json.dumps(replayed[0])
    assert replayed[-1]["content"] == "and now?"
    ws.close()
