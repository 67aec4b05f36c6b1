"""The store: byte-exact originals, stable ids, append-only, several processes at once; on
both stores (``store_url``: the SQLite store in the home, and a PostgreSQL schema)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from leanreplay.index import ConversationNotFoundError, InvalidArgumentError, Workspace
from leanreplay.placeholders import check_pairing, result_slots
from tests.builders import an_call, an_results, conversations, read_whole, user
from tests.placeholders.test_replay import parse_call

TRICKY_TEXTS = [
    "درآمد فصلی افزایش یافت",  # Persian
    "مرحبا بالعالم",  # Arabic
    "emoji 😀👩‍👩‍👧 and flags 🇮🇷",
    "e\u0301 combining, \u200c zwnj, \u202e bidi",
    "crlf\r\nlines\r\n",
    "tabs\tand \x1b escapes and \x7f",
    "lone \ud800 surrogate",
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
]


@pytest.mark.parametrize("text", TRICKY_TEXTS, ids=range(len(TRICKY_TEXTS)))
def test_messages_round_trip_exactly(store_url: str | None, tmp_path: Path, text: str) -> None:
    with Workspace(tmp_path, store=store_url) as ws:
        nested = {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "text", "text": text}],
                },
            ],
            "extra": {"n": 1.5, "flag": None, "list": [1, "x", {"k": text}]},
        }
        mid = ws.append("c", nested)
        stored = ws.messages("c")[0]
        assert stored == {**nested, "id": mid}
        assert json.dumps(stored, ensure_ascii=False) == json.dumps(
            {**nested, "id": mid}, ensure_ascii=False
        )
        # The one tool result the message holds, read back through pages.
        whole, _ = read_whole(ws, "c", mid)
        assert whole == nested["content"][1]["content"]
    with Workspace(tmp_path, store=store_url) as again:  # survives reopening
        assert again.messages("c")[0]["content"] == nested["content"]


def test_ids_are_assigned_stable_and_never_reused(store_url: str | None, tmp_path: Path) -> None:
    with Workspace(tmp_path, store=store_url) as ws:
        assert ws.append("c", user("a")) == "m1"
        assert ws.append("c", {**user("b"), "id": "m3"}) == "m3"
        # Position 3 would be m3, which is taken: the store picks a fresh id instead.
        assert ws.append("c", user("c")) == "m3-2"
        with pytest.raises(InvalidArgumentError, match="'m1' already exists.*different content"):
            ws.append("c", {**user("d"), "id": "m1"})
        assert [m["id"] for m in ws.messages("c")] == ["m1", "m3", "m3-2"]


def test_appending_a_stored_message_again_is_a_no_op(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        reply = {"role": "assistant", "content": "done", "id": "msg_01"}
        assert ws.append("c", user("q")) == "m1"
        assert ws.append("c", reply) == "msg_01"
        assert ws.append("c", dict(reply)) == "msg_01"  # the same bytes: nothing stored
        # In a batch, the stored one and a repeat within the batch are skipped, the rest stored.
        other = {"role": "user", "content": "next", "id": "u2"}
        assert ws.extend("c", [reply, other, other, user("x")]) == ["msg_01", "u2", "u2", "m4"]
        assert [m["id"] for m in ws.messages("c")] == ["m1", "msg_01", "u2", "m4"]
        # Other bytes under a stored id, even one key more, are refused, and nothing is stored.
        with pytest.raises(InvalidArgumentError, match="'msg_01' already exists in conversation"):
            ws.extend("c", [user("y"), {**reply, "model": "m"}])
        with pytest.raises(InvalidArgumentError, match="'u3' already exists.*different content"):
            ws.extend("c", [{**other, "id": "u3"}, {**user("z"), "id": "u3"}])
        assert [m["id"] for m in ws.messages("c")] == ["m1", "msg_01", "u2", "m4"]


@pytest.mark.parametrize(
    ("message", "match"),
    [
        ({"content": "no role"}, "needs a string 'role'"),
        ({"role": "user", "content": float("nan")}, "not JSON data"),
        ({"role": "user", "content": b"bytes"}, "not JSON data"),
        ({"role": "user", "content": "x", "id": 5}, "id must be a string"),
        ({"role": "user", "content": "x", "id": "a\nb"}, "printable"),
    ],
    ids=["no-role", "nan", "bytes", "int-id", "newline-id"],
)
def test_bad_messages_are_refused_and_nothing_is_stored(
    store_url: str | None, tmp_path: Path, message: Any, match: str
) -> None:
    with Workspace(tmp_path, store=store_url) as ws:
        ws.append("c", user("kept"))
        with pytest.raises(InvalidArgumentError, match=match):
            ws.append("c", message)
        assert [m["content"] for m in ws.messages("c")] == ["kept"]


def test_unknown_ids_say_what_to_do(store_url: str | None, tmp_path: Path) -> None:
    with Workspace(tmp_path, store=store_url) as ws:
        ws.append("c", user("a"))
        with pytest.raises(ConversationNotFoundError, match="no conversation 'nope'"):
            ws.conversation_read("nope", "m1")
        with pytest.raises(ConversationNotFoundError, match="no message 'm9' in conversation 'c'"):
            ws.conversation_read("c", "m9")
        with pytest.raises(ConversationNotFoundError, match="holds no result for tool call 'x'"):
            ws.conversation_read("c", "m1", tool_call_id="x")


def test_allowlist_hides_other_conversations(store_url: str | None, tmp_path: Path) -> None:
    with Workspace(tmp_path, store=store_url) as ws:
        ws.append("secret", user("s"))
        ws.append("open", user("o"))
    with Workspace(tmp_path, conversations=["open"], store=store_url) as limited:
        assert limited.conversations() == ["open"]
        with pytest.raises(ConversationNotFoundError, match="no conversation 'secret'"):
            limited.conversation_read("secret", "m1")


def test_message_rows_and_rows_at_read_the_same_typed_rows(
    store_url: str | None, tmp_path: Path
) -> None:
    with Workspace(tmp_path, store=store_url) as ws:
        for cid, text in (("a", "one"), ("b", "two"), ("a", "three")):
            ws.append(cid, user(text))
        store = ws._store
        rows = store.message_rows()
        assert [(cid, seq, mid, role) for _, cid, seq, mid, role, _ in rows] == [
            ("a", 1, "m1", "user"),
            ("b", 1, "m1", "user"),
            ("a", 2, "m2", "user"),
        ]
        assert [json.loads(body)["content"] for *_, body in rows] == ["one", "two", "three"]
        assert all(type(r[0]) is int and type(r[2]) is int for r in rows)
        rowids = [r[0] for r in rows]
        assert rowids == sorted(set(rowids))  # insertion order
        assert store.message_rows(after_rowid=rowids[0], limit=1) == rows[1:2]
        assert store.message_rows(after_rowid=rowids[-1]) == []
        # Rows the store does not hold are left out.
        assert sorted(store.rows_at([rowids[2], rowids[0], rowids[-1] + 1000])) == [
            rows[0],
            rows[2],
        ]
        assert store.rows_at([]) == []


def test_conversation_read_of_one_result_among_several(
    store_url: str | None, tmp_path: Path
) -> None:
    with Workspace(tmp_path, store=store_url) as ws:
        ws.append("c", user("q"))
        ws.append("c", an_call(("a", "bash"), ("b", "grep")))
        mid = ws.append(
            "c", an_results(("a", "alpha", False), ("b", [{"type": "text", "text": "beta"}], True))
        )
        read = ws.conversation_read("c", mid, tool_call_id="b")
        assert read["format"] == "json"
        assert json.loads(read["content"]) == [{"type": "text", "text": "beta"}]
        assert read["is_error"] is True
        assert read["tool_call_id"] == "b"
        assert read["next"] is None
        alpha = ws.conversation_read("c", mid, tool_call_id="a")
        assert (alpha["format"], alpha["content"]) == ("text", "alpha")


def _placeholders_round_trip(store_url: str | None, messages: list[dict[str, Any]]) -> None:
    # The examples share the test's PostgreSQL schema: each stores its own conversation.
    conv = f"conv-{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory() as home, Workspace(home, store=store_url) as ws:
        for m in messages:
            ws.append(conv, m)
        result = ws.replay(conv)
        assert check_pairing(result.messages) == []
        seen = 0
        for new, old in zip(result.messages, messages, strict=True):
            for slot_new, slot_old in zip(result_slots(new), result_slots(old), strict=True):
                if slot_new.content == slot_old.content:
                    continue
                text = (
                    slot_new.content
                    if isinstance(slot_new.content, str)
                    else slot_new.content[0]["text"]
                )
                cid, mid, call = parse_call(text)
                whole, _ = read_whole(ws, cid, mid, call)
                original = (
                    slot_old.content
                    if call is not None or len(result_slots(old)) == 1
                    else old["content"]
                )
                assert whole == original
                assert json.dumps(whole, ensure_ascii=False) == json.dumps(
                    original, ensure_ascii=False
                )
                seen += 1
        assert seen == result.placeholders


@settings(max_examples=40, deadline=None)
@given(messages=conversations())
def test_every_placeholder_round_trips_through_conversation_read(
    messages: list[dict[str, Any]],
) -> None:
    _placeholders_round_trip(None, messages)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(messages=conversations())
def test_every_placeholder_round_trips_on_postgresql(
    pg_url: str, messages: list[dict[str, Any]]
) -> None:
    _placeholders_round_trip(pg_url, messages)


def _append_many(home: str, store: str | None, conversation: str, tag: str, count: int) -> None:
    with Workspace(home, store=store) as ws:
        for i in range(count):
            ws.append(conversation, user(f"{tag}-{i}"))


def test_two_processes_appending_to_one_conversation_lose_nothing(
    store_url: str | None, tmp_path: Path
) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [
        ctx.Process(target=_append_many, args=(str(tmp_path), store_url, "shared", tag, 60))
        for tag in "ab"
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    with Workspace(tmp_path, store=store_url) as ws:
        texts = [m["content"] for m in ws.messages("shared")]
    assert sorted(texts) == sorted(f"{t}-{i}" for t in "ab" for i in range(60))
    for tag in "ab":  # each writer's own order is kept
        mine = [t for t in texts if t.startswith(tag)]
        assert mine == [f"{tag}-{i}" for i in range(60)]
    assert len({m for m in texts}) == 120


WRITER = """
import sys
from leanreplay.index import Workspace
ws = Workspace(sys.argv[1], store=sys.argv[2] if len(sys.argv) > 2 else None)
for i in range(100000):
    ws.append("c", {"role": "user", "content": f"msg-{i}"})
    print(i, flush=True)
