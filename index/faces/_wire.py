"""The gateway's wires to its upstream servers, bounded in what one message may cost.

The SDK's stdio client reads a whole line however long (and joins its chunks in quadratic
time: a 64 MiB reply never arrives), logs a traceback for every line it cannot parse, and
leaves the request that line answered waiting. Here every line is capped at
``MAX_UPSTREAM_MESSAGE_BYTES``: a longer one is read past in bounded pieces, and a line that
is too long or not JSON-RPC is answered, for the request id its head names, with an error
the session hands back to the waiting call. Streamable-HTTP upstreams get the same cap on a
JSON body and on one SSE event.

A stdio upstream also takes raw ``tools/call`` requests beside its SDK session (`Relay`): the
gateway's fast path for forwarded calls, which skips the SDK's model round trips on both ends.
The relay's ids and progress tokens are strings the SDK's own (integers) never are, its
replies are taken off the wire before the session sees them, and every bound above holds for
them too: a reply over the cap or not JSON-RPC answers the relayed call with the same error.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import msgspec
from anyio.abc import ByteReceiveStream, Process
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

__all__ = [
    "MAX_UPSTREAM_MESSAGE_BYTES",
    "Oversized",
    "Relay",
    "RelayClosed",
    "capped_lines",
    "dumps",
    "loads",
    "no_constants",
    "http_upstream",
    "parse_line",
    "request_id",
    "stdio_upstream",
]

MAX_UPSTREAM_MESSAGE_BYTES = 32 * 1024 * 1024  # one JSON-RPC message from an upstream
HEAD_BYTES = 4096  # what is kept of an oversized or broken line, to find its id
EXIT_GRACE_S = 2.0  # an upstream gets this long to exit once its stdin closes
CANCEL_WRITE_S = 1.0  # a courtesy notifications/cancelled gets this long to be written
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,256}"|-?\d{1,18})')


def request_id(head: bytes) -> str | int | None:
    """The id a JSON-RPC message's head names, if any (the first ``"id": ...`` in it)."""
    found = _ID.search(head)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (str, int)) else None


@dataclass(frozen=True)
class Oversized:
    """A line longer than the cap: its size and its first `HEAD_BYTES` bytes."""

    size: int
    head: bytes


async def capped_lines(stream: ByteReceiveStream, cap: int) -> AsyncIterator[bytes | Oversized]:
    """The newline-separated lines of ``stream``, none held longer than ``cap`` bytes: a
    longer one is skipped as it arrives and yielded as `Oversized`. Linear in the bytes read."""
    held = bytearray()
    skipped: Oversized | None = None
    while True:
        try:
            chunk = await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if skipped is not None:
                skipped = Oversized(skipped.size + len(piece), skipped.head)
            elif len(held) + len(piece) > cap:
                skipped = Oversized(len(held) + len(piece), bytes((held + piece)[:HEAD_BYTES]))
                held.clear()
            else:
                held += piece
            if end < 0:
                break
            if skipped is not None:
                yield skipped
                skipped = None
            else:
                yield bytes(held)
                held.clear()
            start = end + 1


def _error_for(head: bytes, message: str) -> SessionMessage | None:
    rid = request_id(head)
    if rid is None:
        return None  # nothing to answer: the call it was meant for times out
    error = ErrorData(code=INTERNAL_ERROR, message=message)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=error))


def parse_line(line: bytes | Oversized, cap: int) -> SessionMessage | Exception | None:
    """One upstream line as the session takes it: a message, an error for the request a bad
    line answered, or None for a blank line or a bad one that names no request."""
    if isinstance(line, Oversized):
        return _error_for(
            line.head,
            f"the upstream's reply of {line.size:,} bytes is over the gateway's limit of "
            f"{cap:,} bytes per message",
        )
    if not line.strip():
        return None
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"] if exc.errors() else "invalid"
        return _error_for(
            line[:HEAD_BYTES], f"the upstream's reply is not valid JSON-RPC: {reason[:200]}"
        )


async def _exited(process: Process, timeout: float) -> bool:
    # Not process.wait(): it also waits for the pipes, which a grandchild may hold open.
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
        return True
    return False


def dumps(message: object) -> bytes:
    """One JSON-RPC line, newline included, as compact as the SDK writes it; text with a lone
    surrogate (which UTF-8 cannot carry) is written escaped. NaN and Infinity, which JSON has
    no spelling for, are written as null (none reaches here: `loads` refuses them)."""
    try:
        # msgspec writes the same JSON (a float may be spelled differently, 1e22 for 1e+22)
        # some 30x faster than the json module; a forwarded call writes two lines.
        return _FAST_ENCODER.encode(message) + b"\n"
    except (TypeError, ValueError, OverflowError):  # UnicodeEncodeError is a ValueError
        pass
    try:
        return _ENCODER.encode(message).encode() + b"\n"
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(message).encode() + b"\n"


