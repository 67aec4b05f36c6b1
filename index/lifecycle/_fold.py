"""The fold of the context lifecycle: folding a stored conversation, the size of its
replay turn by turn, and the compaction event log.

A fold runs under a per-conversation lock shared by every process (``flock`` on a file under
the home), reads the originals, asks the summarizer, and writes the one summary only if the
conversation's fold is still the one it started from and the boundary message is unchanged.
Any failure leaves everything as it was.
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime
import glob
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

from leanreplay.placeholders import (
    FoldPolicy,
    ReplayPolicy,
    ReplayResult,
    Summarizer,
    content_chars,
    fold_boundary,
    folded_prefix,
    is_genuine_user,
    replay,
)

from ..store._attachments import with_cards
from ..store._protocol import StoreProtocol
from ..store._store import FoldRecord

__all__ = [
    "FoldResult",
    "SizePoint",
    "append_event",
    "fold_as_appended",
    "fold_conversation",
    "lean_replay",
    "read_events",
    "replay_at_turn",
    "size_series",
]


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


def fold_conversation(
    store: StoreProtocol,
    cid: str,
    policy: FoldPolicy,
    summarize: Summarizer,
    home: str,
    *,
    end: int | None = None,
) -> FoldResult:
    """Fold a stored conversation's old prefix into its summary (see `Workspace.fold`); with
    ``end``, fold it as it stood when it held its first ``end`` messages."""
    with store.fold_lock(cid) as mine:
        if not mine:
            return FoldResult(False, "another fold of this conversation is running")
        previous = store.fold(cid)
        stored = store.messages(cid)[:end]
        messages = [m.message() for m in stored]
        start = previous.through_seq if previous else 0
        step = _fold_step(messages, previous, policy, summarize)
        if isinstance(step, FoldResult):
            return step
        boundary, summary, why = step
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


def fold_as_appended(
    store: StoreProtocol,
    cid: str,
    new: int,
    policy: FoldPolicy,
    summarize: Summarizer,
    home: str,
    *,
    stored: Sequence[Mapping[str, Any]] | None = None,
) -> list[FoldResult]:
    """Fold the last ``new`` messages of a conversation as `Workspace.append` would have, had
    they arrived one at a time: wherever one takes the unsummarized part past the threshold,
    the conversation as it stood then folds (once; a fold that finds no legal boundary, or
    whose summarizer fails, is tried again at the next message, as `append` does).

    The folds are chained in memory (each summary is the next one's input) and only the last
    is written, with the generation they add up to: one transaction, not one per fold. Only
    the unsummarized part is read; sizes come from the store, and a message is decoded when
    the summarizer needs it or, for a user message, when it may start the verbatim tail.
    ``stored``, when the caller holds them, are the conversation's messages exactly as
    stored (ids included), read instead of the store's copies.
    """
    with store.fold_lock(cid) as mine:
        if not mine:
            return []
        previous = store.fold(cid)
        start = previous.through_seq if previous else 0
        sizes = store.sizes(cid, after_seq=start)
        if stored is not None and len(stored) == start + len(sizes):
            ids = [str(m["id"]) for m in stored[start:]]
            roles = [m.get("role") for m in stored[start:]]

            def message(i: int) -> Mapping[str, Any]:  # i counts from the conversation's start
                return stored[i]

            def release(upto: int) -> None:
                pass  # the caller's own list

        else:
            rows = store.messages(cid, after_seq=start)
            ids = [r.id for r in rows]
            roles = [r.role for r in rows]
            decoded: dict[int, Mapping[str, Any]] = {}

            def message(i: int) -> Mapping[str, Any]:
                found = decoded.get(i)
                if found is None:
                    found = decoded[i] = rows[i - base].message()
                return found

            def release(upto: int) -> None:  # folded: the summarizer has had them
                for i in [i for i in decoded if i < upto]:
                    del decoded[i]

        base = start
        total = base + len(ids)
        first = total - new
        unsummarized = sum(sizes[: max(first - base, 0)])
        folds: list[FoldResult] = []
        fold = previous
        genuine = -1  # the last genuine user message seen, once past the fold's start
        scanned = start  # messages up to here were looked at for ``genuine``
        for end in range(max(first, start) + 1, total + 1):
            unsummarized += sizes[end - 1 - base]
            if unsummarized <= policy.threshold_chars:
                continue
            # fold_boundary's own test, read forward once: a genuine user message after the
            # fold's start and at least keep_last messages from the end.
            reach = min(end - policy.keep_last, end - 1)
            while scanned < reach:
                scanned += 1
                if roles[scanned - base] == "user" and is_genuine_user(message(scanned)):
                    genuine = scanned
            if genuine <= start:
                continue
            boundary = genuine
            summary = _summary(
                fold, [message(i) for i in range(start, boundary)], policy, summarize
            )
            if isinstance(summary, FoldResult):
                continue
            through_id = ids[boundary - 1 - base]
            generation = (fold.generation if fold else 0) + 1
            folds.append(
                FoldResult(
                    True,
                    f"folding {boundary - start} messages ({unsummarized:,} chars unsummarized)",
                    summary=summary,
                    summarized_through_message=boundary,
                    summarized_through_message_id=through_id,
                    messages_folded=boundary - start,
                    generation=generation,
                )
            )
            fold = FoldRecord(summary, boundary, through_id, generation)
            release(boundary)
            start = boundary
            unsummarized = sum(sizes[start - base : end - base])
        if fold is None or fold is previous:
            return []
        written = store.write_fold(
            cid,
            fold.summary,
            fold.through_seq,
            fold.through_id,
            previous.generation if previous else 0,
            folds=len(folds),
        )
        return folds if written is not None else []


def _summary(
    previous: FoldRecord | None,
    messages: Sequence[Mapping[str, Any]],
    policy: FoldPolicy,
    summarize: Summarizer,
) -> str | FoldResult:
    """The summarizer's summary of ``messages`` after ``previous``, or why there is none."""
    try:
        summary = summarize(
            previous.summary if previous else None, messages, max_chars=policy.max_summary_chars
        )
    except Exception as exc:  # noqa: BLE001 - any failure leaves the fold as it was
        return FoldResult(False, f"summarizer failed, nothing changed: {type(exc).__name__}: {exc}")
    if not isinstance(summary, str) or not summary.strip():
        return FoldResult(False, "summarizer returned an empty summary; nothing changed")
    return summary.strip()[: policy.max_summary_chars]


def _fold_step(
    messages: Sequence[Mapping[str, Any]],
    previous: FoldRecord | None,
    policy: FoldPolicy,
    summarize: Summarizer,
) -> tuple[int, str, str] | FoldResult:
    """The boundary, summary and reason of the next fold of ``messages``, or why there is none.

    Pure: the stored fold and the `size_series` simulation both take their folds from here.
    """
    start = previous.through_seq if previous else 0
    boundary, why = fold_boundary(messages, start, policy)
    if boundary is None:
        return FoldResult(False, why)
    summary = _summary(previous, messages[start:boundary], policy, summarize)
    if isinstance(summary, FoldResult):
        return summary
    return boundary, summary, why


def lean_replay(
    cid: str,
    messages: list[dict[str, Any]],
    cards: Mapping[tuple[str, int], str],
    fold: FoldRecord | None,
    policy: ReplayPolicy | None,
    *,
    times: Mapping[str, float] | None = None,
    now: float | None = None,
    last_request_at: float | None = None,
) -> ReplayResult:
    """The replay of stored ``messages`` (every one from the first): attachments as cards, the
    folded prefix as its summary, stale tool results as placeholders (``times``, ``now`` and
    ``last_request_at`` as `replay` takes them)."""
    messages = with_cards(messages, cards)
    if fold is not None:
        system = list(takewhile(lambda m: m.get("role") in ("system", "developer"), messages))
        prefix = folded_prefix(cid, fold.summary, fold.through_id, fold.generation)
        messages = system + prefix + messages[max(fold.through_seq, len(system)) :]
    return replay(
        messages,
        conversation_id=cid,
        policy=policy,
        times=times,
        now=now,
        last_request_at=last_request_at,
    )


@dataclass(frozen=True)
class SizePoint:
    """The replay after one turn of a conversation grown message by message (`size_series`)."""

    turn: int  # 1-based; a turn starts at each genuine user message
    messages: int  # messages stored after the turn
    message_id: str  # the turn's last message
    stored_chars: int  # content chars of everything stored: the unfolded size
    replay_chars_fold_only: int  # the replay with the fold applied, before placeholders
    replay_chars: int  # what the model receives: fold and placeholders
    folds: int  # folds so far (the summary's generation)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _grow(
    messages: Sequence[dict[str, Any]], fold_policy: FoldPolicy, summarizer: Summarizer
) -> Iterator[tuple[int, int, FoldRecord | None]]:
    """(last index, stored chars, fold) after each turn of ``messages`` appended one by one
    with the automatic fold on, exactly as `Workspace.append` folds."""
    users = [i for i, m in enumerate(messages) if is_genuine_user(m)]
    turn_ends = {u - 1 for u in users if u > 0} | {len(messages) - 1}
    fold: FoldRecord | None = None
    unsummarized = total = 0
    for i, message in enumerate(messages):
        chars = content_chars(message)
        total += chars
        unsummarized += chars
        start = fold.through_seq if fold else 0
        if unsummarized > fold_policy.threshold_chars:
            # fold_boundary's own test, cheaply: a genuine user message in reach of the tail
            last = min(i + 1 - fold_policy.keep_last, i)
            k = bisect.bisect_right(users, last) - 1
            if k >= 0 and users[k] > start:
                step = _fold_step(messages[: i + 1], fold, fold_policy, summarizer)
                if not isinstance(step, FoldResult):
                    boundary, summary, _ = step
                    through = messages[boundary - 1]
                    fold = FoldRecord(
                        summary,
                        boundary,
                        str(through.get("id")),
                        (fold.generation if fold else 0) + 1,
                    )
                    unsummarized = sum(content_chars(m) for m in messages[boundary : i + 1])
        if i in turn_ends:
            yield i, total, fold


