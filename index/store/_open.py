"""Which store a workspace opens: the embedded SQLite store in the home, or a PostgreSQL
database named by URL (imported only then: psycopg is the ``postgres`` extra)."""

from __future__ import annotations

from .._errors import InvalidArgumentError, StoreError
from ._protocol import StoreProtocol
from ._store import Store

__all__ = ["open_store"]


def open_store(home: str, store: str | None) -> StoreProtocol:
    """The store ``store`` names: None, ``""`` or ``"sqlite"`` for ``home/store.sqlite3``, a
    ``postgresql://`` URL for a shared database."""
    if store is None or store in ("", "sqlite"):
        return Store(home)
    if not isinstance(store, str):
        raise InvalidArgumentError(f"store must be a string URL, got {type(store).__name__}")
    if not store.startswith(("postgresql://", "postgres://")):
        raise InvalidArgumentError(
            f"store {store[:100]!r} is neither 'sqlite' nor a postgresql:// URL; give "
            "postgresql://USER@HOST:PORT/DATABASE, or leave it out for the SQLite store in the home"
        )
    try:
        from ._postgres import PgStore
    except ImportError as exc:
        raise StoreError(
            f"the PostgreSQL store needs psycopg 3 and psycopg_pool ({exc}); install "
            "leanreplay[postgres]"
        ) from None
    return PgStore(store, home)
