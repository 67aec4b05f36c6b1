"""The shared store of originals: PostgreSQL, for a fleet of workers on one database.

The same promises as the embedded `Store`, tested on both: each body is kept as the JSON text
it was given (a ``text`` column, never ``jsonb``, which reorders keys), rows are only ever
added, an id is assigned once inside the transaction that holds the conversation's row lock
(so two workers never hand out one position or id), and an import compares and appends inside
one transaction. Inline attachments are stored once by SHA-256 in the database; a worker that
replays a conversation saved elsewhere writes them under its own home. One fold of a
conversation runs at a time across machines (a session advisory lock), and the fold is
written only if it is still the one it read.

Connections come from a pool that checks each before handing it out, so a worker whose
connection was cut (a restarted server, a terminated backend) reconnects on its next call;
the call that was in flight fails at once with a `StoreError` that says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
import psycopg.conninfo
import psycopg_pool

from leanreplay.placeholders import content_chars

from .._errors import (
    ConversationChangedError,
    ImportFormatError,
    StoreError,
    StoreVersionError,
)
from ._attachments import SavedAttachment, inline_blocks
from ._pgmigrations import migrate
from ._store import (
    StoreReads,
    _checked,
    _reused,
    _role,
    _split_unstored,
    check_id,
    encode_message,
)
from ._text import message_text
from ._tsearch import SEARCH_CONFIG, search_terms

__all__ = ["PgActivations", "PgStore", "is_store_url", "shown_url"]

CONNECT_TIMEOUT_S = 5  # an unreachable server is named within this
POOL_WAIT_S = 30.0  # a call waits this long for a free (or new) connection
POOL_SIZE = 4
PREPARE_THRESHOLD: int | None = None
MAX_ACTIVE = 200

Conn = psycopg.Connection[tuple[Any, ...]]


def is_store_url(value: str) -> bool:
    return value.startswith(("postgresql://", "postgres://"))


def shown_url(url: str) -> str:
    """The URL without its password, to name it in an error."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "the store URL"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _key(kind: str, conversation_id: str) -> int:
    """A signed 64-bit advisory lock key for (kind, conversation)."""
    digest = hashlib.sha256(f"{kind}\x00{conversation_id}".encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest()[:8], "big", signed=True)


def connect_error(url: str, exc: BaseException) -> StoreError:
    """One line that says whether the URL is wrong, the server unreachable, or the role
    lacks a permission, and what to do."""
    shown = shown_url(url)
    text = " ".join(str(exc).split())
    lowered = text.lower()
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate in ("28000", "28P01", "42501", "3F000") or any(
        s in lowered
        for s in (
            "permission denied",
            "authentication failed",
            "no pg_hba.conf",
            "not permitted",
            "no schema has been selected",  # no USAGE on the schema of its search_path
        )
    ):
        return StoreError(
            f"store {shown}: no permission: {text[:300]}; grant the role CONNECT on the "
            "database and CREATE on its schema, or use another role"
        )
    if sqlstate == "3D000" or "does not exist" in lowered or "invalid" in lowered:
        return StoreError(
            f"store {shown}: wrong URL: {text[:300]}; create the database (createdb) or fix the "
            "URL (postgresql://USER@HOST:PORT/DATABASE)"
        )
    return StoreError(
        f"store {shown}: unreachable: {text[:300]}; start PostgreSQL or fix the host and port "
        "of the URL"
    )


def _lost(what: str, exc: BaseException) -> StoreError:
    text = " ".join(str(exc).split())[:200]
    return StoreError(
        f"{what}: the connection to PostgreSQL was lost during the call ({text}); the next "
        "call reconnects: retry it (an append cut off at its commit may have been stored; "
        "read the conversation before appending it again)"
    )


