"""Named, recorded schema migrations of the PostgreSQL store.

The database records each step it took, by number and name, in ``leanreplay_migrations``.
`migrate` runs the missing steps in order inside one transaction that first takes a
transaction-level advisory lock, so two workers starting on an old database at once migrate it
once, and a failure leaves it as it was (PostgreSQL's DDL is transactional). A database that
records a step this leanreplay does not know was written by a newer one and is refused.

To change the schema, append a step; never edit one that has shipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg

from .._errors import StoreError
from ._migrations import newer_error
from ._text import message_text
from ._tsearch import SEARCH_CONFIG, search_terms

__all__ = ["LATEST", "MIGRATIONS", "MIGRATION_LOCK", "Migration", "migrate", "version"]

MIGRATION_LOCK = 7_245_031_950_148_392_117  # pg_advisory_xact_lock key of a migration
BACKFILL_BATCH = 1_000


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[psycopg.Connection[tuple[object, ...]]], None]


def _tables(db: psycopg.Connection[tuple[object, ...]]) -> None:
    """Turn 1: everything the SQLite store keeps, plus what a fleet shares through it."""
    for sql in (
        "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
        "CREATE TABLE conversations (id text PRIMARY KEY, source text, format text, "
        "notes text NOT NULL DEFAULT '[]')",
        # n: a row number unique across every worker (the order rows were inserted in).
        "CREATE TABLE messages (n bigserial UNIQUE, "
        "conversation_id text NOT NULL REFERENCES conversations(id), seq integer NOT NULL, "
        "id text NOT NULL, role text NOT NULL, body text NOT NULL, chars bigint NOT NULL, "
        "at double precision, PRIMARY KEY (conversation_id, seq), UNIQUE (conversation_id, id))",
        "CREATE TABLE folds (conversation_id text PRIMARY KEY REFERENCES conversations(id), "
        "summary text NOT NULL, through_seq integer NOT NULL, through_id text NOT NULL, "
        "generation integer NOT NULL)",
        # Saved inline attachments by SHA-256: a path on one machine means nothing on another.
        "CREATE TABLE blobs (sha256 text PRIMARY KEY, data bytea NOT NULL)",
        "CREATE TABLE attachments (conversation_id text NOT NULL, message_id text NOT NULL, "
        "block integer NOT NULL, name text NOT NULL, sha256 text NOT NULL REFERENCES "
        "blobs(sha256), card text NOT NULL, PRIMARY KEY (conversation_id, message_id, block))",
        "CREATE TABLE snapshots (n bigserial PRIMARY KEY, conversation_id text NOT NULL, "
        "body text NOT NULL)",
        "CREATE INDEX snapshots_by_conversation ON snapshots (conversation_id, n)",
        "CREATE TABLE activations (conversation_id text NOT NULL, position integer NOT NULL, "
        "name text NOT NULL, PRIMARY KEY (conversation_id, name))",
        "INSERT INTO meta(key, value) "
        "VALUES ('store_id', md5(random()::text || clock_timestamp()::text))",
    ):
        db.execute(sql.encode())


def _search(db: psycopg.Connection[tuple[object, ...]]) -> None:
    """conversation_search on PostgreSQL: each message's searchable text and its tsvector
    (the 'simple' configuration, no stemming, plus the pieces of identifiers and paths), with
    a GIN index; measured now for the rows stored before."""
    db.execute(f"CREATE TEXT SEARCH CONFIGURATION {SEARCH_CONFIG} (COPY = pg_catalog.simple)")
    db.execute("ALTER TABLE messages ADD COLUMN search_text text, ADD COLUMN search tsvector")
    last = 0
    while True:
        rows = db.execute(
            "SELECT n, body FROM messages WHERE n > %s AND search IS NULL ORDER BY n LIMIT %s",
            (last, BACKFILL_BATCH),
        ).fetchall()
        if not rows:
            break
        with db.cursor() as cur:
            cur.executemany(
                "UPDATE messages SET search_text=%s, "
                f"search=to_tsvector('{SEARCH_CONFIG}', %s) WHERE n=%s",
                [(*_terms(str(body)), n) for n, body in rows],
            )
        last = int(str(rows[-1][0]))
    db.execute("UPDATE messages SET search_text='', search=''::tsvector WHERE search IS NULL")
    db.execute("CREATE INDEX messages_search ON messages USING gin (search)")


def _terms(body: str) -> tuple[str, str]:
    text, tools = message_text(json.loads(body))
    return search_terms(text, tools)


MIGRATIONS: tuple[Migration, ...] = (
    Migration("conversations, messages, folds, attachments, snapshots, activations", _tables),
    Migration("message search", _search),
)
LATEST = len(MIGRATIONS)


def version(db: psycopg.Connection[tuple[object, ...]]) -> int:
    """How many steps the database has taken (0: a new database)."""
    # pg_class read as a table, under the statement's snapshot: to_regclass() answers from a
    # cache that may not have seen a table another worker's migration just committed.
    (exists,) = db.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace s "
        "ON s.oid = c.relnamespace WHERE c.relname = 'leanreplay_migrations' "
        "AND s.nspname = current_schema())"
    ).fetchone() or (False,)
    if not exists:
        return 0
    (found,) = db.execute(
        "SELECT COALESCE(MAX(version), 0) FROM leanreplay_migrations"
    ).fetchone() or (0,)
    return int(str(found))


def migrate(
    db: psycopg.Connection[tuple[object, ...]], steps: Sequence[Migration] = MIGRATIONS
) -> list[str]:
    """Bring the database on ``db`` (autocommit) to ``len(steps)``; returns the steps run.

    Raises:
        StoreVersionError: the database is newer than ``steps``.
        StoreError: a step failed on the data; nothing was changed.
    """
    current = version(db)
    if current == len(steps):
        return []
    if current > len(steps):
        raise newer_error(current, len(steps))
    ran: list[str] = []
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        current = version(db)  # under the lock: another worker may have just migrated it
        if current > len(steps):
            raise newer_error(current, len(steps))
        db.execute(
            "CREATE TABLE IF NOT EXISTS leanreplay_migrations (version integer PRIMARY KEY, "
            "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for number, step in enumerate(steps[current:], start=current + 1):
            try:
                step.apply(db)
            except (ValueError, TypeError) as exc:
                raise StoreError(
                    f"cannot upgrade the database at step {number} ({step.name}): {exc}; it is "
                    "unchanged and the leanreplay that wrote it can still open it"
                ) from None
            db.execute(
                "INSERT INTO leanreplay_migrations(version, name) VALUES (%s, %s)",
                (number, step.name),
            )
            ran.append(step.name)
    return ran
