"""The PostgreSQL server the store tests run against (127.0.0.1:5432, trust auth).

Each test session creates one uniquely named database and drops it at its end; each test gets a
schema of its own in it (``search_path`` in the URL), created and dropped around the test: a
clean store in about 60 ms instead of the ~1 s a database per test costs. Without a server the
PostgreSQL half of the store tests skips and says why; under ``CI=true`` it fails.
"""

from __future__ import annotations

import os
import urllib.parse
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import in_ci

SERVER = os.environ.get("LEANREPLAY_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
MISSING = (
    f"needs PostgreSQL at {SERVER} (trust auth); start it with `pg_ctlcluster "
    "--skip-systemctl-redirect 15 main start`"
)


def admin() -> object:
    import psycopg

    return psycopg.connect(SERVER, autocommit=True, connect_timeout=3)


def database_url(name: str, schema: str | None = None) -> str:
    parts = urllib.parse.urlsplit(SERVER)
    url = urllib.parse.urlunsplit(parts._replace(path=f"/{name}", query=""))
    if schema is not None:
        url += "?options=" + urllib.parse.quote(f"-csearch_path={schema}")
    return url


def require_server() -> None:
    """Skips the calling test (fails it under CI=true) when PostgreSQL is not there."""
    try:
        import psycopg

        psycopg.connect(SERVER, autocommit=True, connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means: no server to test against
        if in_ci():
            pytest.fail(f"CI=true but PostgreSQL is not reachable at {SERVER}: {exc}")
        pytest.skip(f"{MISSING} ({exc})")


def new_database() -> str:
    import psycopg

    name = f"lr_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    return name


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """The name of this session's database."""
    require_server()
    name = new_database()
    try:
        yield name
    finally:
        drop_database(name)


@pytest.fixture
def pg_url(pg_database: str) -> Iterator[str]:
    """A URL of an empty schema of its own for this test."""
    import psycopg

    schema = f"s_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url(pg_database), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    try:
        yield database_url(pg_database, schema)
    finally:
        with psycopg.connect(database_url(pg_database), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


STORES = ["sqlite", "postgresql"]


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest) -> str | None:
    """None (the SQLite store in the home) or the URL of a fresh PostgreSQL schema: the store
    tests run against both."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("pg_url")
    return url
