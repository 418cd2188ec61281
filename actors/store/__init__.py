"""Durable stores for the scheduler: the ``Store`` protocol and its SQLite implementation.

``Store`` (and its read-only half ``StoreReader``) is the contract; ``StoredTask``,
``TaskDefinition``, ``TaskUpdate`` and ``RunRecord`` are the plain data it trades in.
``SQLiteStore`` keeps one scheduler's tasks in one SQLite file; ``SQLiteStore.inspect``
reads one without disturbing the scheduler that holds it.
"""

from actors.errors import DuplicateTaskError, StoreError, StoreLockedError
from actors.store.protocol import (
    LIVE_STATUS,
    STATUSES,
    TERMINAL_STATUSES,
    IfExists,
    RunRecord,
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
    "RunRecord",
    "SQLiteReader",
    "SQLiteStore",
    "Store",
    "StoreError",
    "StoreLockedError",
    "StoreReader",
    "StoredStatus",
    "StoredTask",
    "TaskDefinition",
    "TaskUpdate",
]
