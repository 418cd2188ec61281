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

- the hold-back: a run claims nothing before its first reconcile is done (``claim_due``
  gives nothing, ``next_wakeup`` says nothing is due, until ``reconciled``), so it never runs
  the old definition of a job its file changed, nor a job its file dropped (as the SQLite
  ``HoldBackStore`` does by loading those far away). Another run still going with the old file
  may, until this one has reconciled.

There is no lock file: the database is meant to be shared.

Threads: ``reconciling`` and ``reconciled`` on the runner's main thread; ``add`` on whichever
thread adds; ``claim_due``, ``next_wakeup`` and ``listen`` on the node's lease loop;
``read_shared`` on the caller's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

import psycopg

from actors.cli.fingerprints import Stamps
from actors.errors import StoreError
from actors.store import IfExists, Lease, PostgresStore, StoredTask, TaskDefinition
from actors.store.postgres_connections import redact
from actors.store.postgres_schema import lock_key

__all__ = ["RECONCILE_LOCK_TIMEOUT", "SharedJobStore", "open_shared", "read_shared"]

RECONCILE_LOCK_TIMEOUT: Final = 60.0
"""Seconds a run waits for another run's reconcile to end before it gives up (``StoreError``)."""


class SharedJobStore(PostgresStore):
    """A ``PostgresStore`` that stamps each job's fingerprint and reconciles one run at a time."""

    def __init__(self, dsn: str, stamps: Stamps) -> None:
        """Configure the store of the PostgreSQL URL ``dsn`` (the library's defaults otherwise)."""
        super().__init__(dsn)
        self._url = dsn
        self.stamps = stamps
        self._reconciled = threading.Event()  # set once by the main thread, read by the lease loop
        self._wakeups_lock = threading.Lock()  # guards _wakeups: the lease loop adds, the main thread reads
        self._wakeups: list[Callable[[], None]] = []

    def claim_due(
        self,
        limit: int,
        importable: Collection[str] | None = None,
        executors: Collection[str] | None = None,
        *,
        held: Collection[int] | None = None,
    ) -> list[Lease]:
        """Claim due runs (``PostgresStore.claim_due``), or none before the first reconcile."""
        if not self._reconciled.is_set():
            return []
        return super().claim_due(limit, importable, executors, held=held)

    def next_wakeup(
        self, importable: Collection[str] | None = None, executors: Collection[str] | None = None
    ) -> float | None:
        """The store's next wake-up (``PostgresStore.next_wakeup``); none before the first reconcile."""
        if not self._reconciled.is_set():
            return None
        return super().next_wakeup(importable, executors)

    def listen(
        self, wakeup: Callable[[], None], *, saved: Callable[[], None] | None = None
    ) -> Callable[[], None]:
        """Listen for hints (``PostgresStore.listen``); ``wakeup`` is also called once reconciled."""
        with self._wakeups_lock:
            self._wakeups.append(wakeup)
        return super().listen(wakeup, saved=saved)

    def reconciled(self) -> None:
        """The schedule follows the job file: claim from now on, and look for due runs at once."""
        if self._reconciled.is_set():
            return
        self._reconciled.set()
        with self._wakeups_lock:
            wakeups = list(self._wakeups)
        for wakeup in wakeups:
            wakeup()

    def add(self, task: TaskDefinition, if_exists: IfExists = "error") -> tuple[StoredTask, bool]:
        """Store ``task`` with its job's fingerprint in its options, in one statement; see ``Store.add``."""
        return super().add(self.stamps.stamp(task), if_exists)

    def add_many(self, tasks: Sequence[TaskDefinition]) -> list[int]:
        """Store ``tasks``, each with its job's fingerprint, in one transaction; see ``Store.add_many``."""
        return super().add_many([self.stamps.stamp(task) for task in tasks])

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
    with open_shared(url) as store:
        return store.tasks()


def open_shared(url: str) -> PostgresStore:
    """Return the PostgreSQL store at ``url``, for one command (``status``, ``pause``, ``history``...).

    Use it in a ``with`` block (it opens on entering). It creates nothing: a database (schema)
    that holds no store yet is an error.

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
    return PostgresStore(url)
