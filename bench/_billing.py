"""The provider's bill for a replayed session, and the re-reads a trimmed replay causes.

Two pure parts, tested on hand-built conversations in tests/test_bench_billing.py:

- `PromptCache`: one conversation's prompt cache as Anthropic bills it. Each request's body
  is a list of message serializations; the longest prefix it shares with a live cached body
  is a cache read (0.1x the base input price), the rest a cache write (1.25x for the
  5-minute cache, 2x for the 1-hour one) and is cached from then on. A cached body lives
  ``ttl_s`` seconds from its last use (a read refreshes it); without a TTL it never
  expires (the "unit" model: a warm cache, request counts only). A request shorter than
  the provider's minimum cacheable prompt is billed uncached (1x) and caches nothing.
- `RereadDetector`: given the history a strategy was handed, what it sent, and the message
  the model wrote next (in the log), the originals the model would have had to read back:
  a distinctive token of the next message (an identifier, a path, a number: anything with a
  digit, ``_``, ``/``, ``.``, ``-`` or an inner capital) found in the history but nowhere in
  what was sent, or a tool call on the same path or command as an earlier call whose result
  was not sent verbatim. Each is billed as one ``conversation_read`` round trip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leanreplay.placeholders import (
    call_inputs,
    is_genuine_user,
    load_input,
    result_slots,
    tool_calls,
)

READ = 0.1
WRITE_5M = 1.25
WRITE_1H = 2.0
CHARS_PER_TOKEN = 4
HEAD, TAIL = '{"messages":[', "]}"
MAX_ENTRIES = 4  # cached bodies kept per conversation (a prefix of the newest is dropped)
READ_PAGE_CHARS = 40_000  # conversation_read's longest answer (MAX_ANSWER_CHARS)


def write_price(ttl_s: float | None) -> float:
    """Anthropic's cache-write multiplier: 2x for a TTL over 5 minutes, else 1.25x."""
    return WRITE_1H if ttl_s is not None and ttl_s > 300 else WRITE_5M


def body_chars(parts: Sequence[str]) -> int:
    """Length of ``{"messages":[p1,p2,...]}``."""
    return len(HEAD) + sum(len(p) for p in parts) + max(0, len(parts) - 1) + len(TAIL)


def common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest equal prefix, by halving (slice comparisons run in C)
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_bill(previous: str, body: str) -> Bill:
    """A request whose cache holds only the previous request's ``previous`` (a warm cache,
    one body kept): what ``body`` shares with it from the start is read, the rest written."""
    read = common_prefix(previous, body)
    return Bill(read=read, write=len(body) - read)


def shared_prefix(old: Sequence[str], new: Sequence[str]) -> tuple[int, int]:
    """(chars, whole messages) that the bodies of ``old`` and ``new`` share from the start."""
    read, equal = len(HEAD), 0
    n0, n1 = len(old), len(new)
    for i in range(min(n0, n1)):
        a, b = old[i], new[i]
        if a is not b and a != b:
            return read + common_prefix(a, b), equal
        read += len(a)
        equal += 1
        # the character after it: "," before another message, "]" at the end
        if (i < n0 - 1) != (i < n1 - 1):
            return read, equal
        read += 1
    return read + (len(TAIL) - 1 if n0 == n1 else 0), equal


@dataclass
class Bill:
    """One request: chars read from the cache, written to it, and sent uncached."""

    read: int = 0
    write: int = 0
    uncached: int = 0  # a request under the minimum cacheable length: 1x, nothing cached
    expired: bool = False  # the cache held a prefix of it once, but that had expired

    @property
    def chars(self) -> int:
        return self.read + self.write + self.uncached

    def billed(self, write: float) -> float:
        """Billed input tokens (chars / 4) at these prices."""
        return (READ * self.read + write * self.write + self.uncached) / CHARS_PER_TOKEN


@dataclass
class _Entry:
    parts: list[str]
    used: float


@dataclass
class PromptCache:
    """One conversation's prompt cache (see the module docstring)."""

    ttl_s: float | None = 300.0
    min_tokens: int = 0
    entries: list[_Entry] = field(default_factory=list)

    def request(self, parts: Sequence[str], at: float | None) -> Bill:
        """Bill a request whose body is ``parts``, sent at ``at`` (seconds; None: no clock,
        so nothing expires)."""
        parts = list(parts)
        total = body_chars(parts)
        if total < self.min_tokens * CHARS_PER_TOKEN:
            return Bill(uncached=total)
        live: list[_Entry] = []
        expired_best = 0
        for entry in self.entries:
            alive = self.ttl_s is None or at is None or at - entry.used <= self.ttl_s
            if alive:
                live.append(entry)
            else:
                expired_best = max(expired_best, shared_prefix(entry.parts, parts)[0])
        best, hit = 0, None
        for entry in live:
            read = shared_prefix(entry.parts, parts)[0]
            if read > best:
                best, hit = read, entry
        if hit is not None and at is not None:
            hit.used = max(hit.used, at)  # a read refreshes the cached prefix's lifetime
        read = best
        now = at if at is not None else 0.0
        # The new body is cached; bodies it extends are covered by it (and it is newer).
        kept = [e for e in live if shared_prefix(e.parts, parts)[1] < len(e.parts)]
        self.entries = [*kept[-(MAX_ENTRIES - 1) :], _Entry(parts, now)]
        return Bill(read=read, write=total - read, expired=expired_best > read)


