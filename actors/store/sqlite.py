"""``SQLiteStore``: the ``Store`` protocol on one SQLite file; ``SQLiteReader`` to inspect one.

One scheduler per file, held by an ``flock`` on ``<file>.lock`` (see ``lockfile``). Each
thread that calls the store gets its own connection (see ``sqlite_connections``); writes are
``BEGIN IMMEDIATE`` transactions, queued first come, first served on a Python lock.

Durability: the file is in WAL mode with ``synchronous=NORMAL`` by default. A commit is
then a write into the log with no fsync: it survives the process being killed (the data is
in the OS's page cache), but the last commits before a power loss or an OS crash may be
lost; the file stays consistent either way. ``synchronous="FULL"`` fsyncs every commit, which
survives power loss and costs a disk flush (milliseconds on most disks) per commit.

Bounds: the run ledger keeps the newest ``run_history`` rows and the table the newest
``task_history`` terminal tasks. Pruning runs inside a ``save`` once the excess exceeds a
tenth of the bound (and at ``open``), so between prunes up to ``bound + bound // 10 + one
batch`` rows are on disk; each prune is one indexed range delete.

Checkpoints (copying the log back into the file) run on a thread of the store's own, every
``_CHECKPOINT_ROWS`` rows written, not inside a caller's commit (see ``sqlite_checkpoint``;
what that changed is measured in docs/performance.md, "The SQLite store's tail").
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Final, Literal, Self, TypeVar

from actors.errors import DuplicateTaskError, StoreError
from actors.store import sqlite_after
from actors.store.fair_lock import FairLock
from actors.store.lockfile import LockFile, lock_path_of
from actors.store.protocol import (
    LIVE_STATUS,
    IfExists,
    LedgerRow,
    Store,
    StoredTask,
    StoreReader,
    TaskDefinition,
    TaskUpdate,
    Waiting,
    check_batch,
    check_definitions,
    check_if_exists,
)
from actors.store.sqlite_checkpoint import Checkpointer
from actors.store.sqlite_connections import ThreadConnections
from actors.store.sqlite_reader import SQLiteReader, SQLiteReads, check_sqlite_version, connect_read_only
from actors.store.sqlite_rows import (
    TASK_COLUMNS,
    get_task,
    task_from_row,
)
from actors.store.sqlite_schema import prepare, read_version

__all__ = ["SQLiteReader", "SQLiteStore"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_SYNCHRONOUS: Final = frozenset({"NORMAL", "FULL"})
# Rows written between checkpoint requests: an add writes ~4 pages, so 256 adds fill about
# the 1,000 pages at which SQLite itself would checkpoint; a 64+64 save writes ~100.
_CHECKPOINT_ROWS: Final = 256
_BACKSTOP_PAGES: Final = 10_000  # SQLite's own checkpoint, should the checkpoint thread lag
_SQLITE_PAGES: Final = 1_000  # SQLite's default threshold, without the thread

_INSERT_TASK: Final = """
    INSERT INTO task (task_id, fn_ref, args_json, kwargs_json, trigger_json, options_json,
                      status, next_due, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, 'scheduled', ?, ?)
    ON CONFLICT (task_id) DO NOTHING
    RETURNING seq"""
_REPLACE_TASK: Final = f"""
    UPDATE task SET fn_ref = ?, args_json = ?, kwargs_json = ?, trigger_json = ?,
                    options_json = ?, next_due = ?, updated_at = ?
     WHERE seq = ?
    RETURNING {TASK_COLUMNS}"""
# add_many: no RETURNING (executemany cannot return rows); a taken id writes nothing, which
# the row count shows.
_INSERT_TASKS: Final = """
    INSERT INTO task (task_id, fn_ref, args_json, kwargs_json, trigger_json, options_json,
                      status, next_due, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, 'scheduled', ?, ?)
    ON CONFLICT (task_id) DO NOTHING"""
_LAST_SEQ: Final = "SELECT coalesce(max(seq), 0) FROM task"
_SEQS_AFTER: Final = "SELECT seq FROM task WHERE seq > ? ORDER BY seq"
_DELETE_TASK: Final = "DELETE FROM task WHERE seq = ?"
_CANCEL_TASK: Final = """
    UPDATE task SET status = 'cancelled', next_due = NULL, updated_at = ?
     WHERE task_id = ? AND status = 'scheduled'
    RETURNING seq"""
# In SET, "status" is the row's status before this update: a terminal row keeps its status
# (no update undoes a committed cancel) and takes the counters.
_UPDATE_TASK: Final = """
    UPDATE task SET status = iif(status = 'scheduled', ?1, status),
                    next_due = iif(status = 'scheduled', ?2, NULL),
                    run_count = ?3, failure_count = ?4, consecutive_failures = ?5,
                    last_error = ?6, last_outcome = ?7, updated_at = ?8,
                    paused = coalesce(?11, paused),
                    trigger_json = iif(status = 'scheduled', coalesce(?12, trigger_json), trigger_json)
     WHERE seq = ?9 AND task_id = ?10"""
_INSERT_RUN: Final = """
    INSERT INTO run (task_id, task_seq, run, due, started, finished, outcome, error,
                     attempt, reason, node, manual, value_json, value_note)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (task_seq, run) DO NOTHING"""
_RESERVE_MINTED: Final = """
    UPDATE store_meta SET minted_high_water = minted_high_water + ? WHERE id = 1
    RETURNING minted_high_water"""
# Ledger ids are the rowid, allocated max + 1 and never deleted from the top, so the newest
# N rows are those above max - N.
_PRUNE_RUNS: Final = "DELETE FROM run WHERE id <= (SELECT max(id) FROM run) - ?"
_PRUNE_TASKS: Final = """
    DELETE FROM task WHERE seq IN (
        SELECT seq FROM task WHERE status <> 'scheduled'
         ORDER BY updated_at DESC, seq DESC LIMIT -1 OFFSET ?)"""


def _slack(bound: int) -> int:
    return max(1, bound // 10)


def _check_bound(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return value


class SQLiteStore(SQLiteReads):
    """The ``Store`` protocol on one SQLite file: the durable tasks of one scheduler.

    Threads: ``open`` and ``close`` from the thread that owns the store (``close`` may also
    come from any other, and more than once); every other method from any thread,
    concurrently: each thread uses its own connection, and writes queue on one lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        run_history: int = 10_000,
        task_history: int = 10_000,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        busy_timeout: float = 5.0,
        checkpoint_thread: bool = True,
    ) -> None:
        """Configure a store on ``path``; nothing is opened until ``open``.

        Args:
            path: The database file; created by ``open`` if missing.
            run_history: How many ledger rows to keep (the newest).
            task_history: How many terminal task rows to keep (the most recently ended).
            synchronous: ``"NORMAL"`` (survives a process crash) or ``"FULL"`` (survives
                power loss too, slower); see the module's docstring.
            busy_timeout: Seconds to wait for another connection's write lock (another
                process writing, such as the ``sqlite3`` shell) before failing.
            checkpoint_thread: Copy the log into the file on a thread of the store's own
                (one more thread; the slowest adds are faster). ``False``: SQLite does it
                inside the commit that fills 1,000 pages of log, on the caller's thread.

        Raises:
            ValueError: A bound is negative, or ``synchronous`` is neither value.
        """
        self._location = os.fspath(path)
        self._path = os.path.realpath(self._location)  # one lock file, however it is spelt
        self._run_history = _check_bound("run_history", run_history)
        self._task_history = _check_bound("task_history", task_history)
        if synchronous not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self._synchronous = synchronous
        if not busy_timeout >= 0:
            raise ValueError(f"busy_timeout must be >= 0 seconds, got {busy_timeout!r}")
        self._busy_timeout = float(busy_timeout)
        # SQLite's own checkpoint stays on as a backstop when the thread does the work.
        self._autocheckpoint_pages = _BACKSTOP_PAGES if checkpoint_thread else _SQLITE_PAGES
        self._checkpoint_thread = checkpoint_thread
        # Guards the open/closed state: _connections and _lock_file change together.
        self._state_lock = threading.Lock()
        self._connections: ThreadConnections | None = None
        self._lock_file: LockFile | None = None
        self._checkpointer: Checkpointer | None = None
        # Guards the database's write lock among this store's threads: they queue here, in
        # arrival order (see fair_lock), and are woken at once, instead of in SQLite's busy
        # handler, which sleeps and polls. Also guards the counters below, which only write
        # transactions touch.
        self._write_lock = FairLock()
        self._runs_since_prune = 0
        self._terminal_since_prune = 0
        self._rows_since_checkpoint = 0

    @property
    def location(self) -> str:
        """The file's path, as given."""
        return self._location

    @staticmethod
    def inspect(path: str | os.PathLike[str]) -> SQLiteReader:
        """Open ``path`` read-only, without its lock: for a ``status`` command.

        Works while a scheduler holds the store, and writes nothing. See ``SQLiteReader``.
        """
        return SQLiteReader(path)

    # -- opening and closing ---------------------------------------------------------------

    def open(self) -> None:
        """Take the file's lock, then create, check or migrate the file.

        The file is judged through a read-only connection first, so a file that is not a
        store of ours (or is damaged, or newer) is refused before anything is written,
        the lock file included.

        Raises:
            StoreLockedError: Another store holds the file (in this process or another).
            StoreError: The file cannot be used, or this store is open already.
        """
        with self._state_lock:
            if self._connections is not None:
                raise StoreError(f"{self._location}: this store is open already")
            check_sqlite_version(self._location)
            if os.path.lexists(self._path):
                reader = connect_read_only(self._path, self._location, self._busy_timeout)
                try:
                    read_version(reader, self._location)
                finally:
                    reader.close()
            lock = LockFile(lock_path_of(self._path))
            lock.acquire(self._location)
            connections = ThreadConnections(self._connect, self._location)
            try:
                slot = connections.get()
                with slot.lock:
                    assert slot.db is not None  # only close_all clears it, and nobody has it yet
                    try:
                        prepare(slot.db, self._location)
                    except sqlite3.Error as error:
                        raise StoreError(f"{self._location} cannot be prepared: {error}") from error
                self._connections, self._lock_file = connections, lock
                self._write("prune", lambda db: self._prune(db, force=True))
                if self._checkpoint_thread:
                    self._checkpointer = Checkpointer(self._connect, self._location)
                    self._checkpointer.start()
            except BaseException:
                if self._checkpointer is not None:
                    self._checkpointer.stop()
                self._connections = self._lock_file = self._checkpointer = None
                connections.close_all()
                lock.release()
                raise
            _OPEN_STORES.add(self)
        logger.info("opened task store %s", self._location)

    def close(self) -> None:
        """Close every thread's connection (after its call in progress), then unlock.

        Idempotent. Calls made after ``close`` raise ``StoreError``.
        """
        with self._state_lock:
            connections, lock, checkpointer = self._connections, self._lock_file, self._checkpointer
            if connections is None:
                return
            self._connections = self._lock_file = self._checkpointer = None
            if checkpointer is not None:
                checkpointer.stop()
            # Connections before the lock: the last one to close checkpoints the log into the
            # file, and no write may happen once another scheduler can take the lock.
            connections.close_all()
            if lock is not None:
                lock.release()
            _OPEN_STORES.discard(self)
        logger.info("closed task store %s", self._location)

    def __enter__(self) -> Self:
        """Open the store (see ``open``) and return it."""
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        self.close()

    def _connect(self) -> sqlite3.Connection:
        # check_same_thread=False only so that close() can close every thread's connection;
        # each is used by its own thread alone (see sqlite_connections).
        db = sqlite3.connect(
            self._path,
            timeout=self._busy_timeout,
            isolation_level=None,  # autocommit: transactions are the explicit BEGIN/COMMIT
            check_same_thread=False,
        )
        try:  # checked values: PRAGMA takes no parameters
            db.execute(f"PRAGMA synchronous = {self._synchronous}")
            db.execute(f"PRAGMA wal_autocheckpoint = {self._autocheckpoint_pages:d}")
        except BaseException:
            db.close()
            raise
        return db

    def _abandon_in_child(self) -> None:
        # A forked child must not touch the parent's connections; lockfile closes its fd.
        self._state_lock = threading.Lock()
        self._write_lock = FairLock()
        if self._connections is not None:
            self._connections.abandon()
        self._connections = self._lock_file = self._checkpointer = None  # no thread survives a fork

    # -- running a call on this thread's connection ------------------------------------------

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, held for one call (``StoreError`` if the store is not open)."""
        connections = self._connections
        if connections is None:
            raise StoreError(f"{self._location}: the store is not open")
        slot = connections.get()
        with slot.lock:
            db = slot.db
            if db is None:
                raise StoreError(f"{self._location}: the store is closed")
            yield db

    def _read(self, op: str, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._connection() as db:
            try:
                return work(db)
            except sqlite3.Error as error:
                raise StoreError(f"{self._location}: {op} failed: {error}") from error

    def _write(self, op: str, work: Callable[[sqlite3.Connection], T], rows: int = 1) -> T:
        with self._connection() as db, self._write_lock:
            try:
                db.execute("BEGIN IMMEDIATE")
                result = work(db)
                db.execute("COMMIT")
                self._after_commit(rows)
            except sqlite3.Error as error:
                self._rollback(db)
                raise StoreError(f"{self._location}: {op} failed: {error}") from error
            except BaseException:  # DuplicateTaskError, KeyboardInterrupt: nothing is kept
                self._rollback(db)
                raise
            return result

    def _after_commit(self, rows: int) -> None:
        # Under _write_lock. Asking costs a Condition round trip, so ask every so often.
        self._rows_since_checkpoint += rows
        if self._rows_since_checkpoint >= _CHECKPOINT_ROWS:
            self._rows_since_checkpoint = 0
            checkpointer = self._checkpointer
            if checkpointer is not None:
                checkpointer.request()

    def _rollback(self, db: sqlite3.Connection) -> None:
        if db.in_transaction:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:  # the connection is broken; the transaction dies with it
                logger.warning("%s: rollback failed", self._location, exc_info=True)

    def _prune(self, db: sqlite3.Connection, *, force: bool) -> None:
        # Called inside a write transaction (under _write_lock).
        if force or self._runs_since_prune > _slack(self._run_history):
            db.execute(_PRUNE_RUNS, (self._run_history,))
            self._runs_since_prune = 0
        if force or self._terminal_since_prune > _slack(self._task_history):
            db.execute(_PRUNE_TASKS, (self._task_history,))
            self._terminal_since_prune = 0

    # -- the Store protocol -------------------------------------------------------------------

    def add(self, task: TaskDefinition, if_exists: IfExists = "error") -> tuple[StoredTask, bool]:
        """Store a task, committed before it returns; see ``Store.add``. Any thread."""
        if not isinstance(task, TaskDefinition):
            raise TypeError(f"task must be a TaskDefinition, got {task!r}")
        check_if_exists(if_exists)

        def work(db: sqlite3.Connection) -> tuple[StoredTask, bool]:
            now = time.time()
            fields = (
                task.task_id,
                task.fn_ref,
                task.args_json,
                task.kwargs_json,
                task.trigger_json,
                task.options_json,
                task.next_due,
                now,
            )
            inserted = db.execute(_INSERT_TASK, fields).fetchone()
            if inserted is None:  # the id is taken
                stored = get_task(db, task.task_id)
                if stored is not None and stored.live:
                    if if_exists == "keep":
                        return stored, False
                    if if_exists == "error":
                        raise DuplicateTaskError(f"a live task already has the id {task.task_id!r}")
                    row = db.execute(_REPLACE_TASK, (*fields[1:], stored.seq)).fetchone()
                    sqlite_after.write(db, stored.seq, task.after, now)
                    return task_from_row(row), True
                if stored is not None:  # terminal: a new task with an old id starts afresh
                    db.execute(_DELETE_TASK, (stored.seq,))
                inserted = db.execute(_INSERT_TASK, fields).fetchone()
            if task.after:
                sqlite_after.write(db, inserted[0], task.after, now)
            counters = (0, 0, 0, None, None)  # run, failure, consecutive counts; last error, outcome
            row = (task.task_id, inserted[0], *fields[1:6], LIVE_STATUS, task.next_due, *counters, now)
            return task_from_row(row), True

        return self._write("add", work)

    def add_many(self, tasks: Sequence[TaskDefinition]) -> list[int]:
        """Store new tasks in one transaction (one ``executemany``); see ``Store.add_many``. Any thread."""
        check_definitions(tasks)
        if not tasks:
            return []

        def work(db: sqlite3.Connection) -> list[int]:
            now = time.time()
            # Under BEGIN IMMEDIATE no one else inserts, and AUTOINCREMENT hands out seqs above
            # every stored one, in insertion order: the rows above the last seq are these.
            last: int = db.execute(_LAST_SEQ).fetchone()[0]
            written = db.executemany(
                _INSERT_TASKS,
                [
                    (
                        t.task_id,
                        t.fn_ref,
                        t.args_json,
                        t.kwargs_json,
                        t.trigger_json,
                        t.options_json,
                        t.next_due,
                        now,
                    )
                    for t in tasks
                ],
            ).rowcount
            if written != len(tasks):  # rolled back by _write: nothing is kept
                raise DuplicateTaskError(
                    f"{len(tasks) - written} of the {len(tasks)} task ids are stored already, or given twice"
                )
            return [seq for (seq,) in db.execute(_SEQS_AFTER, (last,))]

        return self._write("add_many", work, rows=len(tasks))

    def cancel(self, task_id: str) -> bool:
        """Mark a live task cancelled, committed before it returns; see ``Store.cancel``. Any thread."""

        def work(db: sqlite3.Connection) -> bool:
            now = time.time()
            seq = db.execute(_CANCEL_TASK, (now, task_id)).fetchone()
            if seq is None:
                return False
            sqlite_after.cancel_down(db, seq, now)  # what waits for it ends too (sqlite_after)
            self._terminal_since_prune += 1
            return True

        return self._write("cancel", work)

    def save(self, updates: Sequence[TaskUpdate] = (), runs: Sequence[LedgerRow] = ()) -> int:
        """Apply updates and append ledger rows in one transaction; see ``Store.save``.

        Any thread (meant for the scheduler's). Prunes the ledger and the terminal rows in
        the same transaction when they have grown past their bound by a tenth.
        """
        check_batch(updates, runs)
        if not updates and not runs:
            return 0

        def work(db: sqlite3.Connection) -> int:
            now = time.time()
            if updates:
                db.executemany(
                    _UPDATE_TASK,
                    [
                        (
                            u.status,
                            u.next_due,
                            u.run_count,
                            u.failure_count,
                            u.consecutive_failures,
                            u.last_error,
                            u.last_outcome,
                            now,
                            u.seq,
                            u.task_id,
                            None if u.paused is None else int(u.paused),
                            u.trigger_json,
                        )
                        for u in updates
                    ],
                )
                # Counts updates that end a task; one that finds its row terminal already is
                # counted too, which only makes a prune come a little early.
                self._terminal_since_prune += sum(u.status != LIVE_STATUS for u in updates)
                # schedule_after's edges, in the outcome's transaction (sqlite_after says how).
                sqlite_after.settle(
                    db,
                    [u.seq for u in updates if u.status == "completed"],
                    [u.seq for u in updates if u.status != LIVE_STATUS],
                    now,
                )
            new = 0
            if runs:
                new = db.executemany(
                    _INSERT_RUN,
                    [
                        (
                            r.task_id,
                            r.task_seq,
                            r.run,
                            r.due,
                            r.started,
                            r.finished,
                            r.outcome,
                            r.error,
                            r.attempt,
                            r.reason,
                            r.node,
                            r.manual,
                            r.value_json,
                            r.value_note,
                        )
                        for r in runs
                    ],
                ).rowcount  # executemany sums the rows each insert wrote: 0 for a duplicate
                self._runs_since_prune += new
            self._prune(db, force=False)
            return new

        return self._write("save", work, rows=len(updates) + len(runs))

    def waiting(self) -> list[Waiting]:
        """Return the edges of ``schedule_after`` not met yet; see ``KeepsDependencies``. Any thread."""
        return self._read("waiting", sqlite_after.waiting)

    def reserve_minted(self, count: int) -> range:
        """Reserve ``count`` numbers for minted ids; see ``Store.reserve_minted``. Any thread."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be an int >= 1, got {count!r}")

        def work(db: sqlite3.Connection) -> range:
            high: int = db.execute(_RESERVE_MINTED, (count,)).fetchone()[0]
            return range(high - count + 1, high + 1)

        return self._write("reserve_minted", work)


if TYPE_CHECKING:  # mypy checks here that the classes implement the protocols
    _STORE: type[Store] = SQLiteStore
    _READER: type[StoreReader] = SQLiteReader

# Open stores, so that a forked child drops its copies of their connections.
_OPEN_STORES: Final[weakref.WeakSet[SQLiteStore]] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for store in list(_OPEN_STORES):
        store._abandon_in_child()
    _OPEN_STORES.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
