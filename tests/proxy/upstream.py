"""A scripted model API over real HTTP, for the proxy's tests and bench: Anthropic Messages,
OpenAI Chat Completions and Responses, each as JSON or as its server-sent events.

Every request is recorded (path, headers, raw body) and answered with the next `Answer` of
the script, or with what a callable answer makes of the request (say, a call of
``conversation_read`` naming a placeholder the request holds). Answers are written once in
a neutral form (text, tool calls, thinking) and rendered in the shape of the API asked.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Tool:
    name: str
    input: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class Thinking:
    thinking: str
    signature: str


Part = Text | Tool | Thinking


@dataclass(frozen=True)
class Answer:
    """One model answer; ``stop`` defaults from its parts (tool use or end of turn)."""

    parts: tuple[Part, ...]
    stop: str | None = None
    input_tokens: int = 100
    output_tokens: int = 10


@dataclass(frozen=True)
class Failure:
    """An HTTP error answer, as a provider writes it."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Accept the request and never answer (``after`` events of a stream first)."""

    after: int = 0


@dataclass(frozen=True)
class Cut:
    """Stream ``after`` events of ``answer``, then close the connection mid-stream."""

    answer: Answer
    after: int


Scripted = Answer | Failure | Hang | Cut
Script = Scripted | Callable[["Recorded"], Scripted]


def answer(*parts: Part | str, stop: str | None = None, **usage: int) -> Answer:
    return Answer(tuple(Text(p) if isinstance(p, str) else p for p in parts), stop, **usage)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def api(self) -> str:
        if self.path.startswith("/v1/chat"):
            return "chat"
        if self.path.startswith("/v1/responses"):
            return "responses"
        return "anthropic"


