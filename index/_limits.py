"""Limits that several rooms share, each under one name."""

from __future__ import annotations

__all__ = ["MAX_ANSWER_CHARS"]

# The most text one tool answer carries: file_read, file_search, pdf_read, doc_read,
# table_read, table_query and conversation_read (JSON-escaped, as the model receives it).
# A longer answer stops with a `next` call; a single line, page or part longer than this is cut.
MAX_ANSWER_CHARS = 40_000
