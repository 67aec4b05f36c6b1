"""Store migrations: every schema a leanreplay ever wrote opens with today's code, its data
intact and the new columns filled; a newer store is refused in one line; a failed step leaves
the file as it was; two processes opening an old store migrate it once.

The legacy schemas below are copied from git history (``git log -p -- index/_store.py
index/store/_store.py``): stores written before ``PRAGMA user_version`` was kept are at version
0 and hold the tables and columns of the release that last opened them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from leanreplay.index import ImportFormatError, StoreError, StoreVersionError, Workspace
from leanreplay.index.faces.cli import cli
from leanreplay.index.store._migrations import LATEST, MIGRATIONS, Migration, migrate
from leanreplay.index.store._store import Store, encode_message

# 32b331f (turn 1): no store id, no attachments, no sizes.
TURN1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    source TEXT,
    format TEXT,
    notes TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS messages (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq),
    UNIQUE (conversation_id, id)
);
CREATE TABLE IF NOT EXISTS folds (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id),
    summary TEXT NOT NULL,
    through_seq INTEGER NOT NULL,
    through_id TEXT NOT NULL,
    generation INTEGER NOT NULL
);
INSERT INTO meta(key, value) VALUES ('schema', '1');
"""
# 5dce2f9: a random store id in meta.
IDENTITY = (
    TURN1 + "INSERT INTO meta(key, value) VALUES ('store_id', 'b0a7c1d2e3f405162738495a6b7c8d9e');"
)
# 5c006f9: attachment cards, and message sizes added in place.
ATTACHMENTS = (
    IDENTITY
    + """
CREATE TABLE IF NOT EXISTS attachments (
    conversation_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    block INTEGER NOT NULL,
    path TEXT NOT NULL,
    card TEXT NOT NULL,
    PRIMARY KEY (conversation_id, message_id, block)
);
ALTER TABLE messages ADD COLUMN chars INTEGER;
"""
)
# 4722872: prompt snapshots, and append times added in place (the last schema at version 0).
SNAPSHOTS = (
    ATTACHMENTS
    + """
CREATE TABLE IF NOT EXISTS snapshots (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    body TEXT NOT NULL
);
ALTER TABLE messages ADD COLUMN at REAL;
"""
)
LEGACY = {"turn-1": TURN1, "identity": IDENTITY, "attachments": ATTACHMENTS, "snapshots": SNAPSHOTS}

PNG = "iVBORw0KGgo" + "A" * 400
MESSAGES: dict[str, list[dict[str, Any]]] = {
    "c1": [
        {"role": "user", "content": "why did the build fail?", "id": "m1"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "make"}}],
            "id": "m2",
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "error: " + "x" * 3000},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
            ],
            "id": "m3",
        },
        {"role": "assistant", "content": "درآمد فصلی افزایش یافت 😀 lone \ud800", "id": "m4"},
    ],
    "c2": [
        {"role": "user", "content": "hello", "id": "a"},
        {"role": "tool", "tool_call_id": "k", "content": "crlf\r\nlines", "id": "b"},
    ],
}
CONVERSATIONS = {
    "c1": ("/logs/c1.jsonl", "claude-code", '["2 orphan results kept"]'),
    "c2": (None, None, "[]"),
}
FOLD = ("c1", "the build failed on make", 2, "m2", 1)
ATTACHMENT = ("c1", "m3", 1, "attachments/ab/abcdef.png", "[image: PNG 1x1]")
SNAPSHOT = ("c1", '{"messages": 4}')


@functools.cache
def fresh() -> tuple[dict[str, int], dict[str, list[tuple[Any, ...]]]]:
    """The sizes today's code stores for `MESSAGES` appended to a new store, and its schema."""
    with tempfile.TemporaryDirectory() as home:
        store = Store(home)
        for cid, messages in MESSAGES.items():
            store.append(cid, messages)
        store.close()
        path = Path(home) / "store.sqlite3"
        with contextlib.closing(sqlite3.connect(path)) as db:
            chars = dict(db.execute("SELECT id, chars FROM messages").fetchall())
        return chars, schema_of(path)