@dataclass
class FakeUpstream:
    """The server; use as a context manager (it serves on a free loopback port)."""

    script: deque[Script] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    disconnects: int = 0  # streams whose client went away before the end
    default: Script | None = None  # answers when the script is empty

    def push(self, *items: Script) -> None:
        self.script.extend(items)

    def __enter__(self) -> FakeUpstream:
        self.server = _Thread(self)
        self.url = self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    # the ASGI app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.startup":
                        await send({"type": "lifespan.startup.complete"})
                    else:
                        await send({"type": "lifespan.shutdown.complete"})
                        return
            return
        request = Request(scope, receive)
        body = await request.body()
        recorded = Recorded(request.url.path, {k: v for k, v in request.headers.items()}, body)
        self.requests.append(recorded)
        response = await self._respond(recorded)
        await response(scope, receive, send)

    async def _respond(self, recorded: Recorded) -> Response:
        if recorded.path.endswith("/count_tokens"):
            return JSONResponse({"input_tokens": len(recorded.body) // 4})
        if recorded.path not in ("/v1/messages", "/v1/chat/completions", "/v1/responses"):
            return JSONResponse({"path": recorded.path, "ok": True})
        item = self.script.popleft() if self.script else self.default
        if item is None:
            return JSONResponse({"error": "the fake upstream's script is empty"}, 500)
        scripted = item(recorded) if callable(item) else item
        if isinstance(scripted, Failure):
            return JSONResponse(scripted.body, scripted.status, headers=scripted.headers)
        if isinstance(scripted, Hang) and not recorded.json.get("stream"):
            await anyio.sleep(3600)  # no status line, no headers: a hung upstream
        stream = bool(recorded.json.get("stream"))
        include_usage = bool((recorded.json.get("stream_options") or {}).get("include_usage"))
        if isinstance(scripted, (Hang, Cut)):
            source = scripted.answer if isinstance(scripted, Cut) else answer("…")
            events = list(_events(recorded.api, source, include_usage))[: scripted.after]
            return StreamingResponse(
                self._stream(
                    events, hang=isinstance(scripted, Hang), cut=isinstance(scripted, Cut)
                ),
                media_type="text/event-stream",
            )
        if stream:
            return StreamingResponse(
                self._stream(list(_events(recorded.api, scripted, include_usage))),
                media_type="text/event-stream",
            )
        return Response(json.dumps(_body(recorded.api, scripted)), media_type="application/json")

    async def _stream(self, events: list[bytes], *, hang: bool = False, cut: bool = False) -> Any:
        finished = False
        try:
            for event in events:
                yield event
                await anyio.sleep(0)
            if hang:
                await anyio.sleep(3600)
            if cut:
                raise ConnectionResetError("the fake upstream cut the stream")
            finished = True
        finally:
            if not finished and not cut:
                self.disconnects += 1


class _Thread:
    """A uvicorn server in a daemon thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def start(self) -> str:
        # IPPROTO_TCP: asyncio sets TCP_NODELAY only then (else 40 ms per kept-alive answer).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        port = self.sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="error", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=lambda: anyio.run(self.server.serve, [self.sock]), daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def serve(app: Any) -> tuple[str, Callable[[], None]]:
    """Serve any ASGI app on a free loopback port; returns its URL and a stop function."""
    thread = _Thread(app)
    return thread.start(), thread.stop


# --- rendering ------------------------------------------------------------------------------

_COUNTER = iter(range(1, 10**9))


def _ids(parts: tuple[Part, ...]) -> list[str]:
    return [p.id or f"toolu_{next(_COUNTER):04d}" if isinstance(p, Tool) else "" for p in parts]


def _stop(api: str, scripted: Answer) -> str:
    calls = any(isinstance(p, Tool) for p in scripted.parts)
    if scripted.stop is not None:
        return scripted.stop
    if api == "anthropic":
        return "tool_use" if calls else "end_turn"
    return "tool_calls" if calls else "stop"


def _body(api: str, scripted: Answer) -> dict[str, Any]:
    ids = _ids(scripted.parts)
    n = next(_COUNTER)
    if api == "anthropic":
        return {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake",
            "content": [_block(p, i) for p, i in zip(scripted.parts, ids, strict=True)],
            "stop_reason": _stop(api, scripted),
            "stop_sequence": None,
            "usage": {
                "input_tokens": scripted.input_tokens,
                "output_tokens": scripted.output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
    if api == "chat":
        text = "".join(p.text for p in scripted.parts if isinstance(p, Text))
        calls = [
            {
                "id": i,
                "type": "function",
                "function": {"name": p.name, "arguments": json.dumps(p.input)},
            }
            for p, i in zip(scripted.parts, ids, strict=True)
            if isinstance(p, Tool)
        ]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text or None,
            "refusal": None,
            "annotations": [],
        }
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{n:04d}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": _stop(api, scripted),
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": scripted.input_tokens,
                "completion_tokens": scripted.output_tokens,
                "total_tokens": scripted.input_tokens + scripted.output_tokens,
            },
        }
    return _response(
        n, scripted, [_item(p, i, n) for p, i in zip(scripted.parts, ids, strict=True)]
    )


def _response(
    n: int, scripted: Answer, output: list[dict[str, Any]], status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": f"resp_{n:04d}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": "gpt-fake",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "error": None,
        "incomplete_details": None,
        "usage": {
            "input_tokens": scripted.input_tokens,
            "output_tokens": scripted.output_tokens,
            "total_tokens": scripted.input_tokens + scripted.output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _block(part: Part, call_id: str) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Thinking):
        return {"type": "thinking", "thinking": part.thinking, "signature": part.signature}
    return {"type": "tool_use", "id": call_id, "name": part.name, "input": part.input}


def _item(part: Part, call_id: str, n: int) -> dict[str, Any]:
    k = next(_COUNTER)
    if isinstance(part, Text):
        return {
            "type": "message",
            "id": f"msg_{k:04d}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": part.text, "annotations": []}],
        }
    if isinstance(part, Thinking):
        return {
            "type": "reasoning",
            "id": f"rs_{k:04d}",
            "summary": [{"type": "summary_text", "text": part.thinking}],
            "encrypted_content": part.signature,
        }
    return {
        "type": "function_call",
        "id": f"fc_{k:04d}",
        "call_id": call_id.replace("toolu_", "call_"),
        "name": part.name,
        "arguments": json.dumps(part.input),
        "status": "completed",
    }


def _sse(event: str | None, data: Any) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def _halves(text: str) -> list[str]:
    cut = len(text) // 2
    return [p for p in (text[:cut], text[cut:]) if p] or [""]


def _events(api: str, scripted: Answer, include_usage: bool) -> Iterator[bytes]:
    body = _body(api, scripted)
    if api == "anthropic":
        start = {**body, "content": [], "stop_reason": None}
        start["usage"] = {**body["usage"], "output_tokens": 1}
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("ping", {"type": "ping"})
        for index, block in enumerate(body["content"]):
            empty = dict(block)
            deltas: list[dict[str, Any]] = []
            if block["type"] == "text":
                empty["text"] = ""
                deltas = [{"type": "text_delta", "text": t} for t in _halves(block["text"])]
            elif block["type"] == "thinking":
                empty.update(thinking="", signature="")
                deltas = [
                    {"type": "thinking_delta", "thinking": t} for t in _halves(block["thinking"])
                ]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            else:
                empty["input"] = {}
                deltas = [
                    {"type": "input_json_delta", "partial_json": t}
                    for t in _halves(json.dumps(block["input"]))
                ]
            yield _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
            for delta in deltas:
                yield _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": scripted.output_tokens},
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})
        return
    if api == "chat":
        message = body["choices"][0]["message"]
        base = {k: body[k] for k in ("id", "object", "created", "model")}
        base["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return _sse(None, {**base, "choices": [choice]})

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        for piece in _halves(message["content"] or ""):
            if piece:
                yield chunk({"content": piece})
        for index, call in enumerate(message.get("tool_calls") or ()):
            first = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            yield chunk({"tool_calls": [first]})
            for piece in _halves(call["function"]["arguments"]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, body["choices"][0]["finish_reason"])
        if include_usage:
            yield _sse(None, {**base, "choices": [], "usage": body["usage"]})
        yield _sse(None, "[DONE]")
        return
    sequence = iter(range(10**6))

    def event(kind: str, **fields: Any) -> bytes:
        return _sse(kind, {"type": kind, "sequence_number": next(sequence), **fields})

    opening = {**body, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=opening)
    yield event("response.in_progress", response=opening)
    for index, item in enumerate(body["output"]):
        if item["type"] == "message":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            yield event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            text = item["content"][0]["text"]
            for piece in _halves(text):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            yield event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            yield event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        elif item["type"] == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in _halves(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=body)
