"""The Anthropic Messages API (``POST /v1/messages``): requests, answers, errors, events.

A streamed answer is ``message_start``, then per content block ``content_block_start``,
deltas and ``content_block_stop``, then ``message_delta`` (stop reason, usage) and
``message_stop``; ``ping`` and ``error`` may come at any point. The proxy leaves out the
blocks of its own tool calls, renumbers the ``index`` of the blocks after them (and of every
block of a later round) so the client's accumulator sees one message, and holds back the
closing events of a round until it knows whether another round follows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._api import Api, Call, ClientRequest, Result, Round, StreamTranslator
from ._jsontext import JsonTextError, dumps, parse_object, replace_spans

__all__ = ["Anthropic", "claude_code_session"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_SESSION = re.compile(r"_session_([0-9A-Za-z-]{8,64})$")


def claude_code_session(metadata: Any) -> str | None:
    """Claude Code's session id from ``metadata.user_id``: a JSON object with ``session_id``
    (2.x), or ``user_<hash>_account_<uuid>_session_<uuid>`` (1.x)."""
    if not isinstance(metadata, Mapping):
        return None
    user = metadata.get("user_id")
    if not isinstance(user, str):
        return None
    if user.startswith("{"):
        try:
            parsed = json.loads(user)
        except ValueError:
            return None
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        return session if isinstance(session, str) and session else None
    match = _SESSION.search(user)
    return match.group(1) if match else None


class Anthropic(Api):
    name = "anthropic"
    provider = "anthropic"
    history_key = "messages"
    path = "/v1/messages"

    def tool_name(self, tool: Any) -> str | None:
        name = tool.get("name") if isinstance(tool, Mapping) else None
        return name if isinstance(name, str) else None

    def tool_definitions(self, schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [dict(s) for s in schemas]

    def session(self, request: ClientRequest) -> str | None:
        session = claude_code_session(request.doc.value.get("metadata"))
        return f"claude-code-{session}" if session else None

    # answers

    def parse_round(self, body: dict[str, Any]) -> Round:
        content = body.get("content")
        blocks = content if isinstance(content, list) else []
        message = {"role": "assistant", "content": blocks}
        usage = body.get("usage")
        stop = body.get("stop_reason")
        return Round(
            [message],
            _calls(blocks),
            usage if isinstance(usage, dict) else None,
            stop if isinstance(stop, str) else None,
            body,
        )

    def client_view(self, message: Mapping[str, Any], hidden: frozenset[str]) -> list[Any]:
        content = message.get("content")
        return [b for b in content if not _hidden(b, hidden)] if isinstance(content, list) else []

    def view_messages(self, parts: list[Any], round: Round) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": parts}]

    def results(self, results: Sequence[Result]) -> list[dict[str, Any]]:
        blocks = []
        for result in results:
            content: list[dict[str, Any]] = [{"type": "text", "text": result.text}]
            content += result.images
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": result.call.id,
                "content": content,
            }
            if result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return [{"role": "user", "content": blocks}]

    def note_part(self, note: str) -> Any:
        return {"type": "text", "text": note}

    def response_body(
        self, last: Round, parts: list[Any], usage: dict[str, Any] | None, note: str | None
    ) -> dict[str, Any]:
        body = dict(last.body or {})
        body["content"] = parts + ([self.note_part(note)] if note else [])
        if usage is not None:
            body["usage"] = usage
        if note or (
            body.get("stop_reason") == "tool_use"
            and not any(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in parts)
        ):
            body["stop_reason"] = "end_turn"
        return body

    def translator(
        self, hidden: frozenset[str], previous: StreamTranslator | None
    ) -> StreamTranslator:
        return _Translator(hidden, previous)

    def upstream_message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        return {"role": message.get("role"), "content": message.get("content")}

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


def _hidden(block: Any, hidden: frozenset[str]) -> bool:
    return (
        isinstance(block, Mapping)
        and block.get("type") == "tool_use"
        and block.get("name") in hidden
    )


def _calls(blocks: Sequence[Any]) -> list[Call]:
    calls = []
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                calls.append(Call(call_id, name, block.get("input")))
    return calls


def _with_index(data: str, doc: Any, index: int) -> str:
    """The event's JSON text with its top-level ``index`` set, every other byte kept."""
    span = doc.span("index")
    if span is None:
        return data
    return replace_spans(data, [(span[0], span[1], str(index))])


