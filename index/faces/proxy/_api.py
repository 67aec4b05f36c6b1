"""What the three API shapes have in common: a parsed client request, one upstream round's
answer, the calls in it, and the per-API adapter the rest of the proxy talks to.

Each adapter (`_anthropic.Anthropic`, `_chat.Chat`, `_responses.Responses`) knows where its
API keeps the history (``messages`` or ``input``) and the tools, how a response carries the
model's message and its tool calls, how a tool result is sent back, how errors look, and how
its server-sent events stream. Everything else (conversations, the replay, rounds) is shared.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from leanreplay.placeholders import Provider, role_of

from ._jsontext import ObjectText, dumps, parse_object, replace_spans

__all__ = [
    "Api",
    "Call",
    "ClientRequest",
    "Result",
    "Round",
    "StreamTranslator",
    "add_usage",
]


@dataclass(frozen=True)
class ClientRequest:
    """A client's request body, parsed once, with the span of each history message."""

    text: str  # the body as the client sent it (UTF-8 decoded)
    doc: ObjectText
    messages: list[Any]  # the history: `messages` (or Responses `input` items)
    spans: list[tuple[int, int]]  # where each message sits in `text`
    history_span: tuple[int, int] | None  # the history array (None: absent or a string)
    stream: bool
    # The earlier request whose first `reused` history messages this one holds as the same
    # text (the same parsed objects; see `parse_object`).
    like: ClientRequest | None = None
    reused: int = 0
    # The running digest after each message, its state and its digest (`digests`).
    hashes: list[Any] = field(default_factory=list, compare=False, repr=False)


@dataclass(frozen=True)
class Call:
    """A tool call in a model's answer."""

    id: str
    name: str
    arguments: Any  # the parsed input (None when it does not parse)


@dataclass(frozen=True)
class Result:
    """The proxy's answer to one of its own tool calls."""

    call: Call
    text: str
    images: list[dict[str, Any]] = field(default_factory=list)  # Anthropic image blocks
    is_error: bool = False


@dataclass
class Round:
    """One upstream answer: what to store, what the client may see, and how it ended."""

    stored: list[dict[str, Any]]  # the assistant message (Responses: its output items)
    calls: list[Call]  # every tool call, ours and the client's, in order
    usage: dict[str, Any] | None
    stop: str | None  # stop_reason / finish_reason / status
    body: dict[str, Any] | None = None  # the whole response (non-streaming, and the last event)