# --- thinking ---------------------------------------------------------------------------

# Models that keep only the last turn's thinking in the context they bill (Anthropic's
# extended-thinking docs: Opus 4.5 and later keep every earlier turn's; Sonnet 4.5 and
# earlier, and Haiku 4.5, only the last turn's).
STRIPS_EARLIER_THINKING = ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-sonnet-4-2")


class ThinkingAsBilled:
    """The body Anthropic bills: for a model that keeps only the last turn's thinking, the
    thinking blocks of assistant turns before the last genuine user message left out."""

    def __init__(self) -> None:
        self.known: dict[int, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}

    def __call__(
        self, messages: Sequence[Mapping[str, Any]], model: str | None
    ) -> Sequence[Mapping[str, Any]]:
        if not model or not model.startswith(STRIPS_EARLIER_THINKING):
            return messages
        last = max((i for i, m in enumerate(messages) if is_genuine_user(m)), default=0)
        out = list(messages)
        for i in range(last):
            m = messages[i]
            content = m.get("content")
            if m.get("role") != "assistant" or not isinstance(content, list):
                continue
            known = self.known.get(id(m))
            if known is None or known[0] is not m:
                kept = [
                    b
                    for b in content
                    if not (
                        isinstance(b, Mapping)
                        and b.get("type") in ("thinking", "redacted_thinking")
                    )
                ]
                known = (m, {**m, "content": kept} if kept and len(kept) < len(content) else m)
                self.known[id(m)] = known
            out[i] = known[1]
        return out


# --- re-reads ---------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]")
_FILE_KEYS = ("file_path", "path", "notebook_path", "filename", "file")
_SKIP_KEYS = frozenset({"signature", "data", "id", "tool_use_id", "tool_call_id", "type"})


def distinctive(token: str) -> bool:
    """An identifier-like token: a path, a name with a digit, ``_``, ``.``, ``-`` or an inner
    capital, or a number of 5 digits or more. Plain words never are."""
    if len(token) < 4:
        return False
    if token.isdigit():
        return len(token) >= 5
    if any(c in token for c in "_/.-") or any(c.isdigit() for c in token):
        return True
    return any(c.isupper() for c in token[1:]) and not token.isupper()


def tokens_of(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text) if distinctive(t)}


def strings_of(value: Any, out: list[str] | None = None) -> list[str]:
    """Every string a message carries (text, results, tool inputs, parsed JSON arguments),
    without signatures, ids and type tags."""
    out = [] if out is None else out
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if key not in _SKIP_KEYS:
                strings_of(inner, out)
    elif isinstance(value, list):
        for inner in value:
            strings_of(inner, out)
    return out