class PgStore(StoreReads):
    """Conversations and their messages in a PostgreSQL database, shared by many workers.

    Args:
        url: ``postgresql://USER@HOST:PORT/DATABASE`` (libpq's URL form).
        home: this worker's home, where inline attachments stored by other workers are
            written when a replay needs their cards' files (None: never written).
    """

    kind = "postgresql"
    paramstyle = "format"
    _order_id = 'id COLLATE "C"'  # the bytes' order, whatever the database's collation
    _row = "n"
    _max_seq = 2**31 - 1  # seq is an integer column

    def __init__(self, url: str, home: str | None = None, *, pool_size: int = POOL_SIZE) -> None:
        self.url = url
        self.home = home
        self.read_only: str | None = None
        self.migrated: list[str] = []
        self._owner = True
        if not is_store_url(url):
            raise StoreError(
                f"store {shown_url(url)}: wrong URL: not a postgresql:// URL; give "
                "postgresql://USER@HOST:PORT/DATABASE"
            )
        try:
            params = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise StoreError(
                f"store {shown_url(url)}: wrong URL: {' '.join(str(exc).split())[:200]}; give "
                "postgresql://USER@HOST:PORT/DATABASE"
            ) from None
        port = str(params.get("port") or "5432")
        if not all(p.strip().isdigit() for p in port.split(",")):
            raise StoreError(
                f"store {shown_url(url)}: wrong URL: the port {port[:20]!r} is not a number; "
                "give postgresql://USER@HOST:PORT/DATABASE"
            )
        params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        params.setdefault("application_name", "leanreplay")
        # A server that stops answering is noticed by the kernel, not waited on forever.
        for name, value in (
            ("keepalives", 1),
            ("keepalives_idle", 10),
            ("keepalives_interval", 5),
            ("keepalives_count", 3),
        ):
            params.setdefault(name, value)
        self._conninfo = psycopg.conninfo.make_conninfo("", **params)
        try:
            first = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise connect_error(url, exc) from None
        try:
            self.migrated = migrate(first)
            row = first.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()
            self.identity = str(row[0]) if row else ""
        except StoreVersionError:
            raise
        except psycopg.Error as exc:
            raise connect_error(url, exc) from None
        finally:
            first.close()
        self._pool = psycopg_pool.ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=max(pool_size, 2),  # a fold holds one for its lock and reads on another
            kwargs={"autocommit": True, "prepare_threshold": PREPARE_THRESHOLD},
            check=psycopg_pool.ConnectionPool.check_connection,
            timeout=POOL_WAIT_S,
            open=True,
            name="leanreplay",
        )

    def close(self) -> None:
        if self._owner:
            self._pool.close()

    def another(self) -> PgStore:
        """This store for another thread: the pool is shared (and thread-safe); closing the
        copy leaves it open."""
        copy = object.__new__(PgStore)
        copy.__dict__.update(self.__dict__)
        copy._owner = False
        return copy

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write commits durably on its own (PostgreSQL syncs its WAL at commit)."""
        yield

    @contextmanager
    def _conn(self, what: str) -> Iterator[Conn]:
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise _lost(what, exc) from None
        except psycopg_pool.PoolTimeout as exc:
            raise StoreError(
                f"{what}: no connection to PostgreSQL within {POOL_WAIT_S:.0f}s ({exc}); is "
                f"the server at {shown_url(self.url)} running?"
            ) from None
        except psycopg.Error as exc:
            raise StoreError(f"{what}: PostgreSQL refused: {' '.join(str(exc).split())}") from None

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        with self._conn("nothing was stored") as conn, conn.transaction():
            yield conn

    def _read(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        params = args if isinstance(args, Mapping) else tuple(args)
        with self._conn("cannot read the store") as conn:
            return conn.execute(sql.encode(), params).fetchall()

    def query(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        """Rows of one read-only statement (the search room's queries)."""
        return self._read(sql, args)

    @contextmanager
    def fold_lock(self, conversation_id: str) -> Iterator[bool]:
        key = _key("fold", conversation_id)
        with self._conn("cannot take the fold lock") as conn:
            (held,) = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone() or (False,)
            try:
                yield bool(held)
            finally:
                if held:
                    # A lost connection released it already.
                    with suppress(psycopg.OperationalError):
                        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    # conversations

    def conversation_ids(self, prefix: str | None = None) -> list[str]:
        if not prefix:
            rows = self._read('SELECT id FROM conversations ORDER BY id COLLATE "C"')
        else:
            rows = self._read(
                'SELECT id FROM conversations WHERE starts_with(id, %s) ORDER BY id COLLATE "C"',
                (prefix,),
            )
        return [r[0] for r in rows]

    # messages

    def append(
        self,
        conversation_id: str,
        messages: Iterable[Mapping[str, Any]],
        *,
        source: str | None = None,
        format: str | None = None,
        notes: Iterable[str] = (),
        attachments: Callable[[Mapping[str, Any]], list[SavedAttachment]] | None = None,
        after: int | None = None,
    ) -> list[str]:
        """Append messages in one transaction; returns their ids (see `Store.append`).

        A message whose id is already stored with the same bytes is not stored again (its id
        is returned): a retried append, after a call cut off at its commit, is a no-op. With
        other bytes it raises `InvalidArgumentError` and stores nothing."""
        check_id("conversation_id", conversation_id)
        prepared = _checked(messages)
        with self._write() as db:
            self._conversation(db, conversation_id, source, format, notes)
            held = self._last(db, conversation_id)
            if after is not None and held != after:
                raise ConversationChangedError(
                    f"conversation {conversation_id!r} holds {held} messages, not {after}: "
                    "another writer appended since it was read; read it again"
                )
            fresh, ids = _unstored(db, conversation_id, prepared)
            stored = iter(self._insert(db, conversation_id, held, fresh, attachments))
            return [next(stored) if mid is None else mid for mid in ids]

    def ingest(
        self,
        conversation_id: str,
        messages: Iterable[Mapping[str, Any]],
        *,
        source: str | None = None,
        format: str | None = None,
        notes: Iterable[str] = (),
        attachments: Callable[[Mapping[str, Any]], list[SavedAttachment]] | None = None,
    ) -> list[str]:
        """Store an imported log: what is stored must be its prefix; only the rest is added.
        Decided inside one transaction under the conversation's row lock, so two workers
        importing one log at once store it once."""
        check_id("conversation_id", conversation_id)
        prepared = _checked(messages)
        with self._write() as db:
            self._conversation(db, conversation_id, source, format, ())
            stored = [
                (int(s), str(i), str(b))
                for s, i, b in db.execute(
                    "SELECT seq, id, body FROM messages WHERE conversation_id=%s ORDER BY seq",
                    (conversation_id,),
                ).fetchall()
            ]
            if len(stored) > len(prepared):
                raise ImportFormatError(
                    f"conversation {conversation_id!r} already holds {len(stored)} messages, "
                    "more than this log; ingest it under another conversation id"
                )
            for (seq, mid, body), new in zip(stored, prepared, strict=False):
                candidate = new if "id" in new else {**new, "id": mid}
                if encode_message(candidate) != body:
                    raise ImportFormatError(
                        f"conversation {conversation_id!r} is already stored with different "
                        f"messages (first difference at message {seq}); ingest it under "
                        "another conversation id"
                    )
            fresh = prepared[len(stored) :]
            if attachments is not None and stored:
                self._repair_attachments(db, conversation_id, stored, attachments)
            db.execute(
                "UPDATE conversations SET notes=%s WHERE id=%s",
                (json.dumps(list(notes), ensure_ascii=False), conversation_id),
            )
            return self._insert(db, conversation_id, len(stored), fresh, attachments)

    @staticmethod
    def _conversation(
        db: Conn,
        conversation_id: str,
        source: str | None,
        format: str | None,
        notes: Iterable[str],
    ) -> None:
        """Create the conversation if new and hold its row lock to the end of the
        transaction: the writers of one conversation take turns from here."""
        db.execute(
            "INSERT INTO conversations(id, source, format) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING",
            (conversation_id, source, format),
        )
        (old,) = db.execute(
            "SELECT notes FROM conversations WHERE id=%s FOR UPDATE", (conversation_id,)
        ).fetchone() or ("[]",)
        notes = list(notes)
        if notes:
            db.execute(
                "UPDATE conversations SET notes=%s WHERE id=%s",
                (json.dumps([*json.loads(old), *notes], ensure_ascii=False), conversation_id),
            )

    @staticmethod
    def _last(db: Conn, conversation_id: str) -> int:
        (last,) = db.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id=%s",
            (conversation_id,),
        ).fetchone() or (0,)
        return int(last)

    def _insert(
        self,
        db: Conn,
        conversation_id: str,
        last: int,
        messages: list[Mapping[str, Any]],
        attachments: Callable[[Mapping[str, Any]], list[SavedAttachment]] | None,
    ) -> list[str]:
        if not messages:
            return []
        given = [m["id"] for m in messages if "id" in m]
        wanted = [f"m{last + i}" for i, m in enumerate(messages, start=1) if "id" not in m]
        existing = {
            r[0]
            for r in db.execute(
                "SELECT id FROM messages WHERE conversation_id=%s AND id = ANY(%s)",
                (conversation_id, [*given, *wanted]),
            ).fetchall()
        }
        ids: list[str] = []
        taken: set[str] = set()
        rows = []
        cards: list[tuple[str, str, int, str, str, str]] = []
        blobs: dict[str, str] = {}
        now = time.time()
        for offset, message in enumerate(messages, start=1):
            seq = last + offset
            saved = attachments(message) if attachments is not None else []
            message_id = message.get("id")
            if message_id is None:
                message_id = self._free_id(db, conversation_id, f"m{seq}", taken, existing)
                message = {**message, "id": message_id}
            elif message_id in taken or message_id in existing:
                raise _reused(conversation_id, message_id)
            taken.add(message_id)
            body = encode_message(message)
            shown, indexed = search_terms(*message_text(message))
            rows.append(
                (
                    conversation_id,
                    seq,
                    message_id,
                    _role(message),
                    body,
                    content_chars(message),
                    now,
                    shown,
                    indexed,
                )
            )
            for block, path, card in saved:
                sha = os.path.basename(path).split(".", 1)[0]
                blobs[sha] = path
                name = "/".join(path.replace(os.sep, "/").rsplit("/", 2)[-2:])
                cards.append((conversation_id, message_id, block, name, sha, card))
            ids.append(message_id)
        self._blobs(db, blobs)
        with db.cursor() as cur:
            cur.executemany(
                "INSERT INTO messages(conversation_id, seq, id, role, body, chars, at, "
                "search_text, search) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,"
                f"to_tsvector('{SEARCH_CONFIG}', %s))",
                rows,
            )
            self._cards(cur, cards)
        return ids

    @staticmethod
    def _cards(cur: psycopg.Cursor[tuple[Any, ...]], cards: list[tuple[Any, ...]]) -> None:
        if cards:
            cur.executemany(
                "INSERT INTO attachments(conversation_id, message_id, block, name, sha256, card) "
                "VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (conversation_id, message_id, block) "
                "DO UPDATE SET name=EXCLUDED.name, sha256=EXCLUDED.sha256, card=EXCLUDED.card",
                cards,
            )

    @staticmethod
    def _blobs(db: Conn, blobs: Mapping[str, str]) -> None:
        """Each saved attachment's bytes, once per SHA-256."""
        if not blobs:
            return
        have = {
            r[0]
            for r in db.execute(
                "SELECT sha256 FROM blobs WHERE sha256 = ANY(%s)", (list(blobs),)
            ).fetchall()
        }
        for sha, path in blobs.items():
            if sha in have:
                continue
            with open(path, "rb") as f:
                data = f.read()
            db.execute(
                "INSERT INTO blobs(sha256, data) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (sha, data),
            )

    def _repair_attachments(
        self,
        db: Conn,
        conversation_id: str,
        stored: list[tuple[int, str, str]],
        attachments: Callable[[Mapping[str, Any]], list[SavedAttachment]],
    ) -> None:
        have = {
            (r[0], int(r[1]))
            for r in db.execute(
                "SELECT message_id, block FROM attachments WHERE conversation_id=%s",
                (conversation_id,),
            ).fetchall()
        }
        for _, mid, body in stored:
            if "base64" not in body and '"file_data"' not in body:
                continue
            message = json.loads(body)
            if any((mid, block) not in have for block, *_ in inline_blocks(message)):
                saved = attachments(message)
                blobs = {os.path.basename(p).split(".", 1)[0]: p for _, p, _ in saved}
                self._blobs(db, blobs)
                cards = [
                    (
                        conversation_id,
                        mid,
                        block,
                        "/".join(path.replace(os.sep, "/").rsplit("/", 2)[-2:]),
                        os.path.basename(path).split(".", 1)[0],
                        card,
                    )
                    for block, path, card in saved
                ]
                with db.cursor() as cur:
                    self._cards(cur, cards)

    @staticmethod
    def _free_id(
        db: Conn, conversation_id: str, wanted: str, taken: set[str], existing: set[str]
    ) -> str:
        candidate, n = wanted, 1
        while candidate in taken or candidate in existing:
            n += 1
            candidate = f"{wanted}-{n}"
            if (
                candidate not in taken
                and db.execute(
                    "SELECT 1 FROM messages WHERE conversation_id=%s AND id=%s",
                    (conversation_id, candidate),
                ).fetchone()
            ):
                existing.add(candidate)
        return candidate

    def bodies_after(
        self, *, after_rowid: int = 0, limit: int = 5000
    ) -> list[tuple[int, str, str]]:
        return [
            (int(r[0]), r[1], r[2])
            for r in super().bodies_after(after_rowid=after_rowid, limit=limit)
        ]

    # folds

    def write_fold(
        self,
        conversation_id: str,
        summary: str,
        through_seq: int,
        through_id: str,
        expected: int,
        *,
        folds: int = 1,
    ) -> int | None:
        """Store the one summary of a conversation; None if the fold changed meanwhile (it
        is re-read under the conversation's row lock, in the writing transaction)."""
        with self._write() as db:
            db.execute("SELECT 1 FROM conversations WHERE id=%s FOR UPDATE", (conversation_id,))
            row = db.execute(
                "SELECT generation FROM folds WHERE conversation_id=%s", (conversation_id,)
            ).fetchone()
            if (row[0] if row else 0) != expected:
                return None
            at = db.execute(
                "SELECT id FROM messages WHERE conversation_id=%s AND seq=%s",
                (conversation_id, through_seq),
            ).fetchone()
            if at is None or at[0] != through_id:
                return None
            generation = expected + folds
            db.execute(
                "INSERT INTO folds(conversation_id, summary, through_seq, through_id, generation) "
                "VALUES (%s,%s,%s,%s,%s) ON CONFLICT (conversation_id) DO UPDATE SET "
                "summary=EXCLUDED.summary, through_seq=EXCLUDED.through_seq, "
                "through_id=EXCLUDED.through_id, generation=EXCLUDED.generation",
                (conversation_id, summary, through_seq, through_id, generation),
            )
            return generation

    # attachments

    def attachment_cards(self, conversation_id: str) -> dict[tuple[str, int], str]:
        rows = self._read(
            "SELECT message_id, block, card, name, sha256 FROM attachments "
            "WHERE conversation_id=%s",
            (conversation_id,),
        )
        if self.home is not None:
            self._materialize([(name, sha) for *_, name, sha in rows])
        return {(mid, int(block)): card for mid, block, card, *_ in rows}

    def _materialize(self, saved: list[tuple[str, str]]) -> None:
        """Write under this worker's home the attachments another worker saved."""
        assert self.home is not None
        folder = os.path.join(self.home, "attachments")
        missing = [(n, s) for n, s in saved if not os.path.exists(os.path.join(folder, n))]
        for name, sha in missing:
            rows = self._read("SELECT data FROM blobs WHERE sha256=%s", (sha,))
            if not rows:
                continue
            path = os.path.join(folder, *name.split("/"))
            if os.path.commonpath([os.path.realpath(folder), os.path.realpath(path)]) != (
                os.path.realpath(folder)
            ):
                continue  # a name that leaves the folder is not ours
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as f:
                f.write(bytes(rows[0][0]))
            os.replace(tmp, path)

    def attachment_owners(self, name: str) -> set[str]:
        pattern = "%/" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._read(
            "SELECT DISTINCT conversation_id FROM attachments WHERE name LIKE %s ESCAPE '\\'",
            (pattern,),
        )
        return {r[0] for r in rows}

    # prompt snapshots

    def add_snapshot(self, conversation_id: str, record: Mapping[str, Any], keep: int) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO snapshots(conversation_id, body) VALUES (%s, %s)",
                (conversation_id, json.dumps(record, ensure_ascii=False)),
            )
            db.execute(
                "DELETE FROM snapshots WHERE n <= "
                "(SELECT n FROM snapshots ORDER BY n DESC OFFSET %s LIMIT 1)",
                (keep,),
            )

    # tool activations

    def activations(self, directory: str) -> PgActivations:
        """In the database, shared by every worker (``directory`` is not used)."""
        return PgActivations(self)


