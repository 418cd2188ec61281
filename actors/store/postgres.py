"""``PostgresStore``: the ``Store`` protocol on PostgreSQL, shared by many schedulers.

One store is one PostgreSQL schema (see ``postgres_schema``). Unlike the SQLite store, any
number of schedulers, on any number of machines, may open the same store at once: each is a
*node* (``node``), and the ``SharedStore`` extension decides which node runs each due run:
a claim (one ``UPDATE ... FOR UPDATE SKIP LOCKED`` statement, on the database's clock) gives
the row to one node with a lease and a fence; the outcome is committed only under that fence.

Connections: a small pool (see ``postgres_connections``), each call one short transaction or
statement; ``renew`` has a connection of its own, and so does each ``listen`` thread.

Durability: a call returns after PostgreSQL committed its transaction, which with the
server's defaults (``synchronous_commit = on``) means flushed to the server's disk.

Bounds: as the SQLite store, the ledger keeps the newest ``run_history`` rows and the table
the newest ``task_history`` terminal tasks; a node prunes after a ``save`` once its own writes
have grown the excess past a tenth of the bound, and at ``open``, in a transaction of its own
(one node at a time), so a prune never delays or fails a caller's write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self, TypeVar

import psycopg

from actors.errors import StoreError
from actors.store import postgres_after
from actors.store import postgres_operations as ops
from actors.store import postgres_sql as q
from actors.store import postgres_writes as writes
from actors.store.postgres_connections import Bounds, Connection, OwnConnection, PostgresConnections, redact
from actors.store.postgres_listener import Listener
from actors.store.postgres_options import (
    NAME_BYTES,
    channel_of,
    check_at_least_one,
    check_count,
    check_leases,
    check_name,
    check_seconds,
    check_seqs,
    default_node,
    executor_names,
    importable_names,
    slack,
)
from actors.store.postgres_schema import APPLICATION, lock_key, prepare
from actors.store.protocol import (
    IfExists,
    Lease,
    LedgerRow,
    RunInFlight,
    SharedStore,
    StoredTask,
    TaskDefinition,
    TaskUpdate,
    Waiting,
    check_batch,
    check_definitions,
    check_if_exists,
)

__all__ = ["PostgresStore"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class PostgresStore:
    """The ``Store`` and ``SharedStore`` protocols on one PostgreSQL schema.

    Threads: ``open`` from the thread that owns the store, once; ``close`` from any thread,
    more than once; every other method from any thread, concurrently.
    """

    def __init__(
        self,
        dsn: str,
        *,
        node: str | None = None,
        lease: float = 30.0,
        poll: float = 5.0,
        schema: str | None = None,
        run_history: int = 10_000,
        task_history: int = 10_000,
        timeout: float = 10.0,
        lock_timeout: float = 5.0,
        statement_timeout: float = 15.0,
        max_lost_runs: int = 3,
    ) -> None:
        """Configure a store; nothing is connected until ``open``.

        Args:
            dsn: A libpq connection string, URL or ``key=value`` form.
            node: This scheduler's name among the nodes sharing the store (default:
                ``"<hostname>:<pid>:<random>"``, unique per store object).
            lease: How long a claim or a renewal holds a row, in seconds.
            poll: How often a node should look for due rows without a hint, in seconds;
                also how often a quiet listener checks its connection.
            schema: The schema the store lives in, created if missing (default: the
                connection's current schema, normally ``public``).
            run_history: How many ledger rows to keep (the newest).
            task_history: How many terminal task rows to keep (the most recently ended).
            timeout: How long a call waits for a pooled connection (for instance while the
                server restarts) before it fails, in seconds.
            lock_timeout: How long a statement waits for a lock another session holds (a
                ``LOCK TABLE``, a long transaction's row lock) before the call fails with
                ``StoreError``, in seconds (PostgreSQL's ``lock_timeout``, set on every session).
            statement_timeout: How long a statement may take in all, lock waits included,
                before the call fails with ``StoreError``, in seconds (``statement_timeout``).
            max_lost_runs: How many times in a row a run may be lost with its node (it started,
                then its node died or stalled past its lease, and another node took it again)
                before the node that takes it next fails it with ``RunLostError`` instead of
                running it: the poison-pill limit. An int >= 1.

        Raises:
            ValueError: An option is out of range, or ``dsn`` is not a connection string.
        """
        if not isinstance(dsn, str):
            raise TypeError(f"dsn must be a str, got {dsn!r}")
        self._dsn = dsn
        self._shown_dsn = redact(dsn)
        if node is None:
            node = default_node()
        self._node = check_name("node", node)
        self._lease = check_seconds("lease", lease)
        self._poll = check_seconds("poll", poll)
        self._given_schema = None if schema is None else check_name("schema", schema)
        self._schema = ""  # the schema in use: set by open
        self._run_history = check_count("run_history", run_history)
        self._task_history = check_count("task_history", task_history)
        self._timeout = check_seconds("timeout", timeout)
        self._bounds = Bounds(
            check_seconds("lock_timeout", lock_timeout), check_seconds("statement_timeout", statement_timeout)
        )
        self._max_lost_runs = check_at_least_one("max_lost_runs", max_lost_runs)
        self._location = f"{self._shown_dsn} (schema {self._given_schema or 'by default'})"
        self._channel = ""  # set by open, with the schema
        # Guards the open/closed state: _connections, _renewals and _listeners change together.
        self._state_lock = threading.Lock()
        self._connections: PostgresConnections | None = None
        self._listeners: set[Listener] = set()
        self._renewals: OwnConnection | None = None  # set and cleared with _connections
        # Guards the prune counters, which every thread's writes bump.
        self._counts_lock = threading.Lock()
        self._runs_since_prune = 0
        self._terminal_since_prune = 0

    @property
    def location(self) -> str:
        """The DSN without its password, and the schema."""
        return self._location

    @property
    def node(self) -> str:
        """This scheduler's name in the store: the owner of the leases it takes."""
        return self._node

    @property
    def lease(self) -> float:
        """How long a claim or a renewal holds a row, in seconds."""
        return self._lease

    @property
    def max_lost_runs(self) -> int:
        """How many losses of a run with its node make the next claim of it fail it (``RunLostError``)."""
        return self._max_lost_runs

    @property
    def poll(self) -> float:
        """How often a node should look for due rows without a hint, in seconds."""
        return self._poll

    # -- opening and closing ---------------------------------------------------------------

    def open(self) -> None:
        """Connect, then create, check or migrate the store's schema; other nodes may share it.

        Raises:
            StoreError: The server cannot be reached, the schema holds tables that are not a
                store of ours or a newer store, or this store is open already; nothing was
                written.
        """
        with self._state_lock:
            if self._connections is not None:
                raise StoreError(f"{self._location}: this store is open already")
            connections = PostgresConnections(
                self._dsn,
                location=self._location,
                application_name=f"{APPLICATION} {self._node}".encode()[:NAME_BYTES].decode(errors="ignore"),
                timeout=self._timeout,
                bounds=self._bounds,
            )
            try:
                db = connections.connect_raw()
            except psycopg.Error as error:
                raise StoreError(f"{self._location}: cannot connect: {error}") from error
            try:
                schema = self._given_schema or self._current_schema(db)
                self._location = connections.location = f"{self._shown_dsn} (schema {schema})"
                prepare(db, self._location, schema)
            except psycopg.Error as error:
                reason = self._bounds.explain(error)
                raise StoreError(f"{self._location} cannot be prepared: {reason}") from error
            finally:
                db.close()
            self._schema, self._channel = schema, channel_of(schema)
            connections.open(schema)
            self._connections = connections
            try:
                self._prune(force=True)
            except BaseException:
                self._connections = None
                connections.close()
                raise
            self._renewals = OwnConnection(connections, "renew")
        logger.info("opened task store %s as node %s", self._location, self._node)

    def _current_schema(self, db: Connection) -> str:
        row = db.execute("SELECT current_schema()").fetchone()
        if row is None or row[0] is None:
            raise StoreError(
                f"{self._location}: the connection has no current schema (search_path names "
                "none that exists); pass schema=..."
            )
        schema: str = row[0]
        return schema

    def close(self) -> None:
        """Stop the listeners, close the connections (after calls in progress). Idempotent.

        Calls made after ``close`` raise ``StoreError``.
        """
        with self._state_lock:
            connections, self._connections = self._connections, None
            renewals, self._renewals = self._renewals, None
            listeners, self._listeners = self._listeners, set()
        if connections is None:
            return
        if connections.forked:  # a forked child: the threads are gone, the sessions the parent's
            return
        for listener in listeners:
            listener.stop()
        if renewals is not None:
            renewals.close()
        connections.close()
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

    def _live(self) -> PostgresConnections:
        connections = self._connections
        if connections is None:
            raise StoreError(f"{self._location}: the store is not open")
        return connections

    def _read(self, op: str, work: Callable[[Connection], T], *, begin: str | None = None) -> T:
        return self._live().run(op, work, begin=begin)

    def _write(self, op: str, work: Callable[[Connection], T], *, pipelined: bool = False) -> T:
        return self._live().run(op, work, begin="BEGIN", repeatable=False, pipelined=pipelined)

    # -- pruning -------------------------------------------------------------------------------

    def _prune(self, *, force: bool) -> None:
        with self._counts_lock:
            runs = force or self._runs_since_prune > slack(self._run_history)
            tasks = force or self._terminal_since_prune > slack(self._task_history)
            if runs:
                self._runs_since_prune = 0
            if tasks:
                self._terminal_since_prune = 0
        if not runs and not tasks:
            return
        key = lock_key(self._schema, "prune")

        def work(db: Connection) -> None:
            locked = db.execute(q.TRY_LOCK, (key,)).fetchone()
            if locked is None or not locked[0]:
                return  # another node is pruning right now
            if runs:
                db.execute(q.PRUNE_RUNS, {"keep": self._run_history})
            if tasks:
                db.execute(q.PRUNE_TASKS, {"keep": self._task_history})

        self._live().run("prune", work, begin="BEGIN")

    def _prune_after_save(self) -> None:
        try:
            self._prune(force=False)
        except StoreError as error:  # the save is committed; the next one prunes instead
            logger.warning("%s", error)

    # -- the Store protocol -------------------------------------------------------------------

    def add(self, task: TaskDefinition, if_exists: IfExists = "error") -> tuple[StoredTask, bool]:
        """Store a task, committed before it returns; see ``Store.add``. Any thread."""
        if not isinstance(task, TaskDefinition):
            raise TypeError(f"task must be a TaskDefinition, got {task!r}")
        check_if_exists(if_exists)
        return self._write("add", lambda db: writes.add(db, task, if_exists, self._channel))

    def add_many(self, tasks: Sequence[TaskDefinition]) -> list[int]:
        """Store new tasks in one transaction (their rows by ``COPY``); see ``Store.add_many``.

        Any thread. Sends one hint for the whole batch: any node's claim finds them all.
        """
        check_definitions(tasks)
        if not tasks:
            return []
        return self._write("add_many", lambda db: writes.add_many(db, tasks, self._channel))

    def waiting(self) -> list[Waiting]:
        """Return the edges of ``schedule_after`` not met yet; see ``KeepsDependencies``. Any thread."""
        return self._read("waiting", postgres_after.waiting)

    def cancel(self, task_id: str, *, interrupt: bool = False) -> bool:
        """Mark a live task cancelled, committed before it returns; see ``SharedStore.cancel``. Any thread.

        A run in flight keeps its lease: its fenced outcome still lands (on the counters and
        the ledger; the row stays cancelled). A sealed run in flight refuses the cancel unless
        ``interrupt``.
        """
        interrupt = bool(interrupt)
        cancelled = self._write("cancel", lambda db: writes.cancel(db, task_id, self._channel, interrupt))
        if cancelled:
            with self._counts_lock:
                self._terminal_since_prune += 1
        return cancelled

    def save(self, updates: Sequence[TaskUpdate] = (), runs: Sequence[LedgerRow] = ()) -> int:
        """Apply updates and append ledger rows in one transaction; see ``Store.save``.

        Any thread (meant for the scheduler's). Fenced updates (``TaskUpdate.fence``) apply
        only while this node still holds the row with that fence; see ``SharedStore``.
        """
        check_batch(updates, runs)
        if not updates and not runs:
            return 0
        return self._save(updates, runs).new_runs

    def save_outcomes(
        self, updates: Sequence[TaskUpdate] = (), runs: Sequence[LedgerRow] = ()
    ) -> frozenset[int]:
        """``save``, returning the rows whose fenced updates were refused; see ``SharedStore``. Any thread."""
        check_batch(updates, runs)
        if not updates and not runs:
            self._live()
            return frozenset()
        return self._save(updates, runs).fenced_out

    def _save(self, updates: Sequence[TaskUpdate], runs: Sequence[LedgerRow]) -> writes.Saved:
        # Pipelined: BEGIN, the save and the look for waiters to release go out in one round trip.
        saved = self._write(
            "save", lambda db: writes.save(db, updates, runs, self._node, self._channel), pipelined=True
        )
        with self._counts_lock:
            self._runs_since_prune += saved.new_runs
            self._terminal_since_prune += saved.ended
        self._prune_after_save()
        return saved

    def reserve_minted(self, count: int) -> range:
        """Reserve ``count`` numbers for minted ids; see ``Store.reserve_minted``. Any thread.

        One statement on the meta row, whose row lock orders the nodes' reservations.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be an int >= 1, got {count!r}")

        def work(db: Connection) -> range:
            row = db.execute(q.RESERVE_MINTED, (count,)).fetchone()
            assert row is not None  # the meta row is created with the schema
            high: int = row[0]
            return range(high - count + 1, high + 1)

        # Repeatable: a reservation whose answer was lost only leaves a gap.
        return self._read("reserve_minted", work)

    def minted_high_water(self) -> int:
        """Return the highest number reserved for minted ids. Any thread."""
        return self._read("minted_high_water", q.read_high_water)

    def get(self, task_id: str) -> StoredTask | None:
        """Return the row of ``task_id`` (live or terminal), or ``None``. Any thread."""
        return self._read("get", lambda db: q.get_task(db, task_id))

    def load(self) -> list[StoredTask]:
        """Return every live task, in ``seq`` order. Any thread (the scheduler's, at start)."""
        return self._read("load", lambda db: q.read_tasks(db, include_terminal=False), begin=_READ_ONLY)

    def tasks(self, *, include_terminal: bool = True) -> list[StoredTask]:
        """Return the stored tasks in ``seq`` order. Any thread."""
        return self._read(
            "tasks", lambda db: q.read_tasks(db, include_terminal=include_terminal), begin=_READ_ONLY
        )

    def runs(self, task_id: str | None = None, *, limit: int = 100) -> list[LedgerRow]:
        """Return up to ``limit`` ledger rows, newest first. Any thread."""
        return self._read("runs", lambda db: q.read_runs(db, task_id, limit))

    # -- the SharedStore protocol ------------------------------------------------------------

    def db_now(self) -> float:
        """Return the database's clock as UTC epoch seconds. Any thread."""

        def work(db: Connection) -> float:
            row = db.execute(q.DB_NOW).fetchone()
            assert row is not None
            now: float = row[0]
            return now

        return self._read("db_now", work)

    def claim_due(
        self,
        limit: int,
        importable: Collection[str] | None = None,
        executors: Collection[str] | None = None,
        *,
        held: Collection[int] | None = None,
    ) -> list[Lease]:
        """Claim up to ``limit`` due rows nobody holds; see ``SharedStore.claim_due``. Any thread.

        Repeatable after a lost connection: a claim whose answer was lost holds its rows
        until the lease ends, or until this node's next claim that says what it ``held``
        (then they are claimed again at once: a late run, never a double one).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be an int >= 0, got {limit!r}")
        names = importable_names(importable)
        kinds = executor_names(executors)
        seqs = check_seqs(held)
        if limit == 0 or names == [] or kinds == []:
            self._live()  # a closed store still says so
            return []
        return self._read(
            "claim_due", lambda db: writes.acquire(db, limit, names, self._node, self._lease, kinds, seqs)
        )

    def renew(self, leases: Sequence[Lease], *, due_within: float | None = None) -> list[Lease]:
        """Extend the leases still held; see ``SharedStore.renew``. Any thread (a lease keeper's).

        Runs on a connection of its own (not the pool's), one renewal at a time, so callers
        busy with the pool never hold a renewal up.
        """
        check_leases(leases)
        renewals = self._renewals
        if renewals is None:
            raise StoreError(f"{self._location}: the store is not open")
        if not leases:
            return []
        if due_within is not None and not due_within >= 0:
            raise ValueError(f"due_within must be a number of seconds >= 0, got {due_within!r}")
        return renewals.run("renew", lambda db: writes.renew(db, leases, self._node, self._lease, due_within))

    def start(self, lease: Lease, *, seal: bool, beside: bool = False) -> float | None:
        """Record that the leased run of ``lease`` starts; see ``SharedStore.start``. Any thread.

        Repeatable after a lost connection: starting twice under one lease is starting once.
        """
        check_leases([lease])
        if lease.owner != self._node:  # another node's lease is not ours to start
            self._live()
            return None
        node, period, flag = self._node, self._lease, bool(beside)
        return self._read("start", lambda db: writes.start(db, lease, bool(seal), node, period, beside=flag))

    def start_many(
        self, starts: Sequence[tuple[Lease, bool]], beside: Sequence[bool] | None = None
    ) -> list[float | None]:
        """``start`` for several leased runs in one statement; see ``SharedStore.start_many``. Any thread."""
        check_leases([held for held, _ in starts])
        if beside is not None and len(beside) != len(starts):
            raise ValueError(f"beside must have one flag per start ({len(starts)}), got {len(beside)}")
        if not starts:
            self._live()
            return []
        return self._read("start", lambda db: writes.start_many(db, starts, self._node, self._lease, beside))

    # -- operating a live task (postgres_operations) ------------------------------------------

    def pause(self, task_id: str) -> bool:
        """Mark a live task paused, committed; see ``SharedStore.pause``. Any thread."""
        return self._write("pause", lambda db: ops.pause(db, _text_id(task_id), self._channel))

    def resume(self, task_id: str, *, delay: float | None = None) -> bool:
        """Clear a live task's pause, committed; see ``SharedStore.resume``. Any thread."""
        return self._write("resume", lambda db: ops.resume(db, _text_id(task_id), delay, self._channel))

    def run_now(self, task_id: str, *, after_run: float | None = None, replace: bool = False) -> bool:
        """Make one extra run claimable now (or after the run in flight), committed. Any thread.

        See ``SharedStore.run_now``.
        """
        key = _text_id(task_id)
        return self._write(
            "run_now", lambda db: ops.run_now(db, key, self._channel, after_run=after_run, replace=replace)
        )

    def reschedule(self, task_id: str, trigger_json: str, next_due: float) -> bool:
        """Write a new trigger and next due time, committed; see ``SharedStore.reschedule``. Any thread."""
        task_id = _text_id(task_id)
        return self._write(
            "reschedule", lambda db: ops.set_trigger(db, task_id, trigger_json, next_due, self._channel)
        )

    def paused_ids(self) -> frozenset[str]:
        """The ids of the live paused tasks; see ``KeepsPaused``. Any thread."""
        return self._read("paused_ids", ops.paused_ids)

    def is_paused(self, task_id: str) -> bool:
        """Whether the live task ``task_id`` is paused. Any thread."""
        return bool(self._read("is_paused", lambda db: ops.paused_ids(db, _text_id(task_id))))

    def runs_in_flight(self) -> list[RunInFlight]:
        """Return every row held by a lease that has not ended; see ``SharedStore``. Any thread."""
        return self._read("runs_in_flight", writes.in_flight)

    def release(self, leases: Sequence[Lease]) -> None:
        """Give back rows still held with ``leases``; see ``SharedStore.release``. Any thread."""
        check_leases(leases)
        if not leases:
            self._live()
            return
        self._read("release", lambda db: writes.release(db, leases, self._node, self._channel))

    def next_wakeup(
        self, importable: Collection[str] | None = None, executors: Collection[str] | None = None
    ) -> float | None:
        """Return when a live row may next become claimable; see ``SharedStore.next_wakeup``.

        Any thread.
        """
        names = importable_names(importable)
        kinds = executor_names(executors)
        if names == [] or kinds == []:
            self._live()
            return None

        def work(db: Connection) -> float | None:
            statement = q.NEXT_WAKEUPS[names is not None, kinds is not None]
            row = db.execute(statement, {"importable": names, "executors": kinds}).fetchone()
            assert row is not None  # an aggregate: one row, NULL when nothing is live
            wakeup: float | None = row[0]
            return wakeup

        return self._read("next_wakeup", work)

    def changes(self, since: int) -> tuple[list[StoredTask], int]:
        """Return the rows written since the cursor ``since``; see ``SharedStore.changes``. Any thread."""
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise ValueError(f"since must be an int >= 0, got {since!r}")

        def work(db: Connection) -> tuple[list[StoredTask], int]:
            row = db.execute(q.CHANGES_CURSOR).fetchone()
            assert row is not None
            cursor: int = row[0]
            with db.cursor(name="changes", binary=True) as rows:
                rows.execute(q.CHANGES, (since,))
                return q.collect_tasks(rows), cursor

        return self._read("changes", work, begin=q.CHANGES_BEGIN)

    def references(self, since: int) -> tuple[set[str], int]:
        """Return the references of live rows written since ``since``; see ``SharedStore``. Any thread."""
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise ValueError(f"since must be an int >= 0, got {since!r}")

        def work(db: Connection) -> tuple[set[str], int]:
            row = db.execute(q.REFERENCES, (since,)).fetchone()
            assert row is not None
            cursor: int = row[0]
            return set(row[1]), cursor

        return self._read("references", work)

    def listen(
        self, wakeup: Callable[[], None], *, saved: Callable[[], None] | None = None
    ) -> Callable[[], None]:
        """Call ``wakeup()`` on a thread of its own for each hint; see ``SharedStore.listen``.

        Any thread. The thread also checks its connection every ``poll`` seconds of silence.
        Closing the store stops every listener.
        """
        if not callable(wakeup) or (saved is not None and not callable(saved)):
            raise TypeError(f"wakeup and saved must be callable, got {wakeup!r}, {saved!r}")
        connections = self._live()
        listener = Listener(
            lambda: connections.connect("listen"),
            self._channel,
            wakeup,
            location=self._location,
            probe=self._poll,
            saved=saved,
            saved_payload=q.SAVED_HINT,
        )
        try:
            listener.start()
        except psycopg.Error as error:
            raise StoreError(f"{self._location}: listen failed: {error}") from error
        with self._state_lock:
            if self._connections is not connections:  # closed meanwhile
                closed = True
            else:
                closed = False
                self._listeners.add(listener)
        if closed:
            listener.stop()
            raise StoreError(f"{self._location}: the store is not open")

        def stop() -> None:
            with self._state_lock:
                self._listeners.discard(listener)
            listener.stop()

        return stop


_READ_ONLY: Final = "BEGIN READ ONLY"


if TYPE_CHECKING:  # mypy checks here that the class implements the protocol
    _STORE: type[SharedStore] = PostgresStore


def _text_id(task_id: object) -> str:
    if not isinstance(task_id, str):
        raise TypeError(f"task_id must be a str, got {task_id!r}")
    return task_id
