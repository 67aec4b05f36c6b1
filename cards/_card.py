"""The card: one line of metadata that stands in for a file's content."""

from __future__ import annotations

import copy
import mimetypes
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._archive import ARCHIVE_TOOLS, archive_facts, zip_entries
from ._detect import HEAD_BYTES, READABLE_ARCHIVES, Kind, kind_of, named_text, sniff
from ._document import DOC_TOOLS, doc_kind, document_facts
from ._errors import FileMissingError, FileUnreadableError, NotARegularFileError
from ._image import image_facts
from ._media import media_facts
from ._pdf import PdfFacts, probe_pdf
from ._table import TABLE_TOOLS, csv_facts, parquet_facts, table_format, workbook_facts
from ._text import text_codec, text_facts

__all__ = [
    "CARD_TOOLS",
    "TOOLS_BY_KIND",
    "Card",
    "card_for",
    "card_for_descriptor",
    "human_size",
    "pdf_facts",
    "quote",
]

TOOLS_BY_KIND: Mapping[str, tuple[str, ...]] = {
    "pdf": ("pdf_info", "pdf_search", "pdf_read"),
    "text": ("file_read", "file_search"),
    "image": ("image_view",),
}
# Every tool a card may name ("read with: ..."); each must be a tool the workspace registers
# (a test checks), and the MCP server's instructions list them.
CARD_TOOLS: frozenset[str] = frozenset(
    (*(t for tools in TOOLS_BY_KIND.values() for t in tools), *ARCHIVE_TOOLS, *DOC_TOOLS)
) | frozenset(TABLE_TOOLS)
_ZIP_CONTAINERS = ("archive", "document")
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW


