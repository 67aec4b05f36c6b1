"""The replay transformer: stale, large tool results and inputs become retrieval placeholders.

Two rules live here. The seed rule (`ReplayPolicy.seed`) elides a stale result the moment it
ages out. The default is cache-aware: the same kind of elision waits until it pays for itself
under a provider's prompt cache (a changed byte rewrites the cache from that point on), and
results, tool inputs and finished reasoning age by user exchanges *or* by assistant turns, so
a single long agent loop ages too. Both are pure functions of the message list.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._checks import check_int
from ._errors import InvalidMessagesError, InvalidPolicyError
from ._pairing import BLOCK_IDS_KEY, repair_pairing
from ._preview import cut_text, parse_cut, preview_parts, render_preview
from ._shapes import (
    ITEM_ROLES,
    ResultSlot,
    block_chars,
    block_text,
    content_chars,
    is_genuine_user,
    json_chars,
    load_input,
    nested_deeper,
    result_slots,
    role_of,
    tool_calls,
)

__all__ = [
    "CACHE_READ",
    "CACHE_WRITE",
    "DEFAULT_CACHE_TTL_S",
    "DEFAULT_FRESH_CAP_CHARS",
    "DEFAULT_FRESH_KEEP_CHARS",
    "DEFAULT_KEEP_ASSISTANT_TURNS",
    "DEFAULT_KEEP_USER_EXCHANGES",
    "DEFAULT_MIN_CHARS",
    "DEFAULT_MIN_REQUEST_CHARS",
    "DEFAULT_PRESSURE_CHARS",
    "DEFAULT_PREVIEW_CHARS",
    "DEFAULT_PREVIEW_SHAPE",
    "INPUT_MARKER",
    "PLACEHOLDER_MARKER",
    "AgeUnit",
    "ReplayPolicy",
    "ReplayResult",
    "Timing",
    "cache_expired",
    "call_inputs",
    "compaction_start",
    "is_placeholder",
    "parse_read_call",
    "read_call",
    "replay",
    "stale_before",
]

DEFAULT_MIN_CHARS = 2000
DEFAULT_KEEP_USER_EXCHANGES = 2
DEFAULT_KEEP_ASSISTANT_TURNS = 2
DEFAULT_PRESSURE_CHARS = 150_000
DEFAULT_PREVIEW_CHARS = 0  # bench_cost --sweep: cheaper on the adjusted bill
MAX_PREVIEW_CHARS = 2000
DEFAULT_PREVIEW_SHAPE: tuple[str, ...] = ("head",)
# A provider's prompt cache lives 5 minutes from its last use (Anthropic's default TTL; the
# 1-hour TTL costs twice the write price): a request after a longer gap rewrites it anyway.
DEFAULT_CACHE_TTL_S = 300.0
# A fresh result over this (about 5k tokens) is cut to its ends at once. bench_cost --sweep
# chose it on the re-read-adjusted bill: Claude Code -35.1% against -34.1% at 40,000 or
# None, mini-swe-agent and tau-bench unchanged from 12,500 up (README). 15,000 bills 0.6
# points less through one 17,660-char Read that was never read back, but Reads of 13,950 and
# 13,963 chars were: cut at 12,500, they cost 16 round trips (-31.6%), so the cap keeps a
# margin above them.
DEFAULT_FRESH_CAP_CHARS = 20_000
DEFAULT_FRESH_KEEP_CHARS = 4_000  # what a cut result shows: its first and last 2,000 chars
DEFAULT_MIN_REQUEST_CHARS = 20_000  # bench_cost --sweep: tau-bench never dearer (README)
PLACEHOLDER_MARKER = "[elided tool result]"
INPUT_MARKER = "[elided tool input]"
# In the text of an input that holds either placeholder (a replay of a replay), unless the
# JSON spells it with \u escapes: the cheap test before an input is parsed and walked.
_MARKED = "elided tool"
INPUT_FIELD_MIN_CHARS = 256  # string fields of a stale input shorter than this stay
# Prompt-cache prices relative to uncached input (Anthropic: read 0.1x, 5-minute write 1.25x).
CACHE_READ = 0.1
CACHE_WRITE = 1.25

AgeUnit = Literal["user_exchange", "assistant_turn", "exchange_or_turn"]
Timing = Literal["eager", "cache_aware"]
_AGE_UNITS = ("user_exchange", "assistant_turn", "exchange_or_turn")
_TIMINGS = ("eager", "cache_aware")


@dataclass(frozen=True)
class ReplayPolicy:
    """What replay elides, and when.

    Attributes:
        min_chars: a stale result (or tool input) is elided from this size (codepoints,
            images included; an input is measured as its JSON).
        keep_user_exchanges: results in the last N genuine user exchanges stay verbatim.
        keep_assistant_turns: the last N assistant turns stay verbatim (``age_unit=
            "assistant_turn"``; with ``"exchange_or_turn"``, the last N of the current
            exchange, so a single long agent loop ages too).
        age_unit: ``"exchange_or_turn"`` (default: stale when older than the last
            ``keep_user_exchanges`` exchanges *or* the last ``keep_assistant_turns`` turns of
            the current exchange), ``"user_exchange"`` or ``"assistant_turn"``.
        preview_chars: length of the head (and tail) excerpt in a placeholder; 0 leaves
            them out.
        preview_shape: what a result's placeholder shows of the original, any of ``"head"``
            (its first ``preview_chars``), ``"tail"`` (its last ``preview_chars``),
            ``"errors"`` (the first 3 lines that report a failure, 160 chars each) and
            ``"paths"`` (the first 5 file paths it mentions), always in that order; default
            ``("head",)``. A bench can count the re-reads each shape causes.
        exclude_tools: names of tools whose results and inputs are never elided.
        min_savings: elide in batches that save at least this many chars. 0 elides at once.
        timing: ``"cache_aware"`` (default) applies a batch of stale elisions only once it
            pays for the prompt-cache rewrite it causes (see `replay`); ``"eager"`` applies
            each as soon as it is stale.
        pressure_chars: with cache-aware timing, a request that would carry more than this
            (codepoints, as `content_chars` counts) applies its stale elisions at once,
            paid for or not, so the cache never lets a request grow unbounded.
        elide_inputs: also elide the long string fields of stale tool inputs (Anthropic
            ``tool_use.input``, OpenAI ``function.arguments``); the call keeps its keys.
        drop_thinking: leave out ``thinking`` / ``redacted_thinking`` blocks of assistant
            turns before the current exchange (default; Anthropic lets a request omit them,
            and strips them from the context itself before Opus 4.5; those of the current
            exchange, its tool loop's included, are always kept, signed and unchanged).
        cache_ttl_s: seconds a provider keeps a cached prefix after its last use (300, the
            5-minute cache; 3600 for the 1-hour one). With cache-aware timing, a request
            that comes more than this after the one before it (its cache has expired, so it
            is written in full anyway) applies every pending stale elision at once; the
            times come from `replay`'s ``times`` / ``now`` / ``last_request_at``.
        fresh_cap_chars: a text tool result over this many chars is cut even while fresh:
            replaced by its first and last ``fresh_keep_chars // 2`` chars and the exact
            ``conversation_read`` call that returns the rest (a string result: the call's
            ``offset`` is where the shown head ends). None never cuts. The in-turn
            compactor stays the emergency net for everything else. The default, 20,000
            (about 5k tokens), is the one bench_cost's sweep chose on the re-read-adjusted
            bill, with a margin above the results the model read back when cut.
        fresh_keep_chars: what a cut result keeps of the original, head and tail together.
        min_request_chars: with cache-aware timing, a request that would carry fewer chars
            than this (as ``pressure_chars`` counts them) applies no stale elision: there
            the saving is too small to pay for one ``conversation_read`` round trip the
            model may need to read an original back. 0 always decides on the cache alone.
            The default, 20,000 (about 5k tokens), is the one bench_cost's sweep chose on
            the re-read-adjusted bill: smaller floors leave tau-bench's short airline
            sessions dearer than no trimming.
    """

    min_chars: int = DEFAULT_MIN_CHARS
    keep_user_exchanges: int = DEFAULT_KEEP_USER_EXCHANGES
    keep_assistant_turns: int = DEFAULT_KEEP_ASSISTANT_TURNS
    age_unit: AgeUnit = "exchange_or_turn"
    preview_chars: int = DEFAULT_PREVIEW_CHARS
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    min_savings: int = 0
    timing: Timing = "cache_aware"
    pressure_chars: int = DEFAULT_PRESSURE_CHARS
    elide_inputs: bool = True
    drop_thinking: bool = True
    preview_shape: tuple[str, ...] = DEFAULT_PREVIEW_SHAPE
    cache_ttl_s: float = DEFAULT_CACHE_TTL_S
    fresh_cap_chars: int | None = DEFAULT_FRESH_CAP_CHARS
    fresh_keep_chars: int = DEFAULT_FRESH_KEEP_CHARS
    min_request_chars: int = DEFAULT_MIN_REQUEST_CHARS

    @classmethod
    def seed(cls) -> ReplayPolicy:
        """The original rule, exactly: tool results of >= 2,000 chars older than the last two
        genuine user exchanges become placeholders at once; nothing else changes."""
        return cls(
            age_unit="user_exchange",
            timing="eager",
            elide_inputs=False,
            fresh_cap_chars=None,
            drop_thinking=False,
            preview_chars=200,
        )

    def __post_init__(self) -> None:
        for name, minimum in (
            ("min_chars", 1),
            ("keep_user_exchanges", 0),
            ("keep_assistant_turns", 0),
            ("preview_chars", 0),
            ("min_savings", 0),
            ("pressure_chars", 1),
            ("fresh_keep_chars", 0),
            ("min_request_chars", 0),
        ):
            check_int(name, getattr(self, name), minimum=minimum, error=InvalidPolicyError)
        if self.fresh_cap_chars is not None:
            check_int("fresh_cap_chars", self.fresh_cap_chars, minimum=1, error=InvalidPolicyError)
            if self.fresh_keep_chars >= self.fresh_cap_chars:
                raise InvalidPolicyError(
                    f"fresh_keep_chars must be < fresh_cap_chars ({self.fresh_cap_chars:,}), "
                    f"got {self.fresh_keep_chars:,}: a cut result must be shorter than the cap"
                )
        ttl = self.cache_ttl_s
        if (
            isinstance(ttl, bool)
            or not isinstance(ttl, (int, float))
            or not math.isfinite(ttl)
            or ttl <= 0
        ):
            raise InvalidPolicyError(
                f"cache_ttl_s must be a number of seconds > 0 (300 for a 5-minute cache), "
                f"got {ttl!r}"
            )
        try:
            shape = preview_parts(self.preview_shape)
        except ValueError as exc:
            raise InvalidPolicyError(str(exc)) from None
        object.__setattr__(self, "preview_shape", shape)
        if self.preview_chars > MAX_PREVIEW_CHARS:
            raise InvalidPolicyError(
                f"preview_chars must be <= {MAX_PREVIEW_CHARS}, got {self.preview_chars}"
            )
        if self.age_unit not in _AGE_UNITS:
            raise InvalidPolicyError(
                f"age_unit must be one of {', '.join(_AGE_UNITS)}, got {self.age_unit!r}"
            )
        if self.timing not in _TIMINGS:
            raise InvalidPolicyError(
                f"timing must be one of {', '.join(_TIMINGS)}, got {self.timing!r}"
            )
        for name in ("elide_inputs", "drop_thinking"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidPolicyError(f"{name} must be a bool")
        tools = self.exclude_tools
        if isinstance(tools, str) or not isinstance(tools, Iterable):
            raise InvalidPolicyError("exclude_tools must be a collection of tool names")
        names = frozenset(tools)
        if not all(isinstance(n, str) for n in names):
            raise InvalidPolicyError("exclude_tools must hold tool names (str)")
        object.__setattr__(self, "exclude_tools", names)

    def why(self) -> str:
        """The age clause every placeholder of this policy carries (fixed bytes)."""
        exchanges = f"the last {self.keep_user_exchanges} user exchanges"
        turns = f"the last {self.keep_assistant_turns} assistant turns"
        if self.age_unit == "user_exchange":
            return f"older than {exchanges}"
        if self.age_unit == "assistant_turn":
            return f"older than {turns}"
        return f"older than {exchanges} or {turns}"


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


def read_call(
    conversation_id: str,
    message_id: str,
    tool_call_id: str | None = None,
    part: str | None = None,
) -> str:
    """The exact ``conversation_read(...)`` call text that a placeholder names."""
    args = f"conversation_id={_q(conversation_id)}, message_id={_q(message_id)}"
    if tool_call_id is not None:
        args += f", tool_call_id={_q(tool_call_id)}"
    if part is not None:
        args += f", part={_q(part)}"
    return f"conversation_read({args})"


_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_READ_CALL = re.compile(
    rf"conversation_read\(conversation_id=({_JSON_STRING}), message_id=({_JSON_STRING})"
    rf"(?:, tool_call_id=({_JSON_STRING}))?(?:, part=({_JSON_STRING}))?(?:, offset=(\d+))?\)"
)


def parse_read_call(text: str) -> dict[str, Any] | None:
    """The arguments of the first `read_call` text in ``text`` (a placeholder, a cut result,
    a truncation label, a search hit), ready for ``conversation_read``; None when it names
    no call.

    The inverse of `read_call`: ``parse_read_call(read_call(c, m, t, p))`` gives back
    ``{"conversation_id": c, "message_id": m, "tool_call_id": t, "part": p}`` (without the
    arguments that are None); a paged call's ``offset`` comes back as an int.
    """
    match = _READ_CALL.search(text)
    if match is None:
        return None
    names = ("conversation_id", "message_id", "tool_call_id", "part")
    *strings, offset = match.groups()
    out: dict[str, Any] = {
        n: json.loads(v) for n, v in zip(names, strings, strict=True) if v is not None
    }
    if offset is not None:
        out["offset"] = int(offset)
    return out


def is_placeholder(content: Any) -> bool:
    """True when a tool result's content (or a tool input's string field) is one of our
    placeholders (never elide twice)."""
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], Mapping):
        content = content[0].get("text")
    return (
        isinstance(content, str)
        and content.startswith((PLACEHOLDER_MARKER, INPUT_MARKER))
        and "conversation_read(" in content
    )


@dataclass
class _Item:
    """One possible elision: a tool result, the long fields of a tool input, or the thinking
    blocks of a finished assistant turn, at message ``index``."""

    index: int
    kind: Literal["result", "input", "thinking"]
    savings: int  # chars it saves, as its placeholder states them (the timing rule's unit)
    elided: int
    shrink: int = 0  # what it takes off `content_chars` of its message
    done: bool = False  # already a placeholder in the input (a replay of a replay)
    slot: ResultSlot | None = None
    text: str = ""
    call_id: str = ""
    mid: str = ""  # the stored message that holds it
    new_input: Any = None


def replay(
    messages: Sequence[Mapping[str, Any]],
    *,
    conversation_id: str,
    policy: ReplayPolicy | None = None,
    times: Mapping[str, float] | None = None,
    now: float | None = None,
    last_request_at: float | None = None,
) -> ReplayResult:
    """Replace stale, large tool results (and inputs) with placeholders; keep the rest verbatim.

    The messages are first made valid for providers (`repair_pairing`: split records joined,
    orphan results left out, unanswered calls stubbed); ``notes`` lists what that changed.
    Pure: the input is never mutated, unchanged messages are passed through, and the same
    input always gives the same bytes.

    Cache-aware timing (the default) decides from the message list alone. Every assistant
    message marks a past request (the one that produced it), and the end of the list is the
    current one. At each such point, in order, the elisions that have become stale since the
    last batch form a pending batch; it is applied when what it saves on cache reads,
    ``CACHE_READ x savings`` per request, times the requests still to come (guessed as the
    requests the current user exchange has made so far), covers the rewrite it causes,
    ``(CACHE_WRITE - CACHE_READ) x`` the chars from its first changed message to the end, or
    when the request would carry more than ``policy.pressure_chars``. Otherwise it waits
    and grows.
    So between two applied batches each replay is a byte-exact prefix extension of the one
    before, and the same messages always give the same bytes.

    Expiry: when the times of the requests are known, a request that comes more than
    ``policy.cache_ttl_s`` after the request before it finds the provider's cache expired
    (it pays a full write whatever it holds), so it applies its whole pending batch at once.
    A past request's time is the newest time in ``times`` among the messages before it
    (what an agent loop appended just before sending it); the current request's is ``now``
    (default: the same rule), and the request before it is at ``last_request_at`` (default:
    the same rule). The same messages and times always give the same bytes.

    A fresh text result over ``policy.fresh_cap_chars`` is cut at once, whatever its age
    (`ReplayPolicy`); when it goes stale, its cut form becomes a placeholder like any other.
    A provider's own compaction (`compaction_start`) is where the replay begins: the
    provider reads nothing before it.

    Args:
        messages: OpenAI Chat Completions or Anthropic Messages dicts. Messages whose content
            may be elided need a string ``"id"`` (the store assigns one).
        conversation_id: named in every placeholder's ``conversation_read`` call.
        policy: thresholds and options; `ReplayPolicy()` by default.
        times: when each message was stored, unix seconds by message id (a joined record's
            blocks by their own ids); messages without one are not counted. The store's
            append times are what `Workspace.replay` passes.
        now: when the current request goes out (unix seconds).
        last_request_at: when the conversation's previous request went out.

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
        if not isinstance(message, Mapping) or role_of(message) is None:
            raise InvalidMessagesError(
                f"message {i} is not a dict with a string 'role' (or a Responses item 'type')"
            )
    for what, value in (("now", now), ("last_request_at", last_request_at)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value)
        ):
            raise InvalidMessagesError(f"{what} must be unix seconds (a number), got {value!r}")
    messages, notes = repair_pairing(messages)
    sizes = [content_chars(m) for m in messages]
    chars_in = sum(sizes)
    start = compaction_start(messages)
    if start:
        # The provider drops everything before its own compaction: so does the replay.
        messages, more = repair_pairing(_from_compaction(messages, start))
        notes += more
        sizes = [content_chars(m) for m in messages]
    cap = policy.fresh_cap_chars
    if cap is not None and any(size > cap for size in sizes):
        messages, cuts = _cut_fresh(messages, policy, conversation_id)
        sizes = [content_chars(m) for m in messages]
    else:
        cuts = []
    if policy.timing == "eager":
        chosen = _eager(messages, policy, conversation_id)
    else:
        cold = _cold_points(messages, policy, times, now, last_request_at)
        chosen = _cache_aware(messages, policy, conversation_id, sizes, cold)
    if policy.drop_thinking:
        exchange = _last_exchange_start(messages)
        chosen += [
            item
            for i in range(exchange)
            if messages[i].get("role") == "assistant"
            for item in _thinking_items(i, messages[i])
        ]
    new = [item for item in chosen if not item.done]
    _check_ids(new)
    # A cut result that is also stale this time counts once: as the placeholder it became.
    replaced = {(item.index, item.slot.block) for item in new if item.slot is not None}
    cut = [item for item in cuts if item.slot and (item.index, item.slot.block) not in replaced]
    return ReplayResult(
        messages=_apply(messages, new),
        chars_in=chars_in,
        chars_out=sum(sizes) - sum(item.shrink for item in new),
        placeholders=sum(1 for item in new if item.kind != "thinking") + len(cut),
        elided_chars=sum(item.elided for item in new) + sum(item.elided for item in cut),
        notes=notes,
    )


