"""The runner's store on PostgreSQL: a ``PostgresStore`` shared by every ``run`` of the database.

Several ``run`` processes may share one database, each due run executed by one of them
(docs/scale-out.md). What the runner adds to the library's store:

- each job's fingerprint in the definitions it adds (``Stamps``), in the same statement, as
  on SQLite (``actors/cli/fingerprints.py``);
- ``reconciling``: two runs starting (or reloading) at once must not both decide from what
  the store held before either wrote. Both would add a new one-time job, and the second add of
  an id that has meanwhile ended starts it afresh: it would run twice. So a run reconciles
  under a session advisory lock of the store's schema, held on a connection of its own from
  the read of the store to its last write; the second run reads what the first wrote, its
  fingerprints included, and keeps it.

There is no lock file (the database is meant to be shared) and no hold-back as on SQLite: a
job whose definition changed may run its old definition once if it is due as the run starts,
as it may on any other run still going with the old file.

Threads: ``reconciling`` on the runner's main thread; ``add`` on whichever thread adds;
``read_shared`` on the caller's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import psycopg

from actors.cli.fingerprints import Stamps
from actors.errors import StoreError
from actors.store import IfExists, PostgresStore, StoredTask, TaskDefinition
from actors.store.postgres_connections import redact
from actors.store.postgres_schema import lock_key

__all__ = ["RECONCILE_LOCK_TIMEOUT", "SharedJobStore", "read_shared"]

RECONCILE_LOCK_TIMEOUT: Final = 60.0
"""Seconds a run waits for another run's reconcile to end before it gives up (``StoreError``)."""


class SharedJobStore(PostgresStore):
    """A ``PostgresStore`` that stamps each job's fingerprint and reconciles one run at a time."""

    def __init__(self, dsn: str, stamps: Stamps) -> None:
        """Configure the store of the PostgreSQL URL ``dsn`` (the library's defaults otherwise)."""
        super().__init__(dsn)
        self._url = dsn
        self.stamps = stamps

    def add(self, task: TaskDefinition, if_exists: IfExists = "error") -> tuple[StoredTask, bool]:
        """Store ``task`` with its job's fingerprint in its options, in one statement; see ``Store.add``."""
        return super().add(self.stamps.stamp(task), if_exists)

    @contextmanager
    def reconciling(self) -> Iterator[None]:
        """Hold the store's reconcile lock (one run's reconcile at a time) while the block runs.

        Raises:
            StoreError: the database cannot be reached, or another run held the lock longer
                than ``RECONCILE_LOCK_TIMEOUT``.
        """
        try:
            db = psycopg.connect(self._url, autocommit=True, application_name="pykka-taskscheduler reconcile")
        except psycopg.Error as error:
            shown = redact(self._url)
            raise StoreError(f"{shown}: cannot connect to reconcile the job file: {error}") from error
        with db:
            try:
                row = db.execute("SELECT current_schema()").fetchone()
                schema = "public" if row is None or row[0] is None else str(row[0])
                db.execute(f"SET lock_timeout = '{int(RECONCILE_LOCK_TIMEOUT * 1000)}ms'")
                key = lock_key(schema, "job-file")
                db.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
            except psycopg.Error as error:
                problem = f"cannot take the job file's reconcile lock: {error}"
                raise StoreError(f"{self.location}: {problem}") from error
            yield  # the lock ends with the session, even if the process is killed


def read_shared(url: str) -> list[StoredTask]:
    """Return every task of the PostgreSQL store at ``url``, live or ended (for ``status``).

    It creates nothing: a database (schema) that holds no store yet is an error.

    Raises:
        StoreError: the database cannot be reached, or holds no store of ours.
    """
    shown = redact(url)
    try:
        with psycopg.connect(url, autocommit=True, application_name="pykka-taskscheduler status") as db:
            row = db.execute("SELECT current_schema(), to_regclass('store_meta') IS NOT NULL").fetchone()
    except psycopg.Error as error:
        raise StoreError(f"{shown}: cannot connect: {error}") from error
    if row is None or not row[1]:
        schema = "none" if row is None or row[0] is None else row[0]
        raise StoreError(f"{shown} (schema {schema}) holds no task store yet (a run of it creates one)")
    with PostgresStore(url) as store:
        return store.tasks()