class _Translator(StreamTranslator):
    def __init__(self, hidden: frozenset[str], previous: StreamTranslator | None) -> None:
        super().__init__(hidden, previous)
        self.blocks: dict[int, dict[str, Any]] = {}  # upstream index -> block being built
        self.partial: dict[int, str] = {}  # upstream index -> input JSON so far
        self.order: list[int] = []
        self.mapped: dict[int, int | None] = {}  # upstream index -> client index (None: hidden)
        self.start: dict[str, Any] | None = None
        self.usage: dict[str, Any] | None = None
        self.stop: str | None = None
        self.delta: dict[str, Any] | None = None  # the message_delta event (its JSON)
        self.holding = False
        self.ended = False

    def visible(self) -> int:
        return sum(1 for v in self.mapped.values() if v is not None)

    def feed(self, event: str | None, data: str) -> list[tuple[str | None, str]]:
        try:
            doc = parse_object(data)
        except JsonTextError:
            return [(event, data)]  # not ours to judge: the client's SDK will say
        value = doc.value
        kind = value.get("type")
        if kind == "message_start":
            message = value.get("message")
            if isinstance(message, dict):
                self.start = message
                usage = message.get("usage")
                self.usage = usage if isinstance(usage, dict) else None
            return [(event, data)] if self.first else []
        if kind == "content_block_start":
            index = value.get("index")
            block = value.get("content_block")
            if not isinstance(index, int) or not isinstance(block, dict):
                return [(event, data)]
            self.blocks[index] = json.loads(json.dumps(block))
            self.order.append(index)
            if _hidden(block, self.hidden):
                self.mapped[index] = None
                self.holding = True
                return []
            shown = self.shown + self.visible()
            self.mapped[index] = shown
            return [(event, data if shown == index else _with_index(data, doc, shown))]
        if kind in ("content_block_delta", "content_block_stop"):
            index = value.get("index")
            if not isinstance(index, int) or index not in self.mapped:
                return [(event, data)]
            if kind == "content_block_delta":
                self._apply(index, value.get("delta"))
            else:
                self._close(index)
            target = self.mapped[index]
            if target is None:
                return []
            return [(event, data if target == index else _with_index(data, doc, target))]
        if kind == "message_delta":
            delta = value.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.stop = delta["stop_reason"]
            usage = value.get("usage")
            if isinstance(usage, dict):
                self.usage = {**(self.usage or {}), **usage}
            self.delta = value
            if self.holding or not self.first:
                self.held.append((event, data))
                return []
            return [(event, data)]
        if kind == "message_stop":
            self.ended = True
            if self.holding or not self.first:
                self.held.append((event, data))
                return []
            return [(event, data)]
        return [(event, data)]  # ping, error and event types this proxy does not know

    def _apply(self, index: int, delta: Any) -> None:
        block = self.blocks.get(index)
        if block is None or not isinstance(delta, Mapping):
            return
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] = str(block.get("text") or "") + delta["text"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self.partial[index] = self.partial.get(index, "") + delta["partial_json"]
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["thinking"] = str(block.get("thinking") or "") + delta["thinking"]
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = delta["signature"]
        elif kind == "citations_delta" and "citation" in delta:
            block.setdefault("citations", [])
            if isinstance(block["citations"], list):
                block["citations"].append(delta["citation"])

    def _close(self, index: int) -> None:
        block = self.blocks.get(index)
        if block is None or index not in self.partial:
            return
        text = self.partial.pop(index)
        try:
            block["input"] = json.loads(text) if text else {}
        except ValueError:
            block["input"] = {}

    def round(self) -> Round:
        content = [self.blocks[i] for i in self.order]
        message = {"role": "assistant", "content": content}
        body = dict(self.start or {})
        body["content"] = content
        if self.stop is not None:
            body["stop_reason"] = self.stop
        return Round([message], _calls(content), self.usage, self.stop, body)

    def finish(
        self, usage: dict[str, Any] | None, note: str | None, rounds: int, parts: list[Any]
    ) -> list[tuple[str | None, str]]:
        out: list[tuple[str | None, str]] = []
        if note:
            index = self.shown + self.visible()
            start = {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            delta = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": note},
            }
            out += [
                ("content_block_start", dumps(start)),
                ("content_block_delta", dumps(delta)),
                ("content_block_stop", dumps({"type": "content_block_stop", "index": index})),
            ]
        for event, data in self.held:
            value = json.loads(data)
            if value.get("type") == "message_delta":
                changed = False
                if rounds > 1 and usage is not None:
                    value["usage"] = {**(value.get("usage") or {}), **usage}
                    changed = True
                delta = value.get("delta")
                if isinstance(delta, dict) and (note or self._only_hidden_calls()):
                    delta["stop_reason"] = "end_turn"
                    changed = True
                if changed:
                    data = dumps(value)
            out.append((event, data))
        self.held = []
        return out

    def _only_hidden_calls(self) -> bool:
        calls = _calls([self.blocks[i] for i in self.order])
        return bool(calls) and all(c.name in self.hidden for c in calls)
