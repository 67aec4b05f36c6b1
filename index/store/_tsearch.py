"""What PostgreSQL's full-text search indexes of a message, and how a model's query reaches it.

The text search configuration is a copy of ``simple``: words are lower-cased and never stemmed
or dropped as stop words, so code, paths and text in any language are found as written
(PostgreSQL's parser keeps ``src/app.py``, ``os.path.join`` and ``درآمد`` whole). Beside the
text's own tokens, each identifier or path also gives its pieces: ``src/app.py`` is found by
``app.py``, ``app`` and ``py``, ``fooBar`` and ``foo_bar`` by ``foo`` and ``bar``.
"""

from __future__ import annotations

import re

from .._errors import InvalidArgumentError

__all__ = ["MAX_SEARCH_CHARS", "SEARCH_CONFIG", "search_terms", "websearch_text"]

SEARCH_CONFIG = "leanreplay_text"
# A tsvector holds at most 1 MB and positions up to 16,383: the text indexed is cut here.
MAX_SEARCH_CHARS = 200_000
MAX_QUERY_CHARS = 1000  # the tool's own limit (WordsQuery)
MAX_QUERY_TERMS = 64
MAX_PIECES = 20_000
MAX_PIECE_CHARS = 200  # PostgreSQL refuses lexemes over 2 KB

_COMPOUND = re.compile(r"[^\s\"'`()<>\[\]{},;=|&!?*+#@$%^~]+")
_SEPARATORS = re.compile(r"[/\\._:\-]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_a-zA-Z]+", re.UNICODE)
_SURROGATES = re.compile("[\ud800-\udfff]")
# Characters websearch_to_tsquery reads as syntax, or that PostgreSQL text cannot hold.
_QUERY_SYNTAX = re.compile(r"[\x00\-]")
_WORDY = re.compile(r"[^\W_]")


def _clean(text: str) -> str:
    text = text.replace("\x00", " ")
    return _SURROGATES.sub("\ufffd", text) if not text.isascii() else text


def _pieces(chunk: str) -> list[str]:
    if not _SEPARATORS.search(chunk) and not re.search(r"[a-z][A-Z]", chunk):
        return []
    out: list[str] = []
    segments = [s for s in re.split(r"[/\\]+", chunk) if s]
    for segment in segments:  # mod_1.py gives mod_1 and py
        dotted = [d for d in segment.split(".") if d]
        if len(dotted) > 1:
            out += dotted
    for i in range(1, len(segments)):  # path suffixes: a/b/c.py gives b/c.py and c.py
        out.append("/".join(segments[i:]))
    # PostgreSQL's parser drops a leading or trailing _ . - of a query word: _app.py is
    # searched as app.py, so each segment is kept that way too.
    out += [s.strip("_.-:") for s in (*segments, *out)]
    for part in _SEPARATORS.split(chunk):
        if not part:
            continue
        out.append(part)
        out += _CAMEL.findall(part)
    return out


def search_terms(text: str, tools: str = "") -> tuple[str, str]:
    """(text kept for snippets, text the tsvector is made of) of a message: the second is the
    first, the tool names and each identifier's and path's pieces, as words, so that the
    parser reads a piece as it reads the same query word (``mod_1`` as the phrase mod 1)."""
    shown = _clean(text[:MAX_SEARCH_CHARS])
    indexed = f"{shown}\n{_clean(tools)}" if tools else shown
    pieces: dict[str, None] = {}
    for chunk in _COMPOUND.findall(indexed):
        for piece in _pieces(chunk):
            if 0 < len(piece) <= MAX_PIECE_CHARS:
                pieces[piece] = None
        if len(pieces) >= MAX_PIECES:
            break
    if not pieces:
        return shown, indexed
    return shown, indexed + "\n" + " ".join(list(pieces)[:MAX_PIECES])


def websearch_text(text: object) -> str:
    """A model's free text as ``websearch_to_tsquery`` input: any of its words (ranked by how
    many match, as the Tantivy search ranks), or its balanced "phrases"; the negation
    operator is read as plain text.

    Raises:
        InvalidArgumentError: empty, over the limit, or only punctuation.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("query must be a non-empty string")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidArgumentError(
            f"query is {len(text)} chars, over the limit of {MAX_QUERY_CHARS}"
        )
    clean = _QUERY_SYNTAX.sub(" ", _clean(text))
    phrases: list[str] = []
    if clean.count('"') % 2 == 0:
        phrases = [p.strip() for p in re.findall(r'"([^"]*)"', clean) if p.strip()]
        clean = re.sub(r'"[^"]*"', " ", clean)
    # A word of punctuation alone holds no lexeme: between two of them, "or" would become one.
    words = [w for w in clean.replace('"', " ").split() if w.lower() != "or" and _WORDY.search(w)]
    phrases = [p for p in phrases if _WORDY.search(p)]
    parts = [*words[:MAX_QUERY_TERMS], *(f'"{p}"' for p in phrases[:MAX_QUERY_TERMS])]
    if not parts:
        raise InvalidArgumentError(f"query {text!r} has no searchable words; use plain words")
    return " or ".join(parts)
