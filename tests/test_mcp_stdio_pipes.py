"""The stdio transport over pipes, waited on by the event loop: lines as the thread-read
transport gives them (pieces joined, an oversized line refused with its size, a last line
without a newline), and writes larger than a pipe holds come out whole."""

from __future__ import annotations

import os
import threading
import time

import anyio

from leanreplay.index.faces.server import _CappedLines, _PolledWriter

PIECES = [
    b'{"a": 1}\n{"b":',
    b" 2}\n" + b"x" * 30,
    b"y" * 30 + b"\n",
    b'{"c": 3}\n',
    b"",
    b'{"tail": 4}',
]


def _feed(fd: int, pieces: list[bytes]) -> threading.Thread:
    def run() -> None:
        with os.fdopen(fd, "wb", buffering=0) as out:
            for piece in pieces:
                out.write(piece)
                time.sleep(0.01)  # separate reads, so lines arrive in pieces

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_lines_from_a_pipe_come_out_whole_and_an_oversized_one_is_refused() -> None:
    r, w = os.pipe()
    writer = _feed(w, PIECES)
    refused: list[tuple[int, bytes]] = []

    async def refuse(size: int, head: bytes) -> None:
        refused.append((size, head[:3]))

    async def main() -> list[str]:
        with os.fdopen(r, "rb", buffering=0) as stream:
            return [line async for line in _CappedLines(stream, 20, refuse, polled=True)]

    lines = anyio.run(main)
    writer.join()
    assert lines == ['{"a": 1}\n', '{"b": 2}\n', '{"c": 3}\n', '{"tail": 4}']
    assert refused == [(61, b"xxx")]


def test_a_write_larger_than_the_pipe_comes_out_whole() -> None:
    r, w = os.pipe()
    text = "".join(f"line {i} " + "z" * 90 + "\n" for i in range(20_000))  # ~2 MB
    received = bytearray()

    def read() -> None:
        with os.fdopen(r, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                received.extend(chunk)
                time.sleep(0.001)  # a slow reader: the writer must wait for room

    reader = threading.Thread(target=read)
    reader.start()

    async def main() -> None:
        out = _PolledWriter(w)
        await out.write(text)
        await out.flush()
        os.close(w)

    anyio.run(main)
    reader.join()
    assert received.decode() == text