def compaction_start(messages: Sequence[Mapping[str, Any]]) -> int:
    """Index of the message that holds the newest compaction the provider made itself (an
    Anthropic ``compaction`` block with content, an OpenAI Responses ``compaction`` item),
    or 0 when there is none. The provider reads nothing before it (Anthropic drops the
    content before the block; OpenAI says the items before the item can be dropped), so it
    is a fold boundary: `replay` starts there, after the leading system messages."""
    for i in range(len(messages) - 1, 0, -1):
        if _compaction_block(messages[i]) is not None:
            return i
    return 0


def _compaction_block(message: Mapping[str, Any]) -> int | None:
    """The position of the last provider compaction in a message (-1: the message is a
    Responses compaction item), or None."""
    if message.get("type") == "compaction" and "role" not in message:
        return -1 if isinstance(message.get("encrypted_content"), str) else None
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return None
    for n in range(len(content) - 1, -1, -1):
        block = content[n]
        if (
            isinstance(block, Mapping)
            and block.get("type") == "compaction"
            and (isinstance(block.get("content"), str) or block.get("encrypted_content"))
        ):
            return n  # a block whose content is None is a failed compaction: a no-op
    return None


# Anthropic takes a conversation that starts with a user turn; this one stands before an
# assistant message that opens with a compaction block (the API drops it with the rest).
COMPACTED_LEAD = {
    "role": "user",
    "content": "[The conversation before this point was compacted by the provider.]",
    "id": "provider-compaction-lead",
    "meta": True,
}


