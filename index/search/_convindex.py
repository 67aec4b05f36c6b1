"""Stored messages in Tantivy, for conversation_search.

The index follows the store: each search first adds the messages stored since the last one
(tracked by SQLite rowid in a small state file). The store is the truth; an index that is
missing, from another schema or another store, or corrupt is rebuilt from it.

The state names the store it follows: the store's identity (created with the store) and the
highest row indexed, with a digest of that row. A store restored from a backup keeps its
identity, but the row is then missing or another message: the index is rebuilt.

The index holds only what is searched: the words of each message and its tool names, its
conversation (to scope a search) and its row (a fast field). A hit is read back from the
store by its row, its snippet cut from the stored message; equal scores rank by row, the
store's insertion order, so an index built with any number of threads answers the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Callable
from typing import Any

import msgspec
import tantivy

from .._errors import BusyError
from .._gcpause import gc_paused
from .._locks import file_lock
from ..store._protocol import StoreProtocol
from ..store._store import StoredMessage
from ..store._text import MAX_INDEXED_CHARS, message_text, search_hit
from ._ranking import top_hits
from ._tantivy import DerivedIndex, build_query, snippet_text

__all__ = ["MESSAGES_VERSION", "MessageIndex", "message_text"]

MESSAGES_VERSION = 2  # 2: documents of words and a row, hits read from the store
SNIPPET_CHARS = 240
_BATCH = 250_000  # rows per commit: commits are fsync'd and merge segments
# Two indexing threads: the index is rebuilt beside a Python thread that parses messages,
# and each Tantivy thread needs a heap of its own (at least 15 MB).
INDEX_THREADS = 2
INDEX_HEAP = 96_000_000
_MAX_ROW = 2**64 - 1
_FETCH = 50_000  # rows read from the store at a time
# json.loads without its Python frames: the decoder's own C scanner (typeshed does not
# declare the attribute)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
CATCH_UP_WAIT_S = 600.0  # how long a search waits for another process's catch-up
_fast_decode: Callable[[str], Any] = msgspec.json.Decoder().decode
_SURROGATE = re.compile("[\ud800-\udfff]")  # indexed as U+FFFD (the store keeps them exact)


def _schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("row", indexed=True, fast=True)  # the store's rowid
    sb.add_text_field("conversation_id", tokenizer_name="raw")
    sb.add_text_field("tool")
    sb.add_text_field("text")
    return sb.build()


def _digest(stored: StoredMessage) -> str:
    key = "\x00".join((stored.conversation_id, str(stored.seq), stored.id, stored.body))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class MessageIndex:
    def __init__(self, home: str, store: StoreProtocol) -> None:
        self.store = store
        directory = os.path.join(home, "index", f"messages-v{MESSAGES_VERSION}")
        self.index = DerivedIndex(directory, _schema, threads=INDEX_THREADS, heap=INDEX_HEAP)
        self.state_path = directory + ".state.json"
        for version in range(1, MESSAGES_VERSION):
            _drop_old(os.path.join(home, "index", f"messages-v{version}"))

    def _state(self) -> int:
        """The last indexed rowid; 0 for an empty index, -1 when the index must start over."""
        if self.index.rebuilt:
            return 0
        try:
            with open(self.state_path) as f:
                state = json.load(f)
        except (OSError, ValueError):
            return -1  # an index of unknown origin
        rowid = state.get("rowid")
        if state.get("store") != self.store.identity or not isinstance(rowid, int):
            return -1  # another store: start over
        if rowid and state.get("row") != self._row_digest(rowid):
            return -1  # the same store restored from a backup: that row is gone or another
        return rowid

    def _row_digest(self, rowid: int) -> str | None:
        rows = self.store.all_messages(after_rowid=rowid - 1, limit=1)
        if not rows or rows[0][0] != rowid:
            return None
        return _digest(rows[0][1])

    def catch_up(self) -> int:
        """Index what the store holds beyond the last indexed row; returns rows added.

        A damaged index is deleted and rebuilt from the store."""
        return self.index.recover(self._catch_up, lambda: None)

    def _catch_up(self) -> int:
        # One catch-up at a time across threads and processes: the others wait, then find
        # the state advanced and have little or nothing left to add.
        with file_lock(self.index.directory + ".catchup.lock", CATCH_UP_WAIT_S) as held:
            if not held:
                raise BusyError(
                    f"another process has been indexing the messages for over "
                    f"{CATCH_UP_WAIT_S:.0f}s; retry later"
                )
            return self._catch_up_locked()

    def _catch_up_locked(self) -> int:
        last = self._state()
        added = 0
        if last < 0:
            with self.index.writer() as writer:
                writer.delete_all_documents()
            last = 0
        # Only the commit right after a saved state can already be in the index (a crash
        # between its commit and the state's save): its rows are deleted first, then added.
        replace = last > 0
        rows = self.store.bodies_after(after_rowid=last, limit=_FETCH)
        document = tantivy.Document
        while rows:
            with self.index.writer() as writer, gc_paused():
                if replace:
                    writer.delete_documents_by_query(  # by term, a u64 deletes nothing
                        tantivy.Query.range_query(
                            self.index.schema, "row", tantivy.FieldType.Unsigned, last + 1, _MAX_ROW
                        )
                    )
                in_commit = 0
                while rows:
                    for rowid, cid, body in rows:
                        text, tools = _searchable(body)
                        # Text fields by keyword (a third cheaper than from_dict), tool names
                        # only where there are some; the one unsigned field typed explicitly
                        # (an int by keyword is an i64, which the u64 field refuses only at
                        # commit, losing the batch).
                        try:
                            doc = document(conversation_id=cid, text=text)
                            if tools:
                                doc.add_text("tool", tools)
                        except ValueError:  # a lone surrogate: no UTF-8 for Tantivy
                            doc = document(
                                conversation_id=cid,
                                tool=_SURROGATE.sub("\ufffd", tools),
                                text=_SURROGATE.sub("\ufffd", text),
                            )
                        doc.add_unsigned("row", rowid)
                        writer.add_document(doc)
                    tail = rows[-1]
                    in_commit += len(rows)
                    rows = self.store.bodies_after(after_rowid=tail[0], limit=_FETCH)
                    if in_commit >= _BATCH:
                        break
            replace = False
            last = tail[0]
            added += in_commit
            self._save(last, self._row_digest(last) or "")
        if last == 0:
            self._save(0, "")  # an empty store: the index follows it too
        self.index.rebuilt = False
        return added

    def _save(self, rowid: int, row: str) -> None:
        tmp = f"{self.state_path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"store": self.store.identity, "rowid": rowid, "row": row}, f)
        os.replace(tmp, self.state_path)

    def search(
        self, query_text: str, *, conversations: list[str] | None, limit: int
    ) -> list[dict[str, Any]]:
        """Ranked hits; a damaged index is rebuilt from the store and searched again."""
        return self.index.recover(
            lambda: self._search(query_text, conversations, limit), self._catch_up
        )

    def _search(
        self, query_text: str, conversations: list[str] | None, limit: int
    ) -> list[dict[str, Any]]:
        query = build_query(self.index, query_text, ["text", "tool"])
        clauses = [(tantivy.Occur.Must, query)]
        if conversations is not None:
            clauses.append(
                (
                    tantivy.Occur.Must,
                    tantivy.Query.term_set_query(
                        self.index.schema, "conversation_id", conversations
                    ),
                )
            )
        scoped = tantivy.Query.boolean_query(clauses)
        searcher = self.index.searcher()
        ranked = top_hits(searcher, self.index.schema, scoped, limit, "row")
        stored = {row[0]: row for row in self.store.rows_at([row for _, row in ranked])}
        generator = tantivy.SnippetGenerator.create(searcher, query, self.index.schema, "text")
        generator.set_max_num_chars(SNIPPET_CHARS)
        hits = []
        for score, row in ranked:
            found = stored.get(row)
            if found is None:
                continue  # not in the store: an index ahead of a store restored from a backup
            _, cid, seq, mid, role, body = found
            text, tools = _searchable(body)
            text = _SURROGATE.sub("\ufffd", text)
            snippet = snippet_text(generator, tantivy.Document(text=text), text, SNIPPET_CHARS)
            hits.append(search_hit(cid, mid, seq, role, tools, score, snippet))
        return hits


def _drop_old(directory: str) -> None:
    """Delete an index of an older schema (it can be as big as the store), unless a process
    of an older leanreplay is writing it right now."""
    if not os.path.isdir(directory):
        return
    with file_lock(directory + ".lock") as mine:
        if not mine:
            return
        shutil.rmtree(directory, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.unlink(directory + ".state.json")


class _Plain(msgspec.Struct):
    """What tells a plain message (`message_text`'s short cut): a string content, no tool
    calls, no ``type`` key at all (a Responses item). The rest is stepped over."""

    content: Any = None
    tool_calls: Any = None
    type: Any = msgspec.UNSET


_plain_decode: Callable[[str], _Plain] = msgspec.json.Decoder(_Plain).decode


def _searchable(body: str) -> tuple[str, str]:
    """(text, tool names) of a stored body: one JSON object (msgspec; the C scanner for
    what it refuses, an escaped lone surrogate). A plain message is read without building
    it, for `message_text`'s own short cut."""
    try:
        plain = _plain_decode(body)
    except msgspec.MsgspecError:
        pass  # what msgspec refuses: read whole below
    else:
        content = plain.content
        if isinstance(content, str) and not plain.tool_calls and plain.type is msgspec.UNSET:
            return content[:MAX_INDEXED_CHARS], ""
    try:
        message = _fast_decode(body)
    except msgspec.MsgspecError:
        message = _scan(body, 0)[0]
    return message_text(message)