def _fresh_chars(message: dict[str, Any]) -> int:
    return fresh()[0][message["id"]]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def fill(db: sqlite3.Connection, *, all_measured: bool) -> None:
    """The data an older release stored, in whatever columns and tables this schema has.

    Rows carry their size when the schema has the column; with ``all_measured`` false, every
    other row has none, as in a store whose rows predate the release that added sizes.
    """
    columns, tables = _columns(db, "messages"), _tables(db)
    for cid, (source, fmt, notes) in CONVERSATIONS.items():
        db.execute("INSERT INTO conversations VALUES (?,?,?,?)", (cid, source, fmt, notes))
        for seq, message in enumerate(MESSAGES[cid], start=1):
            row: dict[str, Any] = {
                "conversation_id": cid,
                "seq": seq,
                "id": message["id"],
                "role": message["role"],
                "body": encode_message(message),
            }
            if "chars" in columns and (all_measured or seq % 2):
                row["chars"] = _fresh_chars(message)
            if "at" in columns:
                row["at"] = 1_700_000_000.0 + seq
            names = ", ".join(row)
            marks = ", ".join("?" * len(row))
            db.execute(f"INSERT INTO messages({names}) VALUES ({marks})", tuple(row.values()))
    db.execute("INSERT INTO folds VALUES (?,?,?,?,?)", FOLD)
    if "attachments" in tables:
        db.execute("INSERT INTO attachments VALUES (?,?,?,?,?)", ATTACHMENT)
    if "snapshots" in tables:
        db.execute("INSERT INTO snapshots(conversation_id, body) VALUES (?,?)", SNAPSHOT)


def legacy_store(home: Path, schema: str) -> Path:
    home.mkdir(exist_ok=True)
    path = home / "store.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript("BEGIN;" + schema + "COMMIT;")
    db.execute("BEGIN")
    fill(db, all_measured=False)
    db.execute("COMMIT")
    db.close()
    return path


def store_at(home: Path, steps: int) -> Path:
    """A store that took the first ``steps`` migrations of today's code, with data in it."""
    home.mkdir(exist_ok=True)
    path = home / "store.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    migrate(db, MIGRATIONS[:steps])
    if steps:
        db.execute("BEGIN")
        fill(db, all_measured=True)
        db.execute("COMMIT")
    db.close()
    return path


def dump(path: Path) -> dict[str, Any]:
    """Everything a release stored, read with plain SQLite."""
    db = sqlite3.connect(path)
    try:
        tables = _tables(db)
        out: dict[str, Any] = {
            "conversations": db.execute("SELECT * FROM conversations ORDER BY id").fetchall(),
            "messages": db.execute(
                "SELECT conversation_id, seq, id, role, body FROM messages ORDER BY rowid"
            ).fetchall(),
            "folds": db.execute("SELECT * FROM folds").fetchall(),
            "meta": dict(db.execute("SELECT key, value FROM meta").fetchall()),
            "user_version": db.execute("PRAGMA user_version").fetchone()[0],
            "columns": {t: _columns(db, t) for t in tables},
        }
        for table in ("attachments", "snapshots"):
            if table in tables:
                out[table] = db.execute(f"SELECT * FROM {table}").fetchall()
        if "chars" in _columns(db, "messages"):
            out["chars"] = dict(db.execute("SELECT id, chars FROM messages").fetchall())
        if "at" in _columns(db, "messages"):
            out["at"] = dict(db.execute("SELECT id, at FROM messages").fetchall())
        return out
    finally:
        db.close()


