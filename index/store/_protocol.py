"""`StoreProtocol`: what the workspace, the lifecycle, the importers and the readers need of a
store of originals. Two stores implement it: `Store` (SQLite in the home, the embedded default)
and `PgStore` (PostgreSQL, shared by a fleet of workers). Both keep bodies as the JSON text
they were given, append only, assign each id once, and decide an import inside one
transaction; the tests of `tests/index/test_store.py` run against both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ._attachments import SavedAttachment
from ._store import ConversationInfo, ConversationStats, FoldRecord, StoredMessage

__all__ = ["ActivationsProtocol", "StoreProtocol"]


class StoreProtocol(Protocol):
    kind: str  # "sqlite" or "postgresql"
    identity: str  # a random id made with the store
    read_only: str | None  # why the store refuses writes, or None
    migrated: list[str]  # the names of the schema steps this open ran

    def close(self) -> None: ...

    def another(self) -> StoreProtocol:
        """A store on the same data for another thread (a background fold); close it after."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Writes of this thread inside the block may share one durable commit at its end."""
        ...

    def fold_lock(self, conversation_id: str) -> AbstractContextManager[bool]:
        """Hold the one fold of a conversation (across processes and machines); yields False
        at once when another holder has it."""
        ...

    # conversations
    def conversation_ids(self, prefix: str | None = None) -> list[str]: ...
    def exists(self, conversation_id: str) -> bool: ...
    def info(self, conversation_id: str) -> ConversationInfo: ...

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
    ) -> list[str]: ...

    def ingest(
        self,
        conversation_id: str,
        messages: Iterable[Mapping[str, Any]],
        *,
        source: str | None = None,
        format: str | None = None,
        notes: Iterable[str] = (),
        attachments: Callable[[Mapping[str, Any]], list[SavedAttachment]] | None = None,
    ) -> list[str]: ...

    def messages(self, conversation_id: str, *, after_seq: int = 0) -> list[StoredMessage]: ...
    def messages_page(
        self, conversation_id: str, before_seq: int | None = None, limit: int = 100
    ) -> list[StoredMessage]: ...
    def message(self, conversation_id: str, message_id: str) -> StoredMessage: ...
    def stats(self) -> list[ConversationStats]: ...
    def stats_of(self, conversation_id: str) -> ConversationStats: ...
    def all_messages(
        self, *, after_rowid: int = 0, limit: int = 5000
    ) -> list[tuple[int, StoredMessage]]: ...
    def message_rows(
        self, *, after_rowid: int = 0, limit: int = 5000
    ) -> list[tuple[int, str, int, str, str, str]]: ...
    def bodies_after(
        self, *, after_rowid: int = 0, limit: int = 5000
    ) -> list[tuple[int, str, str]]: ...
    def rows_at(self, rowids: list[int]) -> list[tuple[int, str, int, str, str, str]]: ...
    def sizes(self, conversation_id: str, *, after_seq: int = 0) -> list[int]: ...
    def times(
        self, conversation_id: str, *, after_seq: int = 0, before_seq: int | None = None
    ) -> dict[str, float]: ...
    def chars_after(self, conversation_id: str, seq: int) -> int: ...

    # folds
    def fold(self, conversation_id: str) -> FoldRecord | None: ...
    def write_fold(
        self,
        conversation_id: str,
        summary: str,
        through_seq: int,
        through_id: str,
        expected: int,
        *,
        folds: int = 1,
    ) -> int | None: ...

    # attachments
    def attachment_cards(self, conversation_id: str) -> dict[tuple[str, int], str]: ...
    def attachment_owners(self, name: str) -> set[str]: ...

    # tool activations
    def activations(self, directory: str) -> ActivationsProtocol:
        """Where the conversations' tool activations are kept (``directory``: under the home,
        for a store that keeps them there)."""
        ...

    # prompt snapshots
    def add_snapshot(self, conversation_id: str, record: Mapping[str, Any], keep: int) -> None: ...
    def snapshots(self, conversation_id: str | None = None) -> list[dict[str, Any]]: ...


class ActivationsProtocol(Protocol):
    """Which capability-index tools each conversation has activated (sticky, in order)."""

    def get(self, conversation_id: str | None) -> list[str]: ...
    def add(self, conversation_id: str | None, names: list[str]) -> tuple[list[str], list[str]]: ...
