"""The replay transformer: stale, large tool results become retrieval placeholders."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import InvalidMessagesError
from ._pairing import BLOCK_IDS_KEY, repair_pairing
from ._shapes import ResultSlot, content_chars, is_genuine_user, result_slots, tool_calls

__all__ = [
    "DEFAULT_KEEP_ASSISTANT_TURNS",
    "DEFAULT_KEEP_USER_EXCHANGES",
    "DEFAULT_MIN_CHARS",
    "DEFAULT_PREVIEW_CHARS",
    "PLACEHOLDER_MARKER",
    "AgeUnit",
    "ReplayPolicy",
    "ReplayResult",
    "is_placeholder",
    "read_call",
    "replay",
    "stale_before",
]

DEFAULT_MIN_CHARS = 2000
DEFAULT_KEEP_USER_EXCHANGES = 2
DEFAULT_KEEP_ASSISTANT_TURNS = 5
DEFAULT_PREVIEW_CHARS = 200
MAX_PREVIEW_CHARS = 2000
PLACEHOLDER_MARKER = "[elided tool result]"

AgeUnit = Literal["user_exchange", "assistant_turn"]
_AGE_UNITS = ("user_exchange", "assistant_turn")


def _check_count(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidMessagesError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise InvalidMessagesError(f"{name} must be >= {minimum}, got {value}")


@dataclass(frozen=True)
class ReplayPolicy:
    """What replay elides.

    Attributes:
        min_chars: a stale result is elided from this size (codepoints, images included).
        keep_user_exchanges: results in the last N genuine user exchanges stay verbatim.
        keep_assistant_turns: the same, counted in assistant turns, for ``age_unit=
            "assistant_turn"`` (single-task agent loops are one long exchange).
        age_unit: ``"user_exchange"`` (default) or ``"assistant_turn"``.
        preview_chars: length of the head excerpt in a placeholder; 0 leaves it out.
        exclude_tools: names of tools whose results are never elided.
        min_savings: elide in batches that save at least this many chars, so the replayed
            prefix (and a provider's prompt cache) changes rarely. 0 elides at once. A batch
            still under the threshold waits, so at most ``min_savings`` chars are held back.
    """

    min_chars: int = DEFAULT_MIN_CHARS
    keep_user_exchanges: int = DEFAULT_KEEP_USER_EXCHANGES
    keep_assistant_turns: int = DEFAULT_KEEP_ASSISTANT_TURNS
    age_unit: AgeUnit = "user_exchange"
    preview_chars: int = DEFAULT_PREVIEW_CHARS
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    min_savings: int = 0

    @classmethod
    def seed(cls) -> ReplayPolicy:
        """The original rule, exactly: results of >= 2,000 chars older than the last two
        genuine user exchanges become placeholders at once; nothing else changes."""
        return cls()

    def __post_init__(self) -> None:
        _check_count("min_chars", self.min_chars, 1)
        _check_count("keep_user_exchanges", self.keep_user_exchanges, 0)
        _check_count("keep_assistant_turns", self.keep_assistant_turns, 0)
        _check_count("preview_chars", self.preview_chars, 0)
        _check_count("min_savings", self.min_savings, 0)
        if self.preview_chars > MAX_PREVIEW_CHARS:
            raise InvalidMessagesError(
                f"preview_chars must be <= {MAX_PREVIEW_CHARS}, got {self.preview_chars}"
            )
        if self.age_unit not in _AGE_UNITS:
            raise InvalidMessagesError(
                f"age_unit must be one of {', '.join(_AGE_UNITS)}, got {self.age_unit!r}"
            )
        tools = self.exclude_tools
        if isinstance(tools, str) or not isinstance(tools, Iterable):
            raise InvalidMessagesError("exclude_tools must be a collection of tool names")
        names = frozenset(tools)
        if not all(isinstance(n, str) for n in names):
            raise InvalidMessagesError("exclude_tools must hold tool names (str)")
        object.__setattr__(self, "exclude_tools", names)


@dataclass(frozen=True)
class ReplayResult:
    """The lean messages and what it took to make them."""

    messages: list[dict[str, Any]]
    chars_in: int
    chars_out: int
    placeholders: int
    elided_chars: int
    notes: list[str] = field(default_factory=list)  # pairing repairs made for this replay

    def stats(self) -> dict[str, int]:
        return {
            "messages": len(self.messages),
            "chars_in": self.chars_in,
            "chars_out": self.chars_out,
            "placeholders": self.placeholders,
            "elided_chars": self.elided_chars,
        }


def read_call(conversation_id: str, message_id: str, tool_call_id: str | None = None) -> str:
    """The exact ``conversation_read(...)`` call text that a placeholder names."""
    args = f"conversation_id={_q(conversation_id)}, message_id={_q(message_id)}"
    if tool_call_id is not None:
        args += f", tool_call_id={_q(tool_call_id)}"
    return f"conversation_read({args})"


def is_placeholder(content: Any) -> bool:
    """True when a tool result's content is one of our placeholders (never elide twice)."""
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], Mapping):
        content = content[0].get("text")
    return (
        isinstance(content, str)
        and content.startswith(PLACEHOLDER_MARKER)
        and "conversation_read(" in content
    )