def schema_of(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    db = sqlite3.connect(path)
    try:
        return {
            t: db.execute(f"PRAGMA table_info({t})").fetchall()
            for t in sorted(_tables(db) - {"sqlite_sequence"})
        }
    finally:
        db.close()


def assert_migrated(path: Path, before: dict[str, Any]) -> None:
    """Today's code opened the store: the data is as it was, the new parts are filled."""
    store = Store(str(path.parent))
    try:
        after = dump(path)
        for key in ("conversations", "messages", "folds"):
            assert after[key] == before[key], key
        for table in ("attachments", "snapshots"):
            assert after[table] == before.get(table, []), table
        assert after["user_version"] == LATEST
        # Every row has today's size: the fold sums them without reading a body.
        wanted = {m["id"]: _fresh_chars(m) for ms in MESSAGES.values() for m in ms}
        assert after["chars"] == wanted
        assert store.chars_after("c1", 2) == wanted["m3"] + wanted["m4"]
        # Append times: kept where they were stored, unknown (None) for older rows.
        assert after["at"] == before.get("at", dict.fromkeys(wanted))
        assert store.stats_of("c2").last_written == before.get("at", {}).get("b")
        # The store id survives; a store without one gets one.
        kept = before["meta"].get("store_id")
        assert store.identity == (kept or after["meta"]["store_id"])
        assert len(store.identity) == 32
        assert after["meta"]["schema"] == "1"
        # Each step recorded once, by name, in order.
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            recorded = db.execute("SELECT version, name FROM migrations ORDER BY version")
            assert recorded.fetchall() == [(n, m.name) for n, m in enumerate(MIGRATIONS, 1)]
        # The store works: the next append continues the order and has its time and size.
        assert store.append("c1", [{"role": "user", "content": "and now?"}]) == ["m5"]
        (new,) = store.messages("c1", after_seq=4)
        assert new.seq == 5
        assert store.stats_of("c1").last_written is not None
        assert store.chars_after("c1", 4) == len("and now?")
        assert store.write_fold("c1", "later", 4, "m4", expected=1) == 2
        store.add_snapshot("c2", {"messages": 2}, keep=5)
        assert store.snapshots("c2") == [{"messages": 2}]
        assert store.attachment_cards("c1") == (
            {("m3", 1): ATTACHMENT[4]} if "attachments" in before else {}
        )
    finally:
        store.close()
    assert schema_of(path) == fresh()[1]


@pytest.mark.parametrize("era", list(LEGACY))
def test_a_store_of_every_earlier_release_opens_with_its_data_intact(
    tmp_path: Path, era: str
) -> None:
    path = legacy_store(tmp_path / "home", LEGACY[era])
    before = dump(path)
    assert before["user_version"] == 0
    assert_migrated(path, before)
    # And a store migrated once is opened again without another step.
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        assert db.execute("SELECT COUNT(*) FROM migrations").fetchone() == (LATEST,)


@pytest.mark.parametrize(
    "step", range(1, LATEST + 1), ids=[f"{n}-{m.name}" for n, m in enumerate(MIGRATIONS, 1)]
)
def test_each_step_from_the_schema_before_it(tmp_path: Path, step: int) -> None:
    if step == 1:  # before the first step there is no store: a new one takes every step
        Store(str(tmp_path / "home")).close()
        path = tmp_path / "home" / "store.sqlite3"
        assert schema_of(path) == fresh()[1]
        return
    path = store_at(tmp_path / "home", step - 1)
    before = dump(path)
    assert before["user_version"] == step - 1
    assert_migrated(path, before)


def test_a_new_store_takes_the_same_steps(tmp_path: Path) -> None:
    store = Store(str(tmp_path))
    store.close()
    assert store.migrated == [m.name for m in MIGRATIONS]
    again = Store(str(tmp_path))
    again.close()
    assert again.migrated == []
    with contextlib.closing(sqlite3.connect(tmp_path / "store.sqlite3")) as db, db:
        assert db.execute("PRAGMA user_version").fetchone() == (LATEST,)
        names = [r[0] for r in db.execute("SELECT name FROM migrations ORDER BY version")]
    assert names == [m.name for m in MIGRATIONS]
    assert len(set(names)) == len(names)


def test_a_store_from_a_newer_leanreplay_is_refused_in_one_line(tmp_path: Path) -> None:
    Workspace(tmp_path).close()
    path = tmp_path / "store.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(f"PRAGMA user_version={LATEST + 1}")
    before = path.read_bytes()
    with pytest.raises(StoreVersionError, match="newer leanreplay .*upgrade leanreplay") as info:
        Workspace(tmp_path)
    assert "\n" not in str(info.value)
    assert f"version {LATEST + 1}" in str(info.value)
    assert f"knows versions up to {LATEST})" in str(info.value)
    assert path.read_bytes() == before
    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "conversations"])
    assert result.exit_code != 0
    assert result.output.strip().splitlines() == [f"Error: {info.value}"]


def test_an_up_to_date_store_opens_without_taking_the_write_lock(tmp_path: Path) -> None:
    """Opening a store at the latest version writes nothing: it opens at once while another
    process holds the write lock."""
    Workspace(tmp_path).close()
    path = tmp_path / "store.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    db = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        assert migrate(db) == []
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        db.close()


