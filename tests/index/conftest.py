"""The store fixtures of tests/pgstore.py, for the store tests of this folder."""

from tests.pgstore import pg_database, pg_url, store_url

__all__ = ["pg_database", "pg_url", "store_url"]