def replay(
    messages: Sequence[Mapping[str, Any]],
    *,
    conversation_id: str,
    policy: ReplayPolicy | None = None,
) -> ReplayResult:
    """Replace stale, large tool results with placeholders; keep everything else verbatim.

    The messages are first made valid for providers (`repair_pairing`: split records joined,
    orphan results left out, unanswered calls stubbed); ``notes`` lists what that changed.
    Pure: the input is never mutated, unchanged messages are passed through, and the same
    input always gives the same bytes.

    Args:
        messages: OpenAI Chat Completions or Anthropic Messages dicts. Messages whose results
            may be elided need a string ``"id"`` (the store assigns one).
        conversation_id: named in every placeholder's ``conversation_read`` call.
        policy: thresholds and options; `ReplayPolicy()` by default.

    Returns:
        The new message list (same shape as given) and its stats.

    Raises:
        InvalidMessagesError: a message is not a dict with a string role, or a message to be
            elided has no string id.
    """
    policy = policy or ReplayPolicy()
    if not isinstance(conversation_id, str) or not conversation_id:
        raise InvalidMessagesError("conversation_id must be a non-empty str")
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidMessagesError(f"messages must be a list, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise InvalidMessagesError(f"message {i} is not a dict with a string 'role'")
    messages, notes = repair_pairing(messages)
    chars_in = sum(content_chars(m) for m in messages)
    cutoff = stale_before(messages, policy)
    names: dict[str, str] = {}  # tool name of each call, from the assistant message before it
    pending: list[tuple[int, ResultSlot, str, int]] = []  # message, slot, text, savings
    chosen: list[tuple[int, ResultSlot, str, int]] = []
    batch_savings = 0
    for i in range(cutoff):
        message = messages[i]
        if message.get("role") == "assistant":
            names = dict(tool_calls(message))
            continue
        slots = result_slots(message)
        for slot in slots:
            size = slot.chars()
            if size < policy.min_chars or is_placeholder(slot.content):
                continue
            name = names.get(slot.tool_call_id, "unknown")
            if name in policy.exclude_tools:
                continue
            message_id = message.get("id")
            if BLOCK_IDS_KEY in message and slot.block is not None:
                message_id = message[BLOCK_IDS_KEY][slot.block]  # a joined message
            if not isinstance(message_id, str) or not message_id:
                raise InvalidMessagesError(
                    f"message {i} holds a stale tool result but has no string 'id'; store the "
                    "conversation first or give every message a stable id"
                )
            text = _placeholder(
                slot,
                name,
                size,
                policy,
                read_call(
                    conversation_id, message_id, slot.tool_call_id if len(slots) > 1 else None
                ),
            )
            savings = size - len(text)
            if savings <= 0:
                continue  # a placeholder must never make a message longer
            pending.append((i, slot, text, savings))
            batch_savings += savings
            # Batches are cut greedily from the oldest result, so the cut points depend only
            # on results already stale: later turns never move an earlier cut.
            if batch_savings >= policy.min_savings:
                chosen += pending
                pending, batch_savings = [], 0
    out = [m if isinstance(m, dict) else dict(m) for m in messages]
    copied: dict[int, dict[str, Any]] = {}
    elided = saved = 0
    for i, slot, text, savings in chosen:
        if i not in copied:
            copied[i] = dict(messages[i])
            if slot.block is not None:
                copied[i]["content"] = list(copied[i]["content"])
        message = copied[i]
        new_content: Any = (
            [{"type": "text", "text": text}] if isinstance(slot.content, list) else text
        )
        if slot.block is None:
            message["content"] = new_content
        else:
            block = dict(message["content"][slot.block])
            block["content"] = new_content
            message["content"][slot.block] = block
        out[i] = message
        elided += slot.chars()
        saved += savings
    return ReplayResult(
        messages=out,
        chars_in=chars_in,
        chars_out=chars_in - saved,
        placeholders=len(chosen),
        elided_chars=elided,
        notes=notes,
    )


def stale_before(messages: Sequence[Mapping[str, Any]], policy: ReplayPolicy) -> int:
    """Index where the protected recent part starts; tool results before it are stale."""
    if policy.age_unit == "user_exchange":
        keep = policy.keep_user_exchanges
        starts = [i for i, m in enumerate(messages) if is_genuine_user(m)]
    else:
        keep = policy.keep_assistant_turns
        starts = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if keep == 0:
        return len(messages)
    if len(starts) < keep:
        return 0
    return starts[-keep]


def _placeholder(slot: ResultSlot, name: str, size: int, policy: ReplayPolicy, call: str) -> str:
    text = slot.text()
    lines = text.count("\n") + (0 if text.endswith("\n") else 1) if text else 0
    if policy.age_unit == "user_exchange":
        why = f"older than the last {policy.keep_user_exchanges} user exchanges"
    else:
        why = f"older than the last {policy.keep_assistant_turns} assistant turns"
    images = sum(
        1
        for b in (slot.content if isinstance(slot.content, list) else ())
        if isinstance(b, Mapping) and b.get("type") in ("image", "image_url")
    )
    parts = [
        f"{PLACEHOLDER_MARKER} Output of tool {_q(name)} ({size:,} chars, "
        f"{lines:,} line{'' if lines == 1 else 's'}"
        + (f", {images} image{'s' if images != 1 else ''}" if images else "")
        + f") elided from this replay because it is {why}."
    ]
    if slot.is_error:
        parts.append("It was an error result.")
    if policy.preview_chars and text:
        head = text[: policy.preview_chars]
        more = "..." if len(text) > policy.preview_chars else ""
        parts.append(f"Head: {_q(head)}{more}")
    parts.append(f"Full original: {call}")
    return " ".join(parts)


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
