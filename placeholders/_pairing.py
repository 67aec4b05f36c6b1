"""What a provider would reject about tool-call pairing, found before the provider does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._shapes import ITEM_ROLES, result_slots, role_of, tool_calls

__all__ = [
    "BLOCK_IDS_KEY",
    "SPLIT_KEY",
    "STUB_TEXT",
    "check_pairing",
    "open_calls_of",
    "repair_pairing",
]

_SYSTEM_ROLES = ("system", "developer")


def check_pairing(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Problems a provider would reject, one sentence each; an empty list means valid.

    Checks that every tool call is answered right after its assistant message (OpenAI: by
    ``tool`` messages before any other role; Anthropic: by ``tool_result`` blocks in the next
    user message), that every result answers a call made just before it, that no message
    makes the same call id twice, and that the conversation starts with a user turn after any
    system messages (or with a Responses ``compaction`` item, which OpenAI lets a request
    start from).
    """
    problems: list[str] = []
    first = next((i for i, m in enumerate(messages) if role_of(m) not in _SYSTEM_ROLES), None)
    if (
        first is not None
        and role_of(messages[first]) != "user"
        and not (messages[first].get("type") == "compaction" and "role" not in messages[first])
    ):
        problems.append(
            f"message {first} is the first after the system prompt but has role "
            f"{role_of(messages[first])!r}; a replay must start with a user turn"
        )
    open_calls: dict[str, int] = {}  # call id -> index of the assistant message
    i = 0
    while i < len(messages):
        message = messages[i]
        role = role_of(message)
        if role == "assistant":
            if not (i and continues_turn(messages[i - 1], message)):
                _close(open_calls, problems)
            # Providers pair results with the calls right before them, so an id may recur in
            # a later turn (recorded logs do this) but never twice in one message.
            for call_id in open_calls_of(message):
                if call_id in open_calls:
                    problems.append(f"message {i} makes tool call id {call_id!r} twice")
                open_calls[call_id] = i
            i += 1
            continue
        if role == "tool":
            for slot in result_slots(message):
                if slot.tool_call_id not in open_calls:
                    problems.append(
                        f"message {i} is a tool result for {slot.tool_call_id!r}, which the "
                        "assistant message before it did not call"
                    )
                open_calls.pop(slot.tool_call_id, None)
            i += 1
            continue
        # A user message answers Anthropic calls with tool_result blocks; any other role ends
        # the window in which open calls could still be answered.
        slots = result_slots(message)
        for slot in slots:
            if slot.tool_call_id not in open_calls:
                problems.append(
                    f"message {i} has a tool_result for {slot.tool_call_id!r}, which the "
                    "assistant message right before it did not call"
                )
            open_calls.pop(slot.tool_call_id, None)
        _close(open_calls, problems)
        i += 1
    _close(open_calls, problems)
    return problems


def open_calls_of(message: Mapping[str, Any]) -> list[str]:
    """Ids of the calls an assistant message makes that need a result after it: every call
    but a server tool's (Anthropic ``server_tool_use``, ``mcp_tool_use``), which the same
    message answers with its own result block."""
    content = message.get("content")
    answered = {
        b.get("tool_use_id")
        for b in (content if isinstance(content, list) else ())
        if isinstance(b, Mapping) and b.get("type") != "tool_result" and "tool_use_id" in b
    }
    return [call_id for call_id, _ in tool_calls(message) if call_id not in answered]


def _is_item(message: Mapping[str, Any]) -> bool:
    return "role" not in message and message.get("type") in ITEM_ROLES


def continues_turn(previous: Mapping[str, Any], message: Mapping[str, Any]) -> bool:
    """True when ``message`` is one more Responses item of the assistant turn ``previous`` is
    in (reasoning, function calls and an assistant message come as separate items)."""
    return (
        role_of(previous) == "assistant"
        and role_of(message) == "assistant"
        and (_is_item(previous) or _is_item(message))
    )


def _close(open_calls: dict[str, int], problems: list[str]) -> None:
    for call_id, at in open_calls.items():
        problems.append(f"tool call {call_id!r} in message {at} has no result right after it")
    open_calls.clear()


# --- repair at replay time ----------------------------------------------------------------

STUB_TEXT = (
    "[leanreplay] No result for this tool call is stored (yet); this stub stands in for it so "
    "the replay stays valid."
)
#: Bookkeeping key of a message split over several log records (Claude Code writes one record
#: per content block): records with the same value, with only tool results between them, are
#: one provider message and are joined at replay time.
SPLIT_KEY = "api_message_id"
#: Bookkeeping key of a joined message: the stored message id each content block came from.
BLOCK_IDS_KEY = "block_ids"