@dataclass(frozen=True)
class Card:
    """Metadata of one file. Build it with `card_for`; show it with `render`."""

    name: str
    path: str
    mime: str
    kind: Kind
    size: int
    facts: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A detached, JSON-ready dict with keys name, path, mime, kind, size, facts, tools,
        warnings."""
        return {
            "name": self.name,
            "path": self.path,
            "mime": self.mime,
            "kind": self.kind,
            "size": self.size,
            "facts": copy.deepcopy(dict(self.facts)),
            "tools": list(self.tools),
            "warnings": list(self.warnings),
        }

    def render(self) -> str:
        """One deterministic line. Every file-derived string is quoted and escaped, so no name,
        title or warning can break out of the card or start a new line."""
        parts = [
            f"[attachment] name={quote(self.name)}",
            f"path={quote(self.path)}",
            f"type={quote(self.mime)}",
            f"size={human_size(self.size)} ({self.size:,} bytes)",
        ]
        parts += _render_facts(self.kind, self.facts)
        if self.tools:
            parts.append("read with: " + ", ".join(self.tools))
        else:
            parts.append("no tool reads this kind of file")
        if self.warnings:
            parts.append("warnings: " + "; ".join(quote(w) for w in self.warnings))
        return " | ".join(parts)


def card_for(path: str | os.PathLike[str], *, name: str | None = None) -> Card:
    """Build the card of the regular file at ``path``.

    Args:
        path: the file; symlinks and ``..`` are resolved, the card shows the absolute path.
        name: the name to show instead of the file's own (for example an attachment's
            original name when the bytes are stored under a content hash).

    Raises:
        FileMissingError: nothing is at ``path``.
        NotARegularFileError: ``path`` is a directory, FIFO, socket or device.
        FileUnreadableError: the file cannot be opened or read.
    """
    fd, size, absolute = _open_regular(path)
    try:
        return _build(fd, size, absolute, name if name is not None else os.path.basename(absolute))
    except OSError as exc:
        raise _unreadable(absolute, exc) from None
    finally:
        os.close(fd)


def card_for_descriptor(
    fd: int, *, path: str, name: str | None = None, light: bool = False
) -> Card:
    """The card of a file already open on ``fd`` (for callers that confined and opened it
    themselves, so no path is resolved or opened again). ``path`` is what the card shows.
    ``light`` keeps only what the head tells (type, table or document format, delimiter and
    tools), for tools that need the kind of a file, not its facts.

    Raises:
        NotARegularFileError: ``fd`` is not a regular file.
        FileUnreadableError: it cannot be read.
    """
    try:
        st = os.fstat(fd)
        _require_regular(st, path)
        shown = name if name is not None else os.path.basename(path)
        return _build(fd, st.st_size, path, shown, light=light)
    except OSError as exc:
        raise FileUnreadableError(f"cannot read {path!r}: {exc.strerror}", path=path) from None


def pdf_facts(path: str | os.PathLike[str]) -> PdfFacts:
    """Page count, encryption, version and title of a PDF, read lazily from its xref.

    Raises the same path errors as `card_for`; problems inside the file become warnings.
    """
    fd, size, given = _open_regular(path, resolve=False)
    try:
        return probe_pdf(fd, size)
    except OSError as exc:
        raise _unreadable(given, exc) from None
    finally:
        os.close(fd)


def _open_regular(path: str | os.PathLike[str], *, resolve: bool = True) -> tuple[int, int, str]:
    """The regular file at ``path``, opened: (fd, size, absolute path); the caller closes the
    fd. With ``resolve`` false the name is opened as given (the kernel resolves it as realpath
    would) and is what comes back, resolved only for a message: the caller never shows the
    path, and realpath is a stat per component. Not a context manager: the PDF probe's
    whole budget is a few hundred microseconds, and a generator's machinery is a share of it."""
    raw = os.fspath(path)
    if not isinstance(raw, str):
        raise TypeError(f"path must be str or os.PathLike[str], got {type(raw).__name__}")
    if "\x00" in raw:
        raise FileMissingError(
            f"path {raw!r} contains a NUL byte; no file has such a name", path=raw
        )
    target = os.path.realpath(raw) if resolve else raw

    def absolute() -> str:
        return target if resolve else os.path.realpath(raw)

    # stat first: opening a FIFO or a device can block or have side effects.
    try:
        before = os.stat(target)
    except FileNotFoundError:
        where = absolute()
        raise FileMissingError(
            f"no file at {where!r}: check the path (given as {raw!r})", path=where
        ) from None
    except OSError as exc:
        where = absolute()
        raise FileUnreadableError(f"cannot stat {where!r}: {exc.strerror}", path=where) from None
    if not stat.S_ISREG(before.st_mode):
        _require_regular(before, absolute())
    try:
        fd = os.open(target, _OPEN_FLAGS)
    except FileNotFoundError:
        where = absolute()
        raise FileMissingError(f"{where!r} disappeared while being read", path=where) from None
    except OSError as exc:
        where = absolute()
        raise FileUnreadableError(
            f"cannot open {where!r}: {exc.strerror}; check its permissions", path=where
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _require_regular(st, absolute())  # the path may have been swapped since the stat
    except OSError as exc:
        os.close(fd)
        raise _unreadable(raw, exc) from None
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size, target


def _unreadable(shown: str, exc: OSError) -> FileUnreadableError:
    """The error for an OSError while reading the file opened as ``shown``."""
    where = os.path.realpath(shown)
    return FileUnreadableError(f"cannot read {where!r}: {exc.strerror}", path=where)


def _require_regular(st: os.stat_result, path: str) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    what = (
        "a directory"
        if stat.S_ISDIR(st.st_mode)
        else "a FIFO"
        if stat.S_ISFIFO(st.st_mode)
        else "a socket"
        if stat.S_ISSOCK(st.st_mode)
        else "a device"
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
        else "not a regular file"
    )
    raise NotARegularFileError(f"{path!r} is {what}; cards describe regular files only", path=path)


def _build(fd: int, size: int, path: str, name: str, *, light: bool = False) -> Card:
    head = os.pread(fd, HEAD_BYTES, 0)
    mime, charset = sniff(head)
    facts: dict[str, Any] = {}
    notes: list[str] = []
    promised = named_text(name, head, mime)
    if promised is not None:
        notes.append(
            f"libmagic took the first bytes for {mime}; the name and the bytes say text, so it "
            "is read as text"
        )
        mime, charset = promised, "utf-8"
    kind = kind_of(mime)
    if light:
        pass
    elif kind == "pdf":
        pdf = probe_pdf(fd, size)
        facts = {"pages": pdf.pages, "encrypted": pdf.encrypted, "version": pdf.version}
        if pdf.title is not None:
            facts["title"] = pdf.title
        notes += pdf.warnings
    elif kind == "image":
        with os.fdopen(os.dup(fd), "rb") as stream:
            facts, notes = image_facts(stream, size)
    elif kind == "text":
        facts = text_facts(fd, size, charset)
    elif kind in ("audio", "video"):
        facts, notes = media_facts(fd)
    if kind in _ZIP_CONTAINERS and head.startswith(b"PK") and not light:
        entries, warnings = zip_entries(fd, size)
        notes += warnings
        facts["entries"] = entries
    tools = TOOLS_BY_KIND.get(kind, ())
    if kind == "archive" and light:
        tools = ARCHIVE_TOOLS if mime in READABLE_ARCHIVES else ()
    elif kind == "archive":
        more, more_notes = archive_facts(fd, size, mime, name)
        facts.update(more)
        notes = [n for n in notes if n not in more_notes] + more_notes
        tools = ARCHIVE_TOOLS if more or mime == "application/zip" else ()
    table = table_format(name, mime, head)
    if table in ("csv", "tsv") and kind == "text":
        more, more_notes = csv_facts(fd, size, table, text_codec(charset))
        facts.update(more)
        notes += more_notes
        tools = (*tools, *TABLE_TOOLS)
    elif table is not None and light:
        tools = TABLE_TOOLS
    elif table in ("xlsx", "ods"):
        more, more_notes = workbook_facts(fd, table)
        facts.update(more)
        notes += more_notes
        tools = TABLE_TOOLS
    elif table == "parquet":
        more, more_notes = parquet_facts(fd, size)
        facts.update(more)
        notes += more_notes
        tools = TABLE_TOOLS
    if table is not None:
        facts["table"] = table
    doc = doc_kind(name, mime) if table is None else None
    if doc is not None:
        facts["document"] = doc
        if not light:
            more, more_notes = document_facts(fd, size, doc)
            facts.update(more)
            notes += more_notes
        tools = (*tools, *DOC_TOOLS) if kind == "text" else DOC_TOOLS
    if not light:
        notes = _identity_warnings(name, size, mime, kind) + notes
    return Card(
        name=name,
        path=path,
        mime=mime,
        kind=kind,
        size=size,
        facts=facts,
        tools=tools,
        warnings=tuple(notes),
    )


# Containers whose name says the format inside: libmagic may only see the zip around it.
_CONTAINED = {("archive", "document"), ("archive", "text"), ("text", "document")}


def _identity_warnings(name: str, size: int, mime: str, kind: Kind) -> list[str]:
    """An empty file says so, whatever its name; a name that says one kind of file while
    the bytes say another gets a warning that names both."""
    if size == 0:
        return ["the file is empty (0 bytes)"]
    named, _ = mimetypes.guess_type(name, strict=False)
    if named is None:
        return []
    named_kind = kind_of(named)
    if named_kind == kind or (kind, named_kind) in _CONTAINED or named_kind == "binary":
        return []
    return [
        f"the name says {named} ({named_kind}) but the bytes are {mime} ({kind}); "
        "the card describes the bytes"
    ]


def _render_facts(kind: str, facts: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    if kind == "pdf":
        pages = facts.get("pages")
        out.append(f"pages={pages}" if pages is not None else "pages=unknown")
        if facts.get("version"):
            out.append(f"pdf_version={quote(str(facts['version']))}")
        if facts.get("encrypted"):
            out.append("encrypted")
        if facts.get("title"):
            out.append(f"title={quote(str(facts['title']), limit=200)}")
    elif kind == "image" and "width" in facts:
        out.append(f"{facts['width']}x{facts['height']} {quote(str(facts['format']))}")
        if "frames" in facts:
            out.append(f"frames={facts['frames']}")
    elif kind == "text":
        out.append(f"encoding={quote(str(facts.get('encoding') or 'unknown'))}")
        if "lines" in facts:
            out.append(f"lines={facts['lines']:,}")
    if "entries" in facts:
        entries = facts["entries"]
        out.append(f"entries={entries}" if entries is not None else "entries=unknown")
    if kind in ("audio", "video") and "format" in facts:
        out.append(f"format={quote(str(facts['format']))}")
        if "duration_s" in facts:
            out.append(f"duration={facts['duration_s']:g}s")
        for key in ("codec", "bitrate", "channels", "sample_rate"):
            if key in facts:
                value = facts[key]
                out.append(f"{key}={quote(value) if isinstance(value, str) else value}")
        for key in ("title", "artist", "album"):
            if facts.get(key):
                out.append(f"{key}={quote(str(facts[key]), limit=200)}")
    if "uncompressed_bytes" in facts:
        out.append(f"uncompressed={human_size(facts['uncompressed_bytes'])}")
    if facts.get("first_entries"):
        out.append(f"first={_names(facts['first_entries'])}")
    if "compression" in facts:
        out.append(f"compression={facts['compression']}" + (" tar" if facts.get("tar") else ""))
    if "original_name" in facts:
        out.append(f"original_name={quote(facts['original_name'], limit=100)}")
    if "trailer_size" in facts:
        out.append(f"trailer_size={facts['trailer_size']:,}")
    if "table" in facts:
        out.append(f"table={facts['table']}")
    if "document" in facts:
        out.append(f"document={facts['document']}")
        for key in ("paragraphs", "headings", "tables", "images", "slides", "chapters"):
            if key in facts:
                out.append(f"{key}={facts[key]:,}")
        for key in ("title", "author"):
            if facts.get(key):
                out.append(f"{key}={quote(str(facts[key]), limit=200)}")
        if facts.get("titles"):
            out.append(f"slide_titles={_names(facts['titles'])}")
    if "delimiter" in facts:
        out.append(f"delimiter={quote(facts['delimiter'])}")
    if "header" in facts:
        if "rows" in facts:
            out.append(f"rows={facts['rows']:,}")
        out.append(f"columns={facts['columns']} header={_names(facts['header'])}")
    for sheet in facts.get("sheets", ()):
        dims = f" {sheet['rows']:,}x{sheet['columns']}" if "rows" in sheet else ""
        header = _names(sheet.get("header", []))
        out.append(f"sheet {quote(sheet['name'], limit=100)}{dims} header={header}")
    return out


def _names(names: list[str]) -> str:
    return (
        "["
        + ", ".join(quote(n, limit=40) for n in names[:20])
        + (f", ... +{len(names) - 20}" if len(names) > 20 else "")
        + "]"
    )


def human_size(n: int) -> str:
    """Binary units with one decimal, independent of locale: ``4.4 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024 or unit == "PiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


_SAFE_PUNCTUATION = set("<>&`")


def quote(text: str, *, limit: int | None = None) -> str:
    """A double-quoted string where quotes, backslashes, markup characters and anything
    unprintable (newlines, controls, bidi overrides) are escaped as ``\\uXXXX``."""
    cut = ""
    if limit is not None and len(text) > limit:
        cut = f"...(+{len(text) - limit} chars)"
        text = text[:limit]
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _SAFE_PUNCTUATION or not ch.isprintable():
            code = ord(ch)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out) + cut
