"""What a confined file is, for the reader a tool sends it to: the card's verdict (read light:
no fact that costs more than the head), with a refusal that names the tools that do read it,
and the UTF-8 view of a text file (a UTF-16 one through its transcoded copy)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from leanreplay.cards import card_for_descriptor

from .._errors import WrongFileTypeError
from ._paths import OpenFile
from ._transcode import encoding_of, utf8_view

__all__ = ["CacheDirs", "card_fact", "text_view"]


def card_fact(f: OpenFile, fact: str, kind: str) -> tuple[str, Mapping[str, Any]]:
    """The card fact that makes ``f`` a ``kind`` (its format), and all its facts; a file
    without it is refused with the tools that do read it."""
    card = card_for_descriptor(f.fd, path=f.path, light=True)
    value = card.facts.get(fact)
    if value is None:
        raise WrongFileTypeError(
            f"{f.path!r} is {card.mime}, not {kind}; "
            f"read it with {', '.join(card.tools) or 'no tool'}"
        )
    return str(value), card.facts


@contextlib.contextmanager
def text_view(f: OpenFile, transcoded_dir: str) -> Iterator[tuple[OpenFile, str]]:
    """The file as UTF-8 (a UTF-16 file through its transcoded copy under
    ``transcoded_dir``), and its own path.

    A file of a known non-text kind (PDF, image, audio, archive, office file) is refused
    with the tools that read it; unknown bytes are read as text (a log whose head holds
    NULs after a copytruncate is still a log)."""
    card = card_for_descriptor(f.fd, path=f.path, light=True)
    if "file_read" not in card.tools and (card.tools or card.kind != "binary"):
        readers = (
            f"read it with {', '.join(card.tools)}"
            if card.tools
            else "no tool reads its content; its card shows its facts"
        )
        raise WrongFileTypeError(f"{f.path!r} is {card.mime}, not text: {readers}")
    encoding = encoding_of(f)
    if encoding is None:
        yield f, f.path
        return
    with utf8_view(f, transcoded_dir, encoding) as copy:
        yield copy, f.path


@dataclass(frozen=True)
class CacheDirs:
    """Where the readers keep what they derive from files, under the home."""

    home: str

    @property
    def lines(self) -> str:  # sparse line indexes
        return os.path.join(self.home, "lines")

    @property
    def transcoded(self) -> str:  # UTF-8 copies of UTF-16 files
        return os.path.join(self.home, "transcoded")

    @property
    def tables(self) -> str:  # DuckDB copies of big text tables, CSV copies of sheets
        return os.path.join(self.home, "tables")