def repair_pairing(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[str]]:
    """A copy of ``messages`` a provider accepts, and one note per kind of repair.

    The store keeps exactly what a log holds; this makes the replay valid: records of one
    provider message that a log split are joined (with ``block_ids`` naming where each block
    is stored), a tool result whose call is not right before it is dropped, and a call that
    got no result gets an explicit stub result (``"stub": True``). Messages that need no
    change are passed through as they are.
    """
    joined, joins = _join_split(messages)
    out, dropped, stubbed = _pair(joined)
    notes = []
    if joins:
        notes.append(f"{joins} log records joined into the message they are part of")
    if dropped:
        notes.append(f"{dropped} tool results without a call right before them left out")
    if stubbed:
        notes.append(f"{stubbed} tool calls without a result got an explicit stub result")
    return out, notes


def _only_results(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
    )


def _joined(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    ids = list(first.get(BLOCK_IDS_KEY) or [first.get("id")] * len(first["content"]))
    ids += [second.get("id")] * len(second["content"])
    return {**first, "content": [*first["content"], *second["content"]], BLOCK_IDS_KEY: ids}


def _join_split(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], int]:
    out: list[Mapping[str, Any]] = []
    joins = 0
    last_assistant: int | None = None
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            group = message.get(SPLIT_KEY)
            if (
                group is not None
                and last_assistant is not None
                and out[last_assistant].get(SPLIT_KEY) == group
                and isinstance(message.get("content"), list)
                and isinstance(out[last_assistant].get("content"), list)
                and all(_only_results(m) for m in out[last_assistant + 1 :])
            ):
                out[last_assistant] = _joined(out[last_assistant], message)
                joins += 1
                continue
            out.append(message)
            last_assistant = len(out) - 1
            continue
        if _only_results(message) and out and _only_results(out[-1]):
            out[-1] = _joined(out[-1], message)
            joins += 1
            continue
        out.append(message)
    return out, joins


def _stub_block(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": STUB_TEXT, "is_error": True}


def _pair(messages: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
    out: list[dict[str, Any]] = []
    dropped = stubbed = 0
    pending: dict[str, None] = {}  # calls of the last assistant message still unanswered
    shape = "openai"  # of those calls: "openai", "anthropic" or "responses"

    def close() -> None:
        nonlocal stubbed
        if not pending:
            return
        stubbed += len(pending)
        if shape == "anthropic":
            blocks = [_stub_block(cid) for cid in pending]
            out.append({"role": "user", "content": blocks, "meta": True, "stub": True})
        elif shape == "responses":
            for cid in pending:
                out.append(
                    {
                        "type": "function_call_output",
                        "call_id": cid,
                        "output": STUB_TEXT,
                        "stub": True,
                    }
                )
        else:
            for cid in pending:
                out.append(
                    {"role": "tool", "tool_call_id": cid, "content": STUB_TEXT, "stub": True}
                )
        pending.clear()

    previous: Mapping[str, Any] | None = None
    for original in messages:
        message = original if isinstance(original, dict) else dict(original)
        role = role_of(message)
        continues = previous is not None and continues_turn(previous, message)
        previous = message
        if role == "tool":
            call = result_slots(message)[0].tool_call_id
            if call in pending:
                del pending[call]
                out.append(message)
            else:
                dropped += 1
            continue
        slots = result_slots(message)
        if slots:
            keep = {s.block for s in slots if s.tool_call_id in pending}
            dropped += len(slots) - len(keep)
            if len(keep) != len(slots):
                positions = [
                    i
                    for i, b in enumerate(message["content"])
                    if i in keep or not (isinstance(b, Mapping) and b.get("type") == "tool_result")
                ]
                if not positions:
                    continue
                message = {**message, "content": [message["content"][i] for i in positions]}
                if BLOCK_IDS_KEY in message:
                    message[BLOCK_IDS_KEY] = [message[BLOCK_IDS_KEY][i] for i in positions]
            for slot in slots:
                pending.pop(slot.tool_call_id, None)
            # Stubs for calls this message left unanswered go into the same message.
            if pending and shape == "anthropic":
                stubbed += len(pending)
                message = {
                    **message,
                    "content": [*message["content"], *(_stub_block(c) for c in pending)],
                }
                if BLOCK_IDS_KEY in message:
                    message[BLOCK_IDS_KEY] = [*message[BLOCK_IDS_KEY], *([None] * len(pending))]
                pending.clear()
            close()
            out.append(message)
            continue
        if continues:  # one more item of the same Responses turn
            out.append(message)
            pending.update((cid, None) for cid in open_calls_of(message))
            if _is_item(message):
                shape = "responses"
            continue
        close()
        out.append(message)
        if role == "assistant":
            pending = {cid: None for cid in open_calls_of(message)}
            shape = (
                "responses"
                if _is_item(message)
                else "openai"
                if message.get("tool_calls")
                else "anthropic"
            )
    close()
    return out, dropped, stubbed
