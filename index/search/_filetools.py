"""The file tools the page index serves: `pdf_search` and `doc_search` (the first call
indexes the file), and `pdf_read`, which takes pages already indexed from the index and
extracts the rest."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .._errors import StoreError
from ..tools._docs import document_format, iter_parts
from ..tools._paths import OpenFile, fingerprint
from ..tools._pdfread import page_range, pdf_backend, pdf_page_count, read_pages
from ..tools._pdftext import ProgressCallback, page_count
from ._pdfindex import PageIndex

__all__ = ["read_pdf", "search_document", "search_pdf"]


def search_pdf(
    index: PageIndex, f: OpenFile, query: str, limit: int, progress: ProgressCallback | None
) -> dict[str, Any]:
    """`pdf_search`: the best pages of the PDF ``f`` for ``query``, with the `pdf_read` call
    of the best one."""
    pages = pdf_page_count(f)
    with pdf_backend(f):
        page_count(f.path, (f.dev, f.ino))  # the backend must load it to index it
    with pdf_backend(f, only_typed=True):
        _, indexed_now, hits, notes = index.find(f, pages, query, limit, progress)
    return {
        "path": f.path,
        "query": query,
        "pages": pages,
        "indexed_now": indexed_now,
        "hits": hits,
        "notes": notes,
        "next": (
            f'pdf_read(path={json.dumps(f.path)}, pages="{hits[0]["page"]}")' if hits else None
        ),
    }


def read_pdf(page_index: Callable[[], PageIndex], f: OpenFile, pages: str) -> dict[str, Any]:
    """`pdf_read`: the text of pages ``"N"`` or ``"A-B"`` of the PDF ``f``; pages the index
    (opened by ``page_index`` only when needed) already holds are not extracted again."""
    first, last = page_range(pages)
    file_id = fingerprint(f)

    def indexed(a: int, b: int) -> dict[int, str]:
        try:
            index = page_index()
            if not index.indexed_pages(file_id):
                return {}
            return index.page_texts(file_id, a, b)
        except StoreError:  # the page index is a cache; the file itself is the source
            return {}

    return read_pages(f, first, last, pdf_page_count(f), indexed)


def search_document(index: PageIndex, f: OpenFile, query: str, limit: int) -> dict[str, Any]:
    """`doc_search`: the best parts of the document ``f`` for ``query``, with the `doc_read`
    call of the best one."""
    fmt = document_format(f)
    file_id, total, indexed_now, notes = index.ensure_parts(
        f, lambda first: iter_parts(f, fmt, first)
    )
    hits = [
        {"part": h["page"], "score": h["score"], "snippet": h["snippet"]}
        for h in index.search(file_id, query, limit)
    ]
    return {
        "path": f.path,
        "format": fmt,
        "query": query,
        "parts": total,
        "indexed_now": indexed_now,
        "hits": hits,
        "notes": notes,
        "next": (
            f'doc_read(path={json.dumps(f.path)}, part="{hits[0]["part"]}")' if hits else None
        ),
    }