def loads(line: str | bytes) -> Any:
    """One JSON-RPC line as Python values, as `json.loads` reads it.

    Raises:
        ValueError: it is not JSON (NaN and Infinity are not: see `no_constants`).
        RecursionError: it nests deeper than Python's stack allows.
    """
    try:
        # msgspec reads what the json module reads, to the same values, some 10x faster; what
        # it refuses (a lone surrogate escape, a number past a float's range, anything that is
        # not JSON) the json module decides, so that the answer stays the json module's.
        return _FAST_DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError):
        pass
    text = line.decode() if isinstance(line, bytes) else line
    return _DECODER.decode(text)


def no_constants(name: str) -> Any:
    """For `json.loads`: NaN and Infinity are not JSON. A line with them is left to the SDK's
    parser, which takes them and writes them as null."""
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=no_constants)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"))
_FAST_ENCODER = msgspec.json.Encoder()
_FAST_DECODER = msgspec.json.Decoder()


class RelayClosed(Exception):
    """The upstream's connection ended before it answered a relayed call."""


Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass
class _Waiting:
    done: anyio.Event
    on_progress: Progress | None
    answer: dict[str, Any] | None = None  # {"result": {...}} or {"error": {...}}


class Relay:
    """Raw ``tools/call`` requests to one stdio upstream, beside its SDK session.

    A request goes out as the session would send it: the ``_meta`` envelope its session
    stamps on every request on a 2026-07-28 connection (seen on the session's own requests),
    an id and progress token of this relay's own (``"leanreplay-N"``: the SDK numbers its
    requests). The reply comes back as the JSON the upstream sent, not as SDK models.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, _Waiting] = {}
        self._send: Callable[[bytes], Awaitable[None]] | None = None
        self._count = 0
        self.envelope: dict[str, Any] = {}  # the session's request _meta, less progressToken

    @property
    def open(self) -> bool:
        return self._send is not None

    async def call(
        self, params: dict[str, Any], on_progress: Progress | None, timeout: float
    ) -> dict[str, Any]:
        """Send ``tools/call`` with ``params`` and wait for the answer: ``{"result": ...}`` or
        ``{"error": ...}`` as the upstream wrote it.

        Raises:
            TimeoutError: no answer within ``timeout`` seconds (the upstream is told the
                request is cancelled, as the SDK's session tells it).
            RelayClosed: the connection ended first.
        """
        send = self._send
        if send is None:
            raise RelayClosed
        self._count += 1
        rid = f"leanreplay-{self._count}"
        meta = dict(self.envelope)
        if on_progress is not None:
            meta["progressToken"] = rid
        request = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        if meta:
            request["params"] = {**params, "_meta": meta}
        waiting = self._waiting[rid] = _Waiting(anyio.Event(), on_progress)
        try:
            try:
                await send(dumps(request))
                with anyio.move_on_after(timeout) as scope:
                    await waiting.done.wait()
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await self._cancel(rid, "caller cancelled")
                raise
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                raise RelayClosed from None
            if scope.cancelled_caught:
                await self._cancel(rid, f"timed out after {timeout:g}s")
                raise TimeoutError
        finally:
            del self._waiting[rid]
        if waiting.answer is None:
            raise RelayClosed
        return waiting.answer

    async def _cancel(self, rid: str, reason: str) -> None:
        send = self._send
        if send is None:
            return
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": reason},
        }
        with anyio.move_on_after(CANCEL_WRITE_S), contextlib.suppress(Exception):
            await send(dumps(note))

    @property
    def waiting(self) -> bool:
        return bool(self._waiting)

    def _answer(self, rid: object, answer: dict[str, Any]) -> bool:
        waiting = self._waiting.get(rid) if isinstance(rid, str) else None
        if waiting is None or waiting.done.is_set():
            return False
        waiting.answer = answer
        waiting.done.set()
        return True

    async def take_line(self, line: bytes) -> bool:
        """True when ``line`` answers a relayed call (or reports its progress): it is taken.
        Anything else, or a line this cannot read, is left to the session and `take`."""
        try:
            message = loads(line)
        except (ValueError, RecursionError):
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        if "method" in message:
            params = message.get("params")
            if message["method"] != "notifications/progress" or not isinstance(params, dict):
                return False
            token, done = params.get("progressToken"), params.get("progress")
            waiting = self._waiting.get(token) if isinstance(token, str) else None
            if waiting is None or waiting.on_progress is None:
                return False
            total, said = params.get("total"), params.get("message")
            if isinstance(done, int | float) and not isinstance(done, bool):
                with contextlib.suppress(Exception):
                    await waiting.on_progress(
                        float(done),
                        float(total) if isinstance(total, int | float) else None,
                        said if isinstance(said, str) else None,
                    )
            return True
        result, error = message.get("result"), message.get("error")
        if isinstance(result, dict) and "error" not in message:
            return self._answer(message.get("id"), {"result": result})
        if (
            isinstance(error, dict)
            and "result" not in message
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        ):
            return self._answer(message.get("id"), {"error": error})
        return False  # not a well-formed answer: the session's parser says what is wrong

    def take(self, message: SessionMessage | Exception | None) -> bool:
        """True when a parsed upstream ``message`` answers a relayed call: an error for a line
        too long or not JSON-RPC (`parse_line`), or an answer `take_line` could not read."""
        if not isinstance(message, SessionMessage):
            return False
        inner = message.message
        if isinstance(inner, JSONRPCError):
            error = inner.error.model_dump(by_alias=True, mode="json", exclude_none=True)
            return self._answer(inner.id, {"error": error})
        if isinstance(inner, JSONRPCResponse):
            # As JSON again (a NaN the parser took is null): it is written to the client as is.
            return self._answer(inner.id, {"result": inner.model_dump(mode="json")["result"]})
        return False

    def saw(self, message: SessionMessage) -> None:
        """Keep the envelope the session stamps on its requests (2026-07-28 connections)."""
        inner = message.message
        if isinstance(inner, JSONRPCRequest) and isinstance(inner.params, dict):
            meta = inner.params.get("_meta")
            if isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta:
                self.envelope = {k: v for k, v in meta.items() if k != "progressToken"}

    def attach(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._send = send

    def close(self) -> None:
        """The connection ended: every call still waiting fails with `RelayClosed`."""
        self._send = None
        for waiting in self._waiting.values():
            waiting.done.set()


async def _taken(relay: Relay | None, line: bytes) -> bool:
    return relay is not None and await relay.take_line(line)


@contextlib.asynccontextmanager
async def stdio_upstream(
    params: StdioServerParameters,
    *,
    cap: int = MAX_UPSTREAM_MESSAGE_BYTES,
    relay: Relay | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Run ``params``' command in its own process group and speak JSON-RPC lines with it.

    With a ``relay``, the relay writes its requests to the same stdin, and takes every line
    that answers one of them before the session sees it.
    """
    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        stderr=sys.stderr,
        start_new_session=True,
    )
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    assert process.stdout is not None
    assert process.stdin is not None
    stdout, stdin = process.stdout, process.stdin

    async def reader() -> None:
        try:
            async with read_send:
                async for line in capped_lines(stdout, cap):
                    relayed = relay is not None and relay.waiting
                    if relayed and isinstance(line, bytes) and await _taken(relay, line):
                        continue
                    message = parse_line(line, cap)
                    if relayed and relay is not None and relay.take(message):
                        continue
                    if message is not None:
                        try:
                            await read_send.send(message)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
        finally:
            if relay is not None:
                relay.close()  # the upstream's output ended: relayed calls fail at once

    async def writer() -> None:
        try:
            async with write_recv:
                async for outgoing in write_recv:
                    if relay is not None:
                        relay.saw(outgoing)
                    data = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the session sees the connection end, not a hang
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        if relay is not None:
            relay.attach(stdin.send)
        try:
            yield read_recv, write_send
        finally:
            if relay is not None:
                relay.close()
            with anyio.CancelScope(shield=True):
                write_send.close()
                with anyio.move_on_after(0.5):
                    await writer_done.wait()
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await stdin.aclose()
                if not await _exited(process, EXIT_GRACE_S):
                    await terminate_posix_process_tree(process, EXIT_GRACE_S)
                    await _exited(process, EXIT_GRACE_S)
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await stdout.aclose()
                read_recv.close()
            tg.cancel_scope.cancel()


class _ReplyTooLarge(httpx2.StreamError):
    pass


class _CappedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, cap: int) -> None:
        self.inner, self.cap = inner, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.inner:
            size += len(chunk)
            if size > self.cap:
                raise _ReplyTooLarge(
                    f"the upstream's reply is over the gateway's limit of {self.cap:,} bytes "
                    "per message"
                )
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    """Caps every JSON body (one reply each); SSE streams are capped per event by the SDK."""

    def __init__(self, cap: int) -> None:
        self.inner, self.cap = httpx2.AsyncHTTPTransport(), cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("application/json"):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _CappedBody(response.stream, self.cap)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def http_upstream(
    url: str, headers: dict[str, str], *, cap: int = MAX_UPSTREAM_MESSAGE_BYTES
) -> AsyncIterator[tuple[Any, Any]]:
    """A streamable-HTTP upstream, with every reply capped at ``cap`` bytes."""
    # The SDK leaves a client it was given open; this one closes with the connection.
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30.0, transport=_CappedTransport(cap)) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=cap) as streams,
    ):
        yield streams
