"""The stdio transport over pipes, waited on by the event loop: lines as the thread-read
transport gives them (pieces joined, an oversized line refused with its size, a last line
without a newline), and writes larger than a pipe holds come out whole. The pipe's reader stays
registered with the event loop across waits, and is dropped while nobody waits. Off asyncio,
the server refuses to start with an error that says so."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import anyio
import pytest

from leanreplay.index import Workspace
from leanreplay.index.faces.server import (
    _CappedLines,
    _PipeReader,
    _PolledWriter,
    build_server,
)

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


def test_a_slow_consumer_gets_every_line_and_the_reader_rests_meanwhile() -> None:
    r, w = os.pipe()
    lines = [b'{"n": %d}\n' % i for i in range(50)]
    writer = _feed(w, lines)

    async def refuse(size: int, head: bytes) -> None:
        raise AssertionError("no line is over the cap")

    async def main() -> list[str]:
        out = []
        with os.fdopen(r, "rb", buffering=0) as stream:
            async for line in _CappedLines(stream, 1000, refuse, polled=True):
                out.append(line)
                await anyio.sleep(0.02)  # slower than the writer: bytes wait unread
        return out

    got = anyio.run(main)
    writer.join()
    assert got == [line.decode() for line in lines]


def test_the_pipe_is_registered_once_and_rests_while_a_piece_waits_unread() -> None:
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)

    async def main() -> list[object]:
        seen: list[object] = []
        with _PipeReader(r) as pipe:
            for i in range(3):
                async with anyio.create_task_group() as tg:

                    async def take() -> None:
                        seen.append(await pipe.read())

                    tg.start_soon(take)
                    await anyio.sleep(0.01)
                    os.write(w, b"line %d\n" % i)
                seen.append(pipe._registered)  # still registered between reads
            big = b"z" * (pipe.PIECE + 10)
            sent = 0
            with contextlib.suppress(BlockingIOError):
                while sent < len(big):
                    sent += os.write(w, big[sent:])
                    await anyio.sleep(0.01)
            await anyio.sleep(0.05)
            seen.append(pipe._registered)  # a piece held unread: the pipe rests
            got = b""
            while len(got) < sent:
                got += await pipe.read()
            seen.append(got == big[:sent])
            os.close(w)
            seen.append(await pipe.read())  # the end
        seen.append(pipe._registered)
        return seen

    seen = anyio.run(main)
    os.close(r)
    assert seen == [
        b"line 0\n",
        True,
        b"line 1\n",
        True,
        b"line 2\n",
        True,
        False,
        True,
        b"",
        False,
    ]


def test_the_stdio_server_off_asyncio_says_it_needs_asyncio_and_leaves_stdin_alone(
    tmp_path: Path,
) -> None:
    # trio is not installed: a coroutine stepped with no event loop running is what asyncio
    # sees under another backend.
    before = os.fstat(0)
    with Workspace(tmp_path / "home", [tmp_path]) as ws:
        serving = build_server(ws).run_stdio_async()
        with pytest.raises(RuntimeError, match=r"runs on asyncio only .* anyio\.run"):
            serving.send(None)
    after = os.fstat(0)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