def add_usage(
    total: dict[str, Any] | None, more: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """Usage summed field by field: numbers add, nested objects add recursively, anything
    else keeps the newest value."""
    if more is None:
        return total
    if total is None:
        copied: dict[str, Any] = json.loads(json.dumps(more))
        return copied
    out = dict(total)
    for key, value in more.items():
        old = out.get(key)
        if isinstance(value, bool) or isinstance(old, bool):
            out[key] = value
        elif isinstance(value, (int, float)) and isinstance(old, (int, float)):
            out[key] = old + value
        elif isinstance(value, Mapping) and isinstance(old, Mapping):
            out[key] = add_usage(dict(old), value)
        elif value is not None or key not in out:
            out[key] = value
    return out


class StreamTranslator(ABC):
    """Turns one upstream round's server-sent events into what the client receives: events
    of hidden tool calls left out, block or item indexes renumbered after the blocks already
    sent, closing events held back until the proxy knows whether another round follows."""

    def __init__(self, hidden: frozenset[str], previous: StreamTranslator | None) -> None:
        self.hidden = hidden  # the proxy's own tool names
        self.first = previous is None  # the first round of the client's request
        # Blocks (items, calls) the client received in earlier rounds: this round's follow.
        self.shown: int = previous.shown + previous.visible() if previous is not None else 0
        # What a round hands the next: the first round's id, the next sequence number.
        self.carry: dict[str, Any] = previous.carry if previous is not None else {}
        self.held: list[tuple[str | None, str]] = []  # closing events, held back

    @abstractmethod
    def feed(self, event: str | None, data: str) -> list[tuple[str | None, str]]:
        """The events to send on now for one upstream event."""

    @abstractmethod
    def round(self) -> Round:
        """The round as received so far (call after the stream ended)."""

    @abstractmethod
    def visible(self) -> int:
        """Blocks (items, calls) of this round the client received."""

    @abstractmethod
    def finish(
        self, usage: dict[str, Any] | None, note: str | None, rounds: int, parts: list[Any]
    ) -> list[tuple[str | None, str]]:
        """The held closing events, with the usage of every round summed and, when the proxy
        stopped its rounds, a note block first; ``rounds`` is how many upstream calls ran and
        ``parts`` what the client was shown of all of them."""


class Api(ABC):
    """One API shape the proxy serves."""

    name: ClassVar[str]
    provider: ClassVar[Provider]
    history_key: ClassVar[str]  # "messages" or "input"
    path: ClassVar[str]

    # requests

    def parse(self, text: str, like: Sequence[ClientRequest] = ()) -> ClientRequest:
        """The request body, parsed; raises `ValueError` subclasses with a one-line reason.

        ``like``: the client's earlier requests (newest first): what this one holds of the
        same text is taken from their parse, not parsed again (a client sends its whole
        history every time)."""
        doc = parse_object(text, arrays=(self.history_key, "tools"), like=[r.doc for r in like])
        history = doc.value.get(self.history_key)
        stream = doc.value.get("stream") is True
        if isinstance(history, list) and self.history_key in doc.elements:
            spans = doc.elements[self.history_key]
            earlier, reused = doc.reused.get(self.history_key, (None, 0))
            source = next((r for r in like if r.doc is earlier), None)
            return ClientRequest(
                text,
                doc,
                history,
                spans,
                doc.span(self.history_key),
                stream,
                source,
                reused if source is not None else 0,
            )
        return ClientRequest(text, doc, [], [], None, stream)

    def check(self, request: ClientRequest) -> str | None:
        """Why the history cannot be kept lean (the request is forwarded as it is, for the
        upstream to judge), or None."""
        if request.history_span is None:
            return f"the request has no {self.history_key} list"
        # The messages taken from an earlier request passed this check there (the proxy
        # keeps only requests that did).
        for i in range(request.reused, len(request.messages)):
            message = request.messages[i]
            if not isinstance(message, dict) or role_of(message) is None:
                return f"{self.history_key}[{i}] is not a message with a role"
        return None

    def declared_tools(self, request: ClientRequest) -> set[str]:
        """Names of the tools the client declared."""
        tools = request.doc.value.get("tools")
        names = set()
        for tool in tools if isinstance(tools, list) else ():
            name = self.tool_name(tool)
            if name is not None:
                names.add(name)
        return names

    @abstractmethod
    def tool_name(self, tool: Any) -> str | None: ...

    @abstractmethod
    def tool_definitions(self, schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Our tools (from ``tool_schemas("anthropic")``) in this API's tool format."""

    def tools_edit(
        self, request: ClientRequest, ours: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int, str] | None:
        """The edit of the body that appends our tools after the client's (byte-stable:
        always the same text for the same tools)."""
        if not ours:
            return None
        added = self._tools_text(ours)
        doc = request.doc
        span = doc.span("tools")
        if span is not None and isinstance(doc.value.get("tools"), list):
            start, end = span
            inner = request.text[start : end - 1]
            comma = "," if doc.value["tools"] else ""
            return start, end, inner + comma + added + "]"
        if span is not None:
            return None  # tools present but not a list: the provider will say what is wrong
        close = doc.end - 1
        comma = "," if doc.members else ""
        return close, close, f'{comma}"tools":[{added}]'

    def _tools_text(self, ours: Sequence[Mapping[str, Any]]) -> str:
        """Our tools' JSON text, made once per set of schemas (the same objects every time:
        `_retrieval.schemas`)."""
        key = tuple(map(id, ours))
        cache: dict[tuple[int, ...], tuple[list[Any], str]] = self.__dict__.setdefault(
            "_tools_texts", {}
        )
        found = cache.get(key)
        if found is not None and all(a is b for a, b in zip(found[0], ours, strict=True)):
            return found[1]
        text = ",".join(dumps(t) for t in self.tool_definitions(ours))
        if len(cache) < 64:
            cache[key] = (list(ours), text)  # held, so no other object takes these ids
        return text

    def session(self, request: ClientRequest) -> str | None:
        """A conversation id the client's own runtime gives (Claude Code's session), or None."""
        return None

    def output_reserve(self, request: ClientRequest) -> int:
        """Tokens the client keeps for the answer (for the overflow compaction)."""
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            value = request.doc.value.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return 8_192

    # responses

    @abstractmethod
    def parse_round(self, body: dict[str, Any]) -> Round:
        """One non-streamed answer."""

    def continues(self, round: Round) -> bool:
        """Whether the answer stopped to have its tool calls run (not cut off)."""
        return round.stop in ("tool_use", "tool_calls", "completed")

    @abstractmethod
    def client_view(self, message: Mapping[str, Any], hidden: frozenset[str]) -> list[Any]:
        """What of one stored answer (as `Round.stored` holds it) the client receives: its
        blocks, calls or items without those of ``hidden`` tools."""

    @abstractmethod
    def view_messages(self, parts: list[Any], round: Round) -> list[dict[str, Any]]:
        """The client's messages for the visible parts of every round (what it will send
        back in its next request)."""

    @abstractmethod
    def results(self, results: Sequence[Result]) -> list[dict[str, Any]]:
        """The messages (or items) that carry our tool results to the model."""

    @abstractmethod
    def response_body(
        self, last: Round, parts: list[Any], usage: dict[str, Any] | None, note: str | None
    ) -> dict[str, Any]:
        """The one response the client receives after several rounds (non-streaming)."""

    @abstractmethod
    def note_part(self, note: str) -> Any:
        """A visible part holding the proxy's note (rounds stopped)."""

    @abstractmethod
    def translator(
        self, hidden: frozenset[str], previous: StreamTranslator | None
    ) -> StreamTranslator:
        """A translator for one streamed round (after ``previous``, the round before)."""

    @abstractmethod
    def upstream_message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """A stored answer or result (ours) as it goes back upstream: bookkeeping left out."""

    # errors

    @abstractmethod
    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """The proxy's own error in this API's format."""

    def error_bytes(self, status: int, message: str) -> bytes:
        return json.dumps(self.error_body(status, message), ensure_ascii=False).encode()


def edited(text: str, edits: Sequence[tuple[int, int, str] | None]) -> str:
    return replace_spans(text, [e for e in edits if e is not None])
