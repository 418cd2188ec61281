"""The PostgreSQL server the tests use, and schemas of their own on it.

The DSN comes from ``SCHEDULER_TEST_DSN`` (default: the local ``test`` database). When no
server answers, PostgreSQL tests are skipped with the reason, or fail if ``CI=true``: CI
must run them.
"""

from __future__ import annotations

import functools
import os
import secrets

import psycopg
import pytest
from psycopg import sql

from actors.store.postgres_connections import redact

DSN = os.environ.get("SCHEDULER_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@functools.cache
def _unreachable() -> str | None:
    try:
        with psycopg.connect(DSN, connect_timeout=3):
            pass
    except psycopg.Error as error:
        return f"no PostgreSQL server at {redact(DSN)} (SCHEDULER_TEST_DSN): {error}".strip()
    return None


def require_postgres() -> str:
    """Return the DSN; skip the test (fail it under ``CI=true``) if no server answers."""
    reason = _unreachable()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason}; CI=true, so the PostgreSQL tests must run", pytrace=False)
        pytest.skip(reason)
    return DSN


def admin() -> psycopg.Connection[tuple[object, ...]]:
    """A plain autocommit connection to the test database, for setting things up by hand."""
    db = psycopg.connect(DSN, autocommit=True)
    db.execute("SET lock_timeout = '20s'")  # a leftover lock fails the cleanup, not hangs it
    return db


def new_schema() -> str:
    """Create an empty schema of the test's own and return its name."""
    name = f"t_{os.getpid()}_{secrets.token_hex(4)}"
    with admin() as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return name


def drop_schemas(names: list[str]) -> None:
    """Drop the schemas (and everything in them) that a test made."""
    if not names:
        return
    with admin() as db:
        for name in names:
            db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