def _from_compaction(messages: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """The leading system messages, then the messages from the compaction at ``start`` on
    (its own message from the compaction block on, after `COMPACTED_LEAD`)."""
    lead = []
    for message in messages[:start]:
        if role_of(message) not in ("system", "developer"):
            break
        lead.append(message)
    first = messages[start]
    block = _compaction_block(first)
    if block is None or block < 0:  # a Responses item: a request may start with it
        return [*lead, first, *messages[start + 1 :]]
    if block > 0:
        first = {**first, "content": first["content"][block:]}
    return [*lead, dict(COMPACTED_LEAD), first, *messages[start + 1 :]]


def _cut_fresh(
    messages: list[dict[str, Any]], policy: ReplayPolicy, conversation_id: str
) -> tuple[list[dict[str, Any]], list[_Item]]:
    """The messages with every text tool result over ``policy.fresh_cap_chars`` cut, and
    one item per cut (its ``elided``: the chars not shown)."""
    cap = policy.fresh_cap_chars
    assert cap is not None
    items: list[_Item] = []
    names: dict[str, str] = {}
    for i, message in enumerate(messages):
        if role_of(message) == "assistant":
            names.update(tool_calls(message))
            continue
        slots = result_slots(message)
        for slot in slots:
            name = names.get(slot.tool_call_id, "unknown")
            if name in policy.exclude_tools or is_placeholder(slot.content):
                continue
            text = _text_only(slot.content)
            if text is None or len(text) <= cap or parse_cut(text) is not None:
                continue
            mid = _message_id(message, slot.block)
            if not mid:
                continue  # no call could bring the rest back: left whole, to the compactor
            call = read_call(conversation_id, mid, slot.tool_call_id if len(slots) > 1 else None)
            head = policy.fresh_keep_chars - policy.fresh_keep_chars // 2
            if isinstance(slot.content, str):
                call = f"{call[:-1]}, offset={head})"  # the first char the head leaves out
            new = cut_text(
                text,
                name,
                _line_count(text),
                cap,
                policy.fresh_keep_chars,
                call,
                error=slot.is_error,
            )
            shown = policy.fresh_keep_chars
            items.append(_Item(i, "result", 0, len(text) - shown, 0, slot=slot, text=new, mid=mid))
    if not items:
        return messages, []
    return _apply(messages, items), items


def _text_only(content: Any) -> str | None:
    """The text of a result made only of text (a string, or text blocks); None otherwise."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(block_text(b) is not None for b in content):
        return "\n".join(block_text(b) or "" for b in content)
    return None


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1) if text else 0


def cache_expired(
    messages: Sequence[Mapping[str, Any]],
    policy: ReplayPolicy | None = None,
    *,
    times: Mapping[str, float] | None = None,
    now: float | None = None,
    last_request_at: float | None = None,
) -> bool:
    """Whether the request at the end of ``messages`` comes more than ``policy.cache_ttl_s``
    after the request before it, so the provider's cached prefix has expired; the times are
    read as `replay` reads them. False when the times are unknown or the list ends with an
    assistant message (no request is pending)."""
    policy = policy or ReplayPolicy()
    n = len(messages)
    if not n or role_of(messages[n - 1]) == "assistant":
        return False
    return n in _cold_points(messages, policy, times, now, last_request_at)


def _cold_points(
    messages: Sequence[Mapping[str, Any]],
    policy: ReplayPolicy,
    times: Mapping[str, float] | None,
    now: float | None,
    last_request_at: float | None,
) -> set[int]:
    """The request points (see `_cache_aware`) whose request comes more than
    ``policy.cache_ttl_s`` after the request before it."""
    if times is None and now is None:
        return set()
    n = len(messages)
    points = [j for j in range(1, n) if _turn_start(messages, j)]
    current = n and role_of(messages[n - 1]) != "assistant"
    if current:
        points.append(n)
    newest: list[float | None] = [None]  # newest known time among messages[:j]
    for message in messages:
        seen = newest[-1]
        for mid in _ids_of(message):
            at = times.get(mid) if times is not None else None
            if isinstance(at, (int, float)) and not isinstance(at, bool) and math.isfinite(at):
                seen = at if seen is None else max(seen, at)
        newest.append(seen)
    cold: set[int] = set()
    before: float | None = None
    for k, point in enumerate(points):
        at = newest[point]
        last = before
        if current and k == len(points) - 1:
            at = now if now is not None else at
            last = last_request_at if last_request_at is not None else last
        if at is not None and last is not None and at - last > policy.cache_ttl_s:
            cold.add(point)
        before = newest[point]
    return cold


def _ids_of(message: Mapping[str, Any]) -> list[str]:
    ids = message.get(BLOCK_IDS_KEY)
    out = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    mid = message.get("id")
    if isinstance(mid, str):
        out.append(mid)
    return out


def _eager(
    messages: Sequence[Mapping[str, Any]], policy: ReplayPolicy, conversation_id: str
) -> list[_Item]:
    cutoff = stale_before(messages, policy)
    chosen: list[_Item] = []
    pending: list[_Item] = []
    batch = 0
    for item in _items(messages, policy, conversation_id, len(messages)):
        if item.index >= cutoff:
            continue
        pending.append(item)
        batch += item.savings
        # Batches are cut greedily from the oldest item, so the cut points depend only on
        # items already stale: later turns never move an earlier cut.
        if batch >= policy.min_savings:
            chosen += pending
            pending, batch = [], 0
    return chosen


def _cache_aware(
    messages: Sequence[Mapping[str, Any]],
    policy: ReplayPolicy,
    conversation_id: str,
    sizes: list[int],
    cold: set[int],
) -> list[_Item]:
    n = len(messages)
    # Decision points: each past request (the prefix before an assistant message) and the
    # current one (the whole list, unless it ends with an assistant message).
    points = [j for j in range(1, n) if _turn_start(messages, j)]
    if n and role_of(messages[n - 1]) != "assistant":
        points.append(n)
    if not points:
        return []
    items = sorted(
        _items(messages, policy, conversation_id, points[-1]), key=lambda item: item.index
    )
    if not items:
        return []
    # Sizes as if every possible elision were made: the same whether or not the input is
    # already a replay, so a replay of a replay decides exactly as the first one did.
    post = list(sizes)
    for item in items:
        if not item.done:
            post[item.index] -= item.shrink
    if policy.drop_thinking:
        for i, message in enumerate(messages):
            if message.get("role") == "assistant":
                post[i] -= sum(item.shrink for item in _thinking_items(i, message))
    prefix = [0]
    for size in post:
        prefix.append(prefix[-1] + size)
    starts: list[int] = []  # genuine user messages seen so far
    turns: list[int] = []  # assistant messages seen so far
    chosen: list[_Item] = []
    pending: list[_Item] = []  # stale, not yet applied; in message order
    pending_savings = 0
    # Items not yet stale are items[due:] (in message order, so the ones a boundary makes
    # stale are always the next ones); running sums of their savings answer "how much is
    # still unapplied before this point" without a pass over them at every point.
    due = 0
    indices = [item.index for item in items]
    saved_before = [0]
    for item in items:
        saved_before.append(saved_before[-1] + item.savings)
    seen = 0
    for point in points:
        for j in range(seen, point):
            if is_genuine_user(messages[j]):
                starts.append(j)
            elif _turn_start(messages, j):
                turns.append(j)
        seen = point
        cutoff = _boundary(starts, turns, point, policy)
        while due < len(items) and items[due].index < cutoff:
            pending.append(items[due])
            pending_savings += items[due].savings
            due += 1
        if not pending:
            continue
        savings = pending_savings
        # The elisions not yet due, still at full size in this request.
        unapplied = saved_before[max(bisect_left(indices, point), due)] - saved_before[due]
        size = prefix[point] + unapplied + savings  # this request with nothing pending applied
        if size < policy.min_request_chars:
            continue  # too small to save what one re-read of an original costs
        if point in cold:  # the cache expired: this request is written in full anyway
            chosen += pending
            pending, pending_savings = [], 0
            continue
        if savings < policy.min_savings:
            continue
        first = pending[0].index
        # What the batch rewrites: the chars from its first changed message to the end,
        # with the elisions not yet due still at full size.
        rewrite = (CACHE_WRITE - CACHE_READ) * (prefix[point] - prefix[first] + unapplied)
        # Requests still to come, guessed as many as the current exchange has made so far.
        exchange = starts[-1] if starts else 0
        future = 1 + len(turns) - bisect_left(turns, exchange)
        if future * CACHE_READ * savings >= rewrite or size > policy.pressure_chars:
            chosen += pending
            pending, pending_savings = [], 0
    return chosen


def _turn_start(messages: Sequence[Mapping[str, Any]], i: int) -> bool:
    """An assistant message, or the first of a run of Responses items of one assistant turn
    (reasoning, function calls and the message that come back from one request)."""
    if role_of(messages[i]) != "assistant":
        return False
    if i == 0 or role_of(messages[i - 1]) != "assistant":
        return True
    return not any(_is_item(m) for m in (messages[i - 1], messages[i]))


def _is_item(message: Mapping[str, Any]) -> bool:
    return "role" not in message and message.get("type") in ITEM_ROLES


def stale_before(messages: Sequence[Mapping[str, Any]], policy: ReplayPolicy) -> int:
    """Index where the protected recent part starts; tool results before it are stale.

    The furthest boundary reached at any request so far or at the whole list: what was stale
    once stays stale, so a new exchange (which moves the exchange-or-turn boundary back to the
    previous exchanges) never brings an elided original back."""
    starts = [i for i, m in enumerate(messages) if is_genuine_user(m)]
    turns = [i for i in range(len(messages)) if _turn_start(messages, i)]
    ends = [j for j in turns if j > 0] + [len(messages)]
    return max(_boundary(starts, turns, end, policy) for end in ends)


def _boundary(starts: list[int], turns: list[int], end: int, policy: ReplayPolicy) -> int:
    """The stale boundary of the request that ends at ``end`` (positions at or after it are
    not counted)."""
    by_exchange = _kth_last(starts, policy.keep_user_exchanges, end)
    if policy.age_unit == "user_exchange":
        return by_exchange
    by_turn = _kth_last(turns, policy.keep_assistant_turns, end)
    if policy.age_unit == "assistant_turn":
        return by_turn
    # Turns count only inside the current exchange; before it, exchanges do the ageing.
    seen = bisect_left(starts, end)
    current = starts[seen - 1] if seen else 0
    return max(by_exchange, by_turn if by_turn > current else 0)


def _kth_last(positions: list[int], keep: int, end: int) -> int:
    if keep == 0:
        return end
    seen = bisect_left(positions, end)
    if seen < keep:
        return 0
    return positions[seen - keep]


def _last_exchange_start(messages: Sequence[Mapping[str, Any]]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if is_genuine_user(messages[i]):
            return i
    return 0


def _items(
    messages: Sequence[Mapping[str, Any]], policy: ReplayPolicy, conversation_id: str, end: int
) -> list[_Item]:
    """Every elision the policy could ever make in ``messages[:end]``, oldest first."""
    items: list[_Item] = []
    names: dict[str, str] = {}  # tool name of each call, from the assistant message before it
    for i in range(end):
        message = messages[i]
        if role_of(message) == "assistant":
            names.update(tool_calls(message))  # a Responses turn is several items
            if policy.elide_inputs:
                items += _input_items(i, message, policy, conversation_id)
            continue
        slots = result_slots(message)
        for slot in slots:
            name = names.get(slot.tool_call_id, "unknown")
            if name in policy.exclude_tools:
                continue
            size = slot.chars()
            if is_placeholder(slot.content):
                stated = _stated_size(slot.text())
                if stated is not None:
                    saved = stated - size
                    items.append(_Item(i, "result", saved, stated, saved, done=True, slot=slot))
                continue
            if size < policy.min_chars:
                continue
            message_id = _message_id(message, slot.block)
            text, stated = _placeholder(
                slot,
                name,
                size,
                policy,
                read_call(
                    conversation_id, message_id, slot.tool_call_id if len(slots) > 1 else None
                ),
            )
            # Savings are counted from the original's size, as the placeholder states it (a
            # cut result's too), so a replay of a replay decides as the first did.
            shrink = size - len(text)
            if shrink > 0:  # a placeholder must never make a message longer
                items.append(
                    _Item(
                        i,
                        "result",
                        stated - len(text),
                        stated,
                        shrink,
                        slot=slot,
                        text=text,
                        mid=message_id,
                    )
                )
    return items


_STATED_RESULT = re.compile(
    re.escape(PLACEHOLDER_MARKER) + r' Output of tool "(?:[^"\\]|\\.)*" \(([\d,]+) chars'
)
_STATED_INPUT = re.compile(re.escape(INPUT_MARKER) + r" ([\d,]+) chars of this")


def _stated_size(text: str) -> int | None:
    """The original size a placeholder of ours states, or None for other text."""
    match = _STATED_RESULT.match(text) or _STATED_INPUT.match(text)
    return int(match.group(1).replace(",", "")) if match else None


def _message_id(message: Mapping[str, Any], block: int | None) -> str:
    """The stored id of a message (of its content block ``block``, when the replay joined
    records a log had split), or "" (an item without one fails only if it is chosen)."""
    ids = message.get(BLOCK_IDS_KEY)
    if block is not None and isinstance(ids, list) and block < len(ids):
        message_id = ids[block]
    else:
        message_id = message.get("id")
    return message_id if isinstance(message_id, str) else ""


def _check_ids(chosen: list[_Item]) -> None:
    for item in chosen:
        if not item.mid and item.kind != "thinking":
            what = "tool result" if item.kind == "result" else "tool input"
            raise InvalidMessagesError(
                f"message {item.index} holds a stale {what} but has no string 'id'; store the "
                "conversation first or give every message a stable id"
            )


def _input_items(
    i: int, message: Mapping[str, Any], policy: ReplayPolicy, conversation_id: str
) -> list[_Item]:
    items = []
    for call_id, name, value, block in _call_inputs(message):
        is_text = block is None
        if name in policy.exclude_tools:
            continue
        if is_text:
            size = len(value)
            if size < policy.min_chars and _MARKED not in value and "\\u" not in value:
                continue  # too short to elide, and it holds no placeholder (nor an escape)
            try:
                parsed = load_input(value)
            except ValueError:
                # Not JSON (the provider could not read an edited copy either), or nested too
                # deeply to inspect: replayed as it is.
                continue
        else:
            if nested_deeper(value):
                continue  # too deep to inspect: replayed as it is
            parsed = value
            dumped = json.dumps(value, ensure_ascii=False, sort_keys=True)
            size = len(dumped)
            if size < policy.min_chars and _MARKED not in dumped:
                continue  # too short to elide, and it holds no placeholder
        mid = _message_id(message, block)
        call = read_call(conversation_id, mid, call_id, "input")
        new, elided, saved, prior = _elide_fields(parsed, name, policy, call)
        if prior:  # a replay of a replay: this input is already elided
            items.append(_Item(i, "input", prior, 0, done=True, call_id=call_id, mid=mid))
            continue
        if size < policy.min_chars or saved <= 0:
            continue
        if is_text:
            new = json.dumps(new, ensure_ascii=False)
            shrink = size - len(new)
        else:
            shrink = size - len(json.dumps(new, ensure_ascii=False, sort_keys=True))
        if shrink > 0:
            items.append(
                _Item(i, "input", saved, elided, shrink, call_id=call_id, new_input=new, mid=mid)
            )
    return items


def call_inputs(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(call id, input)`` of every tool call an assistant message makes: Anthropic
    ``tool_use.input`` (an object), OpenAI ``function.arguments`` or a Responses
    ``function_call`` item's ``arguments`` (JSON strings), as stored."""
    return [(call_id, value) for call_id, _, value, _ in _call_inputs(message)]


def _call_inputs(message: Mapping[str, Any]) -> list[tuple[str, str, Any, int | None]]:
    """(call id, tool name, input, block) of each tool call in a message: ``block`` is the
    content position of an Anthropic ``tool_use``, None for an OpenAI call (a JSON string)."""
    out: list[tuple[str, str, Any, int | None]] = []
    if message.get("type") == "function_call" and "role" not in message:  # a Responses item
        call_id, name, args = message.get("call_id"), message.get("name"), message.get("arguments")
        if isinstance(call_id, str) and isinstance(args, str):
            out.append((call_id, name if isinstance(name, str) else "unknown", args, None))
        return out
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(call.get("id"), str):
            args, name = function.get("arguments"), function.get("name")
            if isinstance(args, str):
                out.append((call["id"], name if isinstance(name, str) else "unknown", args, None))
    content = message.get("content")
    for n, block in enumerate(content if isinstance(content, list) else ()):
        if (
            isinstance(block, Mapping)
            and block.get("type") == "tool_use"
            and isinstance(block.get("id"), str)
            and isinstance(block.get("input"), Mapping)
        ):
            name = block.get("name")
            out.append(
                (block["id"], name if isinstance(name, str) else "unknown", block["input"], n)
            )
    return out


def _elide_fields(
    value: Any, tool: str, policy: ReplayPolicy, call: str
) -> tuple[Any, int, int, int]:
    """A copy of a tool input whose long string fields are placeholders: (copy, chars
    elided, chars saved, chars saved by placeholders already there). Keys, list lengths and
    every other value stay as they were."""
    if isinstance(value, str):
        if is_placeholder(value):
            stated = _stated_size(value)
            return value, 0, 0, (stated - len(value) if stated else 0)
        if len(value) < INPUT_FIELD_MIN_CHARS:
            return value, 0, 0, 0
        head = value[: policy.preview_chars]
        text = (
            f"{INPUT_MARKER} {len(value):,} chars of this {_q(tool)} input elided from this "
            f"replay because it is {policy.why()}."
            + (f" Head: {_q(head)}{'...' if len(value) > len(head) else ''}" if head else "")
            + f" Full input: {call}"
        )
        if len(text) >= len(value):
            return value, 0, 0, 0
        return text, len(value), len(value) - len(text), 0
    parts: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping):
        parts = list(value.items())
    elif isinstance(value, list):
        parts = list(enumerate(value))
    else:
        return value, 0, 0, 0
    elided = saved = prior = 0
    out = []
    for key, inner in parts:
        new, e, s, p = _elide_fields(inner, tool, policy, call)
        out.append((key, new))
        elided, saved, prior = elided + e, saved + s, prior + p
    if not saved:
        return value, 0, 0, prior
    if isinstance(value, Mapping):
        return dict(out), elided, saved, prior
    return [new for _, new in out], elided, saved, prior


