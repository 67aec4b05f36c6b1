"""A Tantivy index on disk that is derived data: versioned, rebuilt when unusable, written by
one process at a time, never trusted blindly.

- The directory name carries the schema version; a missing, incompatible or corrupt index is
  deleted and created anew (its owner then re-adds what it derives from the store or files).
- Writers serialize across processes on an ``flock``; a writer that waits longer than
  `WRITER_WAIT_S` gets `BusyError`. Inside a process a lock guards the writer, because a
  tantivy writer shared by threads drops documents ("Already borrowed").
- Commits are explicit; a failed batch is rolled back, never half-committed. Searchers are
  reloaded after each commit so a process reads its own writes.
- Damage is sought at open: every segment file's own checksum (the CRC32 in the footer
  Tantivy writes; it checks them only when asked, and tantivy-py cannot ask) is verified,
  since random bytes in a posting or fast field can answer wrong hits without an error.
- Damage found later (random bytes in a segment make tantivy raise ``ValueError`` or panic:
  pyo3's ``PanicException`` is a ``BaseException``) never escapes a tool call: `recover`
  deletes the index, lets its owner derive it again and retries once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import tantivy

from .._errors import BusyError, InvalidArgumentError, StoreError, WorkspaceError, home_error
from .._locks import file_lock

__all__ = [
    "MIN_WRITER_HEAP",
    "WRITER_HEAP",
    "WRITER_WAIT_S",
    "DerivedIndex",
    "build_query",
    "check_footers",
    "is_index_failure",
    "query_text",
    "search_with_snippets",
    "snippet_text",
]

WRITER_WAIT_S = 30.0
WRITER_HEAP = 64_000_000  # bytes of the one writer thread of a derived index: batches of pages
MIN_WRITER_HEAP = 15_000_000  # Tantivy refuses less per writer thread (small indexes use this)
MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 64

T = TypeVar("T")


def is_index_failure(exc: BaseException) -> bool:
    """Whether ``exc`` from a tantivy call means the index on disk is unusable: tantivy's
    I/O and format errors (``ValueError``, ``OSError``) or a Rust panic (``PanicException``,
    which pyo3 derives from ``BaseException`` and exports from no importable module)."""
    if isinstance(exc, WorkspaceError):
        return False  # ours: bad arguments, a busy writer
    if isinstance(exc, (ValueError, OSError)):
        return True
    return type(exc).__name__ == "PanicException" and type(exc).__module__ == "pyo3_runtime"


_RESERVED = re.compile(r"[+\-&|!(){}\[\]^~*?:\\/<>=]")
_OPERATORS = {"AND", "OR", "NOT", "IN"}


def _io_error(what: str, exc: ValueError) -> StoreError:
    """Tantivy reports I/O failures as ValueError text (with paths): keep only the cause."""
    text = str(exc)
    if "StorageFull" in text or "No space left" in text:
        return StoreError(f"{what}: the disk holding the home is full; free space")
    if "ReadOnlyFilesystem" in text or "Read-only file system" in text:
        return StoreError(
            f"{what}: the home is on a read-only file system (reading stored conversations "
            "and files still works)"
        )
    return StoreError(f"{what}: an I/O error in the home; check its disk and permissions")


_FOOTER_MAGIC = 1337  # the last 4 bytes of every file Tantivy writes through its directory
_SEGMENT_FILES = ("fast", "fieldnorm", "idx", "pos", "store", "term")
_CRC_CHUNK = 1 << 20


def check_footers(directory: str) -> None:
    """Verify the checksum in the footer of every file of the index's committed segments:
    the CRC32 of the file's body, then the footer (JSON), its length and the magic number.

    Raises:
        ValueError: a file whose footer is missing or whose body does not match it.
    """
    with open(os.path.join(directory, "meta.json"), "rb") as f:
        meta = json.load(f)
    for segment in meta.get("segments", []):
        name = str(segment["segment_id"]).replace("-", "")
        for ext in _SEGMENT_FILES:
            path = os.path.join(directory, f"{name}.{ext}")
            try:
                _check_footer(path)
            except FileNotFoundError:
                continue  # a field kind this schema does not write, or merged away meanwhile


def _check_footer(path: str) -> None:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise ValueError(f"{path}: no footer")
        f.seek(size - 8)
        length, magic = struct.unpack("<II", f.read(8))
        if magic != _FOOTER_MAGIC or length > size - 8:
            raise ValueError(f"{path}: no footer")
        body = size - 8 - length
        f.seek(body)
        try:
            expected = json.loads(f.read(length))["crc"]
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{path}: a damaged footer") from None
        f.seek(0)
        crc, left = 0, body
        while left:
            chunk = f.read(min(_CRC_CHUNK, left))
            if not chunk:
                raise ValueError(f"{path}: shorter than its footer says")
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
    if crc != expected:
        raise ValueError(f"{path}: its checksum does not match (the file is damaged)")


class DerivedIndex:
    def __init__(
        self,
        directory: str,
        build_schema: Callable[[], Any],
        *,
        threads: int = 1,
        heap: int = WRITER_HEAP,
    ) -> None:
        self.directory = directory
        self._build_schema = build_schema
        self._threads, self._heap = threads, heap
        self._thread_lock = threading.RLock()
        self.rebuilt = False
        try:
            os.makedirs(os.path.dirname(directory), exist_ok=True)
            self.index = self._open()
        except OSError as exc:
            folder = os.path.basename(os.path.dirname(directory))
            raise home_error(f"the home's {folder!r} folder (the search index)", exc) from None
        except ValueError as exc:  # tantivy's I/O errors, e.g. its lock file on a read-only home
            raise _io_error("cannot open the home's search index", exc) from None

    def _open(self) -> Any:
        schema = self._build_schema()
        if os.path.isdir(self.directory):
            try:
                if tantivy.Index.exists(self.directory) and not tantivy.Index.is_compatible(
                    self.directory
                ):
                    raise ValueError("index format is not compatible with this tantivy")
                index = tantivy.Index(schema, path=self.directory, reuse=True)
                index.searcher()  # fails on corrupt segment metadata
                check_footers(self.directory)
                return index
            except BaseException as exc:
                if not is_index_failure(exc):  # a damaged segment can panic right here
                    raise
                with self._writer_lock():
                    shutil.rmtree(self.directory, ignore_errors=True)
        # A new index: whoever derives it must add everything again.
        self.rebuilt = True
        os.makedirs(self.directory, exist_ok=True)
        return tantivy.Index(schema, path=self.directory, reuse=True)

    def reset(self) -> None:
        """Delete the index and start an empty one; the owner derives it again."""
        with self._thread_lock, self._writer_lock():
            shutil.rmtree(self.directory, ignore_errors=True)
            os.makedirs(self.directory, exist_ok=True)
            self.index = tantivy.Index(self._build_schema(), path=self.directory, reuse=True)
            self.rebuilt = True

    def recover(self, attempt: Callable[[], T], rebuild: Callable[[], object]) -> T:
        """``attempt()``; if the index proves damaged, `reset`, ``rebuild()`` and retry once.

        Raises:
            StoreError: the index failed again right after a rebuild.
        """
        try:
            return attempt()
        except BaseException as exc:
            if not is_index_failure(exc):
                raise
        self.reset()
        try:
            rebuild()
            return attempt()
        except BaseException as exc:
            if not is_index_failure(exc):
                raise
            raise StoreError(
                f"the search index {self.directory} failed again right after a rebuild "
                f"({type(exc).__name__}); check the disk, or delete the folder and retry"
            ) from None

    @property
    def schema(self) -> Any:
        return self.index.schema

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        with file_lock(self.directory + ".lock", WRITER_WAIT_S) as held:
            if not held:
                raise BusyError(
                    f"another process has been writing {self.directory} for over "
                    f"{WRITER_WAIT_S:.0f}s; retry later"
                )
            yield

    @contextmanager
    def writer(self) -> Iterator[Any]:
        """One batch: commit on success, roll back on any error."""
        with self._thread_lock, self._writer_lock():
            writer = self._acquire()
            try:
                yield writer
            except BaseException:
                writer.rollback()
                writer.wait_merging_threads()
                raise
            try:
                writer.commit()
            except ValueError as exc:  # tantivy's I/O errors, a full disk above all
                writer.rollback()
                writer.wait_merging_threads()
                raise _io_error("cannot write the home's search index", exc) from None
            writer.wait_merging_threads()
            self.index.reload()

    def _acquire(self) -> Any:
        # The flock already serializes our processes; this also waits out a foreign writer.
        deadline = time.monotonic() + WRITER_WAIT_S
        while True:
            try:
                return self.index.writer(heap_size=self._heap, num_threads=self._threads)
            except ValueError as exc:
                if "LockBusy" not in str(exc) or time.monotonic() > deadline:
                    raise BusyError(f"cannot take the writer of {self.directory}: {exc}") from None
                time.sleep(0.05)

    def searcher(self) -> Any:
        return self.index.searcher()

    def reload(self) -> None:
        self.index.reload()

    def document(self, values: dict[str, Any]) -> Any:
        """A document typed by the schema: a mistyped field fails here, not at commit."""
        return tantivy.Document.from_dict(values, self.schema)


def query_text(text: object) -> str:
    """A model's free text as safe query syntax: words and balanced "phrases" only.

    Field syntax, boolean operators and other query-language characters are treated as
    plain text, so hostile input such as ``foo:bar``, ``"unbalanced`` or ``a AND`` searches
    for its words instead of raising.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("query must be a non-empty string")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidArgumentError(
            f"query is {len(text)} chars, over the limit of {MAX_QUERY_CHARS}"
        )
    phrases: list[str] = []
    if text.count('"') % 2 == 0:
        phrases = [p for p in re.findall(r'"([^"]*)"', text) if p.strip()]
        text = re.sub(r'"[^"]*"', " ", text)
    words = [w for w in _RESERVED.sub(" ", text.replace('"', " ")).split() if w]
    words = [w.lower() if w in _OPERATORS else w for w in words][:MAX_QUERY_TERMS]
    parts = [" ".join(words)] if words else []
    parts += ['"' + _RESERVED.sub(" ", p).replace('"', " ").strip() + '"' for p in phrases]
    parts = [p for p in parts if p.strip('" ')]
    if not parts:
        raise InvalidArgumentError(f"query {text!r} has no searchable words; use plain words")
    return " ".join(parts)


