"""Zip members streamed into defusedxml's ``iterparse`` under a decompression budget."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import IO, Any

from defusedxml.ElementTree import iterparse

__all__ = ["Budget", "events"]


class Budget:
    """Decompressed bytes a card may read from a zip, across all its parts."""

    class Spent(Exception):
        """The budget ran out before the part ended."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit


class _Bounded(io.RawIOBase):
    def __init__(self, stream: IO[bytes], budget: Budget) -> None:
        self.stream = stream
        self.budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.budget.left <= 0:
            raise Budget.Spent
        data = self.stream.read(min(len(buffer), self.budget.left))
        buffer[: len(data)] = data
        self.budget.left -= len(data)
        return len(data)


def events(z: zipfile.ZipFile, member: str, budget: Budget) -> Iterator[tuple[str, Any]]:
    """(event, element) pairs of one member; raises `Budget.Spent` past the budget."""
    with z.open(member) as raw:
        yield from iterparse(io.BufferedReader(_Bounded(raw, budget)), events=("start", "end"))