def _step_that_fails(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE messages ADD COLUMN doomed TEXT")
    db.execute("UPDATE messages SET doomed = 'half done'")
    raise ValueError("no sense in this row")


def test_a_failed_step_leaves_the_old_file_as_it_was(tmp_path: Path) -> None:
    path = legacy_store(tmp_path / "home", TURN1)
    before = dump(path)
    db = sqlite3.connect(path, isolation_level=None)
    steps = [*MIGRATIONS, Migration("doomed", _step_that_fails)]
    with pytest.raises(StoreError, match=r"step 7 \(doomed\): no sense in this row; the store is"):
        migrate(db, steps)
    assert not db.in_transaction
    db.close()
    # Not even the steps before the failing one stayed: the release that wrote it opens it.
    assert dump(path) == before
    assert "migrations" not in dump(path)["columns"]
    assert_migrated(path, before)


def test_a_store_whose_old_rows_cannot_be_measured_is_left_unchanged(tmp_path: Path) -> None:
    path = legacy_store(tmp_path / "home", TURN1)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE messages SET body = '{\"role\": \"user\", ' WHERE id = 'b'")
    before = dump(path)
    with pytest.raises(StoreError, match=r"cannot upgrade the store at step 4 \(message sizes\)"):
        Store(str(path.parent))
    assert dump(path) == before


def _open(home: str, start: Any, out: Any) -> None:
    start.wait(60)
    try:
        store = Store(home)
        store.close()
        out.put(store.migrated)
    except Exception as exc:  # noqa: BLE001 - any failure, raw or not, goes to the parent
        out.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_an_old_store_at_once_migrate_it_once(tmp_path: Path) -> None:
    path = legacy_store(tmp_path / "home", ATTACHMENTS)
    before = dump(path)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(3), ctx.Queue()
    workers = [ctx.Process(target=_open, args=(str(path.parent), start, out)) for _ in range(3)]
    for w in workers:
        w.start()
    results = [out.get(timeout=90) for _ in workers]
    for w in workers:
        w.join(30)
    names = [m.name for m in MIGRATIONS]
    assert sorted(results, key=len) == [[], [], names]  # one process ran the steps
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        rows = db.execute("SELECT version, name FROM migrations ORDER BY version").fetchall()
    assert rows == [(n, m.name) for n, m in enumerate(MIGRATIONS, 1)]
    assert_migrated(path, before)


@pytest.mark.parametrize("kind", ["legacy", "latest"])
def test_reopening_changes_nothing(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    path = legacy_store(home, SNAPSHOTS) if kind == "legacy" else store_at(home, LATEST)
    Store(str(path.parent)).close()
    first = dump(path)
    Store(str(path.parent)).close()
    assert dump(path) == first
    assert first["messages"][0][4] == encode_message(MESSAGES["c1"][0])


SESSION = "5f0c2a9e-3b1d-4c7a-9e8f-1a2b3c4d5e6f"


def _record(kind: str, uuid: str, content: Any, api_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if api_id:
        message |= {"id": api_id, "type": "message", "model": "claude-opus-4-5"}
    return {"type": kind, "message": message, "uuid": uuid, "sessionId": SESSION}


CALL = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "error: linker"}
SESSION_LOG = [
    _record("user", "u1", "why did the build fail?"),
    _record("assistant", "u2", [{"type": "text", "text": "Let me look."}], "msg_1"),
    _record("assistant", "u3", [CALL], "msg_1"),  # one record per content block
    _record("user", "u4", [RESULT]),
    _record("assistant", "u5", [{"type": "text", "text": "The linker failed."}], "msg_2"),
]
# What turn 1's importer stored for it: the records of one API message joined, the
# conversation named after the session.
JOINED = [
    {"role": "user", "content": "why did the build fail?", "id": "u1"},
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}, CALL], "id": "u2"},
    {"role": "user", "content": [RESULT], "id": "u4"},
    {"role": "assistant", "content": [{"type": "text", "text": "The linker failed."}], "id": "u5"},
]