def message_tokens(message: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for text in strings_of(message):
        found |= tokens_of(text)
    return found


def call_targets(message: Mapping[str, Any]) -> list[tuple[str, str | None, str | None]]:
    """(call id, path, command) of each tool call in an assistant message."""
    out = []
    for call_id, value in call_inputs(message):
        if isinstance(value, str):
            try:
                value = load_input(value)
            except ValueError:
                continue
        if not isinstance(value, Mapping):
            continue
        path = next(
            (v.strip() for k in _FILE_KEYS if isinstance(v := value.get(k), str) and v.strip()),
            None,
        )
        command = value.get("command") or value.get("cmd")
        command = command.strip() if isinstance(command, str) and command.strip() else None
        out.append((call_id, path, command))
    return out


@dataclass(frozen=True)
class Reread:
    """One original the model would have read back: where it is and its text."""

    index: int  # in the history
    tool_call_id: str | None
    text: str
    reason: str  # "token <t>" or "same path <p>" / "same command <c>"


class RereadDetector:
    """Re-reads of one conversation, fed its history message by message (see the module
    docstring). Token sets are cached per message object."""

    def __init__(self) -> None:
        self.history: list[Mapping[str, Any]] = []
        self.index: dict[str, list[int]] = {}  # token -> history positions holding it
        self.calls: dict[str, list[int]] = {}  # "path:<p>" / "cmd:<c>" -> call positions
        self.call_ids: list[str] = []  # tool call id at each call position
        self.results: dict[str, tuple[int, str]] = {}  # call id -> (position, result text)
        self._tokens: dict[int, tuple[Mapping[str, Any], set[str]]] = {}

    def tokens(self, message: Mapping[str, Any]) -> set[str]:
        known = self._tokens.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        found = message_tokens(message)
        self._tokens[id(message)] = (message, found)
        return found

    def append(self, message: Mapping[str, Any]) -> None:
        i = len(self.history)
        self.history.append(message)
        for token in self.tokens(message):
            self.index.setdefault(token, []).append(i)
        if message.get("role") == "assistant":
            for call_id, path, command in call_targets(message):
                position = len(self.call_ids)
                self.call_ids.append(call_id)
                if path:
                    self.calls.setdefault(f"path:{path}", []).append(position)
                if command:
                    self.calls.setdefault(f"cmd:{command}", []).append(position)
        for slot in result_slots(message):
            self.results[slot.tool_call_id] = (i, slot.text())

    def read_back(self, reread: Reread, round_trip: Sequence[Mapping[str, Any]]) -> None:
        """Append a re-read's round trip; its result now stands for the original result (a
        later call on the same path sees the copy that was read back)."""
        start = len(self.history)
        self.extend(round_trip)
        if reread.tool_call_id is not None and reread.tool_call_id in self.results:
            for offset, message in enumerate(round_trip):
                for slot in result_slots(message):
                    self.results[reread.tool_call_id] = (start + offset, slot.text())

    def extend(self, messages: Iterable[Mapping[str, Any]]) -> None:
        for message in messages:
            self.append(message)

    def rereads(self, sent: Sequence[Mapping[str, Any]], nxt: Mapping[str, Any]) -> list[Reread]:
        """What the model, answering ``sent`` with ``nxt``, would have read back first."""
        sent_ids = {id(m) for m in sent}
        verbatim = {i for i, m in enumerate(self.history) if id(m) in sent_ids}
        history_ids = {id(m) for m in self.history}
        changed = [m for m in sent if id(m) not in history_ids]
        changed_tokens: set[str] = set()
        changed_results: dict[str, str] = {}
        for m in changed:
            changed_tokens |= self.tokens(m)
            for slot in result_slots(m):
                changed_results[slot.tool_call_id] = slot.text()
        found: dict[tuple[int, str | None], Reread] = {}
        for token in sorted(self.tokens(nxt)):
            where = self.index.get(token)
            if not where or token in changed_tokens or any(i in verbatim for i in where):
                continue
            i = where[-1]
            call_id, text = _part_with(self.history[i], token)
            found.setdefault((i, call_id), Reread(i, call_id, text, f"token {token}"))
        for _, path, command in call_targets(nxt):
            for key in (f"path:{path}" if path else None, f"cmd:{command}" if command else None):
                positions = self.calls.get(key) if key else None
                if not positions:
                    continue
                call_id = self.call_ids[positions[-1]]  # the latest call on it
                result = self.results.get(call_id)
                if result is None:
                    continue
                i, text = result
                if i in verbatim or changed_results.get(call_id) == text:
                    continue
                assert key is not None
                reason = ("same path " if key.startswith("path:") else "same command ") + key.split(
                    ":", 1
                )[1]
                found.setdefault((i, call_id), Reread(i, call_id, text, reason))
        return sorted(found.values(), key=lambda r: (r.index, r.tool_call_id or ""))


def _part_with(message: Mapping[str, Any], token: str) -> tuple[str | None, str]:
    """The part of ``message`` that holds ``token``: a tool result (its call id and text),
    a tool input, or the message's text."""
    for slot in result_slots(message):
        if token in slot.text():
            return slot.tool_call_id, slot.text()
    for call_id, value in call_inputs(message):
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if token in text:
            return call_id, text
    return None, "\n".join(s for s in strings_of(message) if token in s) or "\n".join(
        strings_of(message)
    )


def reread_round_trip(
    reread: Reread, provider: str, conversation_id: str, message_id: str, n: int
) -> list[dict[str, Any]]:
    """The two messages a ``conversation_read`` round trip adds: the model's call and the
    original (one page of it) as its result."""
    call_id = f"reread-{n}"
    args: dict[str, Any] = {"conversation_id": conversation_id, "message_id": message_id}
    if reread.tool_call_id:
        args["tool_call_id"] = reread.tool_call_id
    text = reread.text[:READ_PAGE_CHARS]
    if provider == "anthropic":
        return [
            {
                "role": "assistant",
                "id": f"{call_id}-call",
                "content": [
                    {"type": "tool_use", "id": call_id, "name": "conversation_read", "input": args}
                ],
            },
            {
                "role": "user",
                "id": f"{call_id}-result",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}],
            },
        ]
    return [
        {
            "role": "assistant",
            "id": f"{call_id}-call",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "conversation_read", "arguments": json.dumps(args)},
                }
            ],
        },
        {"role": "tool", "id": f"{call_id}-result", "tool_call_id": call_id, "content": text},
    ]


__all__ = [
    "Bill",
    "PromptCache",
    "Reread",
    "RereadDetector",
    "ThinkingAsBilled",
    "body_chars",
    "call_targets",
    "distinctive",
    "prefix_bill",
    "reread_round_trip",
    "tokens_of",
    "tool_calls",
    "write_price",
]
