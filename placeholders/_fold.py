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
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload, runtime_checkable

from ._checks import check_int
from ._errors import InvalidPolicyError, SummarizerError
from ._replay import call_inputs, compaction_start, read_call
from ._shapes import (
    content_chars,
    is_genuine_user,
    load_input,
    one_line,
    result_slots,
    text_of,
    tool_calls,
)

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


@dataclass(frozen=True)
class FoldPolicy:
    """When and how much to fold.

    Attributes:
        threshold_chars: fold once the unsummarized messages carry more than this.
        keep_last: messages kept verbatim at the end, before backing off to a user turn.
        max_summary_chars: the summary is cut to this length.
        cold_threshold_chars: a request that finds the provider's cache expired (see
            `ReplayPolicy.cache_ttl_s`) folds once the unsummarized messages carry more than
            this: that request is written in full anyway, so the fold costs no cache
            rewrite there. None: half of ``threshold_chars``; never above it.
    """

    threshold_chars: int = DEFAULT_FOLD_THRESHOLD_CHARS
    keep_last: int = DEFAULT_KEEP_LAST
    max_summary_chars: int = DEFAULT_MAX_SUMMARY_CHARS
    cold_threshold_chars: int | None = None

    def __post_init__(self) -> None:
        for name, minimum in (("threshold_chars", 1), ("keep_last", 1), ("max_summary_chars", 200)):
            check_int(name, getattr(self, name), minimum=minimum, error=InvalidPolicyError)
        if self.cold_threshold_chars is not None:
            check_int(
                "cold_threshold_chars",
                self.cold_threshold_chars,
                minimum=1,
                error=InvalidPolicyError,
            )

    def cold_threshold(self) -> int:
        """The threshold a fold uses at a request that finds the cache expired."""
        if self.cold_threshold_chars is None:
            return max(self.threshold_chars // 2, 1)
        return min(self.cold_threshold_chars, self.threshold_chars)


def fold_boundary(
    messages: Sequence[Mapping[str, Any]], start: int, policy: FoldPolicy
) -> tuple[int | None, str]:
    """Index of the first verbatim message after a fold of ``messages[start:]``, or None.

    ``start`` is where the unsummarized region begins (after the previous fold). Returns the
    boundary and a sentence saying why (or why not).

    A conversation the provider compacts itself (`compaction_start`: an Anthropic
    ``compaction`` block, a Responses ``compaction`` item after ``start``) is not folded: the
    replay already starts at the provider's compaction, and a fold would drop it.
    """
    provider = compaction_start(messages)
    if provider >= start and provider > 0:
        return None, (
            f"the provider compacted this conversation itself (message {provider}); the replay "
            "starts at its compaction, which a fold would drop"
        )
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


# The offline summarizer's ladder: heads shrink to these shares of their full length until the
# summary fits, then only the first two and the last few user requests are kept, fewer each step.
HEAD_SCALES = (1.0, 0.6, 0.4, 0.25, 0.15, 0.1)
KEPT_REQUESTS = (40, 20, 10, 4)


class OfflineSummarizer:
    """Deterministic, model-free summary of what a reader needs to continue: every genuine
    user request (its head), the files and commands the assistant touched (deduplicated,
    with counts), the errors met, and the last answer of each exchange, with message ids;
    the previous summary first. Heads shrink until it fits ``max_chars``."""

    def __call__(
        self, previous: str | None, messages: Sequence[Mapping[str, Any]], *, max_chars: int
    ) -> str:
        facts = _Facts(messages)
        earlier = (previous or "").strip()
        if len(earlier) > max_chars // 3:
            earlier = earlier[: max_chars // 3 - 4].rstrip() + " ..."
        head = f"{earlier}\n\n" if earlier else ""
        room = max_chars - len(head)
        ladder = [(x, None) for x in HEAD_SCALES] + [(HEAD_SCALES[-1], k) for k in KEPT_REQUESTS]
        for scale, keep in ladder[:-1]:
            fitting = facts.render(scale, keep, limit=room)
            if fitting is not None:
                return head + fitting
        body = facts.render(*ladder[-1])
        if len(body) <= room:
            return head + body
        return (head + body)[: max_chars - 4].rstrip() + " ..."


_FILE_KEYS = ("file_path", "path", "notebook_path", "filename", "file")
_ERROR_HINTS = ("Traceback (most recent call last)", "Error:", "error:", "ERROR", "Exception")


class _Facts:
    """What the offline summary says, gathered once from the folded originals."""

    def __init__(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.requests: list[tuple[str, str]] = []
        self.words: dict[str, list[str]] = {}  # request id -> its distinctive words
        self.answers: list[tuple[str, str]] = []  # the last answer of each exchange
        self.files: dict[str, Counter[str]] = {}
        self.commands: Counter[str] = Counter()
        self.errors: dict[tuple[str, str], str] = {}  # (tool, head) -> message id
        names: dict[str, str] = {}
        last_answer: tuple[str, str] | None = None
        for message in messages:
            mid = str(message.get("id", "?"))
            if is_genuine_user(message):
                if last_answer:
                    self.answers.append(last_answer)
                last_answer = None
                self.requests.append((mid, text_of(message)))
                self.words[mid] = _distinctive_words(self.requests[-1][1])
            elif message.get("role") == "assistant":
                names.update(tool_calls(message))
                for call_id, value in call_inputs(message):
                    self._touch(names.get(call_id, "unknown"), value)
                text = text_of(message)
                if text.strip():
                    last_answer = (mid, text)
            for slot in result_slots(message):
                text = slot.text()
                if slot.is_error or any(hint in text[:400] for hint in _ERROR_HINTS):
                    key = (names.get(slot.tool_call_id, "unknown"), one_line(text, 400))
                    self.errors.setdefault(key, mid)
        if last_answer:
            self.answers.append(last_answer)

    def _touch(self, tool: str, value: Any) -> None:
        if isinstance(value, str):
            try:
                value = load_input(value)
            except ValueError:
                return
        if not isinstance(value, Mapping):
            return
        for key in _FILE_KEYS:
            path = value.get(key)
            if isinstance(path, str) and path.strip():
                self.files.setdefault(path.strip(), Counter())[tool] += 1
        command = value.get("command") or value.get("cmd")
        if isinstance(command, str) and command.strip():
            self.commands[one_line(command, 400)] += 1

    @overload
    def render(self, scale: float, keep: int | None = None) -> str: ...

    @overload
    def render(self, scale: float, keep: int | None = None, *, limit: int) -> str | None: ...

    def render(
        self, scale: float, keep: int | None = None, *, limit: int | None = None
    ) -> str | None:
        """The summary with heads cut to ``scale`` of their full length; with ``keep``, only
        the first two and the last ``keep - 2`` user requests, the rest counted. With
        ``limit``, None as soon as it is sure to be longer (a fold of 100,000 messages
        renders what fits, not every request at every scale)."""

        def cut(n: int) -> int:  # a head length
            return max(24, int(n * scale))

        def few(n: int) -> int:  # a number of lines
            return max(3, int(n * scale))

        parts: list[str] = []
        size = -1  # the length of "\n".join(parts)
        if self.requests:
            parts.append("User requests:")
            size += len(parts[-1]) + 1
            shown: Sequence[tuple[str, str] | None] = self.requests
            if keep is not None and len(shown) > keep:
                shown = [*self.requests[:2], None, *self.requests[-(keep - 2) :]]
            omitted = len(self.requests) - len(shown) + 1
            for item in shown:
                if item is None:
                    line = f"- ... ({omitted} earlier items omitted; use conversation_search) ..."
                else:
                    head = one_line(item[1], cut(240))
                    line = f"- [{item[0]}] {head}"
                    if head.endswith("..."):  # cut: its distinctive words past the head
                        head_lower = head.lower()
                        words = [w for w in self.words[item[0]] if w.lower() not in head_lower]
                        words = words[: max(2, int(6 * scale))]
                        line += f" (also: {', '.join(words)})" if words else ""
                parts.append(line)
                size += len(line) + 1
                if limit is not None and size > limit:
                    return None
        if self.files:
            ranked = sorted(self.files.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
            parts.append(f"Files touched ({len(ranked)}):")
            # Paths are what a reader looks for by name: up to 30 stay whole at every scale.
            for path, tools in ranked[:30]:
                uses = ", ".join(f"{tool} x{n}" for tool, n in sorted(tools.items()))
                parts.append(f"- {one_line(path, max(cut(160), 100))} ({uses})")
        if self.commands:
            ranked_commands = sorted(self.commands.items(), key=lambda kv: (-kv[1], kv[0]))
            runs = sum(self.commands.values())
            parts.append(f"Commands run ({runs}, {len(ranked_commands)} distinct):")
            for command, n in ranked_commands[: few(20)]:
                parts.append(f"- {one_line(command, cut(120))}" + (f" (x{n})" if n > 1 else ""))
        if self.errors:
            parts.append(f"Errors met ({len(self.errors)}):")
            for (tool, text), mid in list(self.errors.items())[-few(12) :]:
                parts.append(f"- [{mid}] {tool}: {one_line(text, cut(160))}")
        if self.answers:
            parts.append("Answers (the last of each exchange):")
            for mid, text in self.answers[-few(20) :]:
                parts.append(f"- [{mid}] {one_line(text, cut(300))}")
        body = "\n".join(parts)
        return None if limit is not None and len(body) > limit else body


_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{4,}")


MAX_WORD_SCAN_CHARS = 50_000  # a request's words are looked for in its first 50,000 chars


def _distinctive_words(text: str) -> list[str]:
    """The 12 longest distinct words (5 letters or more) of a request, longest first (ties
    alphabetical): what a reader would search it by, shown past its head."""
    words = set(_WORD.findall(text[:MAX_WORD_SCAN_CHARS]))
    return sorted(words, key=lambda w: (-len(w), w))[:12]


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
    cid = json.dumps(conversation_id)
    preamble = (
        f"[Summary of the earlier conversation, through message {json.dumps(through_id)}]\n"
        f"{summary}\n\n"
        "This summary leaves most details out; the full earlier messages are stored unchanged "
        "and searchable. Before redoing earlier work (re-reading a file, re-running a "
        "command, asking the user again), find what you need: search with "
        f'conversation_search(query="<words, a path, a command or an error>", '
        f"conversation_id={cid}) and read a hit, or a message id named above, with "
        f"{read_call(conversation_id, 'MESSAGE_ID')}."
    )
    return [
        {"role": "user", "content": preamble, "id": f"fold-{generation}-summary", "meta": True},
        {
            "role": "assistant",
            "content": "Understood: I have the summary and will fetch earlier details when needed.",
            "id": f"fold-{generation}-ack",
        },
    ]
