"""Request payloads: the providers' own message keys only.

Stored and replayed messages carry bookkeeping keys (``id``, ``meta``, ``stub``,
``source_role``, importer extras) that a provider may reject: Anthropic refuses unknown
message fields. `for_provider` keeps just the keys the provider's API defines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ._errors import InvalidMessagesError

__all__ = ["MESSAGE_KEYS", "for_provider"]

MESSAGE_KEYS: Mapping[str, frozenset[str]] = {
    "openai": frozenset(
        {"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio"}
    ),
    "anthropic": frozenset({"role", "content"}),
}


def for_provider(
    messages: Sequence[Mapping[str, Any]], provider: Literal["openai", "anthropic"]
) -> list[dict[str, Any]]:
    """Copies of ``messages`` with only the keys ``provider`` accepts (content untouched).

    Raises:
        InvalidMessagesError: an unknown provider, or (for Anthropic) a system-role message,
            which belongs in the request's ``system`` parameter instead.
    """
    keys = MESSAGE_KEYS.get(provider)
    if keys is None:
        raise InvalidMessagesError(
            f"provider must be one of {', '.join(MESSAGE_KEYS)}, got {provider!r}"
        )
    out = []
    for i, message in enumerate(messages):
        if provider == "anthropic" and message.get("role") not in ("user", "assistant"):
            raise InvalidMessagesError(
                f"message {i} has role {message.get('role')!r}; Anthropic takes only user and "
                "assistant messages (send a system prompt as the request's `system`)"
            )
        out.append({k: v for k, v in message.items() if k in keys})
    return out
