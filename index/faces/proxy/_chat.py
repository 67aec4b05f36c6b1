"""OpenAI Chat Completions (``POST /v1/chat/completions``): requests, answers, errors, chunks.

A streamed answer is a run of ``chat.completion.chunk`` objects (``data: {...}``), each with
a ``delta`` of the first choice: the role, content text, tool calls by ``index`` (the first
chunk of a call names it, later ones add arguments), then a ``finish_reason``, an optional
usage chunk with no choices, and ``data: [DONE]``. The proxy drops the deltas of its own tool
calls, renumbers the client's calls after them, and gives every chunk of a later round the
first round's ``id``, so the SDK's accumulator builds one message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from leanreplay.placeholders import for_provider

from ._api import Api, Call, ClientRequest, Result, Round, StreamTranslator
from ._jsontext import JsonTextError, dumps, parse_object

__all__ = ["Chat", "openai_error"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "server_error",
    503: "server_error",
    504: "server_error",
}


def openai_error(status: int, message: str) -> dict[str, Any]:
    """An error body as the OpenAI API writes it."""
    kind = _ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class Chat(Api):
    name = "chat"
    provider = "openai"
    history_key = "messages"
    path = "/v1/chat/completions"

    def check(self, request: ClientRequest) -> str | None:
        n = request.doc.value.get("n")
        if isinstance(n, int) and not isinstance(n, bool) and n > 1:
            return "n > 1 asks for several answers at once"
        return super().check(request)

    def tool_name(self, tool: Any) -> str | None:
        if not isinstance(tool, Mapping):
            return None
        inner = tool.get("function") or tool.get("custom")
        name = inner.get("name") if isinstance(inner, Mapping) else None
        return name if isinstance(name, str) else None

    def tool_definitions(self, schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": s["name"],
                    "description": s["description"],
                    "parameters": s["input_schema"],
                },
            }
            for s in schemas
        ]

    # answers

    def parse_round(self, body: dict[str, Any]) -> Round:
        choices = body.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        message = choice.get("message") if isinstance(choice, dict) else None
        message = dict(message) if isinstance(message, dict) else {"role": "assistant"}
        usage = body.get("usage")
        stop = choice.get("finish_reason") if isinstance(choice, dict) else None
        return Round(
            [message],
            _calls(message),
            usage if isinstance(usage, dict) else None,
            stop if isinstance(stop, str) else None,
            body,
        )

    def client_view(self, message: Mapping[str, Any], hidden: frozenset[str]) -> list[Any]:
        parts: list[Any] = []
        content = message.get("content")
        if isinstance(content, str) and content:
            parts.append({"text": content})
        for call in message.get("tool_calls") or ():
            if not (isinstance(call, Mapping) and _call_name(call) in hidden):
                parts.append({"tool_call": call})
        return parts

    def view_messages(self, parts: list[Any], round: Round) -> list[dict[str, Any]]:
        text = "".join(p["text"] for p in parts if "text" in p)
        calls = [p["tool_call"] for p in parts if "tool_call" in p]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return [message]

    def results(self, results: Sequence[Result]) -> list[dict[str, Any]]:
        out = []
        for result in results:
            text = result.text
            if result.images:
                text += (
                    f"\n[{len(result.images)} image(s) not shown: Chat Completions takes no "
                    "images in tool results]"
                )
            out.append({"role": "tool", "tool_call_id": result.call.id, "content": text})
        return out

    def note_part(self, note: str) -> Any:
        return {"text": note}

    def response_body(
        self, last: Round, parts: list[Any], usage: dict[str, Any] | None, note: str | None
    ) -> dict[str, Any]:
        body = dict(last.body or {})
        shown = parts + ([self.note_part(note)] if note else [])
        message = {**(last.stored[0] if last.stored else {}), **self.view_messages(shown, last)[0]}
        if "tool_calls" not in self.view_messages(shown, last)[0]:
            message.pop("tool_calls", None)
        choices = body.get("choices")
        first = dict(choices[0]) if isinstance(choices, list) and choices else {"index": 0}
        first["message"] = message
        first["finish_reason"] = "tool_calls" if message.get("tool_calls") else "stop"
        body["choices"] = [first]
        if usage is not None:
            body["usage"] = usage
        return body

    def translator(
        self, hidden: frozenset[str], previous: StreamTranslator | None
    ) -> StreamTranslator:
        return _Translator(hidden, previous)

    def upstream_message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        return for_provider([message], "openai")[0]

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return openai_error(status, message)


def _call_name(call: Mapping[str, Any]) -> str | None:
    inner = call.get("function") or call.get("custom")
    name = inner.get("name") if isinstance(inner, Mapping) else None
    return name if isinstance(name, str) else None


def _calls(message: Mapping[str, Any]) -> list[Call]:
    calls = []
    for call in message.get("tool_calls") or ():
        if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
            continue
        name = _call_name(call)
        function = call.get("function")
        text = function.get("arguments") if isinstance(function, Mapping) else None
        try:
            arguments = json.loads(text) if isinstance(text, str) and text else {}
        except ValueError:
            arguments = None
        if name is not None:
            calls.append(Call(call["id"], name, arguments))
    return calls


class _Translator(StreamTranslator):
    def __init__(self, hidden: frozenset[str], previous: StreamTranslator | None) -> None:
        super().__init__(hidden, previous)
        self.calls: dict[int, dict[str, Any]] = {}  # upstream index -> call being built
        self.mapped: dict[int, int | None] = {}  # upstream index -> client index (None: ours)
        self.order: list[int] = []
        self.text = ""
        self.role = "assistant"
        self.usage: dict[str, Any] | None = None
        self.stop: str | None = None
        self.last: dict[str, Any] | None = None
        self.holding = False

    def visible(self) -> int:
        return sum(1 for v in self.mapped.values() if v is not None)

    def _hold(self) -> bool:
        return self.holding or not self.first

    def feed(self, event: str | None, data: str) -> list[tuple[str | None, str]]:
        if data.strip() == "[DONE]":
            if self._hold():
                self.held.append((event, data))
                return []
            return [(event, data)]
        try:
            value = parse_object(data).value
        except JsonTextError:
            return [(event, data)]
        self.last = value
        self.carry.setdefault("id", value.get("id"))
        if isinstance(value.get("usage"), dict):
            self.usage = value["usage"]
        choices = value.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            if self._hold():  # the usage chunk: its usage is summed at the end
                self.held.append((event, data))
                return []
            return [(event, data)]
        choice = choices[0]
        delta = choice.get("delta")
        shown: Any = delta
        if isinstance(delta, dict):
            if isinstance(delta.get("role"), str):
                self.role = delta["role"]
            if isinstance(delta.get("content"), str):
                self.text += delta["content"]
            calls = delta.get("tool_calls")
            if isinstance(calls, list) and calls:
                kept = [c for c in (self._call(c) for c in calls) if c is not None]
                if kept != calls:
                    shown = {k: v for k, v in delta.items() if k != "tool_calls"}
                    if kept:
                        shown["tool_calls"] = kept
            if not self.first and isinstance(shown, dict) and "role" in shown:
                # The SDK's accumulator adds up string deltas, the role too.
                shown = {k: v for k, v in shown.items() if k != "role"}
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self.stop = finish
        if shown is not delta and not shown and finish is None:
            return []  # a chunk that only carried our tool calls
        rewritten = shown is not delta or (not self.first and value.get("id") != self.carry["id"])
        if rewritten:
            value = {**value, "id": self.carry["id"], "choices": [{**choice, "delta": shown}]}
        text = dumps(value) if rewritten else data
        if isinstance(finish, str) and self._hold():
            self.held.append((event, text))
            return []
        return [(event, text)]

    def _call(self, call: Any) -> Any:
        if not isinstance(call, dict) or not isinstance(call.get("index"), int):
            return call
        index = call["index"]
        built = self.calls.get(index)
        given = call.get("function")
        function: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        if built is None:
            built = {"id": call.get("id"), "type": call.get("type", "function"), "function": {}}
            self.calls[index] = built
            self.order.append(index)
            if function.get("name") in self.hidden:
                self.mapped[index] = None
                self.holding = True
            else:
                self.mapped[index] = self.shown + self.visible()
        if isinstance(function.get("name"), str):
            built["function"]["name"] = function["name"]
        if isinstance(function.get("arguments"), str):
            built["function"]["arguments"] = (
                built["function"].get("arguments", "") + function["arguments"]
            )
        if isinstance(call.get("id"), str):
            built["id"] = call["id"]
        target = self.mapped[index]
        if target is None:
            return None
        return call if target == index else {**call, "index": target}

    def round(self) -> Round:
        calls = []
        for index in self.order:
            built = self.calls[index]
            built["function"].setdefault("arguments", "")
            calls.append(built)
        message: dict[str, Any] = {"role": self.role, "content": self.text or None}
        if calls:
            message["tool_calls"] = calls
        body = {k: v for k, v in (self.last or {}).items() if k not in ("choices", "usage")}
        body["object"] = "chat.completion"
        body["choices"] = [{"index": 0, "message": message, "finish_reason": self.stop}]
        return Round([message], _calls(message), self.usage, self.stop, body)

    def finish(
        self, usage: dict[str, Any] | None, note: str | None, rounds: int, parts: list[Any]
    ) -> list[tuple[str | None, str]]:
        out: list[tuple[str | None, str]] = []
        only_ours = bool(self.order) and all(self.mapped[i] is None for i in self.order)
        for event, data in self.held:
            if data.strip() == "[DONE]":
                out.append((event, data))
                continue
            value = json.loads(data)
            choices = value.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                choice = dict(choices[0])
                if note:
                    extra = {"index": choice.get("index", 0), "delta": {"content": note}}
                    out.append(
                        (event, dumps({**value, "choices": [{**extra, "finish_reason": None}]}))
                    )
                if note or only_ours:
                    choice["finish_reason"] = "stop"
                value["choices"] = [choice]
            if isinstance(value.get("usage"), dict) and usage is not None and rounds > 1:
                value["usage"] = usage
            out.append((event, dumps(value)))
        self.held = []
        return out
