"""Durable stores for the scheduler: the ``Store`` protocol and its SQLite implementation.

``Store`` (and its read-only half ``StoreReader``) is the contract; ``StoredTask``,
``TaskDefinition``, ``TaskUpdate`` and ``RunRecord`` are the plain data it trades in.
``SQLiteStore`` keeps one scheduler's tasks in one SQLite file; ``SQLiteStore.inspect``
reads one without disturbing the scheduler that holds it.
"""

import os

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


def open_store(store: Store | str | os.PathLike[str]) -> Store:
    """Open the store a ``Scheduler(store=...)`` names: a ``Store`` object, or a path to an SQLite file.

    Raises:
        StoreLockedError: another live scheduler holds it.
        StoreError: it cannot be used (the message names it and says why).
        TypeError: ``store`` is none of these.
    """
    if isinstance(store, str | os.PathLike):
        store = SQLiteStore(store)
    elif not callable(getattr(store, "open", None)) or not callable(getattr(store, "save", None)):
        raise TypeError(f"store must be a path or a Store, got {store!r}")
    store.open()
    return store


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
    "open_store",
]
