"""`Conversations`: the context lifecycle of the stored conversations, behind the facade.

An append may fold the prefix (the rolling fold); a replay of a folded conversation reads
only what it shows (the folded view); a replay sent to a model is recorded as a prompt
snapshot; a model call compacts in memory when over budget and retries once on overflow,
logging every compaction as events. `Workspace` checks which conversations a caller may see,
then makes one call here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from itertools import takewhile
from typing import Any

from leanreplay.placeholders import (
    CompactionResult,
    FoldPolicy,
    ReplayPolicy,
    ReplayResult,
    Summarizer,
    cache_expired,
    call_with_overflow_retry,
    compact_turn,
    content_chars,
    estimate_tokens,
    is_genuine_user,
)

from .._errors import InvalidArgumentError, WorkspaceError
from ..store._attachments import AttachmentSaver
from ..store._protocol import StoreProtocol
from ..store._store import FoldRecord, StoredMessage, plain_json
from ._fold import (
    FoldResult,
    SizePoint,
    append_event,
    fold_as_appended,
    fold_conversation,
    lean_replay,
    read_events,
    replay_at_turn,
    size_series,
)

__all__ = ["FOLD_INLINE_MESSAGES", "SNAPSHOTS_KEPT", "Conversations", "turn_count"]

SNAPSHOTS_KEPT = 50  # prompt snapshots kept per home, newest first
# An append folds a backlog of up to this many messages itself (milliseconds); a longer one
# (a conversation stored unfolded, then appended to) folds in a background thread.
FOLD_INLINE_MESSAGES = 5_000

EventHook = Callable[[str, dict[str, Any]], None]


def turn_count(messages: Sequence[Mapping[str, Any]]) -> int:
    """Turns of a conversation: one from the first message, and one more at each later genuine
    user message (what `replay_at_turn` numbers)."""
    return sum(1 for i, m in enumerate(messages) if i and is_genuine_user(m)) + bool(messages)


class Conversations:
    """The lifecycle of the conversations in ``store``, whose home is ``home``."""

    def __init__(
        self,
        store: StoreProtocol,
        home: str,
        *,
        fold_policy: FoldPolicy,
        summarizer: Summarizer,
        auto_fold: bool,
    ) -> None:
        self.store = store
        self.home = home
        self.attachments_dir = os.path.join(home, "attachments")
        self.logs_dir = os.path.join(home, "logs")
        self.fold_policy = fold_policy
        self.summarizer = summarizer
        self.auto_fold = auto_fold
        self._background: dict[str, threading.Thread] = {}  # folds behind appends
        self._background_lock = threading.Lock()

    # appends and the rolling fold

    def append(self, cid: str, message: Mapping[str, Any] | Any) -> str:
        """Store one message (SDK objects as their JSON), save its inline attachments, and
        fold the prefix when the unsummarized part is past the threshold."""
        message = plain_json(message)
        saved = AttachmentSaver(self.attachments_dir)
        saved(message)  # before the transaction: the write lock is not held for the copy
        mid = self.store.append(cid, [message], attachments=saved)[0]
        if self.auto_fold:
            self._fold_if_due(cid)
        return mid

    def extend(
        self,
        cid: str,
        messages: Sequence[Mapping[str, Any] | Any],
        *,
        after: int | None = None,
        source: str | None = None,
        format: str | None = None,
    ) -> list[str]:
        """Store several messages in one transaction (with ``after``: only if the
        conversation still holds that many), then fold as `append` does."""
        plain = [plain_json(m) for m in messages]
        saved = AttachmentSaver(self.attachments_dir)
        for message in plain:
            saved(message)  # before the transaction: the write lock is not held for the copy
        ids = self.store.append(
            cid, plain, attachments=saved, after=after, source=source, format=format
        )
        if self.auto_fold and ids:
            self._fold_if_due(cid)
        return ids

    def _fold_if_due(self, cid: str) -> None:
        """Fold when the unsummarized part is past the threshold: here, or, for a backlog of
        more than `FOLD_INLINE_MESSAGES` (a conversation stored unfolded, then appended to),
        in a background thread, so that the append returns at once."""
        fold = self.store.fold(cid)
        start = fold.through_seq if fold else 0
        if self.store.chars_after(cid, start) <= self.fold_policy.threshold_chars:
            return
        if self.store.stats_of(cid).last_seq - start <= FOLD_INLINE_MESSAGES:
            self.fold(cid)
            return
        with self._background_lock:
            running = self._background.get(cid)
            if running is not None and running.is_alive():
                return  # that fold re-reads the conversation: it takes this message in too
            thread = threading.Thread(
                target=self._fold_behind, args=(cid,), name="leanreplay-fold", daemon=True
            )
            self._background[cid] = thread
            thread.start()

    def _fold_behind(self, cid: str) -> None:
        # Its own connection: the appending thread keeps the shared one to itself.
        try:
            store = self.store.another()
        except WorkspaceError:
            return  # the next append tries again
        try:
            fold_conversation(store, cid, self.fold_policy, self.summarizer, self.home)
        except WorkspaceError:
            pass  # a fold that fails changes nothing; the next append tries again
        finally:
            store.close()

    def wait_for_folds(self, cid: str | None = None) -> None:
        """Wait for the background folds (of ``cid``, or all)."""
        with self._background_lock:
            threads = [t for c, t in self._background.items() if cid is None or c == cid]
        for thread in threads:
            thread.join()

    def fold_added(
        self, cid: str, new: int, stored: Sequence[Mapping[str, Any]] | None = None
    ) -> list[FoldResult]:
        """Fold ``new`` just-imported messages as if they had been appended one at a time
        (``stored``: the conversation's messages as stored, when the caller holds them)."""
        return fold_as_appended(
            self.store, cid, new, self.fold_policy, self.summarizer, self.home, stored=stored
        )

    def fold(
        self, cid: str, summarizer: Summarizer | None = None, *, cache_expired: bool = False
    ) -> FoldResult:
        self.wait_for_folds(cid)
        policy = self.fold_policy
        if cache_expired:
            # The request is written in full anyway: a fold now costs no cache rewrite.
            cold = policy.cold_threshold()
            fold = self.store.fold(cid)
            unsummarized = self.store.chars_after(cid, fold.through_seq if fold else 0)
            if unsummarized <= cold:  # checked before the fold reads every message
                return FoldResult(
                    False,
                    f"unsummarized messages carry {unsummarized:,} chars, not over the "
                    f"threshold of {cold:,} of a request that finds the cache expired",
                )
            policy = dataclasses.replace(policy, threshold_chars=cold)
        return fold_conversation(self.store, cid, policy, summarizer or self.summarizer, self.home)

    def fold_state(self, cid: str) -> dict[str, Any] | None:
        self.wait_for_folds(cid)
        fold = self.store.fold(cid)
        if fold is None:
            return None
        return {
            "summary": fold.summary,
            "summarized_through_message": fold.through_seq,
            "summarized_through_message_id": fold.through_id,
            "generation": fold.generation,
        }

    # replays

    def messages(self, cid: str) -> list[dict[str, Any]]:
        return [m.message() for m in self.store.messages(cid)]

    def replay(
        self,
        cid: str,
        policy: ReplayPolicy | None = None,
        *,
        snapshot: bool = False,
        budget_tokens: int | None = None,
        now: float | None = None,
        last_request_at: float | None = None,
    ) -> ReplayResult:
        self.wait_for_folds(cid)  # a fold behind an append lands before its replay
        stored = self.store.fold(cid)
        messages, fold = self._view(cid, stored)
        times = self._times(cid, stored, fold)
        expired = self.auto_fold and cache_expired(
            messages, policy, times=times, now=now, last_request_at=last_request_at
        )
        if expired and self.fold(cid, cache_expired=True).folded:
            messages, fold = self._view(cid, self.store.fold(cid))
        result = lean_replay(
            cid,
            messages,
            self.store.attachment_cards(cid),
            fold,
            policy,
            times=times,
            now=now,
            last_request_at=last_request_at,
        )
        if snapshot:
            self._snapshot(cid, result.messages, result, budget_tokens)
        return result

    def _times(
        self, cid: str, stored: FoldRecord | None, view: FoldRecord | None
    ) -> dict[str, float]:
        """The append times of what `_view` shows: the messages after the ``stored`` fold and
        the leading system messages before it (``view``, the fold renumbered to the view, has
        their count as its ``through_seq``). Reading every row's time made a folded replay
        linear in the conversation's length."""
        if stored is None or view is None:
            return self.store.times(cid)
        times = self.store.times(cid, after_seq=stored.through_seq)
        if view.through_seq:
            times.update(self.store.times(cid, before_seq=view.through_seq + 1))
        return times

    def _view(
        self, cid: str, fold: FoldRecord | None
    ) -> tuple[list[dict[str, Any]], FoldRecord | None]:
        if fold is None:
            return self.messages(cid), None
        return self._folded_view(cid, fold)

    def _folded_view(self, cid: str, fold: FoldRecord) -> tuple[list[dict[str, Any]], FoldRecord]:
        """Only what a folded replay shows: the leading system messages and the messages after
        the fold (a 100k-message conversation reads its tail, not 100k rows), with the fold
        renumbered to that list."""
        system: list[StoredMessage] = []
        while True:
            after = system[-1].seq if system else 0
            page = self.store.messages_page(cid, before_seq=after + 9, limit=8)
            lead = list(takewhile(lambda m: m.role in ("system", "developer"), page))
            system += lead
            if len(lead) < 8:
                break
        tail = self.store.messages(cid, after_seq=max(fold.through_seq, len(system)))
        messages = [m.message() for m in (*system, *tail)]
        return messages, dataclasses.replace(fold, through_seq=len(system))

    def replay_at_turn(
        self, cid: str, turn: int, policy: ReplayPolicy | None = None
    ) -> tuple[ReplayResult, SizePoint]:
        messages = self.messages(cid)
        found = replay_at_turn(
            cid,
            messages,
            turn,
            cards=self.store.attachment_cards(cid),
            fold_policy=self.fold_policy,
            summarizer=self.summarizer,
            replay_policy=policy,
        )
        if found is None:
            raise InvalidArgumentError(
                f"conversation {cid!r} has {turn_count(messages)} turns; turn {turn} is past "
                "its end"
            )
        return found

    def turn_count(self, cid: str) -> int:
        return turn_count(self.messages(cid))

    def size_series(
        self, cid: str, policy: ReplayPolicy | None = None, *, max_points: int | None = None
    ) -> list[SizePoint]:
        return size_series(
            cid,
            self.messages(cid),
            cards=self.store.attachment_cards(cid),
            fold_policy=self.fold_policy,
            summarizer=self.summarizer,
            replay_policy=policy,
            max_points=max_points,
        )

    # prompt snapshots

    def _snapshot(
        self,
        cid: str,
        sent: Sequence[Mapping[str, Any]],
        result: ReplayResult,
        budget_tokens: int | None,
        compaction: Mapping[str, Any] | None = None,
        source: str = "replay",
    ) -> None:
        fold = self.store.fold(cid)
        chars = sum(content_chars(m) for m in sent)
        stats = self.store.stats_of(cid)
        record = {
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            "conversation_id": cid,
            "source": source,
            "messages_stored": stats.messages,
            "last_message_id": stats.last_id,
            "messages_sent": len(sent),
            "chars": chars,
            "chars_unfolded": self.store.chars_after(cid, 0),
            "estimated_tokens": estimate_tokens(chars),
            "budget_tokens": budget_tokens,
            "placeholders": result.placeholders,
            "elided_chars": result.elided_chars,
            "folded": fold is not None,
            "fold_generation": fold.generation if fold else 0,
            "compacted": compaction is not None,
            "compaction": dict(compaction) if compaction is not None else None,
        }
        self.store.add_snapshot(cid, record, SNAPSHOTS_KEPT)

    def snapshots(
        self, cid: str | None = None, *, allowed: frozenset[str] | None = None
    ) -> list[dict[str, Any]]:
        if cid is not None:
            return self.store.snapshots(cid)
        return [
            s
            for s in self.store.snapshots()
            if allowed is None or s.get("conversation_id") in allowed
        ]

    # model calls and the in-turn compactor

    def model_call(
        self,
        cid: str,
        call: Callable[[list[dict[str, Any]]], Any],
        *,
        context_window: int,
        output_reserve: int,
        reported_input_tokens: int | None = None,
        policy: ReplayPolicy | None = None,
        summarizer: Summarizer | None = None,
    ) -> Any:
        lean = self.replay(cid, policy)
        budget = context_window - output_reserve
        compacted = self.compact_turn(
            lean.messages,
            context_window=context_window,
            output_reserve=output_reserve,
            reported_input_tokens=reported_input_tokens,
            summarizer=summarizer,
            conversation_id=cid,
        )
        applied: list[dict[str, Any] | None] = [None]
        if compacted.triggered:
            applied[0] = {
                "tokens_before": compacted.tokens_before,
                "tokens_after": compacted.tokens_after,
                "actions": compacted.actions,
            }

        def send(messages: list[dict[str, Any]]) -> Any:
            self._snapshot(cid, messages, lean, budget, applied[0], source="model_call")
            return call(messages)

        def on_event(event: str, data: dict[str, Any]) -> None:
            self._log_event(event, cid, data)
            if event == "compaction.applied":
                applied[0] = {k: data.get(k) for k in ("tokens_before", "tokens_after", "actions")}

        return call_with_overflow_retry(
            send,
            compacted.messages,
            context_window=context_window,
            output_reserve=output_reserve,
            summarizer=summarizer,
            conversation_id=cid,
            on_event=_paired(on_event),
        )

    def compact_turn(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        context_window: int,
        output_reserve: int,
        reported_input_tokens: int | None = None,
        summarizer: Summarizer | None = None,
        conversation_id: str | None = None,
        force: bool = False,
    ) -> CompactionResult:
        return compact_turn(
            messages,
            context_window=context_window,
            output_reserve=output_reserve,
            reported_input_tokens=reported_input_tokens,
            summarizer=summarizer,
            conversation_id=conversation_id,
            force=force,
            on_event=_paired(lambda event, data: self._log_event(event, conversation_id, data)),
        )

    def _log_event(self, event: str, conversation_id: str | None, data: Mapping[str, Any]) -> None:
        # The event log is a record of what happened, not part of it: a full or read-only
        # home must not fail the compaction the runtime needs.
        with contextlib.suppress(OSError):
            append_event(self.logs_dir, event, conversation_id, data)

    def compaction_events(
        self,
        cid: str | None = None,
        *,
        limit: int = 500,
        allowed: frozenset[str] | None = None,
    ) -> list[dict[str, Any]]:
        events = read_events(self.logs_dir, cid, limit=limit)
        if allowed is not None:
            events = [e for e in events if e.get("conversation_id") in allowed]
        return events


def _paired(then: EventHook) -> EventHook:
    """An event hook that gives the started and applied events of one compaction the same
    ``compaction_id``."""
    current = [""]

    def hook(event: str, data: dict[str, Any]) -> None:
        if event == "compaction.started" or not current[0]:
            current[0] = uuid.uuid4().hex[:12]
        then(event, {"compaction_id": current[0], **data})

    return hook
