"""Durable stores for the scheduler: the ``Store`` protocol, on SQLite and on PostgreSQL.

``Store`` (and its read-only half ``StoreReader``) is the contract; ``StoredTask``,
``TaskDefinition``, ``TaskUpdate`` and ``RunRecord`` are the plain data it trades in.
``SQLiteStore`` keeps one scheduler's tasks in one SQLite file; ``SQLiteStore.inspect``
reads one without disturbing the scheduler that holds it. ``PostgresStore`` keeps them in a
PostgreSQL schema that several schedulers may share: it is also a ``SharedStore``, whose
``claim_due`` hands each due run to one node under a ``Lease``.
"""

from actors.errors import DuplicateTaskError, StoreError, StoreLockedError
from actors.store.postgres import PostgresStore
from actors.store.protocol import (
    LIVE_STATUS,
    STATUSES,
    TERMINAL_STATUSES,
    IfExists,
    Lease,
    RunRecord,
    SharedStore,
    Store,
    StoredStatus,
    StoredTask,
    StoreReader,
    TaskDefinition,
    TaskUpdate,
)
from actors.store.sqlite import SQLiteReader, SQLiteStore

__all__ = [
    "LIVE_STATUS",
    "STATUSES",
    "TERMINAL_STATUSES",
    "DuplicateTaskError",
    "IfExists",
    "Lease",
    "PostgresStore",
    "RunRecord",
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
]