def _thinking_items(i: int, message: Mapping[str, Any]) -> list[_Item]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    thinking = [
        b
        for b in content
        if isinstance(b, Mapping) and b.get("type") in ("thinking", "redacted_thinking")
    ]
    if not thinking or len(thinking) == len(content):
        return []  # nothing to drop, or the turn would be left empty
    shrink = sum(block_chars(b) for b in thinking)
    size = sum(json_chars(b) for b in thinking)  # with signatures
    return [_Item(i, "thinking", size, size, shrink)]


def _apply(messages: Sequence[Mapping[str, Any]], chosen: list[_Item]) -> list[dict[str, Any]]:
    out = [m if isinstance(m, dict) else dict(m) for m in messages]
    copied: dict[int, dict[str, Any]] = {}
    for item in sorted(chosen, key=lambda item: (item.index, item.kind != "thinking")):
        i = item.index
        if i not in copied:
            copied[i] = dict(messages[i])
            if isinstance(copied[i].get("content"), list):
                copied[i]["content"] = list(copied[i]["content"])
        message = copied[i]
        if item.kind == "result":
            slot = item.slot
            assert slot is not None
            part = "input_text" if slot.key == "output" else "text"  # Responses outputs
            new_content: Any = (
                [{"type": part, "text": item.text}] if isinstance(slot.content, list) else item.text
            )
            if slot.block is None:
                message[slot.key] = new_content
            else:
                block = dict(message["content"][slot.block])
                block["content"] = new_content
                message["content"][slot.block] = block
        elif item.kind == "input":
            _set_input(message, item.call_id, item.new_input)
        else:
            message["content"] = [
                b
                for b in message["content"]
                if not (
                    isinstance(b, Mapping) and b.get("type") in ("thinking", "redacted_thinking")
                )
            ]
        out[i] = message
    return out


