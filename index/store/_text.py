"""The searchable text of a stored message, in any provider shape: what both search engines
index (Tantivy over the embedded store, PostgreSQL's full-text search over a shared one), and
the hit both answer with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from leanreplay.placeholders import (
    block_text,  # the one content-block text rule
    result_slots,
    tool_calls,
)

__all__ = ["MAX_INDEXED_CHARS", "message_text", "search_hit"]

MAX_INDEXED_CHARS = 1_000_000  # per message


def message_text(message: Mapping[str, Any]) -> tuple[str, str]:
    """(searchable text, tool names) of a message in any provider shape."""
    content = message.get("content")
    if isinstance(content, str) and not message.get("tool_calls") and "type" not in message:
        return content[:MAX_INDEXED_CHARS], ""  # the common case, without the general walk
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            text = block_text(block)
            if text is not None:
                parts.append(text)
                continue
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "thinking" and isinstance(block.get("thinking"), str):
                parts.append(block["thinking"])
            elif kind in ("tool_use", "server_tool_use"):
                parts.append(json.dumps(block.get("input"), ensure_ascii=False))
    for slot in result_slots(message):
        if slot.block is not None or slot.key != "content":  # a Responses output too
            parts.append(slot.text())
    if message.get("type") == "function_call" and isinstance(message.get("arguments"), str):
        parts.append(message["arguments"])
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("arguments"), str):
            parts.append(function["arguments"])
    tools = " ".join(name for _, name in tool_calls(message))
    return "\n".join(parts)[:MAX_INDEXED_CHARS], tools


def search_hit(
    conversation_id: str,
    message_id: str,
    seq: int,
    role: str,
    tools: str,
    score: float,
    snippet: str,
) -> dict[str, Any]:
    """One conversation_search hit: ``tools`` (as `message_text` gives them) None when the
    message calls none, the score to four places."""
    return {
        "conversation_id": conversation_id,
        "message_id": message_id,
        "seq": int(seq),
        "role": role,
        "tools": tools or None,
        "score": round(float(score), 4),
        "snippet": snippet,
    }
