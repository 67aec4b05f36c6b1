"""The gateway's wires to its upstream servers, bounded in what one message may cost.

The SDK's stdio client reads a whole line however long (and joins its chunks in quadratic
time: a 64 MiB reply never arrives), logs a traceback for every line it cannot parse, and
leaves the request that line answered waiting. Here every line is capped at
``MAX_UPSTREAM_MESSAGE_BYTES``: a longer one is read past in bounded pieces, and a line that
is too long or not JSON-RPC is answered, for the request id its head names, with an error
the session hands back to the waiting call. Streamable-HTTP upstreams get the same cap on a
JSON body and on one SSE event.
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
from anyio.abc import ByteReceiveStream, Process
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

__all__ = [
    "MAX_UPSTREAM_MESSAGE_BYTES",
    "Oversized",
    "capped_lines",
    "http_upstream",
    "parse_line",
    "request_id",
    "stdio_upstream",
]

MAX_UPSTREAM_MESSAGE_BYTES = 32 * 1024 * 1024  # one JSON-RPC message from an upstream
HEAD_BYTES = 4096  # what is kept of an oversized or broken line, to find its id
EXIT_GRACE_S = 2.0  # an upstream gets this long to exit once its stdin closes
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


Tap = Callable[[bytes], Awaitable[bool]]


@contextlib.asynccontextmanager
async def stdio_upstream(
    params: StdioServerParameters,
    *,
    cap: int = MAX_UPSTREAM_MESSAGE_BYTES,
    tap: Tap | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Run ``params``' command in its own process group and speak JSON-RPC lines with it.

    ``tap(line)`` sees each complete line first; when it returns True the line was taken
    (a relayed reply) and the session never sees it.
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
        async with read_send:
            async for line in capped_lines(stdout, cap):
                if tap is not None and isinstance(line, bytes) and await tap(line):
                    continue
                message = parse_line(line, cap)
                if message is not None:
                    try:
                        await read_send.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return

    async def writer() -> None:
        try:
            async with write_recv:
                async for outgoing in write_recv:
                    data = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the session sees the connection end, not a hang
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_recv, write_send
        finally:
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
