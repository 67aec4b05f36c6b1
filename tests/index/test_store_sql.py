"""One SQL source for both stores: a statement is written with ``?`` and rendered for the
backend's paramstyle (the reads both stores make run on both in test_store.py)."""

from __future__ import annotations

import pytest

from leanreplay.index.store._postgres import PgStore
from leanreplay.index.store._sql import render
from leanreplay.index.store._store import Store

SQL = "SELECT id FROM messages WHERE conversation_id=? AND seq>? ORDER BY seq"


def test_qmark_is_the_statement_as_written() -> None:
    assert render(SQL, "qmark") is SQL


def test_format_puts_a_percent_s_for_each_question_mark() -> None:
    assert render(SQL, "format") == (
        "SELECT id FROM messages WHERE conversation_id=%s AND seq>%s ORDER BY seq"
    )


def test_a_literal_percent_is_refused_for_format_and_kept_for_qmark() -> None:
    like = "SELECT id FROM attachments WHERE name LIKE '%.png' AND conversation_id=?"
    with pytest.raises(ValueError, match="literal %"):
        render(like, "format")
    assert render(like, "qmark") == like


def test_an_unknown_paramstyle_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown paramstyle 'named'"):
        render(SQL, "named")


def test_each_store_names_its_drivers_paramstyle() -> None:
    import sqlite3

    import psycopg

    assert Store.paramstyle == sqlite3.paramstyle == "qmark"
    assert PgStore.paramstyle == "format"
    assert psycopg.paramstyle == "pyformat"  # which takes %s (format) as well as %(name)s
