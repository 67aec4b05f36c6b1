"""OpenAI Responses (``POST /v1/responses``): requests, answers, errors, events.

The history is ``input``, a list of items (messages, ``function_call``,
``function_call_output``, ``reasoning`` and others); an answer is ``output``, a list of items.
A streamed answer is ``response.created``, per item ``response.output_item.added``, its part
and delta events and ``response.output_item.done`` (each naming its ``output_index``), then
``response.completed`` with the whole response; every event has a ``sequence_number``. The
proxy leaves out the events of its own function calls, renumbers ``output_index`` and
``sequence_number`` after them and across rounds, and sends one ``response.completed``
whose ``output`` holds every item the client was shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ._api import Api, Call, ClientRequest, Result, Round, StreamTranslator
from ._chat import openai_error
from ._jsontext import JsonTextError, dumps, parse_object

__all__ = ["Responses"]

_CLOSING = frozenset({"response.completed", "response.incomplete", "response.failed"})
_OPENING = frozenset({"response.created", "response.in_progress", "response.queued"})
NOTE_ID = "msg_leanreplay_note"


class Responses(Api):
    name = "responses"
    provider = "openai-responses"
    history_key = "input"
    path = "/v1/responses"

    def check(self, request: ClientRequest) -> str | None:
        value = request.doc.value
        if value.get("previous_response_id") is not None:
            return "previous_response_id: the history is kept upstream"
        if value.get("conversation") is not None:
            return "conversation: the history is kept upstream"
        return super().check(request)

    def tool_name(self, tool: Any) -> str | None:
        if not isinstance(tool, Mapping) or tool.get("type") not in ("function", "custom"):
            return None
        name = tool.get("name")
        return name if isinstance(name, str) else None

    def tool_definitions(self, schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "name": s["name"],
                "description": s["description"],
                "parameters": s["input_schema"],
                "strict": False,
            }
            for s in schemas
        ]

    # answers

    def parse_round(self, body: dict[str, Any]) -> Round:
        output = body.get("output")
        items = [dict(i) for i in output if isinstance(i, dict)] if isinstance(output, list) else []
        usage = body.get("usage")
        status = body.get("status")
        return Round(
            items,
            _calls(items),
            usage if isinstance(usage, dict) else None,
            status if isinstance(status, str) else None,
            body,
        )

    def client_view(self, message: Mapping[str, Any], hidden: frozenset[str]) -> list[Any]:
        return [] if _hidden(message, hidden) else [message]

    def view_messages(self, parts: list[Any], round: Round) -> list[dict[str, Any]]:
        return list(parts)

    def results(self, results: Sequence[Result]) -> list[dict[str, Any]]:
        out = []
        for result in results:
            text = result.text
            if result.images:
                text += f"\n[{len(result.images)} image(s) not shown in this function output]"
            out.append({"type": "function_call_output", "call_id": result.call.id, "output": text})
        return out

    def note_part(self, note: str) -> Any:
        return {
            "type": "message",
            "id": NOTE_ID,
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": note, "annotations": []}],
        }

    def response_body(
        self, last: Round, parts: list[Any], usage: dict[str, Any] | None, note: str | None
    ) -> dict[str, Any]:
        body = dict(last.body or {})
        body["output"] = parts + ([self.note_part(note)] if note else [])
        if usage is not None:
            body["usage"] = usage
        return body

    def translator(
        self, hidden: frozenset[str], previous: StreamTranslator | None
    ) -> StreamTranslator:
        return _Translator(hidden, previous)

    def upstream_message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        return dict(message)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return openai_error(status, message)


def _hidden(item: Any, hidden: frozenset[str]) -> bool:
    return (
        isinstance(item, Mapping)
        and item.get("type") == "function_call"
        and item.get("name") in hidden
    )


def _calls(items: Sequence[Mapping[str, Any]]) -> list[Call]:
    calls = []
    for item in items:
        kind = item.get("type")
        call_id, name = item.get("call_id"), item.get("name")
        if kind not in ("function_call", "custom_tool_call"):
            continue
        if not (isinstance(call_id, str) and isinstance(name, str)):
            continue
        text = item.get("arguments") if kind == "function_call" else item.get("input")
        arguments: Any = text
        if kind == "function_call":
            try:
                arguments = json.loads(text) if isinstance(text, str) and text else {}
            except ValueError:
                arguments = None
        calls.append(Call(call_id, name, arguments))
    return calls


class _Translator(StreamTranslator):
    def __init__(self, hidden: frozenset[str], previous: StreamTranslator | None) -> None:
        super().__init__(hidden, previous)
        self.items: dict[int, dict[str, Any]] = {}  # upstream output_index -> item
        self.mapped: dict[int, int | None] = {}
        self.order: list[int] = []
        self.response: dict[str, Any] | None = None
        self.holding = False

    def visible(self) -> int:
        return sum(1 for v in self.mapped.values() if v is not None)

    def feed(self, event: str | None, data: str) -> list[tuple[str | None, str]]:
        try:
            doc = parse_object(data)
        except JsonTextError:
            return [(event, data)]
        value = doc.value
        kind = value.get("type")
        if kind in _OPENING:
            response = value.get("response")
            if isinstance(response, dict):
                self.response = response
                # The client's stream knows the response by its first id (the SDK checks).
                self.carry.setdefault("id", response.get("id"))
            return self._send(event, data, value) if self.first else []
        if kind in _CLOSING:
            response = value.get("response")
            if isinstance(response, dict):
                self.response = response
            if self.holding or not self.first:
                self.held.append((event, data))
                return []
            return self._send(event, data, value)
        index = value.get("output_index")
        if not isinstance(index, int):
            return self._send(event, data, value)  # errors, and events this proxy does not know
        if kind == "response.output_item.added" and index not in self.mapped:
            item = value.get("item")
            self.order.append(index)
            if _hidden(item, self.hidden):
                self.mapped[index] = None
                self.holding = True
            else:
                self.mapped[index] = self.shown + self.visible()
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = value.get("item")
            if isinstance(item, dict):
                self.items[index] = item
        target = self.mapped.get(index, index)
        if target is None:
            return []
        if target != index:
            return self._send(event, data, {**value, "output_index": target}, rewritten=True)
        return self._send(event, data, value)

    def _send(
        self, event: str | None, data: str, value: dict[str, Any], *, rewritten: bool = False
    ) -> list[tuple[str | None, str]]:
        """One event on its way to the client, its sequence number the next in the run the
        client sees (every round and every event left out counted out)."""
        number = value.get("sequence_number")
        if isinstance(number, int) and not isinstance(number, bool):
            expected = self.carry.setdefault("sequence", number)
            self.carry["sequence"] = expected + 1
            if number != expected:
                value = {**value, "sequence_number": expected}
                rewritten = True
        return [(event, dumps(value) if rewritten else data)]

    def round(self) -> Round:
        output = (self.response or {}).get("output")
        if isinstance(output, list) and output:
            items = [dict(i) for i in output if isinstance(i, dict)]
        else:
            items = [self.items[i] for i in self.order if i in self.items]
        body = dict(self.response or {})
        body["output"] = items
        usage = body.get("usage")
        status = body.get("status")
        return Round(
            items,
            _calls(items),
            usage if isinstance(usage, dict) else None,
            status if isinstance(status, str) else None,
            body,
        )

    def finish(
        self, usage: dict[str, Any] | None, note: str | None, rounds: int, parts: list[Any]
    ) -> list[tuple[str | None, str]]:
        out: list[tuple[str | None, str]] = []
        if note:
            item = Responses().note_part(note)
            index = self.shown + self.visible()
            for kind in ("response.output_item.added", "response.output_item.done"):
                added = {"type": kind, "output_index": index, "item": item, "sequence_number": 0}
                out += self._send(kind, "", added, rewritten=True)
        for event, data in self.held:
            value = json.loads(data)
            response = value.get("response")
            if isinstance(response, dict) and (rounds > 1 or self.holding or note):
                response = dict(response)
                if self.carry.get("id") is not None:
                    response["id"] = self.carry["id"]
                response["output"] = list(parts) + ([Responses().note_part(note)] if note else [])
                if usage is not None and rounds > 1:
                    response["usage"] = usage
                out += self._send(event, data, {**value, "response": response}, rewritten=True)
            else:
                out += self._send(event, data, value)
        self.held = []
        return out
