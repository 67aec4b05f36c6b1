"""PDF pages in Tantivy: one document per page, keyed by a fingerprint of the file. Documents
(docx, pptx, epub, ...) use the same index with one Tantivy document per part.

The first search of a file extracts and indexes its pages; a manifest document, committed
with each batch of pages, says how far indexing got and marks the file complete at the end.

Hostile documents are bounded: page text is cut at `MAX_PAGE_CHARS`, a document's indexed
text at `MAX_DOCUMENT_CHARS`, and one call indexes for at most `MAX_INDEX_SECONDS` (the next
search continues where it stopped); pages are committed in batches of `BATCH_CHARS`, so
memory stays flat. Every cut is named in the result's ``notes``.

Later searches reuse the index until the file changes: the fingerprint covers size, mtime,
ctime, inode and hashes of the head and tail, which a rewrite cannot cheaply keep equal. A
damaged index is deleted and the file's pages are extracted again (other files are
re-indexed when they are next searched).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import tantivy

from .._errors import BusyError
from .._locks import file_lock
from ..tools._docs import MAX_PART_CHARS, PART_CUT_NOTE
from ..tools._paths import OpenFile, fingerprint
from ..tools._pdftext import MAX_PAGE_CHARS, PAGE_CUT_NOTE, ProgressCallback, extract_stream
from ._tantivy import DerivedIndex, build_query, search_with_snippets

__all__ = [
    "MAX_DOCUMENT_CHARS",
    "MAX_INDEX_SECONDS",
    "PAGES_VERSION",
    "PageIndex",
    "fingerprint",
]

PAGES_VERSION = 1
INDEXING_WAIT_S = 600.0  # how long a search waits for another process indexing the same file
SNIPPET_CHARS = 240
MAX_INDEX_SECONDS = 40.0  # indexing per call, so a call ends within a minute; the next continues
MAX_DOCUMENT_CHARS = 500_000_000  # indexed text per file: 100k dense pages of 5,000 chars
BATCH_CHARS = 16_000_000  # page text held before a commit
BATCH_PARTS = 50_000  # document parts held before a commit (7M one-word paragraphs: 2 GB)


def _schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("kind", stored=True, tokenizer_name="raw")  # "page" or "manifest"
    sb.add_text_field("file_id", stored=True, fast=True, tokenizer_name="raw")
    sb.add_text_field("path", stored=True, tokenizer_name="raw")
    sb.add_unsigned_field("page", stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=True)
    return sb.build()


def _part_notes(manifest: dict[str, Any]) -> list[str]:
    """What the index of a document leaves out, for the model."""
    notes = []
    if manifest["cut_pages"]:
        first, count = manifest["cut_pages"]
        notes.append(
            f"{count:,} part(s) had more than {MAX_PART_CHARS:,} chars of text and were cut "
            f"there (the first: part {first})"
        )
    indexed = manifest["indexed"]
    if manifest["capped"]:
        notes.append(
            f"indexing stopped after part {indexed:,}: the document's text reached "
            f"{MAX_DOCUMENT_CHARS:,} chars, the limit per document; doc_read reads the others"
        )
    elif not manifest["final"]:
        notes.append(
            f"parts 1-{indexed:,} are indexed so far (indexing stops after "
            f"{MAX_INDEX_SECONDS:.0f}s per call); the next doc_search continues from part "
            f"{indexed + 1:,}, and doc_read reads any part now"
        )
    return notes


def _notes(manifest: dict[str, Any]) -> list[str]:
    """What the index of a file leaves out, for the model."""
    notes = []
    if manifest["cut_pages"]:
        first, count = manifest["cut_pages"]
        notes.append(
            f"{count:,} page(s) had more than {MAX_PAGE_CHARS:,} chars of text and were cut "
            f"there (the first: page {first})"
        )
    indexed, pages = manifest["indexed"], manifest["pages"]
    if manifest["capped"]:
        notes.append(
            f"indexing stopped after page {indexed:,} of {pages:,}: the document's text "
            f"reached {MAX_DOCUMENT_CHARS:,} chars, the limit per document; pdf_read reads "
            "the other pages"
        )
    elif not manifest["final"]:
        notes.append(
            f"pages 1-{indexed:,} of {pages:,} are indexed so far (indexing stops after "
            f"{MAX_INDEX_SECONDS:.0f}s per call); the next pdf_search continues from page "
            f"{indexed + 1:,}, and pdf_read reads any page now"
        )
    return notes


class PageIndex:
    def __init__(self, home: str) -> None:
        self.index = DerivedIndex(os.path.join(home, "index", f"pages-v{PAGES_VERSION}"), _schema)

    def _term(self, field: str, value: str) -> Any:
        return tantivy.Query.term_query(self.index.schema, field, value)

    def _scope(self, file_id: str, kind: str) -> Any:
        return tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, self._term("file_id", file_id)),
                (tantivy.Occur.Must, self._term("kind", kind)),
            ]
        )

    def indexed_pages(self, file_id: str) -> int | None:
        """Page count of a file with indexed pages (all or the first ones), or None (also when
        the index was damaged: it is reset and the caller extracts the pages itself)."""
        return self.index.recover(lambda: self._indexed_pages(file_id), lambda: None)

    def _indexed_pages(self, file_id: str) -> int | None:
        manifest = self._manifest(file_id)
        return None if manifest is None else int(manifest["pages"])

    def _manifest(self, file_id: str) -> dict[str, Any] | None:
        searcher = self.index.searcher()
        hits = searcher.search(self._scope(file_id, "manifest"), limit=1).hits
        if not hits:
            return None
        doc = searcher.doc(hits[0][1])
        pages = int(doc["page"][0])
        state = json.loads(doc["text"][0] or "{}")  # "" in manifests of complete files
        return {
            "pages": pages,
            "indexed": int(state.get("indexed", pages)),
            "final": bool(state.get("final", True)),
            "chars": int(state.get("chars", 0)),
            "cut_pages": list(state.get("cut_pages", [])),
            "capped": bool(state.get("capped", False)),
        }

    def find(
        self, f: OpenFile, pages: int, query: str, limit: int, progress: ProgressCallback | None
    ) -> tuple[str, bool, list[dict[str, Any]], list[str]]:
        """Index the file unless it is, then search it: (file_id, indexed now, hits, notes on
        what was cut). A damaged index is reset and the file indexed again."""

        def attempt() -> tuple[str, bool, list[dict[str, Any]], list[str]]:
            file_id, indexed_now, notes = self._ensure(f, pages, progress)
            return file_id, indexed_now, self._search(file_id, query, limit), notes

        return self.index.recover(attempt, lambda: None)

    def ensure(
        self, f: OpenFile, pages: int, progress: ProgressCallback | None = None
    ) -> tuple[str, bool]:
        """Index the file's pages unless they are; returns (file_id, indexed now)."""
        file_id, indexed_now, _ = self.index.recover(
            lambda: self._ensure(f, pages, progress), lambda: None
        )
        return file_id, indexed_now

    def _ensure(
        self, f: OpenFile, pages: int, progress: ProgressCallback | None
    ) -> tuple[str, bool, list[str]]:
        file_id = fingerprint(f)
        manifest = self._manifest(file_id)
        if manifest is not None and manifest["final"]:
            return file_id, False, _notes(manifest)
        # One indexer per file at a time: other threads and processes wait, then reuse it.
        lock = os.path.join(self.index.directory + ".indexing", file_id + ".lock")
        with file_lock(lock, INDEXING_WAIT_S) as held:
            if not held:
                raise BusyError(
                    f"{f.path!r} has been indexed by another process for over "
                    f"{INDEXING_WAIT_S:.0f}s; retry later"
                )
            self.index.reload()  # see what the other indexer committed
            manifest = self._manifest(file_id)
            if manifest is not None and manifest["final"]:
                return file_id, False, _notes(manifest)
            manifest = self._index_file(f, file_id, pages, progress, manifest)
        return file_id, True, _notes(manifest)

    def _page(self, file_id: str, path: str, number: int, text: str) -> Any:
        """The document of one page (or document part) of a file."""
        return self.index.document(
            {"kind": "page", "file_id": file_id, "path": path, "page": number, "text": text}
        )

    def _commit(
        self,
        f: OpenFile,
        file_id: str,
        batch: list[Any],
        state: dict[str, Any],
        page: int,
        fresh: bool,
    ) -> None:
        """Write a batch of page (or part) documents and replace the file's manifest (its
        ``page`` field: ``page``) in one commit; ``fresh`` first drops what the file id or
        path held before (an interrupted first run, an older version of the file). Empties
        ``batch``."""
        manifest = {k: state[k] for k in ("indexed", "final", "chars", "cut_pages", "capped")}
        with self.index.writer() as writer:
            if fresh:
                writer.delete_documents_by_term("file_id", file_id)
                writer.delete_documents_by_term("path", f.path)
            writer.delete_documents_by_query(self._scope(file_id, "manifest"))
            for doc in batch:
                writer.add_document(doc)
            writer.add_document(
                self.index.document(
                    {
                        "kind": "manifest",
                        "file_id": file_id,
                        "path": f.path,
                        "page": page,
                        "text": json.dumps(manifest),
                    }
                )
            )
        batch.clear()

    def _index_file(
        self,
        f: OpenFile,
        file_id: str,
        pages: int,
        progress: ProgressCallback | None,
        resumed: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Index pages from where a previous call stopped, within the limits; returns the
        manifest committed last."""
        state: dict[str, Any] = resumed or {
            "pages": pages,
            "indexed": 0,
            "final": False,
            "chars": 0,
            "cut_pages": [],
            "capped": False,
        }
        fresh = resumed is None  # pages of an interrupted first run, or an older file: drop
        batch: list[Any] = []
        held = 0
        deadline = time.monotonic() + MAX_INDEX_SECONDS

        def commit() -> None:
            nonlocal fresh, held
            state["final"] = state["capped"] or state["indexed"] >= pages
            self._commit(f, file_id, batch, state, pages, fresh)
            fresh, held = False, 0

        def sink(start: int, texts: list[str]) -> None:
            nonlocal held
            for number, text in enumerate(texts, start=start + 1):
                if state["capped"]:
                    return
                if state["chars"] + len(text) > MAX_DOCUMENT_CHARS:
                    state["capped"] = True
                    return
                if text.endswith(PAGE_CUT_NOTE):
                    first_cut, count = state["cut_pages"] or [number, 0]
                    state["cut_pages"] = [first_cut, count + 1]
                state["chars"] += len(text)
                state["indexed"] = number
                held += len(text)
                batch.append(self._page(file_id, f.path, number, text))
            if held >= BATCH_CHARS:
                commit()

        extract_stream(
            f.path,
            (f.dev, f.ino),
            pages,
            sink,
            progress,
            first=state["indexed"],
            stop=lambda: state["capped"] or time.monotonic() > deadline,
        )
        if progress is not None:
            progress(state["indexed"], pages, "indexing pages")
        commit()
        return state

    def ensure_parts(
        self, f: OpenFile, parts: Callable[[int], Iterable[str]]
    ) -> tuple[str, int | None, bool, list[str]]:
        """Index a document's parts (one Tantivy document each, numbered like pages) unless
        they are, for at most `MAX_INDEX_SECONDS` per call (the next call continues after the
        last part committed; ``parts(first)`` yields the parts from 1, those before ``first``
        possibly empty); returns (file_id, part count or None while indexing is unfinished,
        indexed now, notes on what was cut or is not indexed yet)."""

        def attempt() -> tuple[str, int | None, bool, list[str]]:
            file_id = fingerprint(f)
            manifest = self._manifest(file_id)
            if manifest is not None and manifest["final"]:
                return file_id, manifest["pages"], False, _part_notes(manifest)
            lock = os.path.join(self.index.directory + ".indexing", file_id + ".lock")
            with file_lock(lock, INDEXING_WAIT_S) as held:
                if not held:
                    raise BusyError(
                        f"{f.path!r} has been indexed by another process for over "
                        f"{INDEXING_WAIT_S:.0f}s; retry later"
                    )
                self.index.reload()
                manifest = self._manifest(file_id)
                if manifest is None or not manifest["final"]:
                    manifest = self._index_parts(f, file_id, parts, manifest)
            total = manifest["pages"] if manifest["final"] else None
            return file_id, total, True, _part_notes(manifest)

        return self.index.recover(attempt, lambda: None)

    def _index_parts(
        self,
        f: OpenFile,
        file_id: str,
        parts: Callable[[int], Iterable[str]],
        resumed: dict[str, Any] | None,
    ) -> dict[str, Any]:
        state: dict[str, Any] = resumed or {
            "pages": 0,
            "indexed": 0,
            "final": False,
            "chars": 0,
            "cut_pages": [],
            "capped": False,
        }
        fresh = resumed is None
        batch: list[Any] = []
        held = 0
        deadline = time.monotonic() + MAX_INDEX_SECONDS

        def commit() -> None:
            nonlocal fresh, held
            self._commit(f, file_id, batch, state, state["indexed"], fresh)
            fresh, held = False, 0

        first = state["indexed"] + 1
        ended = True
        for number, text in enumerate(parts(first), start=1):
            if number < first:
                continue
            if time.monotonic() > deadline and number > first:
                ended = False
                break
            if state["chars"] + len(text) > MAX_DOCUMENT_CHARS:
                state["capped"] = True
                break
            if text.endswith(PART_CUT_NOTE):
                first_cut, count = state["cut_pages"] or [number, 0]
                state["cut_pages"] = [first_cut, count + 1]
            state["chars"] += len(text)
            state["indexed"] = state["pages"] = number
            held += len(text)
            batch.append(self._page(file_id, f.path, number, text))
            if held >= BATCH_CHARS or len(batch) >= BATCH_PARTS:
                commit()
        state["final"] = ended
        commit()
        return state

    def search(self, file_id: str, query_text: str, limit: int) -> list[dict[str, Any]]:
        return self._search(file_id, query_text, limit)

    def _search(self, file_id: str, query_text: str, limit: int) -> list[dict[str, Any]]:
        query = build_query(self.index, query_text, ["text"])
        scoped = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, query), (tantivy.Occur.Must, self._scope(file_id, "page"))]
        )
        return [
            {"page": int(doc["page"][0]), "score": round(score, 4), "snippet": snippet}
            for score, doc, snippet in search_with_snippets(
                self.index, scoped, limit, SNIPPET_CHARS
            )
        ]

    def page_texts(self, file_id: str, first: int, last: int) -> dict[int, str]:
        """Indexed text of pages ``first``..``last``; {} if the index was damaged (reset)."""
        return self.index.recover(lambda: self._page_texts(file_id, first, last), lambda: None)

    def _page_texts(self, file_id: str, first: int, last: int) -> dict[int, str]:
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, self._scope(file_id, "page")),
                (
                    tantivy.Occur.Must,
                    tantivy.Query.range_query(
                        self.index.schema,
                        "page",
                        tantivy.FieldType.Unsigned,
                        lower_bound=first,
                        upper_bound=last,
                    ),
                ),
            ]
        )
        searcher = self.index.searcher()
        hits = searcher.search(query, limit=last - first + 1).hits
        out = {}
        for _, address in hits:
            doc = searcher.doc(address)
            out[int(doc["page"][0])] = doc["text"][0]
        return out