def test_a_claude_code_session_joined_by_the_first_importer_says_how_to_import_it_again(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    db = sqlite3.connect(home / "store.sqlite3", isolation_level=None)
    db.executescript("BEGIN;" + TURN1 + "COMMIT;")
    db.execute("INSERT INTO conversations VALUES (?, ?, 'claude-code', '[]')", (SESSION, "x"))
    for seq, message in enumerate(JOINED, start=1):
        db.execute(
            "INSERT INTO messages VALUES (?,?,?,?,?)",
            (SESSION, seq, message["id"], message["role"], encode_message(message)),
        )
    db.close()
    log = tmp_path / f"{SESSION}.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in SESSION_LOG))
    with Workspace(home) as ws:
        with pytest.raises(ImportFormatError) as info:
            ws.ingest(log)
        assert str(info.value).endswith(
            f"conversation {SESSION!r} was stored by an older leanreplay, which joined Claude "
            "Code records into fewer messages (it differs from this log at message 2); ingest "
            "the file under another conversation id to store it one message per record (the "
            "stored conversation stays readable)"
        )
        # The fix the message names works, and the joined conversation is still there.
        (again,) = ws.ingest(log, conversation_id="build-session")
        assert [m["id"] for m in ws.messages(again)] == ["u1", "u2", "u3", "u4", "u5"]
        assert ws.messages(SESSION) == JOINED
        # Any other difference keeps the general message: a session stored one message per
        # record, then changed, and a log of another format.
        changed = [*SESSION_LOG[:4], _record("assistant", "u5", "rewritten", "msg_2")]
        log.write_text("".join(json.dumps(r) + "\n" for r in changed))
        with pytest.raises(ImportFormatError, match="already stored with different messages"):
            ws.ingest(log, conversation_id="build-session")
        plain = [_record("user", "p1", "hi"), _record("assistant", "p2", "hello")]  # no API ids
        log.write_text("".join(json.dumps(r) + "\n" for r in plain))
        ws.ingest(log, conversation_id="plain-session")
        plain[1] = _record("assistant", "p2", "hello again")
        log.write_text("".join(json.dumps(r) + "\n" for r in plain))
        with pytest.raises(ImportFormatError, match="already stored with different messages"):
            ws.ingest(log, conversation_id="plain-session")
        other = tmp_path / "other.jsonl"
        other.write_text(json.dumps({"role": "user", "content": "x"}) + "\n")
        ws.ingest(other)
        other.write_text(json.dumps({"role": "user", "content": "y"}) + "\n")
        with pytest.raises(ImportFormatError, match="already stored with different messages"):
            ws.ingest(other)
        log.write_text("".join(json.dumps(r) + "\n" for r in SESSION_LOG))
        with pytest.raises(ImportFormatError, match="already stored with different messages"):
            ws.ingest(log, conversation_id="other")


def test_the_sizes_backfill_reads_the_store_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays flat in the store's size: the step holds one batch of bodies at a time
    (tracemalloc counts the bodies SQLite hands to Python), and measures every row."""
    import tracemalloc

    from leanreplay.index.store import _migrations

    batch = 200  # smaller than BACKFILL_BATCH, so that a small store spans many batches
    monkeypatch.setattr(_migrations, "BACKFILL_BATCH", batch, raising=False)
    path = store_at(tmp_path / "home", 3)  # before the sizes step
    rows = 10 * batch + 7
    text = "x" * 4_000
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    db.execute("INSERT INTO conversations(id, source, format) VALUES ('big', NULL, NULL)")
    db.executemany(
        "INSERT INTO messages(conversation_id, seq, id, role, body) "
        "VALUES ('big', ?, ?, 'user', ?)",
        (
            (n, f"b{n}", json.dumps({"role": "user", "id": f"b{n}", "content": text}))
            for n in range(rows)
        ),
    )
    db.execute("COMMIT")
    tracemalloc.start()
    try:
        migrate(db)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    sizes = db.execute(
        "SELECT COUNT(chars), MIN(chars), MAX(chars) FROM messages WHERE conversation_id='big'"
    )
    assert sizes.fetchone() == (rows, 4_000, 4_000)  # every row measured, none left NULL
    db.close()
    store_bytes = rows * len(text)
    assert peak < store_bytes / 4, f"peak {peak:,} bytes for {store_bytes:,} bytes of bodies"
