"""Attachment cards: a one-line description of a file that stands in for its content.

>>> from leanreplay.cards import card_for
>>> card = card_for("report.pdf")
>>> card.render()   # one escaped line: name, path, type, size, facts, tools
>>> card.to_dict()  # name, path, mime, kind, size, facts, tools, warnings
"""

from ._card import (
    CARD_TOOLS,
    TOOLS_BY_KIND,
    Card,
    card_for,
    card_for_descriptor,
    human_size,
    pdf_facts,
    quote,
)
from ._errors import CardError, FileMissingError, FileUnreadableError, NotARegularFileError
from ._pdf import PdfFacts, decode_text_string, probe_pdf
from ._pdfsimple import SimplePdfText, open_simple_text
from ._table import SheetExtent, csv_cells, hide_lone_crs, xlsx_extent
from ._zipdir import ZipEntry, count_zip_entries, inflate_member, walk_zip

__all__ = [
    "CARD_TOOLS",
    "Card",
    "CardError",
    "FileMissingError",
    "FileUnreadableError",
    "NotARegularFileError",
    "PdfFacts",
    "SheetExtent",
    "SimplePdfText",
    "TOOLS_BY_KIND",
    "ZipEntry",
    "card_for",
    "card_for_descriptor",
    "count_zip_entries",
    "csv_cells",
    "decode_text_string",
    "hide_lone_crs",
    "human_size",
    "inflate_member",
    "open_simple_text",
    "pdf_facts",
    "probe_pdf",
    "quote",
    "walk_zip",
    "xlsx_extent",
]
