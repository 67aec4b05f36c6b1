"""Server-sent events, read from bytes and written back, byte for byte when unchanged.

Events are cut at blank lines on the raw bytes and decoded only once whole, so a UTF-8
character split across network chunks is never broken. Each event keeps its raw bytes: the
proxy sends those on unless it changed the event.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..._errors import ProxyError

__all__ = ["MAX_EVENT_BYTES", "Event", "encode", "events"]

MAX_EVENT_BYTES = 64 * 1024 * 1024  # one event from upstream, at most (a huge tool input)
_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@dataclass(frozen=True, slots=True)
class Event:
    event: str | None
    data: str
    raw: bytes  # as upstream sent it, the blank line after it included


def _parse(raw: bytes) -> Event | None:
    name: str | None = None
    data: list[str] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if not data and name is None:
        return None  # a comment or keep-alive only
    return Event(name, "\n".join(data), raw)


async def events(chunks: AsyncIterator[bytes]) -> AsyncIterator[Event]:
    """The events of a stream of byte chunks; a comment-only block comes as an event with
    no data (so keep-alives are passed on too)."""
    buffer = b""
    async for chunk in chunks:
        buffer += chunk
        while True:
            found = _BOUNDARY.search(buffer)
            if found is None:
                if len(buffer) > MAX_EVENT_BYTES:
                    raise ProxyError(
                        502, f"an event from the upstream is over {MAX_EVENT_BYTES:,} bytes"
                    )
                break
            raw, buffer = buffer[: found.end()], buffer[found.end() :]
            parsed = _parse(raw)
            yield parsed if parsed is not None else Event(None, "", raw)
    if buffer.strip():
        parsed = _parse(buffer)
        if parsed is not None:
            yield parsed


def encode(event: str | None, data: str) -> bytes:
    """One event as the providers write them: ``event:`` (if named), ``data:``, blank line."""
    lines = [f"event: {event}"] if event is not None else []
    lines += [f"data: {line}" for line in data.split("\n")]
    return ("\n".join(lines) + "\n\n").encode("utf-8")