def replay_at_turn(
    cid: str,
    messages: Sequence[dict[str, Any]],
    turn: int,
    *,
    cards: Mapping[tuple[str, int], str],
    fold_policy: FoldPolicy,
    summarizer: Summarizer,
    replay_policy: ReplayPolicy | None = None,
) -> tuple[ReplayResult, SizePoint] | None:
    """The replay the model received after ``turn`` (1-based) of the growth `size_series`
    draws, and that turn's point; None when the conversation has fewer turns."""
    for n, state in enumerate(_grow(messages, fold_policy, summarizer), start=1):
        if n == turn:
            return _measured(cid, messages, n, state, cards, replay_policy)
    return None


def _measured(
    cid: str,
    messages: Sequence[dict[str, Any]],
    turn: int,
    state: tuple[int, int, FoldRecord | None],
    cards: Mapping[tuple[str, int], str],
    replay_policy: ReplayPolicy | None,
) -> tuple[ReplayResult, SizePoint]:
    """The replay after ``turn`` (its last message, stored chars and fold in ``state``) and
    that turn's point."""
    end, stored, fold = state
    result = lean_replay(cid, list(messages[: end + 1]), cards, fold, replay_policy)
    point = SizePoint(
        turn=turn,
        messages=end + 1,
        message_id=str(messages[end].get("id")),
        stored_chars=stored,
        replay_chars_fold_only=result.chars_in,
        replay_chars=result.chars_out,
        folds=fold.generation if fold else 0,
    )
    return result, point


