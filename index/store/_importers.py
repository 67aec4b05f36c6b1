"""Importers: real agent logs become stored conversations in the providers' own shapes.

Importers never invent content. They merge what the log split (Claude Code writes one record
per content block), skip what is not a message, and repair pairing so a replay stays valid:
a result whose call never appears is dropped, and a call that never got a result gets an
explicit stub result that says so. Every such change is reported in the notes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from placeholders import result_slots, tool_calls

from .._errors import ImportFormatError, InvalidArgumentError

__all__ = ["FORMATS", "MAX_IMPORT_BYTES", "STUB_TEXT", "Imported", "load"]

FORMATS = ("auto", "openai", "anthropic", "claude-code", "mini-swe-agent", "tau-bench")
MAX_IMPORT_BYTES = 1024 * 1024 * 1024  # whole-file JSON formats are loaded into memory
STUB_TEXT = "[leanreplay import] The source log recorded no result for this tool call."

_CLAUDE_MESSAGE_TYPES = ("user", "assistant")
_CLAUDE_INJECTED = (
    "[Request interrupted by user",
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
)


@dataclass
class Imported:
    conversation_id: str
    messages: list[dict[str, Any]]
    format: str
    notes: list[str] = field(default_factory=list)


def load(path: str, *, format: str = "auto", conversation_id: str | None = None) -> list[Imported]:
    """Read one log file into conversations.

    Raises:
        InvalidArgumentError: unknown format name.
        ImportFormatError: the file is not in that format (or no format fits, for "auto").
    """
    if format not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    size = os.path.getsize(path)
    if size > MAX_IMPORT_BYTES:
        raise ImportFormatError(
            f"{path} is {size} bytes, over the import limit of {MAX_IMPORT_BYTES}; split it"
        )
    stem = os.path.basename(path)
    for suffix in (".traj.json", ".jsonl", ".json", ".ndjson"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path} is not UTF-8 text ({exc}); logs must be JSON") from None
    whole = _parse_whole(text)
    fmt = format if format != "auto" else _detect(path, whole, text)
    if fmt == "claude-code":
        items = [_claude_code(text, stem)]
    elif fmt == "mini-swe-agent":
        items = [_mini_swe_agent(whole, stem, path)]
    elif fmt == "tau-bench":
        items = _tau_bench(whole, stem, path)
    else:
        items = [_plain(whole, text, stem, fmt, path)]
    if conversation_id is not None:
        if len(items) != 1:
            raise InvalidArgumentError(
                f"{path} holds {len(items)} conversations; --conversation-id names only one, "
                "leave it out to use the ids from the file"
            )
        items[0].conversation_id = conversation_id
    for item in items:
        item.messages, notes = repair_pairing(item.messages)
        item.notes += notes
    return items


_NOT_JSON = object()


def _parse_whole(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return _NOT_JSON


def _jsonl(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each line; value is _NOT_JSON for a broken line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError:
            yield number, _NOT_JSON


def _detect(path: str, whole: Any, text: str) -> str:
    if (
        isinstance(whole, dict)
        and isinstance(whole.get("messages"), list)
        and ("trajectory_format" in whole or "instance_id" in whole or path.endswith(".traj.json"))
    ):
        return "mini-swe-agent"
    if (
        isinstance(whole, list)
        and whole
        and all(isinstance(x, dict) and "traj" in x for x in whole)
    ):
        return "tau-bench"
    values: list[Any]
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        values = whole["messages"]  # a provider request body
    elif isinstance(whole, list):
        values = whole
    elif isinstance(whole, dict) and "role" in whole:
        values = [whole]
    else:
        values = [v for _, v in _jsonl(text) if v is not _NOT_JSON]
    if any(
        isinstance(v, dict)
        and ("sessionId" in v or v.get("type") in ("summary", "user", "assistant"))
        and "role" not in v
        for v in values[:50]
    ):
        return "claude-code"
    if values and all(isinstance(v, dict) and "role" in v for v in values):
        return _provider_of(values)
    raise ImportFormatError(
        f"cannot tell the format of {path}: expected a JSON array or JSONL of messages, a "
        "Claude Code session, a mini-swe-agent .traj.json or a tau-bench array; name one "
        f"with --format ({', '.join(FORMATS[1:])})"
    )


def _provider_of(messages: list[Any]) -> str:
    for m in messages:
        if m.get("role") == "tool" or m.get("tool_calls"):
            return "openai"
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return "anthropic"
    return "openai"


def _require_messages(values: Any, path: str, what: str) -> list[dict[str, Any]]:
    if not isinstance(values, list):
        raise ImportFormatError(f"{path}: expected {what} to be a list of messages")
    for i, m in enumerate(values):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ImportFormatError(f"{path}: {what} item {i} is not a message with a 'role'")
    return [dict(m) for m in values]


def _plain(whole: Any, text: str, stem: str, fmt: str, path: str) -> Imported:
    notes: list[str] = []
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        # A saved request body: its messages, and Anthropic's top-level system prompt first.
        values = list(whole["messages"])
        system = whole.get("system")
        if isinstance(system, (str, list)) and system:
            values.insert(0, {"role": "system", "content": system})
            notes.append("the request's system prompt is stored as the first (system) message")
        return Imported(stem, _require_messages(values, path, "messages"), fmt, notes)
    if whole is _NOT_JSON or isinstance(whole, dict):
        values = []
        broken = 0
        for _, v in _jsonl(text):
            if v is _NOT_JSON:
                broken += 1
            else:
                values.append(v)
        if broken:
            notes.append(f"{broken} unreadable lines skipped")
    else:
        values = whole
    return Imported(stem, _require_messages(values, path, "the file"), fmt, notes)


def _mini_swe_agent(whole: Any, stem: str, path: str) -> Imported:
    if not isinstance(whole, dict) or not isinstance(whole.get("messages"), list):
        raise ImportFormatError(f"{path}: a mini-swe-agent trajectory is an object with 'messages'")
    messages = _require_messages(whole["messages"], path, "messages")
    exits = 0
    for m in messages:
        if m["role"] == "exit":
            # The runtime's final submission, not a provider role: keep it as injected input.
            m["role"] = "user"
            m["meta"] = True
            m["source_role"] = "exit"
            exits += 1
    notes = [f"{exits} 'exit' messages stored as meta user messages"] if exits else []
    cid = whole.get("instance_id")
    return Imported(
        cid if isinstance(cid, str) and cid else stem, messages, "mini-swe-agent", notes
    )


def _tau_bench(whole: Any, stem: str, path: str) -> list[Imported]:
    if not isinstance(whole, list):
        raise ImportFormatError(f"{path}: tau-bench trajectories are a JSON array")
    items = []
    for i, run in enumerate(whole):
        if not isinstance(run, dict) or "traj" not in run:
            raise ImportFormatError(f"{path}: element {i} has no 'traj'")
        task, trial = run.get("task_id", i), run.get("trial", 0)
        items.append(
            Imported(
                f"{stem}-task{task}-trial{trial}",
                _require_messages(run["traj"], path, f"element {i} traj"),
                "tau-bench",
            )
        )
    return items


def _claude_code(text: str, stem: str) -> Imported:
    records: list[dict[str, Any]] = []
    broken = 0
    for _, record in _jsonl(text):
        if record is _NOT_JSON or not isinstance(record, dict):
            broken += 1
        elif record.get("type") in _CLAUDE_MESSAGE_TYPES:
            records.append(record)
    main = [r for r in records if not r.get("isSidechain")]
    notes = [f"{broken} unreadable lines skipped"] if broken else []
    agent = next((r.get("agentId") for r in records if isinstance(r.get("agentId"), str)), None)
    conversation_id: str | None = None
    if not main and records:
        # A subagent's own log (agent-*.jsonl): every record is a sidechain of the parent
        # session, and together they are this file's conversation.
        main = records
        conversation_id = f"agent-{agent}" if agent else stem
        notes.append(f"subagent log: its {len(records)} sidechain records form the conversation")
    elif len(main) < len(records):
        notes.append(f"{len(records) - len(main)} sidechain records skipped")
    messages, session = _claude_messages(main)
    return Imported(conversation_id or session or stem, messages, "claude-code", notes)


def _claude_messages(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    messages: list[dict[str, Any]] = []
    last_assistant: int | None = None
    api_ids: dict[int, Any] = {}
    session: str | None = None
    for record in records:
        message = record.get("message")
        if not isinstance(message, dict) or message.get("role") not in _CLAUDE_MESSAGE_TYPES:
            continue
        if session is None and isinstance(record.get("sessionId"), str):
            session = record["sessionId"]
        record_id = record.get("uuid") if isinstance(record.get("uuid"), str) else None
        content = message.get("content")
        if message["role"] == "assistant":
            api_id = message.get("id")
            blocks = (
                content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            )
            only_results_since = last_assistant is not None and all(
                _only_results(m) for m in messages[last_assistant + 1 :]
            )
            if (
                last_assistant is not None
                and api_id is not None
                and only_results_since
                and api_ids.get(last_assistant) == api_id
            ):
                messages[last_assistant]["content"].extend(blocks)
                continue
            new: dict[str, Any] = {"role": "assistant", "content": list(blocks)}
            if record_id:
                new["id"] = record_id
            messages.append(new)
            last_assistant = len(messages) - 1
            api_ids[last_assistant] = api_id
            continue
        new = {"role": "user", "content": content}
        if _only_results(new) and messages and _only_results(messages[-1]):
            messages[-1]["content"] = [*messages[-1]["content"], *new["content"]]
            continue
        if record_id:
            new["id"] = record_id
        if record.get("isMeta") or record.get("isCompactSummary") or _injected(content):
            new["meta"] = True
        messages.append(new)
    return messages, session


def _only_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _injected(content: Any) -> bool:
    if isinstance(content, str):
        return content.lstrip().startswith(_CLAUDE_INJECTED)
    if isinstance(content, list):
        texts = [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        others = [
            b
            for b in content
            if isinstance(b, dict) and b.get("type") not in ("text", "tool_result")
        ]
        return (
            bool(texts)
            and not others
            and all(isinstance(t, str) and t.lstrip().startswith(_CLAUDE_INJECTED) for t in texts)
        )
    return False


def repair_pairing(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Drop results whose call is not right before them; stub calls that got no result."""
    out: list[dict[str, Any]] = []
    dropped = stubbed = 0
    pending: dict[str, None] = {}  # calls of the last assistant message still unanswered
    anthropic_calls = False

    def close() -> None:
        nonlocal stubbed
        if not pending:
            return
        stubbed += len(pending)
        if anthropic_calls:
            blocks = [_stub_result(cid) for cid in pending]
            out.append({"role": "user", "content": blocks, "meta": True, "stub": True})
        else:
            for cid in pending:
                out.append(
                    {"role": "tool", "tool_call_id": cid, "content": STUB_TEXT, "stub": True}
                )
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            call = message.get("tool_call_id")
            if call in pending:
                del pending[call]
                out.append(message)
            else:
                dropped += 1
            continue
        slots = result_slots(message)
        if slots:
            keep = [s.block for s in slots if s.tool_call_id in pending]
            answered = [s.tool_call_id for s in slots if s.tool_call_id in pending]
            dropped += len(slots) - len(keep)
            if len(keep) != len(slots):
                content = [
                    b for i, b in enumerate(message["content"]) if i in keep or not _is_result(b)
                ]
                if not content:
                    continue
                message = {**message, "content": content}
            for cid in answered:
                pending.pop(cid, None)
            # Stubs for calls this message left unanswered go into the same message.
            if pending and anthropic_calls:
                stubbed += len(pending)
                message = {
                    **message,
                    "content": [
                        *message["content"],
                        *(_stub_result(c) for c in pending),
                    ],
                }
                pending.clear()
            close()
            out.append(message)
            continue
        close()
        out.append(message)
        if role == "assistant":
            calls = list(tool_calls(message))
            pending = {cid: None for cid, _ in calls}
            anthropic_calls = not message.get("tool_calls")
    close()
    notes = []
    if dropped:
        notes.append(f"{dropped} tool results without a call right before them were dropped")
    if stubbed:
        notes.append(f"{stubbed} tool calls without a result got an explicit stub result")
    return out, notes


def _stub_result(call_id: str) -> dict[str, Any]:
    """An Anthropic tool_result that says the log holds no result for ``call_id``."""
    return {"type": "tool_result", "tool_use_id": call_id, "content": STUB_TEXT, "is_error": True}


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"
