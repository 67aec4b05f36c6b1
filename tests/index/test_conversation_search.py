"""conversation_search: ranked hits with read calls; the index follows and survives the store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from leanreplay.index import ConversationNotFoundError, InvalidArgumentError, Workspace
from tests.builders import an_call, an_results, assistant, user
from tests.placeholders.test_replay import parse_call


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace(tmp_path / "home")
    w.append("trip", user("Book a flight to Tehran, and note the hotel budget"))
    w.append("trip", an_call(("t1", "search_flights")))
    w.append("trip", an_results(("t1", "Flight IR712 departs 08:15, fare 420 EUR", False)))
    w.append("trip", assistant("Booked IR712. درآمد فصلی is unrelated but stored."))
    w.append("ops", user("The nightly job failed with disk quota exceeded"))
    w.append("ops", assistant("Raise the quota on /var/data; مرحبا"))
    return w


def test_hits_are_ranked_with_snippets_and_read_calls(ws: Workspace) -> None:
    result = ws.conversation_search("quota")
    assert [h["conversation_id"] for h in result["hits"]] == ["ops", "ops"]
    top = result["hits"][0]
    assert "**quota**" in top["snippet"]
    cid, mid, _ = parse_call(top["read"])
    assert ws.conversation_read(cid, mid)["message_id"] == top["message_id"]


def test_tool_results_and_names_are_searchable(ws: Workspace) -> None:
    hits = ws.conversation_search("IR712 fare")["hits"]
    assert hits[0]["message_id"] == "m3"
    assert ws.conversation_search("search_flights")["hits"][0]["tools"] == "search_flights"


@pytest.mark.parametrize(
    ("query", "conversation"), [("درآمد", "trip"), ("مرحبا", "ops")], ids=["persian", "arabic"]
)
def test_unicode_queries(ws: Workspace, query: str, conversation: str) -> None:
    hits = ws.conversation_search(query)["hits"]
    assert hits
    assert hits[0]["conversation_id"] == conversation
    assert f"**{query}**" in hits[0]["snippet"]


def test_scope_and_allowlist(ws: Workspace, tmp_path: Path) -> None:
    assert {
        h["conversation_id"] for h in ws.conversation_search("the", conversation_id="trip")["hits"]
    } == {"trip"}
    with Workspace(ws.home, conversations=["ops"]) as limited:
        assert {
            h["conversation_id"] for h in limited.conversation_search("flight quota")["hits"]
        } == {"ops"}
        with pytest.raises(ConversationNotFoundError):
            limited.conversation_search("flight", conversation_id="trip")


@pytest.mark.parametrize(
    "query", ["foo:bar", '"unbalanced', "quota AND", "(((", "role:user quota"], ids=str
)
def test_hostile_queries_never_crash(ws: Workspace, query: str) -> None:
    try:
        result = ws.conversation_search(query)
    except InvalidArgumentError as exc:
        assert "no searchable words" in str(exc)
        return
    if "quota" in query:
        assert result["hits"]


def test_new_messages_are_found_on_the_next_search(ws: Workspace) -> None:
    assert ws.conversation_search("zeppelin")["hits"] == []
    ws.append("ops", user("Is the zeppelin fleet grounded?"))
    assert ws.conversation_search("zeppelin")["hits"][0]["conversation_id"] == "ops"


def test_index_is_rebuilt_when_deleted_or_corrupt(ws: Workspace) -> None:
    ws.conversation_search("quota")
    index_dir = Path(ws.home) / "index" / "messages-v1"
    shutil.rmtree(index_dir)
    with Workspace(ws.home) as again:
        assert again.conversation_search("quota")["hits"]
    (index_dir / "meta.json").write_text("{ not json")
    with Workspace(ws.home) as again:
        assert len(again.conversation_search("quota")["hits"]) == 2


def test_index_of_another_store_is_not_trusted(ws: Workspace, tmp_path: Path) -> None:
    ws.conversation_search("quota")
    ws.close()
    (Path(ws.home) / "store.sqlite3").unlink()
    for extra in ("store.sqlite3-wal", "store.sqlite3-shm"):
        (Path(ws.home) / extra).unlink(missing_ok=True)
    with Workspace(ws.home) as fresh:
        fresh.append("new", user("nothing about disks here"))
        assert fresh.conversation_search("quota")["hits"] == []
        state = json.loads((Path(ws.home) / "index" / "messages-v1.state.json").read_text())
        assert state["store"] == fresh._store.identity
