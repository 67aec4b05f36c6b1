"""What only the PostgreSQL store has: its migrations recorded in the database, its one-line
answers to a wrong, unreachable or forbidden URL, reconnecting after a lost connection, and
attachments shared through the database. (Everything both stores promise runs on both in
test_store.py.)"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import psycopg
import pytest

from leanreplay.index import InvalidArgumentError, StoreError, StoreVersionError, Workspace
from leanreplay.index.store._pgmigrations import LATEST, MIGRATIONS, migrate
from leanreplay.index.store._postgres import PgStore
from tests.pgstore import database_url

# A body whose keys are not in sorted order, with text jsonb would normalise.
BODY = '{"role": "user", "z": 1, "content": "read src/app.py \\u00e9", "a": {"y": 2, "b": 1.50}}'


def _with_app(url: str, name: str) -> str:
    return url + "&application_name=" + urllib.parse.quote(name)


def test_an_older_database_with_data_is_migrated_and_its_messages_found(
    pg_url: str, tmp_path: Path
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert migrate(conn, MIGRATIONS[:1]) == [MIGRATIONS[0].name]
        conn.execute("INSERT INTO conversations(id) VALUES ('old')")
        conn.execute(
            "INSERT INTO messages(conversation_id, seq, id, role, body, chars) "
            "VALUES ('old', 1, 'm1', 'user', %s, 20)",
            (BODY,),
        )
    with Workspace(tmp_path, store=pg_url) as ws:
        assert ws._store.migrated == ["message search"]
        assert ws.raw_message("old", "m1") == BODY  # the text as stored, byte for byte
        hits = ws.conversation_search("app.py")["hits"]
        assert [(h["conversation_id"], h["message_id"]) for h in hits] == [("old", "m1")]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute("SELECT version, name FROM leanreplay_migrations ORDER BY 1").fetchall()
    assert rows == [(i + 1, m.name) for i, m in enumerate(MIGRATIONS)]
    with Workspace(tmp_path, store=pg_url) as again:
        assert again._store.migrated == []  # recorded: nothing runs twice


def test_a_database_written_by_a_newer_leanreplay_is_refused(pg_url: str, tmp_path: Path) -> None:
    PgStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO leanreplay_migrations(version, name) VALUES (%s, 'from the future')",
            (LATEST + 1,),
        )
    with pytest.raises(StoreVersionError, match=f"version {LATEST + 1}, written by a newer"):
        Workspace(tmp_path, store=pg_url)


def test_bodies_are_text_never_jsonb(pg_url: str, tmp_path: Path) -> None:
    with Workspace(tmp_path, store=pg_url) as ws:
        ws.append("c", json.loads(BODY))
        assert ws.raw_message("c", "m1") == json.dumps(
            {**json.loads(BODY), "id": "m1"}, ensure_ascii=False
        )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        (kind,) = conn.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name='messages' AND column_name='body'"
        ).fetchone() or ("",)
    assert kind == "text"


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_a_wrong_url_says_so(pg_database: str, tmp_path: Path) -> None:
    missing = database_url(f"lr_missing_{uuid.uuid4().hex[:8]}")
    with pytest.raises(StoreError) as caught:
        Workspace(tmp_path, store=missing)
    assert "wrong URL" in _one_line(caught)
    assert "does not exist" in str(caught.value)
    with pytest.raises(InvalidArgumentError, match="neither 'sqlite' nor a postgresql:// URL"):
        Workspace(tmp_path, store="mysql://db/x")
    with pytest.raises(StoreError) as garbled:
        Workspace(tmp_path, store="postgresql://h:notaport/x")
    assert "wrong URL" in _one_line(garbled)


def test_an_unreachable_server_says_so(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        Workspace(tmp_path, store="postgresql://postgres:secret@127.0.0.1:1/test")
    text = _one_line(caught)
    assert "unreachable" in text
    assert "secret" not in text  # the password is never repeated
    assert time.monotonic() - started < 10


def test_a_role_without_permission_says_so(pg_database: str, tmp_path: Path) -> None:
    role = f"lr_noperm_{uuid.uuid4().hex[:8]}"
    schema = f"s_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url(pg_database), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN".encode())
        conn.execute(f"CREATE SCHEMA {schema}".encode())  # owned by postgres: no CREATE for it
    try:
        url = database_url(pg_database, schema).replace("postgres@", f"{role}@", 1)
        with pytest.raises(StoreError) as caught:
            Workspace(tmp_path, store=url)
        assert "no permission" in _one_line(caught)
    finally:
        with psycopg.connect(database_url(pg_database), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())
            conn.execute(f"DROP ROLE {role}".encode())


def _terminate(url: str, application: str) -> int:
    database = urllib.parse.urlsplit(url).path.lstrip("/")
    with psycopg.connect(database_url(database), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname=%s AND application_name=%s",
            (database, application),
        ).fetchall()
    return len(rows)


def test_a_lost_connection_fails_the_call_in_flight_and_the_next_call_reconnects(
    pg_url: str, tmp_path: Path
) -> None:
    app = f"lr_{uuid.uuid4().hex[:8]}"
    with Workspace(tmp_path, store=_with_app(pg_url, app)) as ws:
        ws.append("c", {"role": "user", "content": "before"})
        store = ws._store
        assert isinstance(store, PgStore)
        failure: list[BaseException] = []

        def slow_call() -> None:
            try:
                store.query("SELECT pg_sleep(20)")
            except BaseException as exc:  # noqa: BLE001 - the test reads it
                failure.append(exc)

        thread = threading.Thread(target=slow_call)
        thread.start()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not _sleeping(pg_url, app):
            time.sleep(0.02)
        assert _sleeping(pg_url, app)  # the call is in flight
        cut = time.monotonic()
        assert _terminate(pg_url, app) >= 1  # what a restart of PostgreSQL does to a worker
        thread.join(15)
        assert time.monotonic() - cut < 10  # an error at once, not the 20 s sleep or a hang
        assert len(failure) == 1
        assert isinstance(failure[0], StoreError)
        assert "connection to PostgreSQL was lost during the call" in str(failure[0])
        # Every connection the pool held is gone too; the next calls reconnect.
        ws.append("c", {"role": "user", "content": "after"})
        assert [m["content"] for m in ws.messages("c")] == ["before", "after"]


def _sleeping(url: str, application: str) -> bool:
    database = urllib.parse.urlsplit(url).path.lstrip("/")
    with psycopg.connect(database_url(database), autocommit=True) as conn:
        row = conn.execute(
            "SELECT 1 FROM pg_stat_activity WHERE datname=%s AND application_name=%s "
            "AND query LIKE 'SELECT pg_sleep%%'",
            (database, application),
        ).fetchone()
    return row is not None


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _image_message(text: str) -> dict[str, object]:
    data = base64.b64encode(PNG).decode()
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": data},
            },
        ],
    }


def test_attachments_are_stored_once_by_sha256_and_reach_another_workers_home(
    pg_url: str, tmp_path: Path
) -> None:
    with Workspace(tmp_path / "a", store=pg_url) as a:
        a.append("c", _image_message("first"))
        a.append("c", _image_message("same picture again"))
    with Workspace(tmp_path / "b", store=pg_url) as b:
        replay = b.replay("c")
        cards = [
            block["text"]
            for m in replay.messages
            for block in m["content"]
            if isinstance(block, dict) and block.get("type") == "text" and "image" in block["text"]
        ]
        assert len(cards) == 2
    saved = list((tmp_path / "b" / "attachments").rglob("*.png"))
    assert [p.read_bytes() for p in saved] == [PNG]  # written under b's own home
    with psycopg.connect(pg_url, autocommit=True) as conn:
        (blobs,) = conn.execute("SELECT count(*) FROM blobs").fetchone() or (0,)
        (rows,) = conn.execute("SELECT count(*) FROM attachments").fetchone() or (0,)
    assert (blobs, rows) == (1, 2)


def test_appending_a_stored_message_again_is_a_no_op_and_other_bytes_are_refused(
    pg_url: str, tmp_path: Path
) -> None:
    # What a worker does after a call cut off at its commit: append the same message again.
    message = {"role": "user", "content": "once", "id": "mine"}
    with Workspace(tmp_path, store=pg_url) as ws:
        assert ws.append("c", message) == "mine"
        assert ws.append("c", message) == "mine"
        assert ws.extend("c", [message, {"role": "user", "content": "next"}]) == ["mine", "m2"]
        with pytest.raises(
            InvalidArgumentError, match="'mine' already exists .* different content"
        ):
            ws.append("c", {**message, "content": "other"})
        assert [m["content"] for m in ws.messages("c")] == ["once", "next"]


def test_the_command_line_takes_the_store_from_its_flag_or_the_environment(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from leanreplay.index.faces.cli import cli

    with Workspace(tmp_path / "writer", store=pg_url) as ws:
        ws.append("fleet-conv", {"role": "user", "content": "the zeppelin has landed"})
    runner = CliRunner()
    flag = runner.invoke(cli, ["--home", str(tmp_path / "a"), "--store", pg_url, "conversations"])
    assert flag.exit_code == 0, flag.output
    assert "fleet-conv" in flag.output
    monkeypatch.setenv("LEANREPLAY_STORE", pg_url)
    env = runner.invoke(cli, ["--home", str(tmp_path / "b"), "search", "zeppelin", "--json"])
    assert env.exit_code == 0, env.output
    assert json.loads(env.output)["hits"][0]["conversation_id"] == "fleet-conv"
    monkeypatch.setenv("LEANREPLAY_STORE", "postgresql://postgres@127.0.0.1:1/test")
    down = runner.invoke(cli, ["--home", str(tmp_path / "c"), "conversations"])
    assert down.exit_code == 1
    (line,) = down.output.strip().splitlines()
    assert line.startswith("Error: store postgresql://postgres@127.0.0.1:1/test: unreachable")


def test_without_a_server_the_postgresql_tests_skip_but_fail_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tests.pgstore as pgstore

    monkeypatch.setattr(pgstore, "SERVER", "postgresql://postgres@127.0.0.1:1/test")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but PostgreSQL is not reachable"):
        pgstore.require_server()
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="needs PostgreSQL"):
        pgstore.require_server()
