"""Server-sent events cut on the raw bytes: a UTF-8 character or an event split across
network chunks arrives whole, and each event keeps its own bytes for passing on."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

from hypothesis import given
from hypothesis import strategies as st

from leanreplay.index.faces.proxy._sse import Event, encode, events

STREAM = (
    'event: content_block_delta\ndata: {"delta": {"text": "héllo wörld 🎉"}}\n\n'
    ": a comment\n\n"
    "event: ping\ndata: {}\r\n\r\n"
    "data: [DONE]\n\n"
).encode()


def read(chunks: list[bytes]) -> list[Event]:
    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def collect() -> list[Event]:
        return [e async for e in events(source())]

    return asyncio.run(collect())


@given(st.lists(st.integers(1, len(STREAM) - 1), max_size=8))
def test_any_chunking_gives_the_same_events_and_bytes(cuts: list[int]) -> None:
    points = [0, *sorted(set(cuts)), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    got = read(chunks)
    assert got == read([STREAM])
    assert b"".join(e.raw for e in got) == STREAM
    assert [(e.event, e.data) for e in got] == [
        ("content_block_delta", '{"delta": {"text": "héllo wörld 🎉"}}'),
        (None, ""),
        ("ping", "{}"),
        (None, "[DONE]"),
    ]


def test_encode_writes_what_events_reads() -> None:
    raw = encode("message_delta", '{"a": 1}\n{"b": 2}')
    (event,) = read([raw])
    assert (event.event, event.data) == ("message_delta", '{"a": 1}\n{"b": 2}')