def _unstored(
    db: Conn, conversation_id: str, messages: list[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[str | None]]:
    """The messages to insert, and per message its id when it is already stored (or earlier
    in the batch) with the same bytes, else None (`Store.append`'s rule, under the row lock).

    Raises:
        InvalidArgumentError: an id already stored, or earlier in the batch, with other bytes.
    """
    given = [m["id"] for m in messages if "id" in m]
    bodies: dict[str, str] = {}
    if given:
        bodies = {
            str(i): str(b)
            for i, b in db.execute(
                "SELECT id, body FROM messages WHERE conversation_id=%s AND id = ANY(%s)",
                (conversation_id, given),
            ).fetchall()
        }
    return _split_unstored(conversation_id, messages, bodies)


class PgActivations:
    """Tool activations in the database, so every worker of a conversation sees them; the
    ``None`` conversation lives in this worker's memory, as in `Activations`."""

    def __init__(self, store: PgStore) -> None:
        self.store = store
        self._session: list[str] = []
        self._lock = threading.Lock()

    def get(self, conversation_id: str | None) -> list[str]:
        if conversation_id is None:
            return list(self._session)
        rows = self.store.query(
            "SELECT name FROM activations WHERE conversation_id=%s ORDER BY position",
            (conversation_id,),
        )
        return [r[0] for r in rows]

    def add(self, conversation_id: str | None, names: list[str]) -> tuple[list[str], list[str]]:
        """Append ``names`` not yet active; returns (newly activated, already active)."""
        wanted = list(dict.fromkeys(names))
        if conversation_id is None:
            with self._lock:
                new = [n for n in wanted if n not in self._session]
                self._check(len(self._session), len(new))
                self._session += new
                return new, [n for n in wanted if n not in new]
        with self.store._write() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_key("tools", conversation_id),))
            current = [
                r[0]
                for r in db.execute(
                    "SELECT name FROM activations WHERE conversation_id=%s ORDER BY position",
                    (conversation_id,),
                ).fetchall()
            ]
            new = [n for n in wanted if n not in current]
            self._check(len(current), len(new))
            with db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO activations(conversation_id, position, name) VALUES (%s,%s,%s)",
                    [(conversation_id, len(current) + i, n) for i, n in enumerate(new)],
                )
            return new, [n for n in wanted if n in current]

    @staticmethod
    def _check(active: int, more: int) -> None:
        if active + more > MAX_ACTIVE:
            raise ValueError(
                f"a conversation can have at most {MAX_ACTIVE} active tools; "
                f"{active} are active and {more} more were asked for"
            )
