"""PDF pages in Tantivy: one document per page, keyed by a fingerprint of the file. Documents
(docx, pptx, epub, ...) use the same index with one Tantivy document per part.

The first search of a file extracts and indexes its pages; a manifest document, committed
with the pages, marks the file as complete. Later searches reuse the index until the file
changes: the fingerprint covers size, mtime, ctime, inode and hashes of the head and tail,
which a rewrite cannot cheaply keep equal. A damaged index is deleted and the file's pages
are extracted again (other files are re-indexed when they are next searched).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import tantivy

from .._errors import BusyError
from .._locks import file_lock
from ..tools._paths import OpenFile, fingerprint
from ..tools._pdftext import ProgressCallback, extract_pages
from ._tantivy import DerivedIndex, build_query, search_with_snippets

__all__ = ["PAGES_VERSION", "PageIndex", "fingerprint"]

PAGES_VERSION = 1
INDEXING_WAIT_S = 600.0  # how long a search waits for another process indexing the same file
SNIPPET_CHARS = 240


def _schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("kind", stored=True, tokenizer_name="raw")  # "page" or "manifest"
    sb.add_text_field("file_id", stored=True, fast=True, tokenizer_name="raw")
    sb.add_text_field("path", stored=True, tokenizer_name="raw")
    sb.add_unsigned_field("page", stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=True)
    return sb.build()


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
        """Page count of a completely indexed file, or None (also when the index was damaged:
        it is reset and the caller extracts the pages itself)."""
        return self.index.recover(lambda: self._indexed_pages(file_id), lambda: None)

    def _indexed_pages(self, file_id: str) -> int | None:
        searcher = self.index.searcher()
        hits = searcher.search(self._scope(file_id, "manifest"), limit=1).hits
        if not hits:
            return None
        return int(searcher.doc(hits[0][1])["page"][0])

    def find(
        self, f: OpenFile, pages: int, query: str, limit: int, progress: ProgressCallback | None
    ) -> tuple[str, bool, list[dict[str, Any]]]:
        """Index the file unless it is, then search it: (file_id, indexed now, hits). A damaged
        index is reset and the file indexed again."""

        def attempt() -> tuple[str, bool, list[dict[str, Any]]]:
            file_id, indexed_now = self._ensure(f, pages, progress)
            return file_id, indexed_now, self._search(file_id, query, limit)

        return self.index.recover(attempt, lambda: None)

    def ensure(
        self, f: OpenFile, pages: int, progress: ProgressCallback | None = None
    ) -> tuple[str, bool]:
        """Index the file's pages unless they are; returns (file_id, indexed now)."""
        return self.index.recover(lambda: self._ensure(f, pages, progress), lambda: None)

    def _ensure(
        self, f: OpenFile, pages: int, progress: ProgressCallback | None
    ) -> tuple[str, bool]:
        file_id = fingerprint(f)
        if self._indexed_pages(file_id) is not None:
            return file_id, False
        # One first indexing per file: other threads and processes wait for it, then reuse it.
        lock = os.path.join(self.index.directory + ".indexing", file_id + ".lock")
        with file_lock(lock, INDEXING_WAIT_S) as held:
            if not held:
                raise BusyError(
                    f"{f.path!r} has been indexed by another process for over "
                    f"{INDEXING_WAIT_S:.0f}s; retry later"
                )
            self.index.reload()  # see what the other indexer committed
            if self._indexed_pages(file_id) is not None:
                return file_id, False
            self._index_file(f, file_id, pages, progress)
        return file_id, True

    def _index_file(
        self, f: OpenFile, file_id: str, pages: int, progress: ProgressCallback | None
    ) -> None:
        texts = extract_pages(f.path, (f.dev, f.ino), pages, progress)
        if progress is not None:
            progress(pages, pages, "indexing pages")
        with self.index.writer() as writer:
            # Another process may have finished the same file meanwhile: replace, never double.
            writer.delete_documents_by_term("file_id", file_id)
            writer.delete_documents_by_term("path", f.path)
            for number, text in enumerate(texts, start=1):
                writer.add_document(
                    self.index.document(
                        {
                            "kind": "page",
                            "file_id": file_id,
                            "path": f.path,
                            "page": number,
                            "text": text,
                        }
                    )
                )
            writer.add_document(
                self.index.document(
                    {
                        "kind": "manifest",
                        "file_id": file_id,
                        "path": f.path,
                        "page": len(texts),
                        "text": "",
                    }
                )
            )

    def ensure_parts(
        self, f: OpenFile, parts: Callable[[], Iterable[str]]
    ) -> tuple[str, int, bool]:
        """Index a document's parts (one Tantivy document each, numbered like pages) unless
        they are; returns (file_id, part count, indexed now)."""
        file_id = fingerprint(f)
        known = self.indexed_pages(file_id)
        if known is not None:
            return file_id, known, False
        count = 0
        with self.index.writer() as writer:
            writer.delete_documents_by_term("file_id", file_id)
            writer.delete_documents_by_term("path", f.path)
            for count, text in enumerate(parts(), start=1):
                writer.add_document(
                    self.index.document(
                        {
                            "kind": "page",
                            "file_id": file_id,
                            "path": f.path,
                            "page": count,
                            "text": text,
                        }
                    )
                )
            writer.add_document(
                self.index.document(
                    {
                        "kind": "manifest",
                        "file_id": file_id,
                        "path": f.path,
                        "page": count,
                        "text": "",
                    }
                )
            )
        return file_id, count, True

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
