"""Named, recorded schema migrations of the store.

A store's ``PRAGMA user_version`` is the number of `MIGRATIONS` it has taken. `migrate` runs
the ones it lacks, in order, inside one ``BEGIN IMMEDIATE`` transaction, and records each by
name in the ``migrations`` table: a failure leaves the file as it was, and two processes
opening an old store at once migrate it once. A new store takes the same steps from zero, so
there is no second "latest schema" to drift from them.

To change the schema, append a step; never edit one that has shipped. Stores from before
``user_version`` was kept (version 0) may already hold any of the first six steps' tables and
columns, which were added in place, so those steps look before they add.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass

from leanreplay.placeholders import content_chars

from .._errors import StoreError, StoreVersionError

__all__ = ["BACKFILL_BATCH", "LATEST", "MIGRATIONS", "Migration", "migrate", "version"]

BACKFILL_BATCH = 1_000  # messages read at once by a step that measures older rows


@dataclass(frozen=True)
class Migration:
    """One schema step: ``apply`` runs inside the migration's transaction."""

    name: str
    apply: Callable[[sqlite3.Connection], None]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _tables(db: sqlite3.Connection) -> None:
    """Turn 1: conversations, their messages byte-exact in order, and one fold each."""
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, source TEXT, "
        "format TEXT, notes TEXT NOT NULL DEFAULT '[]')"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS messages ("
        "conversation_id TEXT NOT NULL REFERENCES conversations(id), seq INTEGER NOT NULL, "
        "id TEXT NOT NULL, role TEXT NOT NULL, body TEXT NOT NULL, "
        "PRIMARY KEY (conversation_id, seq), UNIQUE (conversation_id, id))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS folds ("
        "conversation_id TEXT PRIMARY KEY REFERENCES conversations(id), summary TEXT NOT NULL, "
        "through_seq INTEGER NOT NULL, through_id TEXT NOT NULL, generation INTEGER NOT NULL)"
    )
    # The guard the leanreplays before user_version read: they refuse a 'schema' above 1. A
    # later step that those versions could not live with raises it.
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', '1')")


def _identity(db: sqlite3.Connection) -> None:
    """A random id per store, which the message index records to notice a swapped store."""
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', ?)", (uuid.uuid4().hex,))


def _attachments(db: sqlite3.Connection) -> None:
    """The card of every inline attachment, saved under the home."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS attachments (conversation_id TEXT NOT NULL, "
        "message_id TEXT NOT NULL, block INTEGER NOT NULL, path TEXT NOT NULL, "
        "card TEXT NOT NULL, PRIMARY KEY (conversation_id, message_id, block))"
    )


def _sizes(db: sqlite3.Connection) -> None:
    """The content size of each message, which the fold sums; measured now for older rows."""
    if "chars" not in _columns(db, "messages"):
        db.execute("ALTER TABLE messages ADD COLUMN chars INTEGER")
    # In batches by rowid, so memory stays flat however large the store.
    last = -1
    while True:
        rows = db.execute(
            "SELECT rowid, body FROM messages WHERE chars IS NULL AND rowid > ? "
            "ORDER BY rowid LIMIT ?",
            (last, BACKFILL_BATCH),
        ).fetchall()
        if not rows:
            return
        db.executemany(
            "UPDATE messages SET chars=? WHERE rowid=?",
            ((content_chars(json.loads(body)), rowid) for rowid, body in rows),
        )
        last = rows[-1][0]


def _snapshots(db: sqlite3.Connection) -> None:
    """The prompts sent to the model, the newest few of the home."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS snapshots (n INTEGER PRIMARY KEY AUTOINCREMENT, "
        "conversation_id TEXT NOT NULL, body TEXT NOT NULL)"
    )


def _times(db: sqlite3.Connection) -> None:
    """When each message was appended; unknown (NULL) for the rows stored before."""
    if "at" not in _columns(db, "messages"):
        db.execute("ALTER TABLE messages ADD COLUMN at REAL")


MIGRATIONS: tuple[Migration, ...] = (
    Migration("conversations, messages and folds", _tables),
    Migration("store identity", _identity),
    Migration("attachment cards", _attachments),
    Migration("message sizes", _sizes),
    Migration("prompt snapshots", _snapshots),
    Migration("append times", _times),
)
LATEST = len(MIGRATIONS)


def version(db: sqlite3.Connection) -> int:
    """How many migrations the store has taken."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def newer_error(found: int, known: int) -> StoreVersionError:
    return StoreVersionError(
        f"the store is at version {found}, written by a newer leanreplay (this one knows "
        f"versions up to {known}); upgrade leanreplay to open it"
    )


def migrate(db: sqlite3.Connection, steps: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Bring the store on ``db`` (autocommit, outside a transaction) to ``len(steps)``.

    Returns:
        The names of the steps run, in order; ``[]`` for a store already up to date.

    Raises:
        StoreVersionError: the store is newer than ``steps``.
        StoreError: a step failed on the data; nothing was changed.
        sqlite3.Error: SQLite refused (locked past the busy wait, disk full); rolled back.
    """
    current = version(db)
    if current == len(steps):
        return []  # the common case takes no write lock
    db.execute("BEGIN IMMEDIATE")
    try:
        current = version(db)  # under the lock: another process may have just migrated it
        if current > len(steps):
            raise newer_error(current, len(steps))
        db.execute(
            "CREATE TABLE IF NOT EXISTS migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        ran: list[str] = []
        for number, step in enumerate(steps[current:], start=current + 1):
            try:
                step.apply(db)
            except (ValueError, TypeError) as exc:  # data an older version stored, unreadable
                raise StoreError(
                    f"cannot upgrade the store at step {number} ({step.name}): {exc}; the store "
                    "is unchanged and the leanreplay that wrote it can still open it"
                ) from None
            db.execute(
                "INSERT INTO migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (number, step.name, time.time()),
            )
            ran.append(step.name)
        db.execute(f"PRAGMA user_version={len(steps):d}")
        db.execute("COMMIT")
        return ran
    except BaseException:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
