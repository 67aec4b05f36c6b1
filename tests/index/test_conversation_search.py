"""conversation_search: ranked hits with read calls; the index follows and survives the store.

The answer's tests run on both stores (``store_url``): Tantivy over the SQLite store, PostgreSQL's
full-text search over the PostgreSQL one; the index's own tests are Tantivy's."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanreplay.index import ConversationNotFoundError, InvalidArgumentError, Workspace
from leanreplay.index.search._convindex import MESSAGES_VERSION
from tests.builders import an_call, an_results, assistant, user
from tests.placeholders.test_replay import parse_call


def _stored(w: Workspace) -> Workspace:
    w.append("trip", user("Book a flight to Tehran, and note the hotel budget"))
    w.append("trip", an_call(("t1", "search_flights")))
    w.append("trip", an_results(("t1", "Flight IR712 departs 08:15, fare 420 EUR", False)))
    w.append("trip", assistant("Booked IR712. درآمد فصلی is unrelated but stored."))
    w.append("ops", user("The nightly job failed with disk quota exceeded"))
    w.append("ops", assistant("Raise the quota on /var/data; مرحبا"))
    return w


@pytest.fixture
def ws(store_url: str | None, tmp_path: Path) -> Iterator[Workspace]:
    with Workspace(tmp_path / "home", store=store_url) as w:
        yield _stored(w)


@pytest.fixture
def tantivy_ws(tmp_path: Path) -> Iterator[Workspace]:
    with Workspace(tmp_path / "home") as w:
        yield _stored(w)


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


def test_scope_and_allowlist(ws: Workspace, store_url: str | None) -> None:
    assert {
        h["conversation_id"] for h in ws.conversation_search("the", conversation_id="trip")["hits"]
    } == {"trip"}
    with Workspace(ws.home, conversations=["ops"], store=store_url) as limited:
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


def test_messages_msgspec_refuses_are_indexed_too(tantivy_ws: Workspace) -> None:
    # A lone surrogate (escaped in the stored body) is refused by msgspec: the standard
    # decoder reads that message, and its words are found with its position.
    tantivy_ws.append("odd", user("zeppelin hangar", note="lone \ud800"))
    tantivy_ws.append("odd", user("a big number", n=2**80))
    hits = tantivy_ws.conversation_search("zeppelin hangar")["hits"]
    assert [(h["conversation_id"], h["message_id"], h["seq"]) for h in hits] == [("odd", "m1", 1)]
    hits = tantivy_ws.conversation_search("big number")["hits"]
    assert [(h["conversation_id"], h["seq"], h["role"]) for h in hits] == [("odd", 2, "user")]


def test_a_lone_surrogate_in_a_message_leaves_the_search_working(tantivy_ws: Workspace) -> None:
    # Tantivy takes UTF-8 only: the message is indexed with U+FFFD in its place, its other
    # words found, and the original read back exactly.
    tantivy_ws.append("odd", user("zeppelin \ud800 hangar"))
    hits = tantivy_ws.conversation_search("zeppelin hangar")["hits"]
    assert [(h["conversation_id"], h["message_id"]) for h in hits] == [("odd", "m1")]
    assert tantivy_ws.conversation_search("quota")["hits"]
    assert tantivy_ws.messages("odd")[0]["content"] == "zeppelin \ud800 hangar"


def test_index_is_rebuilt_when_deleted_or_corrupt(tantivy_ws: Workspace) -> None:
    tantivy_ws.conversation_search("quota")
    index_dir = Path(tantivy_ws.home) / "index" / f"messages-v{MESSAGES_VERSION}"
    shutil.rmtree(index_dir)
    with Workspace(tantivy_ws.home) as again:
        assert again.conversation_search("quota")["hits"]
    (index_dir / "meta.json").write_text("{ not json")
    with Workspace(tantivy_ws.home) as again:
        assert len(again.conversation_search("quota")["hits"]) == 2


def test_index_of_another_store_is_not_trusted(tantivy_ws: Workspace, tmp_path: Path) -> None:
    tantivy_ws.conversation_search("quota")
    tantivy_ws.close()
    (Path(tantivy_ws.home) / "store.sqlite3").unlink()
    for extra in ("store.sqlite3-wal", "store.sqlite3-shm"):
        (Path(tantivy_ws.home) / extra).unlink(missing_ok=True)
    with Workspace(tantivy_ws.home) as fresh:
        fresh.append("new", user("nothing about disks here"))
        assert fresh.conversation_search("quota")["hits"] == []
        state = json.loads(
            (
                Path(tantivy_ws.home) / "index" / f"messages-v{MESSAGES_VERSION}.state.json"
            ).read_text()
        )
        assert state["store"] == fresh._store.identity


def test_both_engines_answer_in_one_shape(pg_url: str, tmp_path: Path) -> None:
    answers = []
    for store in (None, pg_url):
        with Workspace(tmp_path / str(bool(store)), store=store) as w:
            answers.append(_stored(w).conversation_search("quota flight")["hits"])
    tantivy, postgres = answers
    assert [sorted(h) for h in postgres] == [sorted(h) for h in tantivy]
    assert sorted((h["conversation_id"], h["message_id"]) for h in postgres) == sorted(
        (h["conversation_id"], h["message_id"]) for h in tantivy
    )
    for hit in postgres:
        assert isinstance(hit["score"], float)
        assert hit["read"].startswith("conversation_read(")


CODE = [
    "Traceback: File src/leanreplay/index/_workspace.py, line 12, in conversation_search",
    "call os.path.join(root, name) then parseHttpHeader_v2()",
    "東京タワーの高さは333メートル",
    "می‌خواهم گزارش درآمد را ببینم",  # Persian, with a zero-width non-joiner
    "Größe der Datei: 12 KB, naïve café",
]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("src/leanreplay/index/_workspace.py", 0),
        ("_workspace.py", 0),
        ("workspace", 0),
        ("os.path.join", 1),
        ("join", 1),
        ("parseHttpHeader_v2", 1),
        ("header", 1),
        ("東京タワーの高さは333メートル", 2),
        ("گزارش", 3),
        ("Größe", 4),
        ("café", 4),
    ],
    ids=str,
)
def test_postgresql_search_finds_code_paths_and_other_languages(
    pg_url: str, tmp_path: Path, query: str, found: int
) -> None:
    with Workspace(tmp_path, store=pg_url) as w:
        for text in CODE:
            w.append("code", user(text))
        hits = w.conversation_search(query)["hits"]
    assert [h["message_id"] for h in hits][:1] == [f"m{found + 1}"]


@pytest.mark.parametrize(
    "query",
    [
        "quota\x00",
        "quota \ud800",
        "-quota",
        "quota <-> disk",
        "quota & !disk | (",
        "'quota'",
        "\\quota",
        "quota:*",
        "or quota or",
        '"quota" "',
        "quota " + "x" * 990,
    ],
    ids=range(11),
)
def test_hostile_queries_reach_postgresql_as_words(pg_url: str, tmp_path: Path, query: str) -> None:
    with Workspace(tmp_path, store=pg_url) as w:
        _stored(w)
        hits = w.conversation_search(query)["hits"]
    assert {h["conversation_id"] for h in hits} == {"ops"}  # quota, never an operator


@pytest.mark.parametrize("query", ["(((", "!!! ---", "<->", '""'], ids=str)
def test_a_query_of_operators_alone_says_so_on_postgresql(
    pg_url: str, tmp_path: Path, query: str
) -> None:
    with (
        Workspace(tmp_path, store=pg_url) as w,
        pytest.raises(InvalidArgumentError, match="no searchable words"),
    ):
        w.conversation_search(query)


def test_an_index_of_an_older_schema_is_deleted(tantivy_ws: Workspace) -> None:
    tantivy_ws.conversation_search("quota")
    tantivy_ws.close()
    index = Path(tantivy_ws.home) / "index"
    old = index / f"messages-v{MESSAGES_VERSION - 1}"
    shutil.copytree(index / f"messages-v{MESSAGES_VERSION}", old)
    (index / f"{old.name}.state.json").write_text("{}")
    with Workspace(tantivy_ws.home) as again:
        assert len(again.conversation_search("quota")["hits"]) == 2
    assert not old.exists()
    assert not (index / f"{old.name}.state.json").exists()
