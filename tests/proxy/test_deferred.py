"""The deferred write of a request's new messages (stored while the upstream answers) when
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