"""


def test_sigkill_loses_no_acknowledged_append(store_url: str | None, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), *([store_url] if store_url else [])],
        stdout=subprocess.PIPE,
        text=True,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    assert proc.stdout is not None
    acknowledged = -1
    deadline = time.monotonic() + 30
    while acknowledged < 40 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            acknowledged = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert acknowledged >= 40
    with Workspace(tmp_path, store=store_url) as ws:
        texts = [m["content"] for m in ws.messages("c")]
    assert texts[: acknowledged + 1] == [f"msg-{i}" for i in range(acknowledged + 1)]


def _synchronous(ws: Workspace) -> int:
    """The synchronous mode of the store connection's last commit (read, not written): 2 is
    FULL, a disk sync at every commit; 1 is NORMAL."""
    ((mode,),) = ws._store._read("PRAGMA synchronous")
    return int(mode)


def test_an_import_of_many_files_syncs_the_disk_once_at_its_end(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    for n in range(3):
        lines = [json.dumps({"role": "user", "content": f"file {n} line {i}"}) for i in range(3)]
        (root / f"c{n}.jsonl").write_text("\n".join(lines) + "\n")
    ws = Workspace(tmp_path / "home")
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int, path: str) -> None:
        if 0 < done < total:  # between two files: the commits before did not sync
            seen.append((done, _synchronous(ws)))

    report = ws.ingest(str(root), progress=progress)
    assert report.counts()["imported"] == 3
    assert seen == [(1, 1), (2, 1)]  # NORMAL: no fsync per file
    assert _synchronous(ws) == 2  # FULL again: the closing commit synced all of it
    with Workspace(tmp_path / "home") as again:
        assert [len(again.messages(f"c{n}")) for n in range(3)] == [3, 3, 3]


def test_another_threads_writes_sync_during_a_batch(tmp_path: Path) -> None:
    import threading

    ws = Workspace(tmp_path)
    modes: list[int] = []

    def other() -> None:
        ws.append("theirs", {"role": "user", "content": "acknowledged at once"})
        modes.append(_synchronous(ws))

    with ws._store.batch():
        ws.append("mine", {"role": "user", "content": "deferred"})
        modes.append(_synchronous(ws))
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert modes == [1, 2]  # this thread's commit deferred the sync, the other's did not
    assert _synchronous(ws) == 2


def test_a_batch_longer_than_an_insert_slice_is_stored_whole_or_not_at_all(
    tmp_path: Path,
) -> None:
    # _insert builds and inserts its rows a slice at a time; the ids and order are those of
    # one statement, and a reused id in a later slice refuses the whole batch.
    from leanreplay.index.store._store import _INSERT_ROWS

    count = _INSERT_ROWS + 5
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}
        for i in range(count)
    ]
    with Workspace(tmp_path / "home", auto_fold=False) as ws:
        ids = ws.extend("long", messages)
        assert ids == [f"m{i}" for i in range(1, count + 1)]
        stored = ws.messages("long")
        assert [m["content"] for m in stored] == [m["content"] for m in messages]
        late = [*messages[:3], *({**m, "id": f"x{i}"} for i, m in enumerate(messages[3:]))]
        late[-1] = {**late[-1], "id": "x0"}  # the id of the fourth, in the last slice
        with pytest.raises(InvalidArgumentError, match="'x0' already exists"):
            ws.extend("other", late)
        assert "other" not in ws.conversations()
