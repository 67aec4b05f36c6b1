"""last_turns and PairWindow, including the worked examples of the project spec."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.placeholders import PairWindow, PairWindowError, last_turns
from tests.builders import an_results, assistant, oa_call, oa_result, user


def test_last_turns_worked_example() -> None:
    messages = [
        user("user1"),
        assistant("answer1"),
        user("user2"),
        oa_call(("c", "bash")),
        oa_result("c", "out"),
        assistant("answer2"),
        user("user3"),
        assistant("answer3"),
    ]
    assert last_turns(messages, 2) == messages[2:]


@pytest.mark.parametrize("n", [3, 10], ids=str)
def test_last_turns_keeps_everything_with_fewer_user_messages(n: int) -> None:
    messages = [user("a"), assistant("b"), user("c")]
    assert last_turns(messages, n) == messages
    assert last_turns([assistant("only")], 1) == [assistant("only")]


def test_last_turns_skips_tool_result_and_meta_users_and_keeps_system() -> None:
    system = {"role": "system", "content": "s"}
    messages = [
        system,
        user("q1"),
        assistant("a"),
        user("q2"),
        an_results(("t", "r", False)),
        user("x", meta=True),
    ]
    assert last_turns(messages, 1) == [system, *messages[3:]]
    assert last_turns(messages, 1, keep_system=False) == messages[3:]


@pytest.mark.parametrize(
    ("n", "message"),
    [
        (0, "n must be >= 1, got 0"),
        (-1, "n must be >= 1, got -1"),
        (True, "n must be an int, got bool"),
        (1.5, "n must be an int, got float"),
    ],
    ids=repr,
)
def test_last_turns_rejects_bad_n(n: Any, message: str) -> None:
    with pytest.raises(PairWindowError, match=message):
        last_turns([], n)


def window(**kw: Any) -> PairWindow:
    return PairWindow("c1", "be brief", **{"max_pairs": 3, "budget": 20, **kw})


def test_pairs_are_dropped_oldest_first_by_count() -> None:
    w = window(budget=1000)
    for i in range(5):
        w.append_pair("c1", {"user": f"u{i}", "assistant": f"a{i}"})
    data = w.export("c1")
    assert [p["user"] for p in data["pairs"]] == ["u2", "u3", "u4"]
    assert data["dropped_pairs"] == 2
    assert data["policy"] == "be brief"
    assert data["conversation_id"] == "c1"


def test_budget_counts_codepoints_and_equality_is_allowed() -> None:
    w = window(budget=4)
    # An emoji is one codepoint (two UTF-16 units, four UTF-8 bytes); e + combining accent is two.
    w.append_pair("c1", {"user": "😀", "assistant": "e\u0301x"})
    assert w.export("c1")["history_codepoints"] == 4
    w.append_pair("c1", {"user": "ab", "assistant": "cd"})
    data = w.export("c1")
    assert data["pairs"] == [{"user": "ab", "assistant": "cd"}]
    assert data["dropped_pairs"] == 1


def test_oversized_pair_is_rejected_and_history_unchanged() -> None:
    w = window(budget=10)
    w.append_pair("c1", {"user": "hi", "assistant": "there"})
    before = w.export("c1")
    with pytest.raises(PairWindowError, match="11 codepoints, over the whole budget of 10"):
        w.append_pair("c1", {"user": "x" * 6, "assistant": "y" * 5})
    assert w.export("c1") == before


BAD_PAIRS = {
    "missing-key": ({"user": "hi"}, "missing \\['assistant'\\]"),
    "extra-key": ({"user": "hi", "assistant": "yo", "tool": "x"}, "unexpected 'tool'"),
    "non-str": ({"user": 5, "assistant": "yo"}, "must be a str, got int"),
    "blank": ({"user": "  \n", "assistant": "yo"}, "must not be blank"),
    "lone-surrogate": ({"user": "a\ud800", "assistant": "yo"}, "lone surrogate"),
    "not-a-dict": (["user", "assistant"], "pair must be a dict"),
}


@pytest.mark.parametrize("name", sorted(BAD_PAIRS), ids=str)
def test_bad_pairs_raise_value_error_and_change_nothing(name: str) -> None:
    pair, match = BAD_PAIRS[name]
    w = window()
    w.append_pair("c1", {"user": "a", "assistant": "b"})
    before = w.export("c1")
    with pytest.raises(ValueError, match=match):
        w.append_pair("c1", pair)
    assert w.export("c1") == before


def test_wrong_conversation_is_refused_everywhere() -> None:
    w = window()
    for call in (
        lambda: w.append_pair("c2", {"user": "a", "assistant": "b"}),
        lambda: w.export("c2"),
        lambda: w.reset("c2"),
    ):
        with pytest.raises(PairWindowError, match="belongs to conversation 'c1'"):
            call()


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"max_pairs": 0}, "max_pairs must be >= 1"),
        ({"budget": 0}, "budget must be >= 1"),
        ({"max_pairs": True}, "max_pairs must be an int, got bool"),
        ({"budget": 2.0}, "budget must be an int, got float"),
    ],
    ids=str,
)
def test_bad_limits(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(PairWindowError, match=match):
        window(**kw)


def test_export_is_detached_and_reset_keeps_policy() -> None:
    w = window()
    w.append_pair("c1", {"user": "a", "assistant": "b"})
    data = w.export("c1")
    data["pairs"][0]["user"] = "changed"
    data["pairs"].append({"user": "x", "assistant": "y"})
    assert w.export("c1")["pairs"] == [{"user": "a", "assistant": "b"}]
    w.reset("c1")
    assert w.export("c1") == {
        "conversation_id": "c1",
        "policy": "be brief",
        "pairs": [],
        "history_codepoints": 0,
        "dropped_pairs": 0,
    }


@settings(max_examples=100, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12)), max_size=20
    ),
    max_pairs=st.integers(1, 5),
    budget=st.integers(1, 40),
)
def test_window_invariants(pairs: list[tuple[str, str]], max_pairs: int, budget: int) -> None:
    w = PairWindow("c", "be brief", max_pairs=max_pairs, budget=budget)
    accepted: list[dict[str, str]] = []
    for u, a in pairs:
        try:
            w.append_pair("c", {"user": u, "assistant": a})
        except PairWindowError:
            continue
        accepted.append({"user": u, "assistant": a})
    data = w.export("c")
    assert len(data["pairs"]) <= max_pairs
    assert data["history_codepoints"] <= budget
    assert data["history_codepoints"] == sum(
        len(p["user"]) + len(p["assistant"]) for p in data["pairs"]
    )
    # Kept pairs are the newest accepted ones, in arrival order.
    assert data["pairs"] == accepted[len(accepted) - len(data["pairs"]) :]
    assert data["dropped_pairs"] == len(accepted) - len(data["pairs"])


@pytest.mark.parametrize("policy", ["", " ", "\n\t "], ids=repr)
def test_a_blank_policy_is_rejected_like_any_blank_text(policy: str) -> None:
    with pytest.raises(PairWindowError, match="policy must not be blank"):
        PairWindow("c", policy, max_pairs=3, budget=20)