def size_series(
    cid: str,
    messages: Sequence[dict[str, Any]],
    *,
    cards: Mapping[tuple[str, int], str],
    fold_policy: FoldPolicy,
    summarizer: Summarizer,
    replay_policy: ReplayPolicy | None = None,
    max_points: int | None = None,
) -> list[SizePoint]:
    """Replay size turn by turn as if ``messages`` had been appended one at a time with the
    automatic fold on: the sawtooth ``bench/bench_fold.py`` prints and ``leanreplay view``
    draws. Writes nothing.

    After each message the fold runs when the unsummarized part exceeds the threshold, exactly
    as `Workspace.append` does; after each turn the replay is measured. ``max_points`` keeps
    evenly spaced turns plus the turns on both sides of every fold (the sawtooth's edges).
    """
    states = list(_grow(messages, fold_policy, summarizer))
    keep = set(range(len(states)))
    if max_points is not None and len(states) > max_points:
        keep = _spread(range(len(states)), max_points)
        edges = [n for n in range(1, len(states)) if states[n][2] is not states[n - 1][2]]
        for n in _spread(edges, max(max_points // 2, 1)):
            keep |= {n - 1, n}
    return [
        _measured(cid, messages, n + 1, states[n], cards, replay_policy)[1] for n in sorted(keep)
    ]


def _spread(items: Sequence[int], count: int) -> set[int]:
    """At most ``count`` evenly spaced items, the first and the last included."""
    if len(items) <= count:
        return set(items)
    stride = (len(items) - 1) / max(count - 1, 1)
    return {items[round(n * stride)] for n in range(count)}


def read_events(
    folder: str, conversation_id: str | None = None, *, limit: int = 500
) -> list[dict[str, Any]]:
    """The newest ``limit`` events of the daily logs under ``folder``, oldest first; only
    those of ``conversation_id`` when given. Lines that are not JSON objects are skipped."""
    events: list[dict[str, Any]] = []
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "compaction-*.jsonl")))[::-1]:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
        except OSError:
            continue
        day: list[dict[str, Any]] = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            if conversation_id is None or record.get("conversation_id") == conversation_id:
                day.append(record)
        events = day + events
        if len(events) >= limit:
            break
    return events[-limit:]


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
