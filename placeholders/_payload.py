"""Request payloads: only what the provider's API accepts, at every depth.

Stored and replayed messages carry bookkeeping keys (``id``, ``meta``, ``stub``,
``source_role``, ``block_ids``, importer extras such as mini-swe-agent's ``extra``) and the
fields a provider returns but does not take back (``index`` in streamed tool calls, ``usage``,
``citations: null``, ``annotations`` on a Chat Completions message). `for_provider` keeps the
keys each provider's request types define, for the message and for every content block, tool
call and Responses item inside it. It converts nothing: a message in another provider's shape
is an error that says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ._errors import InvalidMessagesError
from ._shapes import ITEM_ROLES

__all__ = ["MESSAGE_KEYS", "PROVIDERS", "Provider", "for_provider"]

Provider = Literal["openai", "anthropic", "openai-responses"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "openai-responses")

# Top-level keys of a message, per provider and role (Responses: per item type).
MESSAGE_KEYS: Mapping[str, frozenset[str]] = {
    "openai": frozenset(
        {"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "audio"}
    ),
    "anthropic": frozenset({"role", "content"}),
    "openai-responses": frozenset(
        {"type", "role", "content", "id", "status", "call_id", "name", "arguments", "output"}
        | {"summary", "encrypted_content"}
    ),
}

_OPENAI_ROLE_KEYS: Mapping[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}
    ),
    "tool": frozenset({"role", "content", "tool_call_id"}),  # no "name": the API rejects it
    "function": frozenset({"role", "content", "name"}),
}
_OPENAI_PARTS: Mapping[str, frozenset[str]] = {
    "text": frozenset({"type", "text"}),
    "image_url": frozenset({"type", "image_url"}),
    "input_audio": frozenset({"type", "input_audio"}),
    "file": frozenset({"type", "file"}),
    "refusal": frozenset({"type", "refusal"}),
}
_OPENAI_NESTED: Mapping[str, frozenset[str]] = {
    "image_url": frozenset({"url", "detail"}),
    "input_audio": frozenset({"data", "format"}),
    "file": frozenset({"file_data", "file_id", "filename"}),
}

_CACHE = frozenset({"cache_control"})
_ANTHROPIC_BLOCKS: Mapping[str, frozenset[str]] = {
    "text": frozenset({"type", "text", "citations"}) | _CACHE,
    "image": frozenset({"type", "source"}) | _CACHE,
    "document": frozenset({"type", "source", "title", "context", "citations"}) | _CACHE,
    "search_result": frozenset({"type", "source", "title", "content", "citations"}) | _CACHE,
    "tool_use": frozenset({"type", "id", "name", "input"}) | _CACHE,
    "server_tool_use": frozenset({"type", "id", "name", "input"}) | _CACHE,
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error"}) | _CACHE,
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    # The provider's own compaction (context management): sent back verbatim, signed.
    "compaction": frozenset(
        {"type", "content", "encrypted_content", "signature", "tool_changes"} | _CACHE
    ),
    "web_search_tool_result": frozenset({"type", "tool_use_id", "content"}) | _CACHE,
}

_RESPONSES_ITEMS: Mapping[str, frozenset[str]] = {
    # "id" only where the request type requires it; elsewhere it may be the store's own id.
    "function_call": frozenset({"type", "call_id", "name", "arguments", "status"}),
    "function_call_output": frozenset({"type", "call_id", "output", "status"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
    # Its id is optional in a request, and the store's own id may stand in that key.
    "compaction": frozenset({"type", "encrypted_content"}),
}
_RESPONSES_PARTS: Mapping[str, frozenset[str]] = {
    "input_text": frozenset({"type", "text"}),
    "input_image": frozenset({"type", "image_url", "file_id", "detail"}),
    "input_file": frozenset({"type", "file_data", "file_id", "file_url", "filename"}),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
    "summary_text": frozenset({"type", "text"}),
    "reasoning_text": frozenset({"type", "text"}),
}

_OPENAI_ONLY_PARTS = frozenset({"image_url", "input_audio", "file"})
_RESPONSES_ONLY_PARTS = frozenset(
    {"input_text", "input_image", "input_file", "output_text", "summary_text"}
)
_ANTHROPIC_ONLY_BLOCKS = frozenset(_ANTHROPIC_BLOCKS) - {"text"}


def for_provider(messages: Sequence[Mapping[str, Any]], provider: Provider) -> list[dict[str, Any]]:
    """Copies of ``messages`` with only what ``provider`` accepts, at every depth.

    ``provider`` is ``"anthropic"`` (Messages API), ``"openai"`` (Chat Completions) or
    ``"openai-responses"`` (Responses API input items). Texts, arguments and ids are never
    changed; only keys the provider's request types do not define are left out.

    Raises:
        InvalidMessagesError: an unknown provider; a message in another provider's shape
            (say, an OpenAI ``tool`` message for Anthropic); or, for Anthropic, a system-role
            message, which belongs in the request's ``system`` parameter instead.
    """
    if provider not in PROVIDERS:
        raise InvalidMessagesError(
            f"provider must be one of {', '.join(PROVIDERS)}, got {provider!r}"
        )
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidMessagesError(f"message {i} is not a dict")
        shape = _shape(message)
        if shape is not None and shape != provider:
            raise InvalidMessagesError(
                f"message {i} is in the {shape} shape, not {provider}; for_provider converts "
                f'nothing: pass provider="{shape}", or build the messages in the {provider} shape'
            )
        if provider == "anthropic":
            out.append(_anthropic(i, message))
        elif provider == "openai":
            out.append(_openai(i, message))
        else:
            out.append(_responses(i, message))
    return out


def _shape(message: Mapping[str, Any]) -> str | None:
    """The one provider whose shape the message is in, or None when it fits more than one."""
    if "role" not in message and message.get("type") in ITEM_ROLES:
        return "openai-responses"
    if message.get("role") == "tool" or "tool_calls" in message or "tool_call_id" in message:
        return "openai"
    content = message.get("content")
    kinds = (
        {b.get("type") for b in content if isinstance(b, Mapping)}
        if isinstance(content, list)
        else set()
    )
    if kinds & _RESPONSES_ONLY_PARTS:
        return "openai-responses"
    if kinds & _OPENAI_ONLY_PARTS:
        return "openai"
    if kinds & _ANTHROPIC_ONLY_BLOCKS:
        return "anthropic"
    return None


def _keep(value: Mapping[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k in keys}


def _part(i: int, part: Any, kinds: Mapping[str, frozenset[str]], noun: str, api: str) -> Any:
    """A content block or part cut to the keys its type takes in ``kinds``; anything not a
    mapping passes as it is. ``noun`` is what ``api`` calls it, for the error."""
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    keys = kinds.get(kind) if isinstance(kind, str) else None
    if keys is None:
        raise InvalidMessagesError(
            f"message {i} holds a {noun} of type {kind!r}, which {api} does not take"
        )
    return _keep(part, keys)


def _anthropic(i: int, message: Mapping[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise InvalidMessagesError(
            f"message {i} has role {role!r}; Anthropic takes only user and assistant messages "
            "(send a system prompt as the request's `system`)"
        )
    out = _keep(message, MESSAGE_KEYS["anthropic"])
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_anthropic_block(i, b) for b in content]
    return out


def _anthropic_block(i: int, block: Any) -> Any:
    """One content block cut to what Anthropic takes; the blocks of a tool result (and of
    tool results inside it, however deep) are walked without recursion."""
    top = _anthropic_part(i, block)
    todo = [top]
    while todo:
        out = todo.pop()
        if isinstance(out, dict) and out.get("type") == "tool_result":
            inner = out.get("content")
            if isinstance(inner, list):
                out["content"] = [_anthropic_part(i, b) for b in inner]
                todo.extend(out["content"])
    return top


def _anthropic_part(i: int, block: Any) -> Any:
    out = _part(i, block, _ANTHROPIC_BLOCKS, "content block", "the Anthropic Messages API")
    if isinstance(out, dict) and out.get("citations") is None:
        out.pop("citations", None)
    return out


def _openai(i: int, message: Mapping[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    keys = _OPENAI_ROLE_KEYS.get(role) if isinstance(role, str) else None
    if keys is None:
        raise InvalidMessagesError(f"message {i} has role {role!r}, which OpenAI does not take")
    out = _keep(message, keys)
    if role == "assistant":
        for key in ("function_call", "audio", "refusal"):
            if out.get(key) is None:
                out.pop(key, None)
        if "tool_calls" in out:
            out["tool_calls"] = [
                _keep(call, frozenset({"id", "type", "function", "custom"}))
                if isinstance(call, Mapping)
                else call
                for call in out["tool_calls"] or ()
            ]
            for call in out["tool_calls"]:
                if isinstance(call, dict) and isinstance(call.get("function"), Mapping):
                    call["function"] = _keep(call["function"], frozenset({"name", "arguments"}))
            if not out["tool_calls"]:
                del out["tool_calls"]
    content = out.get("content")
    if isinstance(content, list):
        parts = []
        for part in content:
            kept = _part(i, part, _OPENAI_PARTS, "content part", "OpenAI Chat Completions")
            if isinstance(kept, dict):
                name = str(part.get("type"))
                nested = _OPENAI_NESTED.get(name)
                if nested is not None and isinstance(kept.get(name), Mapping):
                    kept[name] = _keep(kept[name], nested)
            parts.append(kept)
        out["content"] = parts
    return out


def _responses(i: int, message: Mapping[str, Any]) -> dict[str, Any]:
    kind = message.get("type")
    if "role" not in message:
        keys = _RESPONSES_ITEMS.get(kind) if isinstance(kind, str) else None
        if keys is None:
            raise InvalidMessagesError(
                f"message {i} has no role and item type {kind!r}; the Responses API takes "
                "message, function_call, function_call_output, reasoning and compaction items "
                "here"
            )
        out = _keep(message, keys)
        for key in ("output", "summary", "content"):
            if isinstance(out.get(key), list):
                out[key] = [_responses_part(i, p) for p in out[key]]
        return out
    if kind not in (None, "message"):
        raise InvalidMessagesError(f"message {i} has a role and item type {kind!r}")
    role = message.get("role")
    if role not in ("user", "assistant", "system", "developer"):
        raise InvalidMessagesError(
            f"message {i} has role {role!r}, which the Responses API does not take"
        )
    content = message.get("content")
    output = isinstance(content, list) and any(
        isinstance(p, Mapping) and p.get("type") in ("output_text", "refusal") for p in content
    )
    # An assistant output message (output_text parts) is sent back with its id and status;
    # any other message is an input message, whose id would be the store's own.
    keys = frozenset(
        {"type", "role", "content", "id", "status"} if output else {"type", "role", "content"}
    )
    out = _keep(message, keys)
    if isinstance(content, list):
        out["content"] = [_responses_part(i, p) for p in content]
    return out


def _responses_part(i: int, part: Any) -> Any:
    return _part(i, part, _RESPONSES_PARTS, "content part", "the Responses API")
