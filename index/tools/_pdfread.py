"""What the PDF tools read: the page count they trust, and `pdf_read`'s pages and pagination."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from leanreplay.cards import card_for_descriptor, probe_pdf

from .._errors import InvalidArgumentError, WorkspaceError, WrongFileTypeError
from .._limits import MAX_ANSWER_CHARS
from ._paths import OpenFile
from ._pdftext import pdf_metadata
from ._pdfworker import PasswordRequired, extract_range, page_count

__all__ = [
    "MAX_PAGE_DIGITS",
    "MAX_PDF_READ_PAGES",
    "page_range",
    "pdf_info",
    "pdf_backend",
    "pdf_page_count",
    "read_pages",
]

MAX_PDF_READ_PAGES = 20  # pages per pdf_read call
MAX_PAGE_DIGITS = 9  # int() refuses over 4,300 digits; no PDF has a billion pages


@contextlib.contextmanager
def pdf_backend(f: OpenFile, *, only_typed: bool = False) -> Iterator[None]:
    """A PDF the text backend (PDFium or pypdf) refuses is the file's problem: say so.

    ``only_typed`` converts only the backends' own error classes (around work that also
    writes the index, whose errors are not the file's).
    """
    try:
        yield
    except (WorkspaceError, OSError):
        raise
    except PasswordRequired:  # whichever backend found it: one actionable sentence
        raise WrongFileTypeError(
            f"{f.path!r} is encrypted with a password; its pages cannot be read. "
            "pdf_info still shows what is readable without it"
        ) from None
    except Exception as exc:
        if only_typed and not isinstance(exc, _backend_errors()):
            raise
        raise WrongFileTypeError(
            f"{f.path!r} cannot be read as a PDF ({type(exc).__name__}: {exc}); it may be "
            "truncated or damaged. pdf_info shows what its index still holds"
        ) from None


@functools.cache
def _backend_errors() -> tuple[type[Exception], ...]:
    import pypdf.errors

    errors: list[type[Exception]] = [pypdf.errors.PyPdfError]
    with contextlib.suppress(ImportError):  # a dependency; absent only without its wheels
        import pypdfium2

        errors.append(pypdfium2.PdfiumError)
    return tuple(errors)


def pdf_page_count(f: OpenFile) -> int:
    """Page count of a confined PDF: the card's lazy probe, else the text backend's.

    Raises:
        WrongFileTypeError: not a PDF, encrypted with a password, or unreadable.
    """
    head = os.pread(f.fd, 1024, 0)
    if b"%PDF-" not in head:
        raise WrongFileTypeError(f"{f.path!r} is not a PDF; use file_read or image_view")
    facts = probe_pdf(f.fd, f.size)  # on the confined descriptor: nothing is reopened
    if facts.pages is not None:
        return facts.pages
    with pdf_backend(f):
        return page_count(f.path, (f.dev, f.ino))


def page_range(pages: str) -> tuple[int, int]:
    """``"7"`` -> (7, 7); ``"3-5"`` -> (3, 5); anything else is an `InvalidArgumentError`."""
    first_text, _, last_text = pages.partition("-")
    if max(len(first_text.strip()), len(last_text.strip())) > MAX_PAGE_DIGITS:
        raise InvalidArgumentError(
            f"pages must be page numbers of at most {MAX_PAGE_DIGITS} digits, got a "
            f"{len(pages):,}-char value; call pdf_info for the page count"
        )
    try:
        first = int(first_text)
        last = int(last_text) if last_text.strip() else first
    except ValueError:
        first = last = 0
    if first < 1 or last < first:
        raise InvalidArgumentError(f'pages must be "N" or "A-B" with 1 <= A <= B, got {pages!r}')
    return first, last


def read_pages(
    f: OpenFile,
    first: int,
    last: int,
    total: int,
    known: Callable[[int, int], Mapping[int, str]],
) -> dict[str, Any]:
    """The text of pages ``first``..``last`` of a PDF of ``total`` pages, paginated.

    At most `MAX_PDF_READ_PAGES` pages and `MAX_ANSWER_CHARS` chars are returned (the first
    page always, cut if it alone is longer); ``next`` is the call that continues. ``known``
    gives texts already extracted (the page index), the rest is extracted here.
    """
    if first > total:
        raise InvalidArgumentError(f"page {first} is past the end: the PDF has {total} pages")
    last = min(last, total, first + MAX_PDF_READ_PAGES - 1)
    texts = dict(known(first, last))
    missing = [p for p in range(first, last + 1) if p not in texts]
    if missing:
        with pdf_backend(f):
            extracted = extract_range(f.path, (f.dev, f.ino), missing[0] - 1, missing[-1])
        texts.update(zip(range(missing[0], missing[-1] + 1), extracted, strict=True))
    out: list[dict[str, Any]] = []
    chars, shown = 0, first - 1
    for number in range(first, last + 1):
        text = texts[number]
        if out and chars + len(text) > MAX_ANSWER_CHARS:
            break
        if len(text) > MAX_ANSWER_CHARS:
            text = text[:MAX_ANSWER_CHARS] + " [... page cut]"
        out.append({"page": number, "text": text})
        chars += len(text)
        shown = number
    nxt = None
    if shown < total:
        end = min(total, shown + MAX_PDF_READ_PAGES)
        nxt = f'pdf_read(path={json.dumps(f.path)}, pages="{shown + 1}-{end}")'
    return {"path": f.path, "total_pages": total, "pages": out, "next": nxt}


def pdf_info(f: OpenFile) -> dict[str, Any]:
    """`pdf_info`: the card of the PDF ``f``, its metadata and the top of its outline."""
    card = card_for_descriptor(f.fd, path=f.path).to_dict()
    if card["kind"] != "pdf":
        raise WrongFileTypeError(f"{f.path!r} is {card['mime']}, not a PDF")
    try:
        card.update(pdf_metadata(f.path, (f.dev, f.ino)))
    except Exception as exc:  # noqa: BLE001 - metadata is a bonus; the card stands
        card["notes"] = [f"metadata unreadable: {type(exc).__name__}: {exc}"]
    return card
