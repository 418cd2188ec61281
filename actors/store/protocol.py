"""What a durable store keeps, and the ``Store`` protocol every backend implements.

The scheduler keeps durable tasks in a store so that they survive a restart. This module is
the contract, free of any backend: the plain data it trades (``actors/store/rows.py``, re-exported
here) and the protocols: the
read-only ``StoreReader`` (what a ``status`` command needs) and the full ``Store`` (what a
scheduler needs). ``actors.store.sqlite`` implements them on one SQLite file;
``actors.store.postgres`` on a PostgreSQL schema, and there also ``SharedStore``: one schedule
shared by several schedulers, each due run claimed by exactly one of them (claim, lease, fence).

The store is a ledger, not a scheduler: it never decides when anything runs. The scheduler
encodes each task's arguments, trigger and options as JSON text, and the store keeps that
text verbatim. Times are UTC epoch seconds (``time.time()``), so they mean the same thing
after a restart, unlike the scheduler's monotonic clock.

Incarnations: a task id is reused when a finished (terminal) task's id is scheduled again.
Each row gets a ``seq`` when it is inserted, never reused, kept by a ``replace`` (the same
task with a new definition) and new for a fresh row. Updates and ledger rows name the
``seq`` they belong to, so an outcome reported late for an old incarnation can never land
on the new one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from actors.store.edges import Dependency, KeepsDependencies, Waiting
from actors.store.rows import (
    LIVE_STATUS,
    STATUSES,
    TERMINAL_STATUSES,
    IfExists,
    LedgerRow,
    StoredStatus,
    StoredTask,
    TaskDefinition,
    TaskUpdate,
    check_batch,
    check_definitions,
    check_if_exists,
)

__all__ = [
    "LIVE_STATUS",
    "STATUSES",
    "TERMINAL_STATUSES",
    "Dependency",
    "IfExists",
    "KeepsDependencies",
    "KeepsPaused",
    "Lease",
    "LedgerRow",
    "LoadsInParts",
    "RunInFlight",
    "SharedStore",
    "Store",
    "StoreReader",
    "StoredStatus",
    "StoredTask",
    "TaskDefinition",
    "TaskUpdate",
    "Waiting",
    "check_batch",
    "check_definitions",
    "check_if_exists",
]


class StoreReader(Protocol):
    """Read access to a store: what a ``status`` command needs, and the base of ``Store``.

    Every method may be called from any thread, unless the implementation says otherwise
    (the SQLite inspector is bound to the thread that opened it). Each call sees the data
    committed when it started.
    """

    @property
    def location(self) -> str:
        """Where the store lives (a file path, a server): for messages and logs."""

    def get(self, task_id: str) -> StoredTask | None:
        """Return the stored row of ``task_id`` (live or terminal), or ``None``."""

    def load(self) -> list[StoredTask]:
        """Return every live task, in ``seq`` order: everything a restart needs.

        Lean enough for a million rows: text that repeats between rows (references,
        triggers, options) is shared, not copied.
        """

    def tasks(self, *, include_terminal: bool = True) -> list[StoredTask]:
        """Return the stored tasks in ``seq`` order, with the kept terminal ones by default."""

    def runs(self, task_id: str | None = None, *, limit: int = 100) -> list[LedgerRow]:
        """Return up to ``limit`` ledger rows, newest first, of one task id or of all."""

    def minted_high_water(self) -> int:
        """Return the highest number reserved for minted ids (0 if none ever was)."""

    def close(self) -> None:
        """Release what the reader holds. Idempotent."""


@runtime_checkable
class KeepsPaused(Protocol):
    """A store that keeps whether each live task is paused (optional; ``SQLiteStore`` does).

    It writes ``TaskUpdate.paused`` with the rest of a ``save``; a scheduler starting on it
    reads the paused ids back, so a paused task stays paused after a restart (a kill -9 too).
    """

    def paused_ids(self) -> frozenset[str]:
        """Return the ids of the live tasks stored as paused (caller's thread, one snapshot)."""


@runtime_checkable
class LoadsInParts(Protocol):
    """A store that can hand its live tasks over a part at a time (optional; ``SQLiteStore`` can).

    A scheduler starting on such a store turns each part into its own tasks before the next
    is read, so a million stored rows are never all alive at once: the garbage collector has
    a tenth of the objects to visit while a large schedule loads (docs/performance.md).
    """

    def load_parts(self, take: Callable[[list[StoredTask]], object]) -> None:
        """Call ``take`` with every live task, in ``seq`` order, a part at a time, from one snapshot.

        ``take`` runs on the caller's thread; ``load`` returns what all the parts hold.
        """


class Store(StoreReader, Protocol):
    """The scheduler's durable store: one writer (the scheduler) per store.

    Every write is committed before it returns (durable against a crash of the process;
    against power loss as the implementation documents). Threads: ``open`` is called once
    by the scheduler before anything else; ``close`` by whoever shuts it down; every other
    method may be called from any thread, concurrently (``add`` and ``cancel`` from callers'
    threads, ``save`` and ``reserve_minted`` from the scheduler's).
    """

    def open(self) -> None:
        """Take the store for this scheduler, then create, check or migrate it.

        Raises:
            StoreLockedError: Another live scheduler holds the store.
            StoreError: It cannot be used (not a store of ours, damaged, a newer schema,
                unreachable); the message names it and says why, and nothing was written.
        """

    def add(self, task: TaskDefinition, if_exists: IfExists = "error") -> tuple[StoredTask, bool]:
        """Store a task; return the row now live and whether anything was written.

        If ``task.task_id`` is free, or its row is terminal, a fresh row is written
        (counters at zero, a new ``seq``). If it is live: ``"error"`` raises,
        ``"keep"`` returns the stored row untouched (``False``), and ``"replace"`` swaps
        in the new definition (reference, arguments, trigger, options, next due), keeping
        ``seq``, status and counters (``True``).

        Raises:
            DuplicateTaskError: The id is live and ``if_exists`` is ``"error"``.
            ValueError: ``if_exists`` is none of the three.
            StoreError: The store failed or is closed.
        """

    def add_many(self, tasks: Sequence[TaskDefinition]) -> list[int]:
        """Store new tasks in one transaction, committed before it returns; return their ``seq``, in order.

        The bulk form of ``add`` for ids no row has (``Scheduler.schedule_many(...,
        durable=True)`` mints them): each row is written fresh (counters at zero), or none is.

        Raises:
            DuplicateTaskError: An id is stored already (live or terminal) or given twice;
                nothing was written.
            TypeError: An element is not a ``TaskDefinition``.
            StoreError: The store failed or is closed; nothing was written.
        """

    def cancel(self, task_id: str) -> bool:
        """Mark a live task cancelled; ``False`` if ``task_id`` has no live row.

        Raises:
            StoreError: The store failed or is closed.
        """

    def save(self, updates: Sequence[TaskUpdate] = (), runs: Sequence[LedgerRow] = ()) -> int:
        """Apply task updates and append ledger rows in one transaction.

        An update whose ``(task_id, seq)`` is not stored is ignored (a late report for an
        incarnation that is gone). A terminal row stays terminal: an update may set its
        counters and last outcome, but never its status or due time, so a cancel that
        returned ``True`` is never undone. A ledger row whose ``(task_seq, run)`` is stored
        already is ignored.

        Returns:
            How many ledger rows were new (``len(runs)`` minus the ones ignored).

        Raises:
            StoreError: The store failed or is closed; nothing was saved.
        """

    def reserve_minted(self, count: int) -> range:
        """Reserve ``count`` numbers for minted ids ``"task-<n>"``, and return them.

        Reserved numbers are never handed out again, even after a crash or by another
        node; numbers reserved but never used leave gaps. Reserve in blocks: one
        reservation is one transaction.

        Raises:
            ValueError: ``count`` < 1.
            StoreError: The store failed or is closed.
        """


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """A leased run: the right to run ``task`` once, held by ``owner`` until ``expires``.

    Only the node that holds the lease may commit the run's outcome: it passes ``fence`` in
    its ``TaskUpdate``, and the store refuses the update once another node has claimed the
    row again (which bumps the fence), so a node that lost its lease cannot commit anything.

    Attributes:
        task: The row as claimed; its ``next_due`` is the due time of the leased run.
        fence: The row's fence after this claim (each claim adds one).
        owner: The node that holds the lease (``SharedStore.node``).
        expires: When the lease ends unless renewed (UTC epoch seconds, database clock).
        db_now: The database's clock when the lease was taken or last renewed.
        stop_requested: A cancel with ``interrupt`` asked the run of this lease to stop (known
            from the last renewal).
        grid_due: Set when the leased run is a ``run_now`` run: the due time (UTC epoch
            seconds) of the scheduled slot that run does not take (``task.next_due`` is the
            extra run's). ``None`` for a scheduled run.
        make_way_requested: A ``run_now`` of an ``overlap="replace"`` task asked the run of
            this lease to make way for it (known from the last renewal).
        lost_runs: How many times in a row this run was lost with its node before this claim
            (a claim retook it after the lease of a started run ended); at the store's
            ``max_lost_runs`` the node fails the run with ``RunLostError`` instead of running it.
    """

    task: StoredTask
    fence: int
    owner: str
    expires: float
    db_now: float
    stop_requested: bool = False
    grid_due: float | None = None
    make_way_requested: bool = False
    lost_runs: int = 0

    @property
    def seq(self) -> int:
        """The leased row's incarnation (``task.seq``)."""
        return self.task.seq


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunInFlight:
    """A row some node holds under a lease that has not ended: a run claimed, maybe started.

    Attributes:
        task_id: The task's id.
        seq: The row's incarnation.
        owner: The node that holds it.
        expires: When the lease ends unless renewed (UTC epoch seconds, database clock).
        started: Whether the run has started (``SharedStore.start``), or is only claimed.
    """

    task_id: str
    seq: int
    owner: str
    expires: float
    started: bool


class SharedStore(Store, Protocol):
    """A store that several schedulers share, each due run executed by exactly one of them.

    The database is the truth and its clock decides: a run is due when ``next_due`` is at or
    before the database's ``now()``, never by a node's own clock, so skewed clocks cannot
    cause an early or a double run. A node runs a task only after ``claim_due`` returned its
    ``Lease``, keeps the lease alive with ``renew`` while it runs, and commits the outcome
    with a fenced ``save`` (``TaskUpdate.fence``): after a node dies (or stalls past its
    lease), the row becomes claimable again by the ordinary claim, and a late outcome from
    the old owner is refused. Runs are at least once after a crash, and at most one outcome
    per run is ever committed (the fence, and the ledger's unique ``(task_seq, run)``).

    Wake-ups: ``listen`` delivers the hints other nodes send (``NOTIFY``); they arrive only
    at commit, are folded, and are lost while disconnected, so polling ``next_wakeup`` every
    ``poll`` seconds is the guarantee and the hints only make it prompt.

    Threads: as ``Store``; every method here may be called from any thread. ``renew`` uses a
    connection of its own, so a lease keeper thread is never held up by the pool.
    """

    @property
    def node(self) -> str:
        """This scheduler's name in the store: the owner of the leases it takes."""

    @property
    def lease(self) -> float:
        """How long a claim or a renewal holds a row, in seconds."""

    @property
    def poll(self) -> float:
        """How often a node should look for due rows without a hint, in seconds."""

    @property
    def max_lost_runs(self) -> int:
        """How many times in a row a run may be lost with its node before it fails (``Lease.lost_runs``)."""

    def db_now(self) -> float:
        """Return the database's clock (``now()``) as UTC epoch seconds.

        Raises:
            StoreError: The store failed or is closed.
        """

    def pause(self, task_id: str) -> bool:
        """Mark a live task paused, committed before it returns; ``False`` if unknown, ended or paused.

        No claim takes a scheduled run of a paused row; a run claimed but not started is refused
        at ``start``; a run in progress finishes. Raises ``StoreError`` if the store failed.
        """

    def resume(self, task_id: str, *, delay: float | None = None) -> bool:
        """Clear a live task's pause, committed before it returns; ``False`` if it was not paused.

        ``delay``: a fixed-delay task's, whose next run is then ``delay`` seconds after now.
        """

    def run_now(self, task_id: str, *, after_run: float | None = None, replace: bool = False) -> bool:
        """Make one extra run of a live task claimable now (paused or not), its grid kept.

        While a run of it is claimed or in progress on any node: ``False`` (the overlap policy
        ``"skip"``) unless ``after_run`` is given (``"queue"``, ``"replace"``: the slot the task
        waits for after that run, UTC epoch seconds); then the extra run is claimable as soon
        as that run's outcome lands, and with ``replace`` that run is asked to make way
        (``Lease.make_way_requested``, at its owner's next renewal). ``False`` if unknown or
        ended, or while an extra run waits already. The lease that takes it has ``grid_due`` set.
        """

    def reschedule(self, task_id: str, trigger_json: str, next_due: float) -> bool:
        """Give a live task a new trigger and next due time (UTC epoch seconds), committed.

        A run in flight goes on; its outcome keeps this due time. ``False`` if unknown, ended,
        or its one-time run has started.
        """

    def paused_ids(self) -> frozenset[str]:
        """Return the ids of the live tasks stored as paused (one snapshot)."""

    def is_paused(self, task_id: str) -> bool:
        """Whether the live task ``task_id`` is stored as paused."""

    def claim_due(
        self,
        limit: int,
        importable: Collection[str] | None = None,
        executors: Collection[str] | None = None,
        *,
        held: Collection[int] | None = None,
    ) -> list[Lease]:
        """Claim up to ``limit`` due rows that nobody holds, in ``(next_due, seq)`` order.

        One statement: each leased row is owned by this node for ``lease`` seconds with its
        fence bumped. A row is due when it is live and its ``next_due`` is at or before the
        database's ``now()``; it is free when no node owns it or its lease has expired. Rows
        another node is claiming at the same moment are skipped, never waited for.

        Args:
            limit: At most this many rows (the node's idle workers); 0 claims nothing.
            importable: If given, only rows whose ``fn_ref`` is one of these (the functions
                this node can import), so a rolling deploy never strands a row.
            executors: If given, only rows of tasks run by one of these executors
                (``"thread"``, ``"process"``: the pools this node has room in), so a node
                never holds a run it has no worker for.

            held: If given, the rows (``seq``) this node holds now. A row this node owns is
                then claimed again exactly when it is not one of them, whatever its lease
                says: one it holds has its run here (its keeper renews it; claiming it again
                would run it twice), one it does not hold is an orphan (claimed by a call
                whose answer was lost, or left by a release that failed), taken back at
                once instead of at the end of its lease.

        Raises:
            ValueError: ``limit`` is negative, or an executor is not one.
            TypeError: ``held`` holds something that is not an int.
            StoreError: The store failed or is closed.
        """

    def renew(self, leases: Sequence[Lease], *, due_within: float | None = None) -> list[Lease]:
        """Extend the leases still held (same owner and fence) by ``lease`` seconds from now.

        With ``due_within``, only the leases ending within that many seconds are extended; the
        others come back as they stand (fresh ``db_now`` and ``stop_requested``), and when none
        is due the call writes nothing (a lease keeper's renewal brought forward by a hint).

        Returns:
            The renewed leases (new ``expires``, ``db_now`` and ``stop_requested``), in the
            given order; a lease missing from the result is lost: its run's outcome will be
            refused.

        Raises:
            StoreError: The store failed or is closed.
        """

    def cancel(self, task_id: str, *, interrupt: bool = False) -> bool:
        """Mark a live task cancelled; ``False`` if it has no live row, or its sealed run is in flight.

        A sealed run in flight (a one-time task's run that has started, under a lease that
        holds) decides how its task ends, as in memory: the cancel is refused, unless
        ``interrupt``, which cancels the task anyway and asks that run to stop (its owner
        learns it when it renews the lease: ``Lease.stop_requested``).

        Raises:
            StoreError: The store failed or is closed.
        """

    def start(self, lease: Lease, *, seal: bool, beside: bool = False) -> float | None:
        """Record that the leased run of ``lease`` starts now; say whether it may.

        Call it just before the run starts. It may if the row is still held with this lease
        and still scheduled: a cancel from any node committed before this call wins, and the
        run must not start. Starting renews the lease. ``seal`` is for a run a cancel can no
        longer stop once started (a one-time task's): while its lease holds, ``cancel``
        returns ``False`` for the task, as it does in memory for a run in progress.
        ``beside`` is for a further run under the same lease (an ``overlap="allow"`` task's
        runs beside one another): it is refused too once the row was replaced, rescheduled or
        given a ``run_now`` since the claim, so the lease starts no new run of the old definition.

        Returns:
            The database's clock at the start (UTC epoch seconds), or ``None``: do not start.

        Raises:
            StoreError: The store failed or is closed (do not start the run either).
        """

    def start_many(
        self, starts: Sequence[tuple[Lease, bool]], beside: Sequence[bool] | None = None
    ) -> list[float | None]:
        """``start`` for several leased runs (each with its ``seal``) in one call; answers in order.

        ``beside``: one flag per start, as ``start``'s (``None``: none is beside).

        Each is decided as ``start`` decides it, on its own: one refused does not hold up another.

        Raises:
            StoreError: The store failed or is closed (start none of them).
        """

    def save_outcomes(
        self, updates: Sequence[TaskUpdate] = (), runs: Sequence[LedgerRow] = ()
    ) -> frozenset[int]:
        """``save``, and say which fenced updates were refused.

        Returns:
            The ``seq`` of each row whose fenced update did not apply because its lease was
            lost (another node claimed it, or it was released): its ledger rows were dropped,
            and another node's outcome stands. A row that is gone altogether is not in it:
            its outcome's ledger rows are kept.

        Raises:
            StoreError: The store failed or is closed; nothing was saved.
        """

    def runs_in_flight(self) -> list[RunInFlight]:
        """Return every row held by a lease that has not ended, on any node, in ``seq`` order.

        Raises:
            StoreError: The store failed or is closed.
        """

    def release(self, leases: Sequence[Lease]) -> None:
        """Give back the rows still held with these leases, claimable by anyone at once.

        For runs a stopping node will not start. A lease lost already is left alone.

        Raises:
            StoreError: The store failed or is closed.
        """

    def next_wakeup(
        self, importable: Collection[str] | None = None, executors: Collection[str] | None = None
    ) -> float | None:
        """Return the earliest moment a live row may become claimable, or ``None``.

        That is ``next_due`` for a row nobody owns, and the later of ``next_due`` and the
        lease's end for an owned one, so a node sleeping until then notices an expired lease.
        UTC epoch seconds on the database's clock. ``importable`` and ``executors`` as in
        ``claim_due``.

        Raises:
            StoreError: The store failed or is closed.
        """

    def changes(self, since: int) -> tuple[list[StoredTask], int]:
        """Return the rows (live or terminal) written since the cursor ``since``, and a new cursor.

        ``since=0`` returns every row. Pass the returned cursor to the next call: no write
        committed after this call can be missed. A row may come back more than once (its
        newest state each time), so apply the rows, do not count them. Deleted rows are not
        reported (a terminal row pruned, or replaced by a fresh row of the same id, which is).
        Claims, renewals and releases change who holds a row, not the row: not reported.

        Raises:
            StoreError: The store failed or is closed.
        """

    def references(self, since: int) -> tuple[set[str], int]:
        """Return the function references of live rows written since the cursor ``since``, and a new cursor.

        The lean form of ``changes`` (same cursor), for a node that claims only what it can
        import: which references it must learn to import. ``since=0`` covers every live row.

        Raises:
            StoreError: The store failed or is closed.
        """

    def listen(
        self, wakeup: Callable[[], None], *, saved: Callable[[], None] | None = None
    ) -> Callable[[], None]:
        """Call ``wakeup()`` whenever another node adds, replaces, cancels or reschedules a task.

        Starts a daemon thread with a connection of its own; ``wakeup`` runs on that thread
        (keep it short: set an event, tell an actor). It is also called after the thread
        reconnects, since hints sent while it was disconnected are lost. The thread is
        listening when this returns. ``saved``, if given, is called instead of ``wakeup``
        for the hint of a saved outcome (``save``, ``save_outcomes``), which adds no function
        reference and asks no run to stop; without it, ``wakeup`` hears those too.

        Returns:
            A function that stops the thread and waits for it; idempotent, any thread.

        Raises:
            StoreError: The store is closed, or the listening connection cannot be made.
        """
