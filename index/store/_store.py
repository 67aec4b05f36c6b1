"""The embedded store of originals: SQLite in WAL mode, append-only, byte-exact.

Every message is kept as the JSON text it was stored with; ids are assigned once and never
change. Several processes may append at once: each append takes SQLite's write lock, so a
conversation keeps one total order and an acknowledged write survives a crash.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, cast

from leanreplay.placeholders import (
    SPLIT_KEY,
    content_chars,
    json_text,
    nested_deeper,
    role_of,
)

from .._errors import (
    BusyError,
    ConversationChangedError,
    ConversationNotFoundError,
    ImportFormatError,
    InvalidArgumentError,
    StoreError,
    StoreVersionError,
)
from .._locks import file_lock
from ._activations import Activations
from ._attachments import SavedAttachment, inline_blocks
from ._migrations import LATEST, migrate, newer_error, version
from ._sql import render

__all__ = [
    "ConversationInfo",
    "ConversationStats",
    "FoldRecord",
    "SavedAttachment",
    "Store",
    "StoreReads",
    "StoredMessage",
]

BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another process before BusyError
MAX_ID_CHARS = 256
# Levels of lists and dicts one message may nest: where Python 3.11's JSON encoder stopped
# (3.12 and later go about ten times deeper), the same on every Python.
MAX_MESSAGE_DEPTH = 950


@dataclass(frozen=True)
class StoredMessage:
    conversation_id: str
    seq: int
    id: str
    role: str
    body: str

    def message(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


@dataclass(frozen=True)
class FoldRecord:
    summary: str
    through_seq: int
    through_id: str
    generation: int


@dataclass(frozen=True)
class ConversationStats:
    """What the store knows of a conversation without reading its messages."""

    id: str
    messages: int
    last_seq: int
    last_id: str | None
    last_written: float | None  # unix time of the newest append; None in older stores


@dataclass(frozen=True)
class ConversationInfo:
    id: str
    source: str | None
    format: str | None
    notes: list[str]
    messages: int


def check_id(what: str, value: object) -> str:
    """Ids are non-empty strings of printable characters, at most MAX_ID_CHARS long."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string, got {type(value).__name__}")
    if not value or len(value) > MAX_ID_CHARS or not value.isprintable():
        raise InvalidArgumentError(
            f"{what} must be 1-{MAX_ID_CHARS} printable characters, got {value[:80]!r}"
        )
    return value


def plain_json(value: Any) -> Any:
    """``value`` with every provider SDK object in it (anything with pydantic's ``model_dump``,
    such as Anthropic's ``Message`` and content blocks or OpenAI's ``ChatCompletionMessage``)
    replaced by its JSON form without ``None`` fields; plain data is returned as it is."""
    try:
        return _plain(value)
    except RecursionError:
        return value  # nested too deep for JSON anyway: encode_message refuses it, and says so


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        items = {k: _plain(v) for k, v in value.items()}
        changed = any(items[k] is not v for k, v in value.items())
        return items if changed or not isinstance(value, dict) else value
    if isinstance(value, (list, tuple)):
        values = [_plain(v) for v in value]
        changed = any(a is not b for a, b in zip(values, value, strict=True))
        return values if changed or not isinstance(value, list) else value
    return value


def encode_message(message: Mapping[str, Any]) -> str:
    """The stored text of a message; refuses what JSON cannot carry exactly."""
    # Checked, not left to the encoder: Python 3.11's stops near 1,000 levels, 3.12's near
    # 10,000, and the readers walk what is stored with Python's own recursion. Every level
    # opens with a bracket in the text, so a body with few brackets is not walked at all.
    try:
        body = json_text(message, allow_nan=False)
    except RecursionError:
        raise _too_deep() from None
    except (TypeError, ValueError) as exc:
        if nested_deeper(message, MAX_MESSAGE_DEPTH):
            raise _too_deep() from None
        raise InvalidArgumentError(
            f"message is not JSON data ({exc}); send only str, numbers, bools, null, lists, dicts"
        ) from None
    if body.count("[") + body.count("{") > MAX_MESSAGE_DEPTH and nested_deeper(
        message, MAX_MESSAGE_DEPTH
    ):
        raise _too_deep()
    if not body.isascii():
        # UTF-8 refuses exactly the surrogates (four times faster than searching for them)
        try:
            body.encode("utf-8")
        except UnicodeEncodeError:
            body = json.dumps(message, allow_nan=False)  # escapes keep lone surrogates exact
    return body


