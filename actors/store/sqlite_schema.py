"""The SQLite store's file format: how a file is recognised, created and migrated.

A store file is marked as ours by ``PRAGMA application_id`` and carries its schema version in
``PRAGMA user_version``. ``read_version`` judges a file through a read-only connection before
anything may write to it; ``prepare`` then creates or migrates it (under the store's lock).

Layouts:
    v1: ``task`` and ``run`` (the first layout).
    v2: adds ``store_meta`` with the minted-id high-water mark, so minted ids never collide
        with stored ones; migrated from v1 by taking the highest ``task-<n>`` stored.
    v3: adds ``task.paused`` (``Scheduler.pause``: a paused task stays paused after a restart);
        migrated from v2 with every task not paused.
    v4: adds ``task_after``, the edges of a durable ``schedule_after`` not met yet.
    v5: the ``run`` ledger also keeps each run's ``attempt``, ``reason`` (why it was missed),
        ``node``, ``manual`` and, for ``keep_result``, ``value_json`` or ``value_note`` (why
        the value was not kept); old rows read the defaults (attempt 1, not manual).

To change the layout: bump ``SCHEMA_VERSION``, edit ``_CREATE`` to the new layout (fresh
files are created directly at the newest version), and append a step to ``MIGRATIONS``
that brings a file of the previous version to the same result. A test checks that a file
migrated from v1 has the very schema of a fresh one.

Threads: these functions use the connection they are given, on the caller's thread.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from actors.errors import StoreError

logger = logging.getLogger(__name__)

APPLICATION_ID: Final = 0x504B5453  # "PKTS": pykka-taskscheduler
SCHEMA_VERSION: Final = 5
TABLES: Final = frozenset({"task", "run", "store_meta", "task_after"})  # what a current file must have

# The newest layout. Terminal rows are pruned newest-kept by ``updated_at``: the partial
# index holds only them, so pruning walks the few thousand terminal rows, never the live
# million. AUTOINCREMENT guarantees a deleted row's seq is never handed out again.
_CREATE: Final = (
    """CREATE TABLE task (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL UNIQUE,
        fn_ref TEXT NOT NULL,
        args_json TEXT NOT NULL,
        kwargs_json TEXT NOT NULL,
        trigger_json TEXT NOT NULL,
        options_json TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('scheduled', 'completed', 'failed', 'cancelled')),
        next_due REAL CHECK (next_due IS NULL OR status = 'scheduled'),
        run_count INTEGER NOT NULL DEFAULT 0,
        failure_count INTEGER NOT NULL DEFAULT 0,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        last_outcome TEXT,
        updated_at REAL NOT NULL
    , paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)))""",  # as v2 -> v3's ALTER leaves it
    "CREATE INDEX task_terminal ON task (updated_at, seq) WHERE status <> 'scheduled'",
    """CREATE TABLE run (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        task_seq INTEGER NOT NULL,
        run INTEGER NOT NULL,
        due REAL NOT NULL,
        started REAL,
        finished REAL NOT NULL,
        outcome TEXT NOT NULL,
        error TEXT,
        attempt INTEGER NOT NULL DEFAULT 1,
        reason TEXT,
        node TEXT,
        manual INTEGER NOT NULL DEFAULT 0,
        value_json TEXT,
        value_note TEXT,
        UNIQUE (task_seq, run)
    )""",
    "CREATE INDEX run_by_task ON run (task_id, id)",
    """CREATE TABLE store_meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        minted_high_water INTEGER NOT NULL CHECK (minted_high_water >= 0)
    )""",
    "INSERT INTO store_meta (id, minted_high_water) VALUES (1, 0)",
    # One row per dependency a waiting task still waits for (actors/store/sqlite_after.py).
    # Keyed by the dependency first: a completion looks up its waiters.
    """CREATE TABLE task_after (
        dependency_seq INTEGER NOT NULL,
        waiter_seq INTEGER NOT NULL,
        dependency_id TEXT NOT NULL,
        delay REAL NOT NULL,
        PRIMARY KEY (dependency_seq, waiter_seq)
    ) WITHOUT ROWID""",
    "CREATE INDEX task_after_waiter ON task_after (waiter_seq)",
)


def _v1_to_v2(db: sqlite3.Connection) -> None:
    db.execute(_CREATE[4])  # store_meta, as a fresh file has it
    # Minted ids are "task-<digits>" (the facade refuses that form for given ids), so the
    # highest such number in either table is the floor for new minted ids.
    db.execute(
        """INSERT INTO store_meta (id, minted_high_water)
           SELECT 1, coalesce(max(CAST(substr(task_id, 6) AS INTEGER)), 0) FROM (
               SELECT task_id FROM task UNION ALL SELECT task_id FROM run)
            WHERE task_id GLOB 'task-[0-9]*' AND substr(task_id, 6) NOT GLOB '*[^0-9]*'"""
    )


_PAUSED_COLUMN: Final = "paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1))"


def _v2_to_v3(db: sqlite3.Connection) -> None:
    db.execute(f"ALTER TABLE task ADD COLUMN {_PAUSED_COLUMN}")


# The ledger's columns for history and kept results (v5), as ``_CREATE`` has them.
LEDGER_COLUMNS_V5: Final = (
    "attempt INTEGER NOT NULL DEFAULT 1",
    "reason TEXT",
    "node TEXT",
    "manual INTEGER NOT NULL DEFAULT 0",
    "value_json TEXT",
    "value_note TEXT",
)


def _v4_to_v5(db: sqlite3.Connection) -> None:
    # ADD COLUMN with a constant default rewrites nothing: old rows read the defaults.
    for column in LEDGER_COLUMNS_V5:
        db.execute(f"ALTER TABLE run ADD COLUMN {column}")


@dataclass(frozen=True, slots=True)
class Migration:
    """One step: brings a file at ``from_version`` to ``from_version + 1``.

    Attributes:
        from_version: The version the step starts from.
        summary: What changes, for the log.
        apply: Runs the step's statements inside the caller's transaction.
    """

    from_version: int
    summary: str
    apply: Callable[[sqlite3.Connection], None]


def _v3_to_v4(db: sqlite3.Connection) -> None:
    db.execute(_CREATE[6])  # task_after and its index, as a fresh file has them
    db.execute(_CREATE[7])


MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(1, "add store_meta with the minted-id high-water mark", _v1_to_v2),
    Migration(2, "add task.paused, the flag of a paused task", _v2_to_v3),
    Migration(3, "add task_after, the edges of schedule_after", _v3_to_v4),
    Migration(4, "add the run ledger's attempt, reason, node, manual and kept value", _v4_to_v5),
)
# Step i starts from version i + 1, and the last one reaches SCHEMA_VERSION.
assert [m.from_version for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION))


def read_version(db: sqlite3.Connection, location: str) -> int:
    """Judge the file behind ``db`` without writing; return its schema version.

    Returns:
        0 for an empty file (new, or zero bytes), else its schema version, which is at most
        ``SCHEMA_VERSION``.

    Raises:
        StoreError: The file is not an SQLite database, not a store of ours, damaged, or of a
            newer schema version; the message names it and says why.
    """
    try:
        application_id: int = db.execute("PRAGMA application_id").fetchone()[0]
        version: int = db.execute("PRAGMA user_version").fetchone()[0]
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    except sqlite3.DatabaseError as error:  # SQLITE_NOTADB: "file is not a database", and kin
        raise StoreError(f"{location} cannot be used as a task store: {error}") from error
    names.discard("sqlite_sequence")  # SQLite's own (AUTOINCREMENT)
    if application_id != APPLICATION_ID:
        if application_id == 0 and version == 0 and not names:
            return 0
        tables = ", ".join(sorted(names)) or "none"
        raise StoreError(
            f"{location} is an SQLite database but not a pykka-taskscheduler store "
            f"(application_id {application_id:#x}, tables: {tables})"
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{location} has store schema version {version}, newer than this version of "
            f"pykka-taskscheduler understands ({SCHEMA_VERSION}); upgrade pykka-taskscheduler"
        )
    expected = {"task", "run"} if version == 1 else {"task", "run", "store_meta"} if version == 2 else TABLES
    if version < 1 or not expected <= names:
        missing = ", ".join(sorted(expected - names)) or "none"
        raise StoreError(
            f"{location} is a damaged pykka-taskscheduler store "
            f"(schema version {version}, missing tables: {missing})"
        )
    return version


def prepare(db: sqlite3.Connection, location: str) -> None:
    """Create the schema in an empty file, or migrate an older one; leave a current one be.

    Call under the store's lock, on a read-write connection in autocommit mode. Creation,
    and all migration steps together, are one transaction each: a crash leaves the file as
    it was before. Switches the file to WAL mode (a persistent property of the file).

    Raises:
        StoreError: as ``read_version``.
        sqlite3.Error: the file could not be written.
    """
    version = read_version(db, location)
    if version == SCHEMA_VERSION:
        db.execute("PRAGMA journal_mode = WAL")
        return
    # journal_mode cannot change inside a transaction; on an empty file it writes only the
    # header, and it is the mode the file must have anyway.
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("BEGIN IMMEDIATE")
    try:
        version = read_version(db, location)  # now under the write lock
        if version == 0:
            for statement in _CREATE:
                db.execute(statement)
            db.execute(f"PRAGMA application_id = {APPLICATION_ID:d}")  # PRAGMA takes no parameters
            logger.info("created task store %s (schema version %d)", location, SCHEMA_VERSION)
        else:
            for step in MIGRATIONS[version - 1 :]:
                step.apply(db)
                logger.info(
                    "migrating task store %s from schema version %d: %s",
                    location,
                    step.from_version,
                    step.summary,
                )
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
