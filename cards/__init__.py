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

__all__ = [
    "CARD_TOOLS",
    "Card",
    "CardError",
    "FileMissingError",
    "FileUnreadableError",
    "NotARegularFileError",
    "PdfFacts",
    "TOOLS_BY_KIND",
    "card_for",
    "card_for_descriptor",
    "decode_text_string",
    "human_size",
    "pdf_facts",
    "probe_pdf",
    "quote",
]
