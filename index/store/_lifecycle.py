"""The storage half of the context lifecycle: folding a stored conversation, and the
compaction event log.

A fold runs under a per-conversation lock shared by every process (``flock`` on a file under
the home), reads the originals, asks the summarizer, and writes the one summary only if the
conversation's fold is still the one it started from and the boundary message is unchanged.
Any failure leaves everything as it was.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placeholders import FoldPolicy, Summarizer, fold_boundary

from .._locks import file_lock
from ._store import Store

__all__ = ["FoldResult", "append_event", "fold_conversation"]


@dataclass(frozen=True)
class FoldResult:
    """What `Workspace.fold` did, and why."""

    folded: bool
    reason: str
    summary: str | None = None
    summarized_through_message: int | None = None
    summarized_through_message_id: str | None = None
    messages_folded: int = 0
    generation: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fold_conversation(
    store: Store, cid: str, policy: FoldPolicy, summarize: Summarizer, home: str
) -> FoldResult:
    """Fold a stored conversation's old prefix into its summary (see `Workspace.fold`)."""
    with file_lock(os.path.join(home, "locks", f"fold-{_digest(cid)}.lock")) as mine:
        if not mine:
            return FoldResult(False, "another fold of this conversation is running")
        previous = store.fold(cid)
        stored = store.messages(cid)
        messages = [m.message() for m in stored]
        start = previous.through_seq if previous else 0
        boundary, why = fold_boundary(messages, start, policy)
        if boundary is None:
            return FoldResult(False, why)
        try:
            summary = summarize(
                previous.summary if previous else None,
                messages[start:boundary],
                max_chars=policy.max_summary_chars,
            )
        except Exception as exc:  # noqa: BLE001 - any failure leaves the fold as it was
            return FoldResult(
                False, f"summarizer failed, nothing changed: {type(exc).__name__}: {exc}"
            )
        if not isinstance(summary, str) or not summary.strip():
            return FoldResult(False, "summarizer returned an empty summary; nothing changed")
        summary = summary.strip()[: policy.max_summary_chars]
        through = stored[boundary - 1]
        generation = store.write_fold(
            cid, summary, through.seq, through.id, previous.generation if previous else 0
        )
        if generation is None:
            return FoldResult(
                False, "the conversation's fold changed while summarizing; nothing written"
            )
        return FoldResult(
            True,
            why,
            summary=summary,
            summarized_through_message=through.seq,
            summarized_through_message_id=through.id,
            messages_folded=boundary - start,
            generation=generation,
        )


def append_event(
    folder: str, event: str, conversation_id: str | None, data: Mapping[str, Any]
) -> None:
    """Append one event to ``folder/compaction-YYYY-MM-DD.jsonl`` (UTC date)."""
    now = datetime.datetime.now(datetime.UTC)
    os.makedirs(folder, exist_ok=True)
    record = {"time": now.isoformat(), "event": event, "conversation_id": conversation_id, **data}
    line = json.dumps(record, ensure_ascii=False) + "\n"
    # One write() of one line in append mode: concurrent writers never interleave lines.
    fd = os.open(
        os.path.join(folder, f"compaction-{now:%Y-%m-%d}.jsonl"),
        os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
        0o644,
    )
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
