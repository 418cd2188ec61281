"""Durable stores for the scheduler: the ``Store`` protocol, on SQLite and on PostgreSQL.

``Store`` (and its read-only half ``StoreReader``) is the contract; ``StoredTask``,
``TaskDefinition``, ``TaskUpdate`` and ``LedgerRow`` are the plain data it trades in.
``SQLiteStore`` keeps one scheduler's tasks in one SQLite file; ``SQLiteStore.inspect``
reads one without disturbing the scheduler that holds it. ``PostgresStore`` keeps them in a
PostgreSQL schema that several schedulers may share: it is also a ``SharedStore``, whose
``claim_due`` hands each due run to one node under a ``Lease``.

``PostgresStore`` is imported on first use: psycopg is an optional dependency (the
``postgres`` extra), and the rest of the package must import without it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from actors.errors import DuplicateTaskError, StoreError, StoreLockedError
from actors.store.protocol import (
    LIVE_STATUS,
    STATUSES,
    TERMINAL_STATUSES,
    Dependency,
    IfExists,
    KeepsDependencies,
    KeepsPaused,
    Lease,
    LedgerRow,
    LoadsInParts,
    RunInFlight,
    SharedStore,
    Store,
    StoredStatus,
    StoredTask,
    StoreReader,
    TaskDefinition,
    TaskUpdate,
    Waiting,
)
from actors.store.sqlite import SQLiteReader, SQLiteStore

if TYPE_CHECKING:
    from actors.store.postgres import PostgresStore


POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""A ``store`` string starting with one of these is a PostgreSQL URL: a shared store."""


def open_store(store: Store | str | os.PathLike[str]) -> Store:
    """Open the store a ``Scheduler(store=...)`` names.

    A ``Store`` object; a PostgreSQL URL (``"postgresql://..."`` or ``"postgres://..."``: a
    ``PostgresStore`` with its defaults, shared by every scheduler that opens it); or a path
    to an SQLite file.

    Raises:
        StoreLockedError: another live scheduler holds it.
        StoreError: it cannot be used (the message names it and says why).
        TypeError: ``store`` is none of these.
        ImportError: a PostgreSQL URL without psycopg installed.
    """
    if isinstance(store, str) and store.startswith(POSTGRES_SCHEMES):
        from actors.store.postgres import PostgresStore  # noqa: PLC0415 - psycopg is optional

        store = PostgresStore(store)
    elif isinstance(store, str | os.PathLike):
        store = SQLiteStore(store)
    elif not callable(getattr(store, "open", None)) or not callable(getattr(store, "save", None)):
        raise TypeError(f"store must be a path or a Store, got {store!r}")
    store.open()
    return store


__all__ = [
    "LIVE_STATUS",
    "STATUSES",
    "TERMINAL_STATUSES",
    "Dependency",
    "DuplicateTaskError",
    "IfExists",
    "KeepsDependencies",
    "KeepsPaused",
    "Lease",
    "LedgerRow",
    "LoadsInParts",
    "PostgresStore",
    "RunInFlight",
    "SQLiteReader",
    "SQLiteStore",
    "SharedStore",
    "Store",
    "StoreError",
    "StoreLockedError",
    "StoreReader",
    "StoredStatus",
    "StoredTask",
    "TaskDefinition",
    "TaskUpdate",
    "Waiting",
    "open_store",
]


def __getattr__(name: str) -> object:
    """Import ``PostgresStore`` when it is first asked for (it needs psycopg)."""
    if name == "PostgresStore":
        try:  # on demand: psycopg is optional
            from actors.store.postgres import PostgresStore  # noqa: PLC0415
        except ImportError as error:
            raise ImportError(
                f"PostgresStore needs psycopg 3 and psycopg_pool ({error}); "
                "install pykka-taskscheduler[postgres]"
            ) from error
        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