def build_query(index: DerivedIndex, text: object, fields: list[str]) -> Any:
    """A query over ``fields`` from a model's free text (see `query_text`)."""
    query, _errors = index.index.parse_query_lenient(query_text(text), default_field_names=fields)
    return query


def search_with_snippets(
    index: DerivedIndex, query: Any, limit: int, max_chars: int
) -> list[tuple[float, Any, str]]:
    """Top ``limit`` hits of ``query`` as (score, document, snippet of its "text" field)."""
    searcher = index.searcher()
    result = searcher.search(query, limit=limit)
    generator = tantivy.SnippetGenerator.create(searcher, query, index.schema, "text")
    generator.set_max_num_chars(max_chars)
    hits = []
    for score, address in result.hits:
        doc = searcher.doc(address)
        hits.append((float(score), doc, snippet_text(generator, doc, doc["text"][0], max_chars)))
    return hits


def snippet_text(generator: Any, doc: Any, fallback: str, max_chars: int) -> str:
    """The best fragment of ``doc`` with matches marked as **word**; offsets are UTF-8 bytes."""
    snippet = generator.snippet_from_doc(doc)
    fragment = snippet.fragment()
    if not fragment:
        return fallback[:max_chars]
    raw = fragment.encode("utf-8")
    out, last = [], 0
    for span in sorted(snippet.highlighted(), key=lambda r: r.start):
        if span.start < last:
            continue
        out.append(raw[last : span.start].decode("utf-8", "replace"))
        out.append("**" + raw[span.start : span.end].decode("utf-8", "replace") + "**")
        last = span.end
    out.append(raw[last:].decode("utf-8", "replace"))
    return " ".join("".join(out).split())