def _too_deep() -> InvalidArgumentError:
    """The refusal of a message nested deeper than `MAX_MESSAGE_DEPTH` (built only when it
    is raised: an exception built for every stored message cost a tenth of encoding)."""
    return InvalidArgumentError(
        f"message nests lists and dicts too deeply to store (over {MAX_MESSAGE_DEPTH:,} "
        "levels); flatten it"
    )


class StoreReads:
    """The reads both stores make, each statement written once (see `_sql.render`): a
    store gives its paramstyle, ``_read``, and how its SQL differs."""

    paramstyle = "qmark"
    _order_id = "id"  # ORDER BY this for ids in the order of their UTF-8 bytes
    _row = "rowid"  # the column numbering messages in insertion order
    _max_seq = 2**62  # above every position

    def _read(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _q(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (written with ``?``) in this store's paramstyle."""
        return self._read(render(sql, self.paramstyle), args)

    def _message_rows(
        self, where: str, args: tuple[Any, ...]
    ) -> list[tuple[int, str, int, str, str, str]]:
        """(rowid, conversation_id, seq, id, role, body) of the messages ``where`` (the SQL
        after WHERE, with ``?`` for each of ``args``) selects."""
        rows = self._q(
            f"SELECT {self._row}, conversation_id, seq, id, role, body FROM messages WHERE {where}",
            args,
        )
        return [(int(r[0]), r[1], int(r[2]), r[3], r[4], r[5]) for r in rows]

    def message_rows(
        self, *, after_rowid: int = 0, limit: int = 5000
    ) -> list[tuple[int, str, int, str, str, str]]:
        """`all_messages` as plain (rowid, conversation_id, seq, id, role, body) tuples, in
        insertion order."""
        return self._message_rows(
            f"{self._row}>? ORDER BY {self._row} LIMIT ?", (after_rowid, limit)
        )

    def bodies_after(
        self, *, after_rowid: int = 0, limit: int = 5000
    ) -> list[tuple[int, str, str]]:
        """(rowid, conversation_id, body) in insertion order: what the search index reads of
        a million messages (three columns cost two thirds of six)."""
        rows = self._q(
            f"SELECT {self._row}, conversation_id, body FROM messages "
            f"WHERE {self._row}>? ORDER BY {self._row} LIMIT ?",
            (after_rowid, limit),
        )
        return cast(list[tuple[int, str, str]], rows)

    def rows_at(self, rowids: list[int]) -> list[tuple[int, str, int, str, str, str]]:
        """`message_rows` of the given rows (those the store holds), in no set order: what
        a search index that keeps only rows reads back for its hits."""
        if not rowids:
            return []
        return self._message_rows(f"{self._row} IN ({','.join('?' * len(rowids))})", tuple(rowids))

    def exists(self, conversation_id: str) -> bool:
        return bool(self._q("SELECT 1 FROM conversations WHERE id=?", (conversation_id,)))

    def info(self, conversation_id: str) -> ConversationInfo:
        rows = self._q(
            "SELECT c.id, c.source, c.format, c.notes, "
            "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id=c.id) "
            "FROM conversations c WHERE c.id=?",
            (conversation_id,),
        )
        if not rows:
            raise _missing(conversation_id)
        cid, source, fmt, notes, count = rows[0]
        return ConversationInfo(cid, source, fmt, json.loads(notes), int(count))

    def messages(self, conversation_id: str, *, after_seq: int = 0) -> list[StoredMessage]:
        rows = self._q(
            "SELECT seq, id, role, body FROM messages "
            "WHERE conversation_id=? AND seq>? ORDER BY seq",
            (conversation_id, after_seq),
        )
        if not rows and not self.exists(conversation_id):
            raise _missing(conversation_id)
        return [StoredMessage(conversation_id, s, i, r, b) for s, i, r, b in rows]

    def messages_page(
        self, conversation_id: str, before_seq: int | None = None, limit: int = 100
    ) -> list[StoredMessage]:
        """Up to ``limit`` messages just before ``before_seq`` (the tail when None), in order."""
        rows = self._q(
            "SELECT seq, id, role, body FROM messages WHERE conversation_id=? AND seq<? "
            "ORDER BY seq DESC LIMIT ?",
            (conversation_id, before_seq if before_seq is not None else self._max_seq, limit),
        )
        if not rows and not self.exists(conversation_id):
            raise _missing(conversation_id)
        return [StoredMessage(conversation_id, s, i, r, b) for s, i, r, b in reversed(rows)]

    def stats(self) -> list[ConversationStats]:
        """Message count, last position and last write time of every conversation.

        Counts come from the primary-key index alone, so this stays fast on a store of
        millions of messages; one row per conversation is read for its time.
        """
        rows = self._q(
            "SELECT c.id, COUNT(m.seq), COALESCE(MAX(m.seq), 0) FROM conversations c "
            "LEFT JOIN messages m ON m.conversation_id = c.id GROUP BY c.id "
            f"ORDER BY c.{self._order_id}"
        )
        return [self._stats(cid, int(count), int(last)) for cid, count, last in rows]

    def stats_of(self, conversation_id: str) -> ConversationStats:
        rows = self._q(
            "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id=?",
            (conversation_id,),
        )
        if not rows[0][0] and not self.exists(conversation_id):
            raise _missing(conversation_id)
        return self._stats(conversation_id, int(rows[0][0]), int(rows[0][1]))

    def _stats(self, cid: str, count: int, last: int) -> ConversationStats:
        row = self._q("SELECT id, at FROM messages WHERE conversation_id=? AND seq=?", (cid, last))
        last_id, at = row[0] if row else (None, None)
        return ConversationStats(cid, count, last, last_id, at)

    def message(self, conversation_id: str, message_id: str) -> StoredMessage:
        rows = self._q(
            "SELECT seq, id, role, body FROM messages WHERE conversation_id=? AND id=?",
            (conversation_id, message_id),
        )
        if not rows:
            if not self.exists(conversation_id):
                raise _missing(conversation_id)
            raise ConversationNotFoundError(
                f"no message {message_id!r} in conversation {conversation_id!r}; use the id "
                "named in the placeholder, or conversation_search to find one"
            )
        seq, mid, role, body = rows[0]
        return StoredMessage(conversation_id, seq, mid, role, body)

    def all_messages(
        self, *, after_rowid: int = 0, limit: int = 5000
    ) -> list[tuple[int, StoredMessage]]:
        """Messages of every conversation in insertion order, for the search index."""
        return [
            (r[0], StoredMessage(r[1], r[2], r[3], r[4], r[5]))
            for r in self.message_rows(after_rowid=after_rowid, limit=limit)
        ]

    def sizes(self, conversation_id: str, *, after_seq: int = 0) -> list[int]:
        """Content chars of each message after ``after_seq``, in order (kept at insert)."""
        rows = self._q(
            "SELECT chars FROM messages WHERE conversation_id=? AND seq>? ORDER BY seq",
            (conversation_id, after_seq),
        )
        return [int(r[0]) for r in rows]

    def times(
        self, conversation_id: str, *, after_seq: int = 0, before_seq: int | None = None
    ) -> dict[str, float]:
        """When each message after ``after_seq`` (and before ``before_seq``) was appended (unix
        seconds), by message id; the rows stored before times were kept are left out."""
        rows = self._q(
            "SELECT id, at FROM messages WHERE conversation_id=? AND seq>? AND seq<? "
            "AND at IS NOT NULL",
            (conversation_id, after_seq, self._max_seq if before_seq is None else before_seq),
        )
        return {str(mid): float(at) for mid, at in rows}

    def chars_after(self, conversation_id: str, seq: int) -> int:
        """Content chars of the messages after ``seq`` (sizes kept at insert, and measured for
        older rows by the "message sizes" migration)."""
        rows = self._q(
            "SELECT COALESCE(SUM(chars), 0) FROM messages WHERE conversation_id=? AND seq>?",
            (conversation_id, seq),
        )
        return int(rows[0][0])

    def fold(self, conversation_id: str) -> FoldRecord | None:
        rows = self._q(
            "SELECT summary, through_seq, through_id, generation FROM folds "
            "WHERE conversation_id=?",
            (conversation_id,),
        )
        return FoldRecord(*rows[0]) if rows else None

    def snapshots(self, conversation_id: str | None = None) -> list[dict[str, Any]]:
        """The kept prompt snapshots, oldest first."""
        if conversation_id is None:
            rows = self._q("SELECT body FROM snapshots ORDER BY n")
        else:
            rows = self._q(
                "SELECT body FROM snapshots WHERE conversation_id=? ORDER BY n", (conversation_id,)
            )
        return [json.loads(body) for (body,) in rows]


class Store(StoreReads):
    """Conversations and their messages in ``home/store.sqlite3``."""

    kind = "sqlite"

    def __init__(self, home: str) -> None:
        self.path = os.path.join(home, "store.sqlite3")
        self._lock = threading.RLock()
        self._deferred = threading.local()  # inside batch(): commits that do not sync
        self._sync_deferred = False  # the connection's synchronous mode is NORMAL
        self.read_only: str | None = None  # why, when the home cannot be written
        self.migrated: list[str] = []  # the schema steps this open ran (see _migrations)
        if _read_only(home):
            self._open_read_only("the home is on a read-only file system")
            return
        try:
            os.makedirs(home, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the home: {exc.strerror}; point the home at a writable folder"
            ) from None
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            db: sqlite3.Connection | None = None
            try:
                db = _connect(self.path)
                self.migrated = migrate(db)
                (self.identity,) = db.execute(
                    "SELECT value FROM meta WHERE key='store_id'"
                ).fetchone()
                self._hold(db)
                return
            except BaseException as exc:
                if db is not None:
                    db.close()
                if not isinstance(exc, sqlite3.DatabaseError):
                    raise
                if "locked" in str(exc):
                    # Switching a new store to WAL fails at once, without waiting, while
                    # another process creates it: retry within the same limit as any write.
                    if time.monotonic() < deadline:
                        time.sleep(0.02)
                        continue
                    raise _busy() from None
                if os.path.isfile(self.path) and _primary(exc) in _UNWRITABLE:
                    # A full disk: what is stored can still be read.
                    self._open_read_only(str(_db_error("the home cannot be written", exc)))
                    return
                raise _db_error("cannot open the store", exc) from None

    def _open_read_only(self, why: str) -> None:
        """A home that cannot be written: serve reads, refuse writes with a clear error.

        A WAL store opens read-only only while its -shm file exists; after a clean close it
        does not, and nobody can write a read-only home anyway, so it is opened immutable.
        """
        self.read_only = why
        if not os.path.isfile(self.path):
            raise StoreError(f"{why}, and it holds no store yet; point it at a writable folder")
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.path))
        failure: sqlite3.DatabaseError | None = None
        for options in ("?mode=ro", "?immutable=1"):
            try:
                db = _connect(uri + options, writable=False)
            except sqlite3.DatabaseError as exc:
                failure = exc
                continue
            try:
                found = version(db)
                if found == LATEST:
                    (self.identity,) = db.execute(
                        "SELECT value FROM meta WHERE key='store_id'"
                    ).fetchone()
            except sqlite3.DatabaseError as exc:
                db.close()
                failure = exc
                continue
            if found != LATEST:
                db.close()
                if found > LATEST:
                    raise newer_error(found, LATEST)
                raise StoreVersionError(
                    f"{why}, and the store was written by an older leanreplay (version "
                    f"{found}, this one reads {LATEST}): open it once where the home can be "
                    "written, to upgrade it"
                )
            self._hold(db)
            return
        assert failure is not None
        raise _db_error(f"{why}; reading the store failed too", failure)

    def _hold(self, db: sqlite3.Connection) -> None:
        self._db = db
        # A store dropped without close() closes its connection when it is collected (Python
        # 3.13 warns about a connection left open, and its file handles would linger).
        weakref.finalize(self, db.close)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def another(self) -> Store:
        """A store of its own on the same file (its own connection), for another thread."""
        return Store(os.path.dirname(self.path))

    @contextmanager
    def fold_lock(self, conversation_id: str) -> Iterator[bool]:
        """The one fold of a conversation at a time, across processes (a lock file under the
        home); yields False at once when another process holds it."""
        digest = hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()
        home = os.path.dirname(self.path)
        with file_lock(os.path.join(home, "locks", f"fold-{digest[:32]}.lock")) as mine:
            yield mine

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Writes of this thread inside the block commit without waiting for the disk, and
        the block ends with one commit that does (fsync of the write-ahead log, which holds
        them all): an import of many files pays for one disk sync, not one per file. Until
        the block ends nothing of it is acknowledged; each write still commits on its own,
        so other processes take turns between them. Other threads' writes sync as always."""
        if getattr(self._deferred, "on", False):
            yield  # nested: the outer block syncs
            return
        self._deferred.on, self._deferred.pending = True, False
        try:
            yield
        finally:
            self._deferred.on = False
            if self._deferred.pending and not self.read_only:
                with self._write() as db:  # one durable commit, for everything before it too
                    db.execute("UPDATE meta SET value=value WHERE key='store_id'")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise StoreError(f"nothing was stored: {self.read_only} (reads still work)")
        deferred = getattr(self._deferred, "on", False)
        with self._lock:
            if deferred != self._sync_deferred:
                self._db.execute(f"PRAGMA synchronous={'NORMAL' if deferred else 'FULL'}")
                self._sync_deferred = deferred
            if deferred:
                self._deferred.pending = True
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise _busy() from None
                raise _db_error("cannot write the store", exc) from None
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError):
                    raise _db_error("nothing was stored", exc) from None
                raise

    def _read(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, tuple(args)).fetchall()
            except sqlite3.DatabaseError as exc:
                raise _db_error("cannot read the store", exc) from None

    # conversations

    def conversation_ids(self, prefix: str | None = None) -> list[str]:
        if not prefix:
            return [r[0] for r in self._read("SELECT id FROM conversations ORDER BY id")]
        # A range on the primary key: ids sort by their UTF-8 bytes, U+10FFFF sorts last.
        rows = self._read(
            "SELECT id FROM conversations WHERE id >= ? AND id < ? ORDER BY id",
            (prefix, prefix + "\U0010ffff"),
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
        """Append messages in one transaction; returns their ids (assigned when missing).

        ``attachments(message)`` names the inline attachments of a message, already saved
        under the home; their rows commit in the same transaction as the message, so a crash
        never leaves a stored message without its cards. With ``after``, append only if the
        conversation still holds exactly that many messages (0: none, or it does not exist),
        else raise `ConversationChangedError` and store nothing.

        A message whose id is already stored with the same bytes is not stored again (its
        id is returned): a retried append, or an agent loop run again, is a no-op. With
        other bytes it raises `InvalidArgumentError` and stores nothing.
        """
        check_id("conversation_id", conversation_id)
        prepared = _checked(messages)
        with self._write() as db:
            if after is not None:
                (held,) = db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id=?",
                    (conversation_id,),
                ).fetchone()
                if held != after:
                    raise ConversationChangedError(
                        f"conversation {conversation_id!r} holds {held} messages, not {after}: "
                        "another writer appended since it was read; read it again"
                    )
            self._conversation(db, conversation_id, source, format, notes)
            fresh, ids = _unstored(db, conversation_id, prepared)
            stored = iter(self._insert(db, conversation_id, fresh, attachments))
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
        """Store what of an imported log is not stored yet; returns the ids it appended.

        What is new is decided inside the write transaction, so two processes importing the
        same log at once store each message once. The stored messages must be a prefix of
        the log. A stored message whose attachment rows are missing (a crash in an older
        version) gets them now.

        Raises:
            ImportFormatError: the conversation holds more messages than the log, or others.
        """
        check_id("conversation_id", conversation_id)
        prepared = _checked(messages)
        with self._write() as db:
            stored = db.execute(
                "SELECT seq, id, body FROM messages WHERE conversation_id=? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
            if len(stored) > len(prepared):
                raise ImportFormatError(
                    f"conversation {conversation_id!r} already holds {len(stored)} messages, "
                    "more than this log; ingest it under another conversation id"
                )
            for (seq, mid, body), new in zip(stored, prepared, strict=False):
                candidate = new if "id" in new else {**new, "id": mid}
                if encode_message(candidate) != body:
                    raise ImportFormatError(_differs(db, conversation_id, seq, stored, prepared))
            fresh = prepared[len(stored) :]
            if attachments is not None and stored:
                self._repair_attachments(db, conversation_id, stored, attachments)
            self._conversation(db, conversation_id, source, format, ())
            # The notes describe the whole log as imported last (a re-import replaces them).
            db.execute(
                "UPDATE conversations SET notes=? WHERE id=?",
                (json.dumps(list(notes), ensure_ascii=False), conversation_id),
            )
            return self._insert(db, conversation_id, fresh, attachments)

    @staticmethod
    def _conversation(
        db: sqlite3.Connection,
        conversation_id: str,
        source: str | None,
        format: str | None,
        notes: Iterable[str],
    ) -> None:
        db.execute(
            "INSERT OR IGNORE INTO conversations(id, source, format) VALUES (?, ?, ?)",
            (conversation_id, source, format),
        )
        notes = list(notes)
        if notes:
            (old,) = db.execute(
                "SELECT notes FROM conversations WHERE id=?", (conversation_id,)
            ).fetchone()
            db.execute(
                "UPDATE conversations SET notes=? WHERE id=?",
                (json.dumps([*json.loads(old), *notes], ensure_ascii=False), conversation_id),
            )

    def _insert(
        self,
        db: sqlite3.Connection,
        conversation_id: str,
        messages: list[Mapping[str, Any]],
        attachments: Callable[[Mapping[str, Any]], list[SavedAttachment]] | None,
    ) -> list[str]:
        (last,) = db.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id=?",
            (conversation_id,),
        ).fetchone()
        ids: list[str] = []
        taken: set[str] = set()  # ids of this batch
        rows: list[tuple[Any, ...]] = []
        cards = []
        now = time.time()
        for offset, message in enumerate(messages, start=1):
            seq = last + offset
            saved = attachments(message) if attachments is not None else []
            message_id = message.get("id")
            if message_id is None:
                message_id = self._free_id(db, conversation_id, f"m{seq}", taken)
                message = {**message, "id": message_id}
            taken.add(message_id)
            rows.append(
                (
                    conversation_id,
                    seq,
                    message_id,
                    _role(message),
                    encode_message(message),
                    content_chars(message),
                    now,
                )
            )
            cards += [(conversation_id, message_id, *row) for row in saved]
            ids.append(message_id)
            if len(rows) == _INSERT_ROWS:
                self._insert_rows(db, conversation_id, rows, ids, last)
                rows = []
        self._insert_rows(db, conversation_id, rows, ids, last)
        db.executemany(
            "INSERT OR REPLACE INTO attachments"
            "(conversation_id, message_id, block, path, card) VALUES (?,?,?,?,?)",
            cards,
        )
        return ids

    @staticmethod
    def _insert_rows(
        db: sqlite3.Connection,
        conversation_id: str,
        rows: list[tuple[Any, ...]],
        ids: list[str],
        last: int,
    ) -> None:
        """Insert one slice of `_insert`'s rows (``ids``: the batch's ids so far; ``last``:
        the conversation's seq before it)."""
        try:
            # One statement a slice; the (conversation, id) key refuses a reused id.
            db.executemany(
                "INSERT INTO messages(conversation_id, seq, id, role, body, chars, at) "
                "VALUES (?,?,?,?,?,?,?)",
                rows,
            )
        except sqlite3.IntegrityError:
            # Name the first message whose id was taken, before or earlier in this batch.
            earlier: set[str] = set()
            for message_id in ids:
                if (
                    message_id in earlier
                    or db.execute(
                        "SELECT 1 FROM messages WHERE conversation_id=? AND id=? AND seq<=?",
                        (conversation_id, message_id, last),
                    ).fetchone()
                ):
                    raise _reused(conversation_id, message_id, differs=False) from None
                earlier.add(message_id)
            raise

    @staticmethod
    def _attach(
        db: sqlite3.Connection, conversation_id: str, message_id: str, saved: list[SavedAttachment]
    ) -> None:
        db.executemany(
            "INSERT OR REPLACE INTO attachments"
            "(conversation_id, message_id, block, path, card) VALUES (?,?,?,?,?)",
            [(conversation_id, message_id, *row) for row in saved],
        )

    def _repair_attachments(
        self,
        db: sqlite3.Connection,
        conversation_id: str,
        stored: list[tuple[int, str, str]],
        attachments: Callable[[Mapping[str, Any]], list[SavedAttachment]],
    ) -> None:
        have = {
            (mid, block)
            for mid, block in db.execute(
                "SELECT message_id, block FROM attachments WHERE conversation_id=?",
                (conversation_id,),
            )
        }
        for _, mid, body in stored:
            if "base64" not in body and '"file_data"' not in body:
                continue  # no inline attachment can be in it
            message = json.loads(body)
            if any((mid, block) not in have for block, *_ in inline_blocks(message)):
                self._attach(db, conversation_id, mid, attachments(message))

    @staticmethod
    def _free_id(db: sqlite3.Connection, conversation_id: str, wanted: str, taken: set[str]) -> str:
        candidate, n = wanted, 1
        while (
            candidate in taken
            or db.execute(
                "SELECT 1 FROM messages WHERE conversation_id=? AND id=?",
                (conversation_id, candidate),
            ).fetchone()
        ):
            n += 1
            candidate = f"{wanted}-{n}"
        return candidate

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
        """Store the one summary of a conversation; None if the fold changed meanwhile.

        Re-reads in the write transaction: the boundary must still be the message it was,
        and no other fold may have been written since ``expected`` (a generation number).
        ``folds`` is how many folds the summary stands for (an import chains them in memory
        and writes the last): the generation grows by that many.
        """
        with self._write() as db:
            row = db.execute(
                "SELECT generation FROM folds WHERE conversation_id=?", (conversation_id,)
            ).fetchone()
            if (row[0] if row else 0) != expected:
                return None
            at = db.execute(
                "SELECT id FROM messages WHERE conversation_id=? AND seq=?",
                (conversation_id, through_seq),
            ).fetchone()
            if at is None or at[0] != through_id:
                return None
            generation = expected + folds
            db.execute(
                "INSERT OR REPLACE INTO folds(conversation_id, summary, through_seq, through_id, "
                "generation) VALUES (?,?,?,?,?)",
                (conversation_id, summary, through_seq, through_id, generation),
            )
            return generation

    # attachments

    def attachment_cards(self, conversation_id: str) -> dict[tuple[str, int], str]:
        rows = self._read(
            "SELECT message_id, block, card FROM attachments WHERE conversation_id=?",
            (conversation_id,),
        )
        return {(mid, block): card for mid, block, card in rows}

    def attachment_owners(self, name: str) -> set[str]:
        """Conversations holding the saved attachment file ``name`` (its SHA-256 file name)."""
        pattern = "%/" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._read(
            "SELECT DISTINCT conversation_id FROM attachments WHERE path LIKE ? ESCAPE '\\'",
            (pattern,),
        )
        return {r[0] for r in rows}

    # tool activations

    @staticmethod
    def activations(directory: str) -> Activations:
        """One small JSON file per conversation under ``directory`` (in the home)."""
        return Activations(directory)

    # prompt snapshots

    def add_snapshot(self, conversation_id: str, record: Mapping[str, Any], keep: int) -> None:
        """Record one prompt snapshot and keep only the newest ``keep`` of the home."""
        with self._write() as db:
            db.execute(
                "INSERT INTO snapshots(conversation_id, body) VALUES (?, ?)",
                (conversation_id, json.dumps(record, ensure_ascii=False)),
            )
            db.execute(
                "DELETE FROM snapshots WHERE n NOT IN "
                "(SELECT n FROM snapshots ORDER BY n DESC LIMIT ?)",
                (keep,),
            )


