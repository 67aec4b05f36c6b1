"""Workspace.extend: several messages in one transaction, conditional on what was read, so
two writers of one conversation never interleave; conversations(prefix=) lists a family."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanreplay.index import ConversationChangedError, Workspace


def test_extend_stores_in_order_and_returns_the_ids(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ids = ws.extend("c", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    assert ids == ["m1", "m2"]
    assert [m["content"] for m in ws.messages("c")] == ["a", "b"]
    assert ws.extend("c", [{"role": "user", "content": "c"}], after=2) == ["m3"]


@pytest.mark.parametrize("after", [0, 1, 3], ids=lambda n: f"after-{n}")
def test_extend_after_a_count_that_no_longer_holds_stores_nothing(
    tmp_path: Path, after: int
) -> None:
    ws = Workspace(tmp_path)
    ws.extend("c", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    with pytest.raises(ConversationChangedError, match=rf"holds 2 messages, not {after}"):
        ws.extend("c", [{"role": "user", "content": "late"}], after=after)
    assert len(ws.messages("c")) == 2


def test_extend_after_zero_creates_only_a_new_conversation(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.extend("new", [{"role": "user", "content": "a"}], after=0, source="s", format="anthropic")
    assert (ws.info("new").source, ws.info("new").format) == ("s", "anthropic")
    with pytest.raises(ConversationChangedError):
        ws.extend("new", [{"role": "user", "content": "b"}], after=0)


def test_conversations_with_a_prefix(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    for cid in ("a", "ab", "ab~1", "abc", "b", "a\U0001f600"):
        ws.append(cid, {"role": "user", "content": "x"})
    assert ws.conversations(prefix="ab") == ["ab", "abc", "ab~1"]
    assert ws.conversations(prefix="a") == ["a", "ab", "abc", "ab~1", "a\U0001f600"]
    assert ws.conversations(prefix="zz") == []
    assert len(ws.conversations()) == 6
