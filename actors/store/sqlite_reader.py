"""``SQLiteReader``: a read-only view of a store file, for a ``status`` command.

It takes no lock and cannot write, so it works beside a live scheduler; WAL readers see what
was committed when each query started. Also the read-only opening that ``SQLiteStore.open``
judges a file through before it writes anything.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Final, Self, TypeVar

from actors.errors import StoreError
from actors.store.protocol import LedgerRow, StoredTask
from actors.store.sqlite_rows import get_task, read_high_water, read_live_parts, read_runs, read_tasks
from actors.store.sqlite_schema import SCHEMA_VERSION, read_version

__all__ = ["MIN_SQLITE", "SQLiteReader", "check_sqlite_version", "connect_read_only"]

T = TypeVar("T")

MIN_SQLITE: Final = (3, 35, 0)  # INSERT ... RETURNING


def check_sqlite_version(location: str) -> None:
    """Raise ``StoreError`` if the linked SQLite library is older than ``MIN_SQLITE``."""
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise StoreError(
            f"{location}: SQLite {sqlite3.sqlite_version} is too old for the task store "
            f"(it needs {'.'.join(map(str, MIN_SQLITE))} or newer)"
        )


def connect_read_only(path: str, location: str, timeout: float) -> sqlite3.Connection:
    """Open ``path`` read-only (any thread; the connection is bound to it).

    Raises:
        StoreError: The file cannot be opened; the message names ``location``.
    """
    # mode=ro: SQLite opens the file O_RDONLY and refuses every write, so judging a file, or
    # inspecting one, can never change it. (On a WAL-mode file SQLite may create the empty
    # -wal and -shm sidecars it reads through; the database file itself is untouched.)
    uri = Path(path).as_uri() + "?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    except sqlite3.Error as error:
        raise StoreError(f"{location} cannot be opened: {error}") from error


class SQLiteReads:
    """The reads of a store file, for any class that runs a read on a connection (``_read``).

    Shared by the store and the reader: each call runs on the connection ``_read`` gives it,
    on the caller's thread, and sees what was committed when it started.
    """

    __slots__ = ()

    def _read(self, op: str, work: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError

    def get(self, task_id: str) -> StoredTask | None:
        """Return the row of ``task_id`` (live or terminal), or ``None``."""
        return self._read("get", lambda db: get_task(db, task_id))

    def load(self) -> list[StoredTask]:
        """Return every live task, in ``seq`` order (a scheduler's, at start)."""
        tasks: list[StoredTask] = []
        self.load_parts(tasks.extend)
        return tasks

    def load_parts(self, take: Callable[[list[StoredTask]], object]) -> None:
        """Hand every live task to ``take``, in ``seq`` order, a part at a time (``LoadsInParts``)."""
        self._read("load", lambda db: read_live_parts(db, take))

    def tasks(self, *, include_terminal: bool = True) -> list[StoredTask]:
        """Return the stored tasks in ``seq`` order, with the kept terminal ones by default."""
        return self._read("tasks", lambda db: read_tasks(db, include_terminal=include_terminal))

    def runs(self, task_id: str | None = None, *, limit: int = 100) -> list[LedgerRow]:
        """Return up to ``limit`` ledger rows, newest first."""
        return self._read("runs", lambda db: read_runs(db, task_id, limit))

    def minted_high_water(self) -> int:
        """Return the highest number reserved for minted ids."""
        return self._read("minted_high_water", read_high_water)

    def paused_ids(self) -> frozenset[str]:
        """Return the ids of the live tasks stored as paused (``KeepsPaused``)."""
        return self._read("paused_ids", _read_paused)


class SQLiteReader(SQLiteReads):
    """A read-only view of a store file, for a ``status`` command: the ``StoreReader`` protocol.

    It takes no lock and cannot write (the file is opened read-only), so it works while a
    scheduler holds the store; each call sees what was committed when it started. It reads
    only files of the current schema version: an older file must be opened by a scheduler
    once, to be migrated. Use it from the thread that made it.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        """Open ``path`` read-only and check that it is a current store.

        Raises:
            StoreError: There is no such file, or it cannot be read as a current store.
        """
        self._location = os.fspath(path)
        check_sqlite_version(self._location)
        path = os.path.realpath(self._location)
        if not os.path.lexists(path):
            raise StoreError(f"{self._location}: no such store file")
        db = connect_read_only(path, self._location, busy_timeout)
        try:
            version = read_version(db, self._location)
            if version != SCHEMA_VERSION:
                what = "is empty" if version == 0 else f"has schema version {version}"
                raise StoreError(
                    f"{self._location} {what}, not a current store (version {SCHEMA_VERSION}); "
                    "open it with a scheduler once to create or migrate it"
                )
        except BaseException:
            db.close()
            raise
        self._db: sqlite3.Connection | None = db

    @property
    def location(self) -> str:
        """The file's path, as given."""
        return self._location

    def _read(self, op: str, work: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db
        if db is None:
            raise StoreError(f"{self._location}: the reader is closed")
        try:
            return work(db)
        except sqlite3.Error as error:
            raise StoreError(f"{self._location}: {op} failed: {error}") from error

    def close(self) -> None:
        """Close the connection. Idempotent."""
        db, self._db = self._db, None
        if db is not None:
            db.close()

    def __enter__(self) -> Self:
        """Return the reader (it is open from construction)."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the reader."""
        self.close()


_PAUSED_IDS = "SELECT task_id FROM task WHERE paused = 1 AND status = 'scheduled'"


def _read_paused(db: sqlite3.Connection) -> frozenset[str]:
    return frozenset(task_id for (task_id,) in db.execute(_PAUSED_IDS))
