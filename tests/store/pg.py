"""The PostgreSQL server the tests use, and schemas of their own on it.

The DSN comes from ``SCHEDULER_TEST_DSN`` (default: the local ``test`` database). When no
server answers, PostgreSQL tests are skipped with the reason, or fail if ``CI=true``: CI
must run them.
"""

from __future__ import annotations

import functools
import os
import secrets
import subprocess
import sys
import time

import psycopg
import pytest
from psycopg import sql

from actors.store import PostgresStore
from actors.store.postgres_connections import redact
from tests.store.helpers import ROOT

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


def wait_for_db_clock(store: PostgresStore, instant: float, timeout: float = 10.0) -> None:
    """Return once the database's clock is past ``instant`` (polling it: the clock that decides)."""
    deadline = time.monotonic() + timeout
    while store.db_now() <= instant:
        assert time.monotonic() < deadline, f"the database clock never passed {instant}"
        time.sleep(0.01)


def spawn_node(*args: str) -> subprocess.Popen[str]:
    """Start ``python -m tests.store.pg_child ARGS`` on this worktree's code, stdout piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.pg_child", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def unique_node(name: str) -> str:
    """A node name no other test (in this run or another one on the server) uses at the same time.

    Give it to a node whose connections a test finds by name (``backends``) and cuts
    (``terminate``): the server is shared, so a plain ``"a"`` would match other tests' nodes.
    """
    return f"{name}-{os.getpid()}-{secrets.token_hex(3)}"


def backends(node: str) -> list[tuple[int, str]]:
    """The server processes (pid, last query) of the connections ``node`` holds (see ``unique_node``)."""
    with admin() as db:
        rows = db.execute(
            "SELECT pid, query FROM pg_stat_activity WHERE application_name = %s",
            (f"pykka-taskscheduler {node}",),
        ).fetchall()
    return [(int(pid), str(query)) for pid, query in rows]  # type: ignore[call-overload]


def terminate(pids: list[int]) -> None:
    """End these server processes, as an administrator or a network cut would."""
    with admin() as db:
        for pid in pids:
            db.execute("SELECT pg_terminate_backend(%s)", (pid,))
