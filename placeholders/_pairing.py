"""What a provider would reject about tool-call pairing, found before the provider does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._shapes import result_slots, tool_calls

__all__ = ["check_pairing"]

_SYSTEM_ROLES = ("system", "developer")


def check_pairing(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Problems a provider would reject, one sentence each; an empty list means valid.

    Checks that every tool call is answered right after its assistant message (OpenAI: by
    ``tool`` messages before any other role; Anthropic: by ``tool_result`` blocks in the next
    user message), that every result answers a call made just before it, that no message
    makes the same call id twice, and that the conversation starts with a user turn after any
    system messages.
    """
    problems: list[str] = []
    first = next((i for i, m in enumerate(messages) if m.get("role") not in _SYSTEM_ROLES), None)
    if first is not None and messages[first].get("role") != "user":
        problems.append(
            f"message {first} is the first after the system prompt but has role "
            f"{messages[first].get('role')!r}; a replay must start with a user turn"
        )
    open_calls: dict[str, int] = {}  # call id -> index of the assistant message
    i = 0
    while i < len(messages):
        message = messages[i]
        role = message.get("role")
        if role == "assistant":
            _close(open_calls, problems)
            # Providers pair results with the calls right before them, so an id may recur in
            # a later turn (recorded logs do this) but never twice in one message.
            for call_id, _ in tool_calls(message):
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


def _close(open_calls: dict[str, int], problems: list[str]) -> None:
    for call_id, at in open_calls.items():
        problems.append(f"tool call {call_id!r} in message {at} has no result right after it")
    open_calls.clear()
