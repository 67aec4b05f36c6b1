"""The deferred write of a request's new messages (stored after the answer went out) when
the client's next request comes before it ran: each message is stored once, in order, and
the next requests still find the conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.index.faces.proxy._anthropic import Anthropic
from leanreplay.index.faces.proxy._conversation import Known, conversation_of, digests, family

API = Anthropic()


def turns(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "question 0"}]
    for k in range(1, n):
        out += [
            {"role": "assistant", "content": f"answer {k - 1}"},
            {"role": "user", "content": f"question {k}"},
        ]
    return out


def request(ws: Workspace, known: Known, n: int) -> Any:
    parsed = API.parse(json.dumps({"model": "m", "max_tokens": 9, "messages": turns(n)}))
    chain = digests(parsed)
    base = family(API, parsed, None, chain)
    return conversation_of(ws, parsed, base, chain, format="anthropic", known=known, defer=True)


@pytest.mark.parametrize("first", ["earlier", "later"])
def test_a_deferred_write_overtaken_by_the_next_request_stores_each_message_once(
    tmp_path: Path, first: str
) -> None:
    ws = Workspace(tmp_path / "home")
    known = Known()
    created = request(ws, known, 1)
    assert created.created
    assert created.pending is None  # a new conversation is stored at once
    second = request(ws, known, 2)
    third = request(ws, known, 3)  # before the second's write ran: it holds those messages too
    assert second.pending is not None
    assert third.pending is not None
    assert third.added == 4
    writes = [second.pending, third.pending]
    for write in writes if first == "earlier" else writes[::-1]:
        write()
    cid = created.conversation_id
    stored = ws.messages(cid)
    assert [m["content"] for m in stored] == [m["content"] for m in turns(3)]
    assert [m["id"] for m in stored] == ["m1", "m2", "m3", "m4", "m5"]
    # The next request continues it (deferred again) and finds nothing missing.
    fourth = request(ws, known, 4)
    assert fourth.conversation_id == cid
    assert fourth.added == 2
    assert fourth.pending is not None
    fourth.pending()
    assert len(ws.messages(cid)) == 7
    assert ws.conversations() == [cid]
    ws.close()


def test_a_request_parsed_from_its_previous_one_has_the_same_digests() -> None:
    before = API.parse(json.dumps({"model": "m", "messages": turns(3)}))
    digests(before)
    history = turns(4)
    history[2] = {**history[2], "cache_control": {"type": "ephemeral"}}  # moved breakpoint
    text = json.dumps({"model": "m", "messages": history})
    warm = API.parse(text, [before])
    assert warm.like is before
    assert warm.reused == 2
    assert digests(warm) == digests(API.parse(text))


def test_a_kept_copy_is_brought_up_to_date_from_the_store_tail(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home")
    known = Known()
    first = request(ws, known, 2)
    cid = first.conversation_id
    # Another writer (another proxy on this store) appends after the copy was kept.
    ws.extend(cid, [{"role": "assistant", "content": "elsewhere"}], after=3)
    stored, seen = known.read(ws, cid)
    assert stored == ws.messages(cid)
    assert seen  # the copy's digests still hold for its part: only the tail was read
    ws.close()