def _set_input(message: dict[str, Any], call_id: str, new: Any) -> None:
    if message.get("type") == "function_call" and message.get("call_id") == call_id:
        message["arguments"] = new
        return
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for n, call in enumerate(calls):
            if isinstance(call, Mapping) and call.get("id") == call_id:
                calls = list(calls)
                calls[n] = {**call, "function": {**call["function"], "arguments": new}}
                message["tool_calls"] = calls
                return
    content = message.get("content")
    if isinstance(content, list):
        for n, block in enumerate(content):
            if (
                isinstance(block, Mapping)
                and block.get("type") == "tool_use"
                and block.get("id") == call_id
            ):
                content[n] = {**block, "input": new}
                return


def _placeholder(
    slot: ResultSlot, name: str, size: int, policy: ReplayPolicy, call: str
) -> tuple[str, int]:
    """The placeholder of a result and the size it states (a cut result's original size)."""
    text = slot.text()
    cut = parse_cut(text) if _text_only(slot.content) is not None else None
    if cut is not None:
        size, lines, text = cut.size, cut.lines, cut.visible()
    else:
        lines = _line_count(text)
    images = sum(
        1
        for b in (slot.content if isinstance(slot.content, list) else ())
        if isinstance(b, Mapping) and b.get("type") in ("image", "image_url")
    )
    parts = [
        f"{PLACEHOLDER_MARKER} Output of tool {_q(name)} ({size:,} chars, "
        f"{lines:,} line{'' if lines == 1 else 's'}"
        + (f", {images} image{'s' if images != 1 else ''}" if images else "")
        + f") elided from this replay because it is {policy.why()}."
    ]
    if slot.is_error:
        parts.append("It was an error result.")
    parts += render_preview(text, policy.preview_shape, policy.preview_chars)
    parts.append(f"Full original: {call}")
    return " ".join(parts), size


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
