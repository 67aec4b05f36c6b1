"""The in-turn emergency compactor: when one live turn outgrows the context, shrink it in
memory, once, without touching what must stay exact.

Estimate tokens as ``chars / 1.5``, take the max with the provider-reported input tokens;
above 75% of the input budget (context window minus output reserve) compact toward 50%:
strip base64 images from tool results, then truncate the largest tool results, then older
assistant, then older user messages, proportionally, as head + tail with a ``[TRUNCATED —``
label. ``messages[0]``, the last 3 messages, error results, placeholders and thinking blocks
are protected. If the protected part alone is over target, say so; never loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._checks import check_int
from ._errors import PlaceholderError
from ._fold import Summarizer, SummarizerError
from ._replay import is_placeholder, read_call
from ._shapes import (
    block_chars,
    content_chars,
    is_genuine_user,
    one_line,
    result_slots,
    text_of,
    tool_calls,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "FILL_MARGIN_TOKENS",
    "CompactionResult",
    "Event",
    "compact_turn",
    "estimate_tokens",
    "structured_summary",
]

CHARS_PER_TOKEN = 1.5  # deliberately pessimistic: code, JSON and non-Latin text tokenize densely
TRIGGER_SHARE = 0.75
TARGET_SHARE = 0.50
FILL_MARGIN_TOKENS = 512
PROTECTED_TAIL = 3
MIN_KEEP_CHARS = 400  # a truncated text keeps at least this much (head + tail)
SUMMARY_CHARS = 4000

Event = Callable[[str, dict[str, Any]], None]


@dataclass
class CompactionResult:
    """What the compactor did. ``messages`` is a new list; the input is never changed."""

    messages: list[dict[str, Any]]
    triggered: bool
    target_reached: bool
    tokens_before: int
    tokens_after: int
    target_tokens: int
    budget_tokens: int
    actions: list[str] = field(default_factory=list)
    reason: str = ""


def estimate_tokens(chars: int) -> int:
    """The token estimate of ``chars`` characters: ``chars / CHARS_PER_TOKEN``, rounded."""
    return int(chars / CHARS_PER_TOKEN + 0.5)


def _label(omitted: int, fetch: str | None) -> str:
    how = f"the full text: {fetch}" if fetch else "re-run the tool or ask the user for it"
    return f"\n[TRUNCATED — {omitted:,} chars omitted from the middle; {how}]\n"


def _cut(text: str, keep: int, fetch: str | None) -> str:
    keep = max(keep, MIN_KEEP_CHARS)
    if len(text) <= keep + 200:
        return text
    head = keep * 2 // 3
    tail = keep - head
    return text[:head] + _label(len(text) - keep, fetch) + text[-tail:]


def _is_base64_image(block: Any) -> bool:
    if not isinstance(block, Mapping):
        return False
    if block.get("type") == "image":
        source = block.get("source")
        return isinstance(source, Mapping) and source.get("type") == "base64"
    if block.get("type") == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else None
        return isinstance(url, str) and url.startswith("data:")
    return False


class _Turn:
    """A copy-on-write view of the messages being compacted."""

    def __init__(self, messages: Sequence[Mapping[str, Any]], conversation_id: str | None) -> None:
        self.original = messages
        self.out = [m if isinstance(m, dict) else dict(m) for m in messages]
        self.copied: set[int] = set()
        self.conversation_id = conversation_id
        self.cuts: list[str] = []  # what was truncated or removed, for the DATA section
        self.targets: list[dict[str, Any]] = []  # the same, per target, for the event log

    def target(
        self, i: int, kind: str, call_id: str | None, before: int, after: int, fetch: str | None
    ) -> None:
        mid = self.original[i].get("id")
        self.targets.append(
            {
                "message": i,
                "message_id": mid if isinstance(mid, str) else None,
                "kind": kind,
                "tool_call_id": call_id,
                "chars_before": before,
                "chars_after": after,
                "fetch": fetch,
            }
        )

    def message(self, i: int) -> dict[str, Any]:
        if i not in self.copied:
            self.out[i] = dict(self.out[i])
            content = self.out[i].get("content")
            if isinstance(content, list):
                self.out[i]["content"] = [dict(b) if isinstance(b, Mapping) else b for b in content]
            self.copied.add(i)
        return self.out[i]

    def fetch(self, i: int, call_id: str | None) -> str | None:
        mid = self.original[i].get("id")
        if self.conversation_id is None or not isinstance(mid, str):
            return None
        # Like a placeholder: name the tool call only when the message holds several results.
        if len(result_slots(self.original[i])) <= 1:
            call_id = None
        return read_call(self.conversation_id, mid, call_id)

    def chars(self) -> int:
        return sum(content_chars(m) for m in self.out)


def _protected(messages: Sequence[Mapping[str, Any]]) -> set[int]:
    n = len(messages)
    return {0, *range(max(0, n - PROTECTED_TAIL), n)}


def _text_targets(turn: _Turn, protected: set[int]) -> dict[str, list[tuple[int, int | None, int]]]:
    """(message, block or None, chars) of every truncatable text, by tier."""
    tiers: dict[str, list[tuple[int, int | None, int]]] = {"tool": [], "assistant": [], "user": []}
    for i, message in enumerate(turn.out):
        if i in protected:
            continue
        role = message.get("role")
        content = message.get("content")
        for slot in result_slots(message):
            if slot.is_error or is_placeholder(slot.content):
                continue
            if slot.block is None and isinstance(content, str):
                tiers["tool"].append((i, None, len(content)))
            elif slot.block is not None and isinstance(slot.content, str):
                tiers["tool"].append((i, slot.block, len(slot.content)))
        if role in ("assistant", "user") and not result_slots(message):
            if isinstance(content, str):
                tiers[role].append((i, None, len(content)))
            elif isinstance(content, list):
                for b, block in enumerate(content):
                    # Only plain text blocks: thinking blocks carry signatures and stay whole.
                    if (
                        isinstance(block, Mapping)
                        and block.get("type") == "text"
                        and isinstance(block.get("text"), str)
                    ):
                        tiers[role].append((i, b, len(block["text"])))
    for items in tiers.values():
        items.sort(key=lambda t: (-t[2], t[0], t[1] if t[1] is not None else -1))
    return tiers


def compact_turn(
    messages: Sequence[Mapping[str, Any]],
    *,
    context_window: int,
    output_reserve: int,
    reported_input_tokens: int | None = None,
    summarizer: Summarizer | None = None,
    conversation_id: str | None = None,
    force: bool = False,
    on_event: Event | None = None,
) -> CompactionResult:
    """Compact one live turn in memory if it is over 75% of the input budget.

    Args:
        messages: the turn's messages in either provider shape (never modified).
        context_window: the model's context window in tokens.
        output_reserve: tokens kept free for the answer.
        reported_input_tokens: the provider's input token count for the previous call.
        summarizer: if given, one TASK/PROGRESS/REMAINING/DATA/DECISIONS summary and a
            continuation reminder are appended after compaction.
        conversation_id: lets truncation labels name the exact `conversation_read` call.
        force: compact even below the trigger (after a provider overflow error).
        on_event: receives ``compaction.started`` and ``compaction.applied`` events.
    """
    for name, value in (("context_window", context_window), ("output_reserve", output_reserve)):
        check_int(name, value, minimum=0)
    budget = context_window - output_reserve
    if budget <= 0:
        raise PlaceholderError(
            f"output_reserve {output_reserve} leaves no input budget in a window of "
            f"{context_window}"
        )
    started = time.monotonic()
    turn = _Turn(messages, conversation_id)
    chars_before = turn.chars()
    estimate = max(estimate_tokens(chars_before), reported_input_tokens or 0)
    target = int(budget * TARGET_SHARE)
    result = CompactionResult(
        messages=turn.out,
        triggered=False,
        target_reached=estimate <= target,
        tokens_before=estimate,
        tokens_after=estimate,
        target_tokens=target,
        budget_tokens=budget,
    )
    if estimate <= budget * TRIGGER_SHARE and not force:
        result.reason = f"{estimate:,} tokens is under 75% of the {budget:,}-token input budget"
        return result
    result.triggered = True
    if on_event:
        on_event(
            "compaction.started",
            {
                "tokens": estimate,
                "chars": chars_before,
                "messages": len(messages),
                "target_tokens": target,
                "budget_tokens": budget,
                "forced": force,
            },
        )
    # The provider's count may exceed our estimate; scale the char target by the same ratio.
    ratio = estimate / max(estimate_tokens(turn.chars()), 1)
    target_chars = int(target * CHARS_PER_TOKEN / max(ratio, 1.0))
    protected = _protected(messages)

    # 1. Base64 images inside tool results.
    stripped = 0
    for i, message in enumerate(turn.original):
        if i in protected:
            continue
        for slot in result_slots(message):
            if slot.is_error or not isinstance(slot.content, list):
                continue
            if not any(_is_base64_image(b) for b in slot.content):
                continue
            fetch = turn.fetch(i, slot.tool_call_id if slot.block is not None else None)
            new_content = []
            for block in slot.content:
                if _is_base64_image(block):
                    size = block_chars(block)
                    stripped += size
                    turn.cuts.append(
                        f"[{message.get('id', i)}] image in the result of {slot.tool_call_id}: "
                        f"{size:,} chars of base64" + (f" -> {fetch}" if fetch else "")
                    )
                    label = f"[image removed to fit the context ({size:,} chars of base64)"
                    label += f"; {fetch}]" if fetch else "]"
                    new_content.append({"type": "text", "text": label})
                    turn.target(i, "image", slot.tool_call_id, size, len(label), fetch)
                else:
                    new_content.append(block)
            copy = turn.message(i)
            if slot.block is None:
                copy["content"] = new_content
            else:
                copy["content"][slot.block]["content"] = new_content
    if stripped:
        result.actions.append(f"stripped {stripped:,} chars of base64 images from tool results")

    # 2. Truncate, tier by tier, proportionally to size, until the target is met.
    for tier in ("tool", "assistant", "user"):
        excess = turn.chars() - target_chars
        if excess <= 0:
            break
        items = _text_targets(turn, protected)[tier]
        total = sum(c for _, _, c in items)
        if not items or total == 0:
            continue
        fetches = []
        for i, b, _ in items:
            call_id = None
            if b is not None:
                block = turn.out[i]["content"][b]
                call_id = block.get("tool_use_id") if isinstance(block, Mapping) else None
            fetches.append(turn.fetch(i, call_id if isinstance(call_id, str) else None))
        # Each cut adds its label, so remove that much more, spread by size.
        labels = sum(len(_label(c, f)) for (_, _, c), f in zip(items, fetches, strict=True))
        share = min(1.0, (excess + labels) / total)
        cut_chars = cut_count = 0
        for (i, b, chars), fetch in zip(items, fetches, strict=True):
            keep = int(chars * (1 - share))
            current = turn.out[i]
            where = f"[{turn.original[i].get('id', i)}]"
            what = f"{where} {tier} text of {chars:,} chars"
            call: str | None = None
            if tier == "tool":
                owner = next((x for x in result_slots(turn.original[i]) if x.block == b), None)
                call = owner.tool_call_id if owner is not None else None
                what = f"{where} result of {call or '?'}: {chars:,} chars"
            key = "content"
            if b is None:
                old = current["content"]
            else:
                key = "content" if current["content"][b].get("type") == "tool_result" else "text"
                old = current["content"][b][key]
            new = _cut(old, keep, fetch)
            if len(new) >= len(old):
                continue  # too short to cut: neither a target nor a line of the DATA section
            copy = turn.message(i)
            turn.cuts.append(what + (f" -> {fetch}" if fetch else ""))
            turn.target(i, tier, call, chars, len(new), fetch)
            cut_chars += len(old) - len(new)
            cut_count += 1
            if b is None:
                copy["content"] = new
            else:
                copy["content"][b][key] = new
        if cut_chars:
            result.actions.append(f"truncated {cut_count} {tier} texts by {cut_chars:,} chars")

    # 3. One structured summary and a continuation reminder.
    if summarizer is not None and result.actions:
        try:
            narrative = summarizer(None, turn.original, max_chars=SUMMARY_CHARS // 2)
        except SummarizerError as exc:
            result.actions.append(f"summary skipped: {exc}")
        else:
            summary = structured_summary(turn.original, narrative, turn.cuts)
            _append_summary(turn, summary)
            result.actions.append(f"added a {len(summary):,}-char continuation summary")

    after = estimate_tokens(turn.chars())
    result.tokens_after = after
    result.target_reached = after <= target
    if not result.target_reached:
        protected_chars = sum(content_chars(turn.out[i]) for i in protected if i < len(turn.out))
        held = estimate_tokens(protected_chars)
        result.reason = (
            f"cannot reach the target of {target:,} tokens: {after:,} remain, of which "
            f"{held:,} are protected (first message, last {PROTECTED_TAIL}, "
            "errors, thinking); start a new turn or fold the conversation"
        )
    else:
        result.reason = f"compacted from {estimate:,} to {after:,} tokens"
    if on_event:
        on_event(
            "compaction.applied",
            {
                "tokens_before": estimate,
                "tokens_after": after,
                "tokens_saved": max(estimate - after, 0),
                "chars_before": chars_before,
                "chars_after": turn.chars(),
                "chars_saved": max(chars_before - turn.chars(), 0),
                "target_tokens": target,
                "target_reached": result.target_reached,
                "actions": result.actions,
                "targets": turn.targets,
                "duration_ms": round((time.monotonic() - started) * 1000, 2),
            },
        )
    return result


def structured_summary(
    messages: Sequence[Mapping[str, Any]], narrative: str, cuts: Sequence[str]
) -> str:
    """TASK / PROGRESS / REMAINING / DATA / DECISIONS of a turn, with exact ids and counts.

    Everything but the narrative (the summarizer's account, under PROGRESS) is read straight
    from the messages, so ids, counts and fetch calls are exact whatever the summarizer says.
    """
    task = next((m for m in messages if is_genuine_user(m)), messages[0] if messages else {})
    calls: dict[str, list[str]] = {}
    errors = 0
    for message in messages:
        for call_id, name in tool_calls(message):
            calls.setdefault(name, []).append(call_id)
        errors += sum(1 for slot in result_slots(message) if slot.is_error)
    said = [
        (m.get("id", i), text_of(m))
        for i, m in enumerate(messages)
        if m.get("role") == "assistant" and text_of(m).strip()
    ]
    tally = ", ".join(f"{name} x{len(ids)} ({', '.join(ids)})" for name, ids in calls.items())
    lines = [
        f"TASK: [{task.get('id', 0)}] {one_line(text_of(task), 1000)}",
        f"PROGRESS: {one_line(narrative, SUMMARY_CHARS // 2)}",
        f"  {sum(len(v) for v in calls.values())} tool calls: {tally or 'none'}; "
        f"{errors} error result(s).",
    ]
    if said:
        last_id, last_text = said[-1]
        lines.append(
            f'REMAINING: continue after the last step, [{last_id}] "{one_line(last_text, 300)}"'
        )
    else:
        lines.append("REMAINING: continue the TASK; no assistant conclusion yet.")
    lines.append("DATA (cut to fit; the call after -> returns the full text):")
    lines += [f"- {cut}" for cut in cuts] or ["- nothing was cut"]
    lines.append("DECISIONS:")
    lines += [f"- [{mid}] {one_line(text, 200)}" for mid, text in said[-5:]] or [
        "- none stated yet"
    ]
    return "\n".join(lines)[:SUMMARY_CHARS]


def _append_summary(turn: _Turn, summary: str) -> None:
    text = (
        "[Context was compacted to fit. Summary of this turn so far:]\n"
        f"{summary}\n\n"
        "Continue from REMAINING; do not redo finished steps."
    )
    last = turn.out[-1]
    if last.get("role") == "user" and isinstance(last.get("content"), list):
        copy = turn.message(len(turn.out) - 1)
        copy["content"].append({"type": "text", "text": text})
    else:
        turn.out.append({"role": "user", "content": text, "meta": True})
