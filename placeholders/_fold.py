"""The rolling prefix fold, the pure half: where to cut, how to summarize, how to replay.

A fold turns everything before a boundary into one summary. The boundary keeps the last
``keep_last`` messages verbatim and then backs off to the nearest genuine user message, so
the verbatim tail starts with a user turn and never separates a call from its result. The
storage half (one summary per conversation, locking, re-reading before writing) lives in
`index`.
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._errors import PlaceholderError
from ._replay import read_call
from ._shapes import content_chars, is_genuine_user, one_line, result_slots, text_of, tool_calls

__all__ = [
    "DEFAULT_FOLD_THRESHOLD_CHARS",
    "DEFAULT_KEEP_LAST",
    "DEFAULT_MAX_SUMMARY_CHARS",
    "CallableSummarizer",
    "FoldPolicy",
    "OfflineSummarizer",
    "SummarizerError",
    "Summarizer",
    "fold_boundary",
    "folded_prefix",
]

DEFAULT_FOLD_THRESHOLD_CHARS = 120_000
DEFAULT_KEEP_LAST = 8
DEFAULT_MAX_SUMMARY_CHARS = 6_000
_ITEM_CHARS = 240  # one line of the offline summary


class SummarizerError(PlaceholderError):
    """A summarizer failed, timed out or returned nothing usable; nothing was changed."""


@dataclass(frozen=True)
class FoldPolicy:
    """When and how much to fold.

    Attributes:
        threshold_chars: fold once the unsummarized messages carry more than this.
        keep_last: messages kept verbatim at the end, before backing off to a user turn.
        max_summary_chars: the summary is cut to this length.
    """

    threshold_chars: int = DEFAULT_FOLD_THRESHOLD_CHARS
    keep_last: int = DEFAULT_KEEP_LAST
    max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS

    def __post_init__(self) -> None:
        for name, minimum in (("threshold_chars", 1), ("keep_last", 1), ("max_summary_chars", 200)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise PlaceholderError(f"{name} must be an int, got {type(value).__name__}")
            if value < minimum:
                raise PlaceholderError(f"{name} must be >= {minimum}, got {value}")


def fold_boundary(
    messages: Sequence[Mapping[str, Any]], start: int, policy: FoldPolicy
) -> tuple[int | None, str]:
    """Index of the first verbatim message after a fold of ``messages[start:]``, or None.

    ``start`` is where the unsummarized region begins (after the previous fold). Returns the
    boundary and a sentence saying why (or why not).
    """
    region = sum(content_chars(m) for m in messages[start:])
    if region <= policy.threshold_chars:
        return None, (
            f"unsummarized messages carry {region:,} chars, not over the threshold of "
            f"{policy.threshold_chars:,}"
        )
    candidate = len(messages) - policy.keep_last
    for i in range(min(candidate, len(messages) - 1), start, -1):
        if is_genuine_user(messages[i]):
            return i, f"folding {i - start} messages ({region:,} chars unsummarized)"
    return None, (
        "no genuine user message between the previous fold and the last "
        f"{policy.keep_last} messages to start the verbatim tail; folding would split a turn"
    )


@runtime_checkable
class Summarizer(Protocol):
    """Turns the previous summary and the originals of newly folded messages into a summary."""

    def __call__(
        self, previous: str | None, messages: Sequence[Mapping[str, Any]], *, max_chars: int
    ) -> str: ...


class OfflineSummarizer:
    """Deterministic, model-free summary: the previous summary, then each user request, each
    tool call and each assistant conclusion in order, with message ids, cut to fit."""

    def __call__(
        self, previous: str | None, messages: Sequence[Mapping[str, Any]], *, max_chars: int
    ) -> str:
        items: list[str] = []
        for message in messages:
            mid = message.get("id", "?")
            if is_genuine_user(message):
                items.append(f"- [{mid}] user asked: {one_line(text_of(message), _ITEM_CHARS)}")
            elif message.get("role") == "assistant":
                calls = [f"{name} ({cid})" for cid, name in tool_calls(message)]
                if calls:
                    items.append(f"- [{mid}] assistant called {', '.join(calls)}")
                text = text_of(message)
                if text.strip():
                    items.append(f"- [{mid}] assistant: {one_line(text, _ITEM_CHARS)}")
            elif result_slots(message):
                errors = sum(1 for s in result_slots(message) if s.is_error)
                if errors:
                    items.append(f"- [{mid}] {errors} tool result(s) were errors")
        head = f"{previous.strip()}\n" if previous and previous.strip() else ""
        body = "\n".join(items)
        summary = head + body
        if len(summary) <= max_chars:
            return summary
        # Over budget: keep the oldest context (the task) and the newest items, drop the middle.
        marker = "\n- ... (earlier items omitted; use conversation_search) ...\n"
        room = max_chars - len(marker)
        return summary[: room // 3] + marker + summary[-(room - room // 3) :]


class CallableSummarizer:
    """Adapts any ``fn(prompt: str) -> str`` (for example a runtime's own model call).

    The prompt holds the previous summary and a transcript of the folded originals (never
    placeholders). A call that raises, exceeds ``timeout_s`` or returns blank or an error
    string raises `SummarizerError`, so the fold changes nothing.
    """

    def __init__(self, fn: Callable[[str], str], *, timeout_s: float = 120.0) -> None:
        self.fn = fn
        self.timeout_s = timeout_s

    def prompt(
        self, previous: str | None, messages: Sequence[Mapping[str, Any]], max_chars: int
    ) -> str:
        lines = [
            "Summarize the conversation below for the assistant that continues it.",
            f"Keep it under {max_chars} characters. Keep user requests, decisions, facts, ids,",
            "file paths and open tasks; drop chatter. Cite message ids like [m12].",
        ]
        if previous:
            lines += ["", "Summary so far:", previous]
        lines += ["", "New messages:"]
        for message in messages:
            text = text_of(message)
            calls = ", ".join(f"{n}({cid})" for cid, n in tool_calls(message))
            results = " ".join(s.text()[:2000] for s in result_slots(message))
            body = " | ".join(
                part for part in (text[:4000], calls and f"calls {calls}", results) if part
            )
            lines.append(f"[{message.get('id', '?')}] {message.get('role')}: {body}")
        return "\n".join(lines)

    def __call__(
        self, previous: str | None, messages: Sequence[Mapping[str, Any]], *, max_chars: int
    ) -> str:
        prompt = self.prompt(previous, messages, max_chars)
        pool = concurrent.futures.ThreadPoolExecutor(1)
        try:
            answer = pool.submit(self.fn, prompt).result(timeout=self.timeout_s)
        except concurrent.futures.TimeoutError:
            raise SummarizerError(f"summarizer took longer than {self.timeout_s:.0f}s") from None
        except Exception as exc:
            raise SummarizerError(f"summarizer failed: {type(exc).__name__}: {exc}") from exc
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if not isinstance(answer, str) or not answer.strip():
            raise SummarizerError("summarizer returned an empty summary")
        if answer.lstrip().lower().startswith(("error", "i'm sorry", "i cannot")):
            raise SummarizerError(
                f"summarizer returned an error instead of a summary: {answer[:120]!r}"
            )
        return answer.strip()[:max_chars]


def folded_prefix(
    conversation_id: str, summary: str, through_id: str, generation: int
) -> list[dict[str, Any]]:
    """The two messages that stand for a folded prefix: a user-role preamble with the summary
    and a pointer to the retrieval tools, and a short assistant acknowledgement. Their bytes
    depend only on the fold, so they stay identical until the next fold."""
    preamble = (
        f"[Summary of the earlier conversation, through message {json.dumps(through_id)}]\n"
        f"{summary}\n\n"
        "The full earlier messages are stored unchanged. Fetch one with "
        f"{read_call(conversation_id, 'MESSAGE_ID')} or find them with "
        f"conversation_search(query=..., conversation_id={json.dumps(conversation_id)})."
    )
    return [
        {"role": "user", "content": preamble, "id": f"fold-{generation}-summary", "meta": True},
        {
            "role": "assistant",
            "content": "Understood: I have the summary and will fetch earlier details when needed.",
            "id": f"fold-{generation}-ack",
        },
    ]