def _connect(target: str, *, writable: bool = True) -> sqlite3.Connection:
    """Every connection of the store, with the settings its promises rest on.

    WAL lets readers run beside the one writer; synchronous=FULL makes an acknowledged write
    survive a power loss, not only a killed process; the busy wait lets several processes
    take turns; foreign keys keep messages with their conversation. A read-only connection
    (``target`` a ``file:`` URI) keeps the file's journal mode, which it cannot change.
    """
    db = sqlite3.connect(
        target,
        timeout=BUSY_TIMEOUT_S,
        isolation_level=None,
        check_same_thread=False,
        uri=not writable,
    )
    try:
        if writable:
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        db.close()
        raise
    return db


def _busy() -> BusyError:
    return BusyError(f"another process held the store for over {BUSY_TIMEOUT_S:.0f}s; retry")


def _read_only(home: str) -> bool:
    try:
        return bool(os.statvfs(home).f_flag & os.ST_RDONLY)
    except OSError:
        return False  # no home yet: it is created


_UNWRITABLE = (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY)


def _primary(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF  # extended codes carry the primary


def _db_error(what: str, exc: sqlite3.DatabaseError) -> StoreError:
    """One line that says what to do about an SQLite failure, naming no paths."""
    code = _primary(exc)
    if code == sqlite3.SQLITE_FULL:
        return StoreError(f"{what}: the disk holding the home is full; free space and retry")
    if code == sqlite3.SQLITE_READONLY:
        return StoreError(f"{what}: the home is read-only; point it at a writable folder")
    if code == sqlite3.SQLITE_IOERR:
        return StoreError(f"{what}: disk I/O error (is the disk holding the home full?)")
    if code == sqlite3.SQLITE_CANTOPEN:
        return StoreError(f"{what}: the store file cannot be opened or created in the home")
    if isinstance(exc, sqlite3.DatabaseError) and code in (
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
    ):
        return StoreError(f"{what}: the store file is damaged or not a leanreplay store")
    return StoreError(f"{what}: {exc}")


def _checked(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    prepared = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidArgumentError(f"message {i} must be a dict, got {type(message).__name__}")
        if not _role(message):
            raise InvalidArgumentError(
                f"message {i} needs a string 'role' (or, as an OpenAI Responses item, a 'type' "
                "of function_call, function_call_output or reasoning)"
            )
        if "id" in message:
            check_id(f"message {i} id", message["id"])
        prepared.append(message)
    return prepared


def _role(message: Mapping[str, Any]) -> str:
    """The role column: the message's role, or a Responses item's type."""
    role = message.get("role")
    if isinstance(role, str):
        return role
    return message.get("type", "") if role_of(message) is not None else ""


_ID_CHUNK = 500  # ids per IN (...) look-up: under SQLite's 999 bound variables
# Rows built and inserted at a time: a million-message import does not hold all of its
# encoded bodies at once (its peak at 1,000,000 messages: 1.39 GiB with all of them, 1.19 now).
_INSERT_ROWS = 10_000


def _unstored(
    db: sqlite3.Connection, conversation_id: str, messages: list[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[str | None]]:
    """The messages to insert, and per message its id when it is already stored (or earlier
    in the batch) with the same bytes, else None.

    Raises:
        InvalidArgumentError: an id already stored, or earlier in the batch, with other bytes.
    """
    given = [m["id"] for m in messages if "id" in m]
    bodies: dict[str, str] = {}
    for at in range(0, len(given), _ID_CHUNK):
        chunk = given[at : at + _ID_CHUNK]
        bodies.update(
            db.execute(
                "SELECT id, body FROM messages WHERE conversation_id=? "
                f"AND id IN ({','.join('?' * len(chunk))})",
                (conversation_id, *chunk),
            ).fetchall()
        )
    return _split_unstored(conversation_id, messages, bodies)


def _split_unstored(
    conversation_id: str, messages: list[Mapping[str, Any]], bodies: dict[str, str]
) -> tuple[list[Mapping[str, Any]], list[str | None]]:
    """`_unstored` given ``bodies``, the stored body of each of the batch's ids found stored
    (both stores' rule; each store reads the bodies its own way)."""
    fresh: list[Mapping[str, Any]] = []
    ids: list[str | None] = []
    for message in messages:
        mid = message.get("id")
        if mid is not None:
            body = encode_message(message)
            if mid in bodies:
                if bodies[mid] != body:
                    raise _reused(conversation_id, mid)
                ids.append(mid)
                continue
            bodies[mid] = body
        fresh.append(message)
        ids.append(None)
    return fresh, ids


def _reused(conversation_id: str, message_id: str, *, differs: bool = True) -> InvalidArgumentError:
    if not differs:
        return InvalidArgumentError(
            f"message id {message_id!r} already exists in conversation {conversation_id!r}; "
            "ids are never reused"
        )
    return InvalidArgumentError(
        f"message id {message_id!r} already exists in conversation {conversation_id!r} with "
        "different content; ids are never reused (appending the same message again is a "
        "no-op): give this message another id, or none to have one assigned"
    )


def _differs(
    db: sqlite3.Connection,
    conversation_id: str,
    seq: int,
    stored: list[tuple[int, str, str]],
    log: list[Mapping[str, Any]],
) -> str:
    """Why an import does not match what is stored, and what to do."""
    (fmt,) = db.execute(
        "SELECT format FROM conversations WHERE id=?", (conversation_id,)
    ).fetchone()
    split = f'"{SPLIT_KEY}"'
    if (
        fmt == "claude-code"
        and not any(split in body for _, _, body in stored)
        and any(SPLIT_KEY in m for m in log)
    ):
        # The first Claude Code importer joined the records of one API message (and the
        # results that followed) into one message; today's keeps one message per record. The
        # records cannot be recovered from the joined messages: the file is imported again.
        return (
            f"conversation {conversation_id!r} was stored by an older leanreplay, which joined "
            f"Claude Code records into fewer messages (it differs from this log at message "
            f"{seq}); ingest the file under another conversation id to store it one message "
            "per record (the stored conversation stays readable)"
        )
    return (
        f"conversation {conversation_id!r} is already stored with different messages (first "
        f"difference at message {seq}); ingest it under another conversation id"
    )


def _missing(conversation_id: str) -> ConversationNotFoundError:
    return ConversationNotFoundError(
        f"no conversation {conversation_id!r}; conversations() lists the stored ones and "
        "conversation_search (with no conversation_id) searches them all; or ingest one first",
        names=("conversations",),
    )
