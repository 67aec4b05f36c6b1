"""The statements both stores run are written once, with ``?`` for each parameter, and
rendered for the backend's DB-API paramstyle: ``qmark`` (sqlite3) as written, ``format``
(psycopg) with ``%s`` for each ``?``."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["render"]

PARAMSTYLES = ("qmark", "format")


@lru_cache(maxsize=256)
def render(sql: str, paramstyle: str) -> str:
    """``sql`` for ``paramstyle``.

    Raises:
        ValueError: an unknown paramstyle, or a ``%`` in a statement to render as
            ``format`` (psycopg would read it as a placeholder: pass the text as a
            parameter instead).
    """
    if paramstyle == "qmark":
        return sql
    if paramstyle != "format":
        raise ValueError(f"unknown paramstyle {paramstyle!r}; one of {', '.join(PARAMSTYLES)}")
    if "%" in sql:
        raise ValueError(
            f"a literal % in {sql[:80]!r} would be read as a placeholder; pass it as a parameter"
        )
    return sql.replace("?", "%s")
